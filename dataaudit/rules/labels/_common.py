"""Helpers shared by the label rules: seeded row priorities, a mergeable bottom-k sample, drift
statistics with effect sizes, and the label column's class keys."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import xxhash

from ...features import Batch
from .._ids import ids_at

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)


def row_priority(split: str, rows: np.ndarray, seed: int) -> np.ndarray:
    """A seeded pseudo-random uint64 per (split, row): splitmix64 of row ^ hash(split, seed).

    The same row always gets the same priority, so "the k smallest priorities" is a sample that
    is the same however the rows were batched, sharded or merged.
    """
    base = np.uint64(xxhash.xxh3_64_intdigest(f"{seed}|{split}".encode()))
    with np.errstate(over="ignore"):
        z = (rows.astype(np.uint64) + base) * _GOLD
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def label_keys(batch: Batch) -> list[str | None]:
    return batch.feature("label").values


# -- a bottom-k sample of rows: exact, order-independent merges ---------------------------------
# state: {"k": int, "items": list[(priority, split, row, text, label)]} sorted by (priority, split, row)
# and "ids": {(split, row): id} for sampled rows when the dataset has an id column (row flags)


def sample_start(k: int) -> dict[str, Any]:
    return {"k": int(k), "items": [], "ids": {}}


def sample_id(state: dict[str, Any], split: str, row: int) -> str | None:
    return state.get("ids", {}).get((split, row))


def _keep_ids(ids: dict[tuple[str, int], Any], items: list[tuple]) -> dict[tuple[str, int], Any]:
    return {(it[1], it[2]): ids[(it[1], it[2])] for it in items if (it[1], it[2]) in ids}


def sample_update(
    state: dict[str, Any],
    batch: Batch,
    seed: int,
    *,
    max_chars: int,
    view: str = "input_text",
    view_params: dict[str, Any] | None = None,
    mask: np.ndarray | None = None,
) -> dict[str, Any]:
    """Offer the batch's labeled rows (optionally only where ``mask``) to the sample."""
    k = state["k"]
    if k <= 0 or batch.num_rows == 0:
        return state
    labels = batch.feature("label").values
    ok = np.fromiter((v is not None for v in labels), bool, len(labels))
    if mask is not None:
        ok &= mask
    idx = np.flatnonzero(ok)
    if not idx.size:
        return state
    prio = row_priority(batch.split, batch.row_ids[idx], seed)
    items = state["items"]
    if len(items) >= k:  # only rows that beat the current k-th can enter
        keep = prio <= np.uint64(items[-1][0])
        idx, prio = idx[keep], prio[keep]
    if idx.size > k:
        order = np.argsort(prio, kind="stable")[:k]
        idx, prio = idx[order], prio[order]
    if not idx.size:
        return state
    texts = batch.feature(view, **(view_params or {}))
    new = []
    for i, p in zip(idx.tolist(), prio.tolist()):
        t = texts[i].as_py()
        new.append((int(p), batch.split, int(batch.offset + i), (t or "")[:max_chars], labels[i]))
    state["items"] = sorted(items + new)[:k]
    row_ids = ids_at(batch, idx)
    if row_ids is not None:
        ids = state.setdefault("ids", {})
        ids.update({(batch.split, int(batch.offset + i)): v for i, v in zip(idx.tolist(), row_ids)})
        state["ids"] = _keep_ids(ids, state["items"])
    return state


def sample_merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    items = sorted(a["items"] + b["items"])[: a["k"]]
    ids = {**a.get("ids", {}), **b.get("ids", {})}
    return {"k": a["k"], "items": items, "ids": _keep_ids(ids, items)}


# -- drift statistics -----------------------------------------------------------------------------


def js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence (base 2, in [0, 1]) between two count vectors."""
    p = np.asarray(p, float)
    q = np.asarray(q, float)
    if p.sum() <= 0 or q.sum() <= 0:
        return 0.0
    p = p / p.sum()
    q = q / q.sum()
    m = (p + q) / 2

    def kl(a: np.ndarray, b: np.ndarray) -> float:
        nz = a > 0
        return float(np.sum(a[nz] * np.log2(a[nz] / b[nz])))

    return max(0.0, min(1.0, (kl(p, m) + kl(q, m)) / 2))


def chi2_cramers_v(table: np.ndarray) -> tuple[float, float, int]:
    """Chi-squared statistic, Cramér's V and degrees of freedom of a contingency table."""
    t = np.asarray(table, float)
    t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0]
    if t.shape[0] < 2 or t.shape[1] < 2:
        return 0.0, 0.0, 0
    n = t.sum()
    expected = t.sum(axis=1, keepdims=True) * t.sum(axis=0, keepdims=True) / n
    chi2 = float(((t - expected) ** 2 / expected).sum())
    dof = (t.shape[0] - 1) * (t.shape[1] - 1)
    v = math.sqrt(chi2 / (n * (min(t.shape) - 1)))
    return chi2, min(1.0, v), dof


def chi2_pvalue(chi2: float, dof: int) -> float | None:
    if dof <= 0:
        return None
    try:
        from scipy.stats import chi2 as _chi2
    except ImportError:  # pragma: no cover
        return None
    return float(_chi2.sf(chi2, dof))

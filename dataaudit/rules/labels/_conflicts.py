"""Groups of rows with the same input (exact after normalization, optionally near-duplicate
clusters too) but different labels. Shared by LBL001 (the findings) and LBL003 (the per-class
conflict rate).

State, per split, as chunk lists (a merge concatenates a's chunks then b's):
``h`` uint64 normalized-input hash, ``y`` uint64 label id (xxh3 of the class key, or of the
normalized response in response mode), ``row`` int64, optional ``snip`` (input text cut to the
example bound) and ``ids`` (the id column, when there is one, for the row flags).
Rows with a null/empty input or a null label are not stored: they can conflict with nothing.
With near-duplicate grouping, every row of the split also keeps its MinHash signature
(``sig``, the shared feature, held by reference) and position (``all_rows``): DUP002 bands the
same signatures the same way, so the LSH candidates of a split are computed once per audit
(:func:`dataaudit.rules._minhash.shared_candidates`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from ...features import Batch
from ...sketches.minhash import EMPTY_HASH
from ...sketches.state import PerSplit
from .._columns import SNIPPET_EXTRA, cat
from .._ids import id_column, take_ids
from .._minhash import DEFAULTS as MINHASH


def start(mode: str, *, snippets: int = 0, near: bool = False) -> dict[str, Any]:
    splits = PerSplit(_empty_split)
    return {"mode": mode, "snip": int(snippets), "near": bool(near), "vocab": {}, "splits": splits}


def _empty_split() -> dict[str, list[Any]]:
    return {
        "h": [],
        "y": [],
        "row": [],
        "snip": [],
        "sig": [],
        "sets": [],
        "all_rows": [],
        "ids": [],
    }


def _label_ids(batch: Batch, mode: str, vocab: dict[int, str]) -> np.ndarray:
    if mode == "response":
        return np.asarray(batch.feature("normalized_hash", view="response_text"), np.uint64)
    values = batch.feature("label").values
    h = xxhash.xxh3_64_intdigest
    ids = np.zeros(len(values), np.uint64)
    for i, v in enumerate(values):
        if v is not None:
            k = h(v.encode("utf-8", "surrogatepass")) or 1
            ids[i] = k
            vocab.setdefault(k, v)
    return ids


def update(state: dict[str, Any], batch: Batch) -> dict[str, Any]:
    if batch.num_rows == 0:
        return state
    hashes = np.asarray(batch.feature("normalized_hash", view="input_text"), np.uint64)
    ids = _label_ids(batch, state["mode"], state["vocab"])
    keep = (hashes != 0) & (hashes != EMPTY_HASH) & (ids != 0)
    idx = np.flatnonzero(keep)
    sp = state["splits"].at(batch.split)
    if state["near"]:  # every row: the split's clusters are DUP002's
        sp["sig"].append(batch.feature("minhash", **MINHASH))
        sp["all_rows"].append(batch.row_ids)
    if not idx.size:
        return state
    sp["h"].append(hashes[idx])
    sp["y"].append(ids[idx])
    sp["row"].append(batch.row_ids[idx])
    row_ids = id_column(batch)
    if row_ids is not None:
        sp["ids"].append(row_ids.take(pa.array(idx)))
    if state["snip"]:
        text = batch.input_text.take(pa.array(idx))
        sp["snip"].append(pc.utf8_slice_codeunits(text, 0, state["snip"] + SNIPPET_EXTRA))
    return state


def merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {**a, "splits": a["splits"].merge(b["splits"]), "vocab": {**b["vocab"], **a["vocab"]}}


@dataclass
class Group:
    """One conflict group: rows (positions in the split) and their label ids."""

    split: str
    key: str
    kind: str  # exact | near
    rows: list[int]
    labels: list[int]
    snippet: str | None = None
    label_counts: dict[int, int] = field(default_factory=dict)
    ids: list[str | None] = field(default_factory=list)  # the id column at ``rows``


@dataclass
class SplitConflicts:
    rows: int  # rows with an input and a label
    label_rows: dict[int, int]  # label id -> rows with an input
    groups: list[Group]


def find(
    state: dict[str, Any], threshold: float = 0.8, ctx: Any = None
) -> dict[str, SplitConflicts]:
    """Conflict groups per split, largest first then by key (deterministic). ``ctx``: the
    audit's context, where the near-duplicate pairs are shared with DUP002."""
    out: dict[str, SplitConflicts] = {}
    for split in sorted(state["splits"]):
        sp = state["splits"][split]
        h = cat(sp["h"], np.uint64)
        y = cat(sp["y"], np.uint64)
        rows = cat(sp["row"], np.int64)
        order = np.argsort(rows, kind="stable")
        h, y, rows = h[order], y[order], rows[order]
        ids, counts = np.unique(y, return_counts=True)
        label_rows = {int(i): int(c) for i, c in zip(ids, counts)}
        near = _near(ctx, split, sp, rows, threshold) if state["near"] else None
        comp = _components(h, near)
        groups = _conflict_groups(split, h, y, rows, comp, sp, order)
        out[split] = SplitConflicts(int(rows.size), label_rows, groups)
    return out


def _near(ctx: Any, split: str, sp: dict[str, Any], rows: np.ndarray, threshold: float):
    """Near-duplicate cluster id per stored row (``rows``: their positions in the split), -1
    if none: the whole split's MinHash clusters (signature estimate >= ``threshold``; the LSH
    candidates are DUP002's, computed once per audit), so two labeled rows also join through a
    row without a label."""
    if rows.size < 2 or not sp["sig"]:
        return None
    from ...sketches.lsh import choose_bands, near_duplicate_pairs
    from .._minhash import digest, shared_candidates

    bands, per_band = choose_bands(threshold, MINHASH["num_perm"])
    all_rows = cat(sp["all_rows"], np.int64)
    data = digest(sp["all_rows"], sp["sig"])
    sig = cat(sp["sig"], np.uint32, MINHASH["num_perm"])
    candidates = shared_candidates(ctx, split, data, MINHASH, bands, per_band, lambda: sig)
    labels = near_duplicate_pairs(
        sig, threshold, bands=bands, rows=per_band, candidates=candidates
    )[0]
    o = np.argsort(all_rows, kind="stable")
    pos = o[np.searchsorted(all_rows[o], rows)]
    return labels[pos]


def _components(h: np.ndarray, near: np.ndarray | None) -> np.ndarray:
    """Component id per row: exact-hash groups, joined with near-duplicate clusters if given."""
    n = h.size
    _, first, exact = np.unique(h, return_index=True, return_inverse=True)
    if near is None or n < 2 or not (near >= 0).any():
        return exact.astype(np.int64)
    from ...sketches.lsh import components

    # edges: each row to the first row of its exact group and of its near cluster
    rows = np.arange(n, dtype=np.int64)
    in_near = near >= 0
    _, rep, inv = np.unique(near[in_near], return_index=True, return_inverse=True)
    a = np.concatenate([rows, rows[in_near]])
    b = np.concatenate([first[exact].astype(np.int64), rows[in_near][rep][inv]])
    comp = components(n, a, b)
    return np.where(comp >= 0, comp, rows)


def _conflict_groups(split, h, y, rows, comp, sp, order) -> list[Group]:
    if not rows.size:
        return []
    # components with more than one distinct label id
    o = np.lexsort((y, comp))
    c_sorted, y_sorted = comp[o], y[o]
    new_pair = np.ones(o.size, bool)
    new_pair[1:] = (c_sorted[1:] != c_sorted[:-1]) | (y_sorted[1:] != y_sorted[:-1])
    comps, n_labels = np.unique(c_sorted[new_pair], return_counts=True)
    bad = set(comps[n_labels > 1].tolist())
    if not bad:
        return []
    # exact (hash) groups with more than one label id: "exact" conflicts
    o2 = np.lexsort((y, h))
    hs, ys = h[o2], y[o2]
    new2 = np.ones(o2.size, bool)
    new2[1:] = (hs[1:] != hs[:-1]) | (ys[1:] != ys[:-1])
    hh, nl = np.unique(hs[new2], return_counts=True)
    exact_bad = set(hh[nl > 1].tolist())
    snips = None
    if sp["snip"]:
        snips = pa.concat_arrays([c.cast(pa.large_string()) for c in sp["snip"]]).take(
            pa.array(order)
        )
    members: dict[int, list[int]] = {}
    flagged = np.flatnonzero(np.isin(comp, np.fromiter(bad, np.int64, len(bad))))
    for i in flagged.tolist():
        members.setdefault(int(comp[i]), []).append(i)
    row_ids = dict(zip(flagged.tolist(), take_ids(sp.get("ids", []), order[flagged])))
    groups = []
    for idx in members.values():
        gh = h[idx]
        kind = "exact" if any(int(x) in exact_bad for x in gh) else "near"
        counts: dict[int, int] = {}
        for lab in y[idx].tolist():
            counts[int(lab)] = counts.get(int(lab), 0) + 1
        groups.append(
            Group(
                split=split,
                key=f"{int(gh.min()):016x}",
                kind=kind,
                rows=rows[idx].tolist(),
                labels=y[idx].tolist(),
                snippet=None if snips is None else snips[idx[0]].as_py(),
                label_counts=counts,
                ids=[row_ids[i] for i in idx],
            )
        )
    groups.sort(key=lambda g: (-len(g.rows), g.key))
    return groups

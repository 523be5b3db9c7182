"""The seeded sample of labeled rows that the label probes read (LBL002, LBL003, LBL004).

A :class:`~dataaudit.sketches.sampling.BottomK` over all splits: each sampled row keeps its
text (cut to ``max_chars``), its label, its id (for row flags) and its group: the hash of its
normalized input (the exact-duplicate key), so copies of one text land in one probe fold.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import xxhash

from ..._arrow import take
from ...features import Batch
from ...sketches.hashing import GOLDEN
from ...sketches.sampling import BottomK, row_keys
from .._ids import ids_at


class Sampled(NamedTuple):
    split: str
    row: int
    text: str
    label: str
    id: str | None
    #: the normalized input's hash: rows with equal normalized input share it (0: unknown)
    group: int = 0


def _state(split: str, seed: int) -> int:
    # the split is in the seed so one sample over all splits draws each split independently
    return xxhash.xxh3_64_intdigest(f"{seed}|{split}".encode()) * int(GOLDEN) & (2**64 - 1)


def offer(
    sample: BottomK,
    batch: Batch,
    seed: int,
    *,
    max_chars: int,
    view: str = "input_text",
    view_params: dict[str, Any] | None = None,
    mask: np.ndarray | None = None,
) -> int:
    """Offer the batch's labeled rows (optionally only where ``mask``) to the sample; returns
    how many rows were offered (the rows in the probe's scope)."""
    if sample.k <= 0 or batch.num_rows == 0:
        return 0
    labels = batch.feature("label").values
    ok = np.fromiter((v is not None for v in labels), bool, len(labels))
    if mask is not None:
        ok &= mask
    idx = np.flatnonzero(ok)
    rows = batch.row_ids[idx]

    def items(cand: np.ndarray) -> list[tuple[str, str, str | None, int]]:
        at = idx[cand]
        texts = take(batch.feature(view, **(view_params or {})), at).to_pylist()
        ids = ids_at(batch, at) or [None] * len(at)
        groups = batch.feature("normalized_hash", view="input_text")[at].tolist()
        return [
            ((t or "")[:max_chars], labels[i], v, g)
            for t, i, v, g in zip(texts, at.tolist(), ids, groups)
        ]

    sample.offer(batch.split, rows, row_keys(rows, _state(batch.split, seed)), items)
    return int(idx.size)


def sampled(sample: BottomK) -> list[Sampled]:
    """The sampled rows in key order (a uniform shuffle, the same for any sharding)."""
    return [Sampled(split, row, *item) for split, row, item in sample.entries()]

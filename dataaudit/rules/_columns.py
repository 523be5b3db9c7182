"""Per-split column lists: the state of rules that group rows in ``finish`` (duplicates, leakage,
label conflicts).

Per split (``state["splits"]``, a ``PerSplit(dict)``), a rule keeps lists of per-batch arrays
(row ids, hashes, signatures, snippets, ...) that merge by concatenation (b's rows after a's)
and are joined once in ``finish``. The arrays are the shared feature arrays themselves, so
several rules holding them cost memory once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .._arrow import take
from ..features import Batch
from ..memory import concatenate
from ..sketches.minhash import EMPTY_HASH, NULL_HASH
from ._ids import id_column

SNIPPET_EXTRA = 64  # characters kept beyond ctx.example_chars, so truncation still shows


def append(state: dict[str, Any], split: str, **columns: Any) -> None:
    """Add one batch's ``columns`` to the split's lists."""
    sp = state["splits"].at(split)
    for name, value in columns.items():
        sp.setdefault(name, []).append(value)


def cat(
    parts: list[np.ndarray], dtype: Any, width: int | None = None, *, consume: bool = False
) -> np.ndarray:
    """The parts as one array; ``consume`` frees each part once copied (see memory.concatenate)."""
    n = sum(len(p) for p in parts)
    return concatenate(parts, np.empty((n, width) if width else n, dtype), consume=consume)


def texts(parts: list[pa.Array], idx: np.ndarray) -> list[str | None]:
    """The strings at positions ``idx`` of the concatenated ``parts``."""
    if not len(idx):
        return []
    joined = pa.chunked_array(parts, pa.large_string())
    return take(joined, idx).to_pylist()  # pa.array of positions imports pandas


def row_columns(batch: Batch, chars: int) -> dict[str, Any]:
    """What the duplicate and leak rules keep of every row: its position, exact-duplicate key,
    snippet and, when the dataset has one, its id."""
    cols = {"rows": batch.row_ids, "hash": nonempty_hash(batch), "snip": snippet(batch, chars)}
    ids = id_column(batch)
    if ids is not None:
        cols["ids"] = ids
    return cols


def snippet(batch: Batch, chars: int) -> pa.Array:
    """The rows' text, cut a little beyond the report's example length."""
    return batch.feature("text_snippet", chars=chars + SNIPPET_EXTRA)


def nonempty_hash(batch: Batch) -> np.ndarray:
    """normalized_hash with 0 for null, empty and whitespace-only rows (never duplicates)."""
    h = np.asarray(batch.feature("normalized_hash"))
    return np.where(h == EMPTY_HASH, NULL_HASH, h)


def key_hex(h: int) -> str:
    """A row hash as a finding key."""
    return f"{int(h):016x}"

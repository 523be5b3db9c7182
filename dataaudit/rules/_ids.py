"""Row ids for flags: the values of the dataset's ``id`` column at the rows a rule flags.

A rule that decides which rows to flag while it scans takes the ids of those rows
(:func:`ids_at`); a rule that decides in ``finish`` keeps the batch's id column beside its other
per-row arrays (:func:`id_column`, shared with the batch, so several rules cost memory once for
string ids) and looks the flagged positions up at the end (:func:`take_ids`). Without an id
role every function returns None and the flags have no ids.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from .._arrow import one_chunk, strings, take
from .._compute import cast
from .._compute import take as compute_take
from ..features import Batch


def id_column(batch: Batch) -> pa.Array | None:
    """The batch's id column as large strings (None without an id role)."""
    col = batch.role("id")
    if col is None:
        return None
    col = one_chunk(col)
    if pa.types.is_large_string(col.type):
        return col
    try:
        return cast(col, pa.large_string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # lists, structs: their text
        return strings([None if v is None else str(v) for v in col.to_pylist()])


def ids_at(batch: Batch, idx: np.ndarray | Sequence[int]) -> list[str | None] | None:
    """Ids of the batch's rows at positions ``idx`` (within the batch)."""
    col = id_column(batch)
    if col is None:
        return None
    return take(col, np.asarray(idx, np.int64)).to_pylist()  # (pa.array would import pandas)


def take_ids(parts: list[pa.Array], positions: np.ndarray | Sequence[int]) -> list[str | None]:
    """Ids at ``positions`` of the concatenated ``parts``; all None when there are no parts."""
    positions = np.asarray(positions, np.int64)
    if not parts:
        return [None] * len(positions)
    ids = pa.chunked_array(parts, pa.large_string())
    return compute_take(ids, positions).to_pylist()

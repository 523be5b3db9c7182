"""The duplicate rate per source (DUP001, DUP002): the source column kept per batch, counted in
``finish``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..._arrow import numeric_array, strings
from ..._compute import call, cast, take
from ...features import Batch
from .._ids import id_column


def source_values(batch: Batch) -> pa.Array | None:
    """The batch's source column as strings, ``(none)`` for nulls (None without a source role)."""
    col = batch.role("source")
    if col is None:
        return None
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return call("coalesce", cast(col, pa.large_string()), strings(["(none)"])[0])


def with_row_labels(cols: dict[str, pa.Array], batch: Batch, at: pa.Array) -> pa.Table:
    """``cols`` plus the rows' ``id`` and ``source`` (those the batch has) at positions ``at``:
    the payload DUP001 and DUP002 carry to their clusters."""
    ids = id_column(batch)
    if ids is not None:
        cols["id"] = take(ids, at)
    sources = source_values(batch)
    if sources is not None:
        cols["source"] = take(sources, at)
    return pa.table(cols)


def two_labels(mask: np.ndarray, yes: str, no: str) -> pa.DictionaryArray:
    """``yes`` where ``mask``, else ``no``: a dictionary of two, no string per row (the
    kept/duplicate labels of DUP001's and DUP002's flags)."""
    return pa.DictionaryArray.from_arrays(
        numeric_array((~mask).astype(np.int8)), strings([yes, no], pa.string())
    )

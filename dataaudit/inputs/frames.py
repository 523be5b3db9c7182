"""In-memory frames → a split: pyarrow tables and batches, polars (eager or lazy) and pandas
frames, dicts of columns. Tables are streamed in zero-copy slices; a LazyFrame's query runs
batch by batch, never collected whole."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from ..errors import InputError
from .notes import InputLog
from .probes import is_pandas_frame, is_polars_frame, is_polars_lazy
from .records import records_table
from .source import SplitSource, table_split

__all__ = ["frame_split"]


def frame_split(name: str, obj: Any, log: InputLog) -> SplitSource | None:
    """``obj`` as a split; None when it is not a frame."""
    if is_polars_lazy(obj):
        return _lazy_frame_split(name, obj)
    table = _to_table(obj, name, log)
    if table is None:
        return None
    return table_split(name, table, type(obj).__name__)


def _to_table(obj: Any, what: str, log: InputLog) -> pa.Table | None:
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, Mapping):
        try:
            return pa.table(dict(obj))
        except UnicodeEncodeError:
            columns = {str(k): list(v) for k, v in obj.items()}
            rows = [dict(zip(columns, vals)) for vals in zip(*columns.values())]
            return records_table(rows, what, log)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
            raise InputError(
                f"{what}: cannot read the dict of columns as a table ({exc})."
            ) from None
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    if is_polars_frame(obj):
        return obj.to_arrow()
    if is_pandas_frame(obj):
        if not obj.columns.is_unique:
            dupes = sorted({str(c) for c in obj.columns[obj.columns.duplicated()]})
            raise InputError(
                f"{what}: the column(s) {', '.join(map(repr, dupes))} appear more than once; "
                "column names must be unique. Rename the duplicates."
            )
        try:
            return pa.Table.from_pandas(obj, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeEncodeError):
            return records_table(obj.to_dict("records"), what, log)
    return None


def _lazy_frame_split(name: str, frame: Any) -> SplitSource:
    """A polars LazyFrame, streamed: its query runs once per pass, batch by batch."""
    import polars as pl

    try:
        schema = pl.DataFrame(schema=frame.collect_schema()).to_arrow().schema
    except Exception as exc:  # polars raises its own error types for a bad query
        raise InputError(
            f"{name}: the LazyFrame's query fails ({type(exc).__name__}: {exc})."
        ) from None

    def source(batch_size: int) -> Iterator[pa.RecordBatch]:
        for df in frame.collect_batches(chunk_size=batch_size):
            for rb in df.to_arrow().to_batches(max_chunksize=batch_size):
                if rb.num_rows:
                    yield rb

    return SplitSource(name, source, None, schema, "polars.LazyFrame")

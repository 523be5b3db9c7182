"""In-memory inputs: pyarrow tables and batches, polars and pandas frames, dicts and lists of
records → one Arrow table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ..errors import InputError
from ..readers import table_batches
from ..rule import Severity
from .jsonl import SURROGATES_REPLACED
from .notes import InputLog
from .probes import is_pandas_frame, is_polars_frame, is_polars_lazy
from .records import iter_records
from .source import SplitSource

__all__ = [
    "from_arrow_table",
    "lazy_frame_split",
    "records_table",
    "repair_sink",
    "to_table",
    "unify",
]


def from_arrow_table(name: str, table: pa.Table, origin: str) -> SplitSource:
    return SplitSource(name, table_batches(table), table.num_rows, table.schema, origin)


def repair_sink(log: InputLog, what: str):
    def sink(n: int) -> None:
        log.add("surrogates", Severity.INFO, SURROGATES_REPLACED, count=n, place=what)

    return sink


def records_table(records: list[dict[str, Any]], what: str, log: InputLog) -> pa.Table:
    """Records → one table whose columns are every key of every record."""
    sink = repair_sink(log, what)
    batches = list(iter_records(records, 65536, on_repair=sink))
    if not batches:
        return pa.table({})
    try:
        return pa.Table.from_batches(unify(batches))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        # a column whose type differs between batches: one batch keeps mixed values as text
        return pa.Table.from_batches([next(iter_records(records, len(records), on_repair=sink))])


def to_table(obj: Any, what: str, log: InputLog) -> pa.Table | None:
    """In-memory tabular objects → Arrow table; None if ``obj`` is not one of them."""
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
    if isinstance(obj, list):
        if obj and not all(isinstance(r, Mapping) for r in obj):
            bad = next(i for i, r in enumerate(obj) if not isinstance(r, Mapping))
            raise InputError(
                f"{what}: a list input must hold one dict per row; item {bad} is "
                f"{type(obj[bad]).__name__}. Pass e.g. [{{'text': ...}}, ...]."
            )
        return records_table([dict(r) for r in obj], what, log)
    return None


def unify(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    if len({b.schema for b in batches}) == 1:
        return batches
    schema = pa.unify_schemas([b.schema for b in batches], promote_options="permissive")
    out = []
    for b in batches:
        cols = []
        for f in schema:
            idx = b.schema.get_field_index(f.name)
            if idx < 0:
                cols.append(pa.nulls(b.num_rows, f.type))
            else:
                col = b.column(idx)
                cols.append(col if col.type == f.type else col.cast(f.type))
        out.append(pa.RecordBatch.from_arrays(cols, schema=schema))
    return out


def lazy_frame_split(name: str, frame: Any) -> SplitSource | None:
    """A polars LazyFrame, streamed: its query runs once per pass, batch by batch, never
    collected whole (None when ``frame`` is not one)."""
    if not is_polars_lazy(frame):
        return None
    import polars as pl

    try:
        schema = pl.DataFrame(schema=frame.collect_schema()).to_arrow().schema
    except Exception as exc:  # polars raises its own error types for a bad query
        raise InputError(
            f"{name}: the LazyFrame's query fails ({type(exc).__name__}: {exc})."
        ) from None

    def source(batch_size: int):
        for df in frame.collect_batches(chunk_size=batch_size):
            for rb in df.to_arrow().to_batches(max_chunksize=batch_size):
                if rb.num_rows:
                    yield rb

    return SplitSource(name, source, None, schema, "polars.LazyFrame")

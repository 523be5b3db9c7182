"""``split="column"``: one input partitioned into splits by the value of a column."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from ..errors import InputError, close_matches
from .arrow import plain_batch
from .roles import column_names
from .source import SplitSource

__all__ = ["column_splits", "partition"]


def column_splits(
    splits: dict[str, SplitSource], column: str, schema: pa.Schema
) -> dict[str, SplitSource]:
    """A split per distinct value of ``column`` (in order of first appearance; null is
    "null"), each streaming the one input's batches (``partition`` takes its rows from them)."""
    if len(splits) != 1:
        raise InputError(
            f"split={column!r} partitions one input by a column, but the input already has "
            f"{len(splits)} splits ({', '.join(splits)}). Pass one table, or drop split=."
        )
    names = column_names(schema)
    if column not in names:
        raise InputError(
            f"split={column!r}: no such column. Available columns: {', '.join(names)}."
            + close_matches(column, names)
        )
    first = next(iter(splits.values()))
    return {
        v: SplitSource(
            v,
            first.batches,
            None,
            schema,
            f"{first.origin} where {column} == {v!r}",
            parts=first.parts,
            paths=first.paths,
            complete=first.complete,
        )
        for v in _distinct_values(first, column)
    }


def _distinct_values(src: SplitSource, column: str) -> list[str]:
    seen: dict[str, None] = {}
    for _, source in src.iter_parts():
        for rb in source(65536):
            idx = rb.schema.get_field_index(column)
            if idx < 0:
                seen.setdefault("null", None)
                continue
            for v in plain_batch(rb).column(idx).cast(pa.string()).to_pylist():
                seen.setdefault("null" if v is None else v, None)
    return list(seen)


def partition(rb: pa.RecordBatch, column: str) -> Iterator[tuple[str, pa.RecordBatch]]:
    """(split, rows of ``rb`` in that split), splits in order of first appearance."""
    values = rb.column(rb.schema.get_field_index(column)).cast(pa.string()).to_pylist()
    order: dict[str, list[int]] = {}
    for i, v in enumerate(values):
        order.setdefault("null" if v is None else v, []).append(i)
    for name, idx in order.items():
        yield name, rb.take(pa.array(idx, pa.int64()))

"""Arrow batches as the rules expect them, whatever library produced them.

Text stored dictionary-encoded (Parquet dictionary columns, polars ``Categorical``, pandas
``category``) is decoded to plain strings: rules look for string columns, and a dictionary column
would otherwise be skipped by every text rule.
"""

from __future__ import annotations

import pyarrow as pa

from ..errors import InputError

__all__ = ["check_names", "plain_batch", "plain_schema", "plain_type"]


def plain_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def plain_schema(schema: pa.Schema) -> pa.Schema:
    if not any(pa.types.is_dictionary(f.type) for f in schema):
        return schema
    return pa.schema([f.with_type(plain_type(f.type)) for f in schema], metadata=schema.metadata)


def check_names(schema: pa.Schema, origin: str) -> None:
    names = schema.names
    if len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise InputError(
            f"{origin}: the column(s) {', '.join(map(repr, dupes))} appear more than once; "
            "column names must be unique. Rename the duplicates."
        )


def plain_batch(rb: pa.RecordBatch) -> pa.RecordBatch:
    """``rb`` with dictionary columns decoded (zero-copy when there are none)."""
    if not any(pa.types.is_dictionary(t) for t in rb.schema.types):
        return rb
    columns = [
        col.dictionary_decode() if pa.types.is_dictionary(col.type) else col for col in rb.columns
    ]
    return pa.RecordBatch.from_arrays(columns, schema=plain_schema(rb.schema))

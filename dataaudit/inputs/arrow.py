"""Arrow batches as the rules expect them, whatever library produced them.

Text stored dictionary-encoded (Parquet dictionary columns, polars ``Categorical``, pandas
``category``) is decoded to plain strings, and extension types become their storage (``datasets``
stores chat messages whose keys vary as ``list<arrow.json>``: JSON text per message). Rules look
for strings and lists and would otherwise skip such columns, each one silently.
"""

from __future__ import annotations

import pyarrow as pa

from ..errors import InputError

__all__ = ["check_names", "plain_batch", "plain_schema", "plain_type"]


def plain_type(t: pa.DataType) -> pa.DataType:
    """``t`` with dictionaries decoded and extension types replaced by their storage, nested
    types included."""
    if isinstance(t, pa.BaseExtensionType):
        return plain_type(t.storage_type)
    if pa.types.is_dictionary(t):
        return plain_type(t.value_type)
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, plain_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(pa.field(t.value_field.name, plain_type(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, plain_type(f.type), f.nullable) for f in t])
    return t


def plain_schema(schema: pa.Schema) -> pa.Schema:
    if all(plain_type(f.type) == f.type for f in schema):
        return schema
    return pa.schema(
        [pa.field(f.name, plain_type(f.type), f.nullable) for f in schema],
        metadata=schema.metadata,
    )


def check_names(schema: pa.Schema, origin: str) -> None:
    names = schema.names
    if len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise InputError(
            f"{origin}: the column(s) {', '.join(map(repr, dupes))} appear more than once; "
            "column names must be unique. Rename the duplicates."
        )


def plain_batch(rb: pa.RecordBatch) -> pa.RecordBatch:
    """``rb`` with plain types (zero-copy when it has them already)."""
    schema = plain_schema(rb.schema)
    if schema is rb.schema:
        return rb
    columns = [
        col if col.type == f.type else _decoded(col, f.type) for col, f in zip(rb.columns, schema)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _decoded(col: pa.Array, t: pa.DataType) -> pa.Array:
    if isinstance(col, pa.ExtensionArray):
        col = col.storage
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    return col if col.type == t else col.cast(t)

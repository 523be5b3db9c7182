"""A split's columns before it is streamed: cheap where the input states them, else from its
first rows; and the union of the splits' columns, from which the roles are chosen."""

from __future__ import annotations

import pyarrow as pa

from .arrow import check_names, plain_schema
from .files import file_schema, first_record_schema
from .jsonl import read_in_one_block
from .notes import InputLog
from .source import SplitSource

__all__ = ["peek_schema", "union_schemas"]


def peek_schema(split: SplitSource, log: InputLog) -> pa.Schema:
    """The split's columns: from metadata when that is cheap and whole (Parquet, CSV headers,
    tables), else from the first batch and the first record of every other file (JSON Lines),
    in which case later records may still add columns (``split.complete`` is False)."""
    if split.schema is not None:
        split.schema = plain_schema(split.schema)
        check_names(split.schema, split.origin)
        return split.schema
    schemas: list[pa.Schema] = []
    log.muted = True  # these rows are read again by the stream; note them once, there
    try:
        for i, (_, source) in enumerate(split.iter_parts()):
            whole = split.num_rows is not None
            if split.paths:
                path = split.paths[i]
                # a first record's columns are used for later files only (the first file's
                # batch types them better); building them costs a records conversion
                cheap, whole = (
                    (None, False) if i == 0 and first_record_schema(path) else file_schema(path)
                )
                if cheap is not None and (whole or i > 0):
                    schemas.append(cheap)
                    split.complete = split.complete and whole
                    continue
                whole = whole or read_in_one_block(path)
            # the first batch types columns better than one record; a part that fits in it
            # has been read whole
            batches = source(256)
            first = next(batches, None)
            if first is not None:
                schemas.append(first.schema)
                whole = whole or next(batches, None) is None
            split.complete = split.complete and whole
    finally:
        log.muted = False
    split.schema = union_schemas(schemas) if schemas else pa.schema([])
    check_names(split.schema, split.origin)
    return split.schema


def union_schemas(schemas: list[pa.Schema]) -> pa.Schema:
    """Every column of every schema, first type seen where types disagree."""
    fields: dict[str, pa.Field] = {}
    for schema in schemas:
        for f in plain_schema(schema):
            if f.name not in fields or pa.types.is_null(fields[f.name].type):
                fields[f.name] = f
    return pa.schema(list(fields.values()))

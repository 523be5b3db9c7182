"""The label column as class keys: one string per row (None for null), and each value's type.

Labels arrive as strings, ints, bools, floats, lists (multi-label) or, when a column mixes
types, as JSON text with a ``__dataaudit_type__<col>`` marker column (see readers). Every label
rule reads this one view, so "1" the int and "1" the string, ``true`` and nulls are treated the
same way everywhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa

from .._arrow import nulls_like, one_chunk
from .._compute import pc
from .base import Batch, register_feature


@dataclass(frozen=True)
class LabelColumn:
    """Per-row class key (``None`` for null/NaN) and the value's type name (``"null"`` for null)."""

    values: list[str | None]
    types: list[str]


def _type_name(t: pa.DataType) -> str:
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return "list"
    if pa.types.is_struct(t) or pa.types.is_map(t):
        return "object"
    return str(t)


def _key(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:  # NaN is a missing label
            return None
        return repr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


@register_feature("label")
def label_feature(batch: Batch) -> LabelColumn:
    name = batch.roles.label
    n = batch.num_rows
    if not batch.has_column(name):
        return LabelColumn([None] * n, ["null"] * n)
    arr = one_chunk(batch.column(name))
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    tname = _type_name(arr.type)
    if tname == "string":
        values = arr.cast(pa.large_string()).to_pylist()
        markers = batch.type_markers(name)
        kinds = markers.to_pylist() if markers is not None else [None] * n
        types = [
            "null" if v is None else (k or "string") for v, k in zip(values, kinds, strict=True)
        ]
        return LabelColumn(values, types)
    if pa.types.is_floating(arr.type):
        arr = pc.if_else(pc.is_nan(arr), nulls_like(arr), arr)
    values = [_key(v) for v in arr.to_pylist()]
    return LabelColumn(values, ["null" if v is None else tname for v in values])

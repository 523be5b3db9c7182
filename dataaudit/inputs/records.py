"""Python records (dicts) → Arrow record batches, losing nothing.

* The schema is the union of every record's keys, in order of first appearance: a ``label`` that
  starts on row 2 is a column (``pa.RecordBatch.from_pylist`` alone takes the first record's keys
  and silently drops the rest).
* A value whose type differs from the rest of its column (a number in a text column) is kept as
  its JSON text and marked in a companion column ``__dataaudit_type__<column>``, so the format
  rules can report it instead of the reader crashing or changing the data.
* Lone surrogates (``"\\ud800"``: valid JSON, common in scraped text, not encodable as UTF-8) are
  replaced by U+FFFD, which TXT002 reports as encoding damage; the count goes to the input log.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from .._arrow import strings
from ..errors import InputError
from ..rule import TYPE_MARKER_PREFIX, Severity
from .notes import InputLog
from .source import SplitSource, table_split

__all__ = [
    "SURROGATES_REPLACED",
    "TYPE_MARKER_PREFIX",
    "columns_to_batch",
    "iter_records",
    "python_type",
    "record_keys",
    "records_split",
    "records_table",
    "records_to_batch",
    "repair_sink",
    "replace_surrogates",
]

SURROGATES_REPLACED = (
    "{count} lone surrogates (e.g. \\ud800: valid JSON, not valid Unicode text) were replaced "
    "by U+FFFD; TXT002 reports the rows as encoding damage"
)

_SURROGATE = re.compile("[\ud800-\udfff]")
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError)

#: called with the number of values repaired in a batch (lone surrogates replaced)
RepairSink = Callable[[int], None]


def python_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def record_keys(records: Iterable[dict[str, Any]]) -> list[str]:
    """Every key of every record, in order of first appearance."""
    seen: dict[str, None] = {}
    for rec in records:
        for key in rec:
            if key not in seen:
                seen[key] = None
    return list(seen)


def replace_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` with lone surrogates in every nested string replaced by U+FFFD, and how many."""
    if isinstance(value, str):
        fixed, n = _SURROGATE.subn("\ufffd", value)
        return fixed, n
    if isinstance(value, dict):
        total = 0
        out = {}
        for k, v in value.items():
            k2, a = replace_surrogates(k) if isinstance(k, str) else (k, 0)
            v2, b = replace_surrogates(v)
            out[k2] = v2
            total += a + b
        return out, total
    if isinstance(value, (list, tuple)):
        total = 0
        items = []
        for v in value:
            v2, n = replace_surrogates(v)
            items.append(v2)
            total += n
        return items, total
    return value, 0


def records_to_batch(
    records: list[dict[str, Any]],
    schema: pa.Schema | None = None,
    *,
    names: list[str] | None = None,
    on_repair: RepairSink | None = None,
) -> pa.RecordBatch:
    """A record batch with a column for every key of every record (``names``, when given, fixes
    the column order and adds columns no record in this batch has, as nulls)."""
    keys = record_keys(records)
    if names is not None:
        keys = list(names) + [k for k in keys if k not in set(names)]
    try:
        return _build(records, keys, schema)
    except UnicodeEncodeError:
        repaired = []
        total = 0
        for rec in records:
            fixed, n = replace_surrogates(rec)
            repaired.append(fixed)
            total += n
        if on_repair is not None and total:
            on_repair(total)
        return _build(repaired, record_keys(repaired) if names is None else keys, schema)


def _has_integers(kind: pa.DataType) -> bool:
    """Whether ``kind`` holds integers, at any depth (a list of ints, a struct with one)."""
    return pa.types.is_integer(kind) or any(
        _has_integers(kind.field(i).type) for i in range(kind.num_fields)
    )


def _as_typed(typed: pa.Array, values: list[Any]) -> bool:
    """Whether ``typed`` (``pa.array`` of ``values`` with a schema's type) holds the values as
    they were: pyarrow truncates a float given for an integer type (1.5 -> 1, at any depth)
    where it rejects other mismatches, so a column typed int by a file's first block would
    silently change a later 1.5."""
    return not _has_integers(typed.type) or typed.to_pylist() == values


def _build(
    records: list[dict[str, Any]], keys: list[str], schema: pa.Schema | None
) -> pa.RecordBatch:
    if schema is not None and set(schema.names) >= set(keys):
        try:
            batch = pa.RecordBatch.from_pylist(records, schema=schema)
        except _ARROW_ERRORS:
            batch = None
        if batch is not None and all(
            _as_typed(batch.column(i), [rec.get(f.name) for rec in records])
            for i, f in enumerate(schema)
        ):
            return batch
    arrays: list[pa.Array] = []
    fields: list[str] = []
    for name in keys:
        values = [rec.get(name) for rec in records]
        typed = None
        if schema is not None and schema.get_field_index(name) >= 0:
            try:
                typed = pa.array(values, type=schema.field(name).type)
            except _ARROW_ERRORS:
                typed = None
            if typed is not None and not _as_typed(typed, values):
                typed = None  # typed from the values instead, as if the schema had not said
        if typed is None and _without_pa_array(len(values)):
            typed = _plain_column(values)
        if typed is None and not _text_and_other(values):
            try:
                typed = pa.array(values)
            except _ARROW_ERRORS:
                typed = None
        if typed is not None:
            arrays.append(typed)
            fields.append(name)
            continue
        kinds = [None if v is None else python_type(v) for v in values]
        as_text = [
            None if v is None else v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
            for v in values
        ]
        arrays.append(strings(as_text, pa.string()))
        fields.append(name)
        arrays.append(strings([None if k in (None, "string") else k for k in kinds], pa.string()))
        fields.append(TYPE_MARKER_PREFIX + name)
    if not fields:
        return pa.RecordBatch.from_pydict({})
    return pa.RecordBatch.from_arrays(arrays, names=fields)


#: values this process types from buffers before it lets ``pa.array`` type them: its first
#: call imports pandas (0.35-0.7 s, when installed); the buffers cost ~0.35 µs more per text
#: value (200k: 78 vs 11 ms), so after about a million the import is the cheaper
BUFFER_VALUES = 1_000_000
_buffer_values = 0


def _without_pa_array(n: int) -> bool:
    """Whether to build a column of n plain values from buffers: pandas is not loaded yet and
    this process has not built BUFFER_VALUES that way."""
    global _buffer_values
    if "pandas" in sys.modules or _buffer_values >= BUFFER_VALUES:
        return False
    _buffer_values += n
    return True


#: the Arrow type ``pa.array`` gives a column of one Python scalar type (and None)
_PLAIN = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}
_NUMPY = {int: np.int64, float: np.float64}
#: the largest int a double holds exactly: ``pa.array`` of ints and floats rejects a larger one
_EXACT_INT = 2**53


def _plain_column(values: list[Any]) -> pa.Array | None:
    """``pa.array(values)`` for a column of one plain type (str, int, float or bool, and
    None; ints and floats together are doubles), built from buffers; None for any other
    column (``pa.array`` types it): a list of records of texts and labels needs none of what
    pandas brings."""
    kinds = set(map(type, values))
    kinds.discard(type(None))
    if kinds == {int, float}:  # pa.array's doubles, while every int is exactly a double
        if any(type(v) is int and abs(v) > _EXACT_INT for v in values):
            return None  # pa.array rejects it, as it would here
        kinds = {float}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    if kind not in _PLAIN:
        return None
    if kind is str:
        return strings(values, pa.string())
    valid = None
    if any(v is None for v in values):
        valid = np.array([v is not None for v in values])
    if kind is bool:
        bits = np.packbits([bool(v) for v in values], bitorder="little")
        buffers = [None if valid is None else _bitmap(valid), pa.py_buffer(bits)]
        return pa.Array.from_buffers(pa.bool_(), len(values), buffers)
    try:
        data = np.array([0 if v is None else v for v in values], _NUMPY[kind])
    except OverflowError:  # an int beyond int64: pa.array's uint64 or error
        return None
    buffers = [None if valid is None else _bitmap(valid), pa.py_buffer(data)]
    return pa.Array.from_buffers(_PLAIN[kind], len(values), buffers)


#: the other JSON types: ``pa.array`` rejects a column mixing str with any of them
_JSON_OTHER = frozenset({int, float, bool, dict, list})


def _text_and_other(values: list[Any]) -> bool:
    """Whether the column mixes str with other JSON types (only those): ``pa.array`` rejects
    every such mix whatever comes first, and its first call imports pandas, so the column goes
    straight to its text form."""
    kinds = set(map(type, values))
    kinds.discard(type(None))
    return str in kinds and len(kinds) > 1 and kinds - {str} <= _JSON_OTHER


def _bitmap(valid: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def iter_records(
    records: list[dict[str, Any]], batch_size: int, *, on_repair: RepairSink | None = None
) -> Iterator[pa.RecordBatch]:
    """Batches of in-memory records; every batch has every column of the whole list."""
    names = record_keys(records)
    for start in range(0, len(records), batch_size):
        yield records_to_batch(
            records[start : start + batch_size], names=names, on_repair=on_repair
        )


def columns_to_batch(
    chunk: Mapping[str, list[Any]], *, on_repair: RepairSink | None = None
) -> pa.RecordBatch:
    """A dict of equal-length columns (``datasets``' batches) → a batch; columns Arrow cannot
    type as they are (mixed values, lone surrogates) are built as records are."""
    try:
        return pa.RecordBatch.from_pydict(dict(chunk))
    except (*_ARROW_ERRORS, UnicodeEncodeError):
        keys = list(chunk)
        rows = [dict(zip(keys, row)) for row in zip(*(chunk[k] for k in keys))]
        return records_to_batch(rows, on_repair=on_repair)


def repair_sink(log: InputLog, what: str) -> RepairSink:
    """Where the count of lone surrogates replaced in ``what`` goes: the input log."""

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


def unify(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    """Batches with one schema: every column of any batch, types promoted."""
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


def records_split(name: str, records: list[Any], what: str, log: InputLog) -> SplitSource:
    """A list of dicts (one per row) as a split."""
    if records and not all(isinstance(r, Mapping) for r in records):
        bad = next(i for i, r in enumerate(records) if not isinstance(r, Mapping))
        raise InputError(
            f"{what}: a list input must hold one dict per row; item {bad} is "
            f"{type(records[bad]).__name__}. Pass e.g. [{{'text': ...}}, ...]."
        )
    return table_split(name, records_table([dict(r) for r in records], what, log), "list")

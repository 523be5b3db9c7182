"""Any supported input → a Corpus: named splits that stream Arrow record batches, plus column roles.

Accepted: a path (file, glob or folder of split files), a Hugging Face Dataset / DatasetDict /
IterableDataset, a polars or pandas frame, a pyarrow Table / RecordBatch, a list of dicts, or a
dict mapping split names to any of those. ``split="column"`` partitions one input by a column.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from . import readers
from .errors import InputError, close_matches
from .inputs.arrow import check_names, plain_batch, plain_schema
from .inputs.frames import from_arrow_table, lazy_frame_split, to_table
from .inputs.hf import hf_split
from .inputs.jsonl import read_in_one_block
from .inputs.notes import InputLog
from .inputs.paths import path_splits
from .inputs.probes import is_hf_dataset, is_hf_dataset_dict
from .inputs.roles import (
    ROLE_HINTS,
    ROLE_NAMES,
    Roles,
    column_names,
    detect_roles,
    split_kind,
)
from .inputs.source import Reading, SplitSource
from .rule import Severity

__all__ = [
    "ROLE_NAMES",
    "Corpus",
    "Roles",
    "SplitSource",
    "detect_roles",
    "load_corpus",
    "split_kind",
]


@dataclass
class Corpus:
    """Named splits that stream Arrow batches, the column roles, and the input log.

    Every streamed batch has every column of ``schema`` (columns a batch lacks are added as
    nulls), so rules see one shape. What the stream cannot take as given goes to ``log``: a
    column that turns up after the roles were chosen, a role column missing from a file.
    """

    splits: dict[str, SplitSource]
    roles: Roles
    split_column: str | None = None
    log: InputLog = field(default_factory=InputLog)
    schema: pa.Schema | None = None  # the union over splits; roles were chosen from it
    given_roles: dict[str, str] = field(default_factory=dict)
    #: per split, the files its rows came from, in order, as streamed: ``{path, format, rows}``
    #: (CI annotations turn a split's row into a file's row or line)
    files: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def stream(self, batch_size: int) -> Iterator[tuple[str, pa.RecordBatch]]:
        """(split, batch) pairs, each split's rows in input order."""
        shape = _Shape(self)
        if self.split_column is None:
            for name, split in self.splits.items():
                self.log.current_split = name
                row = 0
                files = self.files[name] = []
                paths = split.paths if len(split.paths) == len(split.iter_parts()) else []
                for part, (origin, source) in enumerate(split.iter_parts()):
                    start = row
                    for rb in source(batch_size):
                        if rb.num_rows:
                            rb = shape.conform(rb, name, row, origin)
                            row += rb.num_rows
                            yield name, rb
                    if paths:
                        path = paths[part]
                        fmt = readers.file_format(path)
                        files.append({"path": str(path), "format": fmt, "rows": row - start})
            self.log.current_split = None
            shape.close()
            return
        # one source, partitioned by a column; every split source shares the same batches
        first = next(iter(self.splits.values()))
        col = self.split_column
        rows: dict[str, int] = {}
        for origin, source in first.iter_parts():
            for rb in source(batch_size):
                if not rb.num_rows:
                    continue
                rb = shape.conform(rb, None, None, origin)
                values = rb.column(rb.schema.get_field_index(col)).cast(pa.string()).to_pylist()
                order: dict[str, list[int]] = {}
                for i, v in enumerate(values):
                    order.setdefault("null" if v is None else v, []).append(i)
                for name, idx in order.items():
                    rows[name] = rows.get(name, 0) + len(idx)
                    yield name, rb.take(pa.array(idx, pa.int64()))
        shape.close()


class _Shape:
    """Holds every streamed batch to the corpus schema and notes where the input departs from it."""

    def __init__(self, corpus: Corpus):
        self.corpus = corpus
        schema = corpus.schema or pa.schema([])
        self.types = {f.name: f.type for f in schema}
        for column in corpus.given_roles.values():  # named, expected in later records
            self.types.setdefault(column, pa.null())
        self.role_columns = {c: r for r, c in corpus.roles.columns().items()}
        self.seen: set[str] = set()

    def conform(
        self, rb: pa.RecordBatch, split: str | None, row: int | None, origin: str
    ) -> pa.RecordBatch:
        rb = plain_batch(rb)
        names = rb.schema.names
        if len(set(names)) != len(names):
            check_names(rb.schema, origin)
        self.seen.update(names)
        for name in names:
            if name not in self.types:
                col = rb.column(rb.schema.get_field_index(name))
                first = pc.index(pc.is_valid(col), True).as_py()  # its first non-null value
                at = None if row is None else row + max(first, 0)
                self._late(name, col.type, split, at, origin)
            elif pa.types.is_null(self.types[name]) and not pa.types.is_null(
                rb.schema.field(name).type
            ):
                self.types[name] = rb.schema.field(name).type
        missing = [n for n in self.types if n not in set(names)]
        if not missing:
            return rb
        arrays = list(rb.columns)
        fields = list(rb.schema)
        for name in missing:
            t = self.types[name]
            arrays.append(pa.nulls(rb.num_rows, t))
            fields.append(pa.field(name, t))
            role = self.role_columns.get(name)
            if role is not None:  # a file (or block) without the column: its rows read as nulls
                self.corpus.log.add(
                    "missing_column",
                    Severity.WARN,
                    f"{{count}} rows: the {role} column {name!r} is absent from whole files or "
                    "blocks, so these rows are read as nulls (FMT001 counts them). Check that those files belong "
                    "to this dataset",
                    column=name,
                    count=rb.num_rows,
                    row=row,
                    place=origin,
                )
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    def _late(
        self, name: str, t: pa.DataType, split: str | None, row: int | None, origin: str
    ) -> None:
        """A column that was not in the schema the roles were chosen from."""
        self.types[name] = t
        if name.startswith(readers.TYPE_MARKER_PREFIX):
            return
        where = f"{split!r} row {row:,}" if split is not None and row is not None else "a row"
        union = pa.schema([pa.field(n, ty) for n, ty in self.types.items()])
        would = detect_roles(union, self.corpus.given_roles, deferred=True)
        role = next((r for r, c in would.columns().items() if c == name), None)
        taken = role is not None and getattr(self.corpus.roles, role) != name
        if taken:
            self.corpus.log.add(
                "late_column",
                Severity.ERROR,
                f"column {name!r} first appears at {where} ({origin}), after the column roles "
                f"were chosen from the first records, so it was not audited as the {role}. Put "
                f'the key in the first record (null is fine: "{name}": null) or name it: '
                f"{role}={name!r} (CLI: --{role} {name})",
                column=name,
                row=row,
                place=origin,
            )
        else:
            self.corpus.log.add(
                "late_column",
                Severity.INFO,
                f"column {name!r} first appears at {where} ({origin}); no rule reads it",
                column=name,
                row=row,
                place=origin,
            )

    def close(self) -> None:
        """Role columns the user named that no row had."""
        for role, column in self.corpus.given_roles.items():
            if column not in self.seen and column in self.role_columns:
                self.corpus.log.add(
                    "missing_column",
                    Severity.ERROR,
                    f"the {role} column {column!r} was named but no record has it, so nothing "
                    f"was audited as the {role}. Check the name",
                    column=column,
                    count=0,
                )


def _single_input_splits(obj: Any, name: str, reading: Reading) -> dict[str, SplitSource]:
    if isinstance(obj, (str, Path)):
        splits = path_splits(obj, reading)
        if len(splits) == 1 and name != "train":
            only = next(iter(splits.values()))
            only.name = name
            return {name: only}
        return splits
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(p, (str, Path)) for p in obj):
        out: dict[str, SplitSource] = {}
        for p in obj:
            for k, v in path_splits(p, reading).items():
                if k in out:
                    raise InputError(
                        f"split {k!r} comes from two inputs ({out[k].origin} and {v.origin}); "
                        "pass a dict {split_name: path} to name them."
                    )
                out[k] = v
        return out
    cls = type(obj).__name__
    if is_hf_dataset_dict(obj):
        return {str(k): hf_split(str(k), v, reading.log) for k, v in obj.items()}
    if is_hf_dataset(obj):
        split_name = str(getattr(obj, "split", None) or name)
        return {split_name: hf_split(split_name, obj, reading.log)}
    lazy = lazy_frame_split(name, obj)
    if lazy is not None:
        return {name: lazy}
    table = to_table(obj, name, reading.log)
    if table is not None:
        return {name: from_arrow_table(name, table, cls)}
    raise InputError(
        f"cannot audit a {type(obj).__module__}.{cls}. Pass a file path, a folder, a Hugging Face "
        "Dataset/DatasetDict, a polars or pandas DataFrame, a pyarrow Table or a list of dicts."
    )


def _peek_schema(split: SplitSource, log: InputLog) -> pa.Schema:
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
                cheap, whole = readers.file_schema(split.paths[i])
                if cheap is not None and (whole or i > 0):
                    schemas.append(cheap)
                    split.complete = split.complete and whole
                    continue
                whole = whole or read_in_one_block(split.paths[i])
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
    split.schema = _union(schemas) if schemas else pa.schema([])
    check_names(split.schema, split.origin)
    return split.schema


def _union(schemas: list[pa.Schema]) -> pa.Schema:
    """Every column of every schema, first type seen where types disagree."""
    fields: dict[str, pa.Field] = {}
    for schema in schemas:
        for f in plain_schema(schema):
            if f.name not in fields or pa.types.is_null(fields[f.name].type):
                fields[f.name] = f
    return pa.schema(list(fields.values()))


def load_corpus(
    data: Any,
    *,
    split: str | None = None,
    roles: Mapping[str, str | None] | None = None,
    on_bad_lines: str = "error",
) -> Corpus:
    """Resolve any supported input into a Corpus with split names, kinds and column roles."""
    from .inputs.jsonl import BAD_LINE_POLICIES

    if on_bad_lines not in BAD_LINE_POLICIES:
        raise InputError(
            f"on_bad_lines={on_bad_lines!r}: use one of {', '.join(BAD_LINE_POLICIES)}."
        )
    reading = Reading(InputLog(), on_bad_lines)
    if isinstance(data, Mapping) and not looks_like_columns(data):
        if not data:
            raise InputError("the dict of splits is empty; pass {'train': data, ...}.")
        splits: dict[str, SplitSource] = {}
        for key, value in data.items():
            found = _single_input_splits(value, str(key), reading)
            if len(found) == 1:  # the dict key names the split
                splits[str(key)] = next(iter(found.values()))
            else:
                splits.update({f"{key}/{name}": src for name, src in found.items()})
    else:
        splits = _single_input_splits(data, "train", reading)
    if not splits:
        raise InputError("no splits found in the input.")

    for src in splits.values():
        _peek_schema(src, reading.log)
    schema = _union([s.schema for s in splits.values() if s.schema is not None])
    complete = all(s.complete for s in splits.values())
    if split is not None:
        if len(splits) != 1:
            raise InputError(
                f"split={split!r} partitions one input by a column, but the input already has "
                f"{len(splits)} splits ({', '.join(splits)}). Pass one table, or drop split=."
            )
        names = column_names(schema)
        if split not in names:
            raise InputError(
                f"split={split!r}: no such column. Available columns: {', '.join(names)}."
                + close_matches(split, names)
            )
        first = next(iter(splits.values()))
        values = _distinct_values(first, split)
        splits = {
            v: SplitSource(
                v,
                first.batches,
                None,
                schema,
                f"{first.origin} where {split} == {v!r}",
                parts=first.parts,
                paths=first.paths,
                complete=first.complete,
            )
            for v in values
        }
    for name, src in splits.items():
        src.name = name
        src.kind = split_kind(name)
    if len(splits) == 1:
        only = next(iter(splits.values()))
        if only.kind == "other":
            only.kind = "train"
    for name, src in splits.items():
        if src.num_rows == 0 or (src.schema is not None and not src.schema.names):
            raise InputError(
                f"split {name!r} ({src.origin}) is empty: it has no rows or no columns. "
                "Remove it or check the file."
            )
    given = {k: v for k, v in dict(roles or {}).items() if v is not None}
    corpus_roles = detect_roles(schema, given, deferred=not complete)
    corpus = Corpus(
        splits,
        corpus_roles,
        split_column=split,
        log=reading.log,
        schema=schema,
        given_roles=given,
    )
    if not corpus_roles.has("text") and not corpus_roles.label:
        names = column_names(schema)
        typed = [  # a column named like text whose values are not strings
            f"{n!r} holds {schema.field(n).type} values, not strings"
            for n in names
            if n.lower() in ROLE_HINTS["text"] + ROLE_HINTS["messages"]
        ]
        raise InputError(
            "found no text column to audit (looked for "
            + ", ".join(ROLE_HINTS["text"][:4])
            + ", messages, prompt/response)"
            + (f": {'; '.join(typed)}" if typed else "")
            + ". Available columns: "
            + ", ".join(f"{n} ({schema.field(n).type})" for n in names)
            + ". Name it with text=COLUMN (CLI: --text COLUMN)."
        )
    return corpus


def looks_like_columns(data: Mapping[str, Any]) -> bool:
    """{'text': [...], 'label': [...]} is one table of columns, not a dict of splits."""
    values = list(data.values())
    return bool(values) and all(
        isinstance(v, list) and (not v or not isinstance(v[0], Mapping)) for v in values
    )


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

"""Any supported input → a Corpus: named splits that stream Arrow record batches, plus column roles.

Accepted: a path (file, glob or folder of split files), a Hugging Face Dataset / DatasetDict /
IterableDataset, a polars or pandas frame, a pyarrow Table / RecordBatch, a list of dicts, or a
dict mapping split names to any of those. ``split="column"`` partitions one input by a column.
"""

from __future__ import annotations

import glob as globlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from . import readers
from .errors import InputError, close_matches
from .inputs.arrow import check_names, plain_batch, plain_schema
from .inputs.jsonl import SURROGATES_REPLACED, read_in_one_block
from .inputs.notes import InputLog
from .inputs.records import iter_records
from .rule import Severity

__all__ = ["Corpus", "Roles", "SplitSource", "load_corpus", "split_kind"]

ROLE_NAMES = ("text", "prompt", "input", "response", "messages", "label", "source", "id")

# Column names that reveal a role, in order of preference.
ROLE_HINTS: dict[str, tuple[str, ...]] = {
    "messages": ("messages", "conversations", "conversation", "chat", "dialog", "dialogue"),
    "prompt": ("prompt", "instruction", "question", "query"),
    "input": ("input", "context"),
    "response": ("response", "output", "completion", "answer", "chosen", "target_text"),
    "label": ("label", "labels", "class", "category", "target", "y", "intent", "sentiment"),
    "source": ("source", "origin", "dataset", "domain", "subset", "data_source", "corpus"),
    "id": ("id", "idx", "uid", "uuid", "_id", "example_id", "row_id", "doc_id"),
    "text": ("text", "content", "document", "sentence", "body", "raw_text", "passage", "doc"),
}


@dataclass
class Roles:
    """Which column plays which part. ``None`` means the dataset has no such column."""

    text: str | None = None
    prompt: str | None = None
    input: str | None = None
    response: str | None = None
    messages: str | None = None
    label: str | None = None
    source: str | None = None
    id: str | None = None
    detected: dict[str, bool] = field(default_factory=dict)  # role -> was it auto-detected

    def has(self, role: str) -> bool:
        if role == "text":  # a text view can be rendered from chat or prompt/response
            return bool(self.text or self.messages or self.prompt or self.response)
        if role == "input":  # what a label is predicted from
            return bool(self.text or self.messages or self.prompt)
        return getattr(self, role, None) is not None

    def columns(self) -> dict[str, str]:
        return {r: getattr(self, r) for r in ROLE_NAMES if getattr(self, r) is not None}

    def to_dict(self) -> dict[str, Any]:
        return {
            r: {"column": getattr(self, r), "detected": self.detected.get(r, False)}
            for r in ROLE_NAMES
            if getattr(self, r) is not None
        }


_KIND_PATTERNS = (
    ("train", re.compile(r"(^|[^a-z])(train|training)([^a-z]|$)")),
    ("validation", re.compile(r"(^|[^a-z])(valid|validation|val|dev)([^a-z]|$)")),
    ("test", re.compile(r"(^|[^a-z])(test|eval|evaluation|holdout)([^a-z]|$)")),
)


def split_kind(name: str) -> str:
    """train / validation / test / other, from a split or file name."""
    lowered = name.lower()
    for kind, pattern in _KIND_PATTERNS:
        if pattern.search(lowered):
            return kind
    return "other"


@dataclass
class SplitSource:
    """One split: its parts (files, or one in-memory table), read in order as Arrow batches."""

    name: str
    batches: readers.BatchSource
    num_rows: int | None = None
    schema: pa.Schema | None = None
    origin: str = ""
    kind: str = "other"
    #: (origin, source) per file, so the stream can say which file a row came from
    parts: list[tuple[str, readers.BatchSource]] = field(default_factory=list)
    #: False when later rows may bring columns the schema does not list (JSON Lines)
    complete: bool = True

    def iter_parts(self) -> list[tuple[str, readers.BatchSource]]:
        return self.parts or [(self.origin, self.batches)]


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

    def stream(self, batch_size: int) -> Iterator[tuple[str, pa.RecordBatch]]:
        """(split, batch) pairs, each split's rows in input order."""
        shape = _Shape(self)
        if self.split_column is None:
            for name, split in self.splits.items():
                self.log.current_split = name
                row = 0
                for origin, source in split.iter_parts():
                    for rb in source(batch_size):
                        if rb.num_rows:
                            rb = shape.conform(rb, name, row, origin)
                            row += rb.num_rows
                            yield name, rb
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


# -- input adapters ------------------------------------------------------------------------------


def _from_arrow_table(name: str, table: pa.Table, origin: str) -> SplitSource:
    return SplitSource(name, readers.table_batches(table), table.num_rows, table.schema, origin)


def _repair_sink(log: InputLog, what: str):
    def sink(n: int) -> None:
        log.add("surrogates", Severity.INFO, SURROGATES_REPLACED, count=n, place=what)

    return sink


def _records_table(records: list[dict[str, Any]], what: str, log: InputLog) -> pa.Table:
    """Records → one table whose columns are every key of every record."""
    sink = _repair_sink(log, what)
    batches = list(iter_records(records, 65536, on_repair=sink))
    if not batches:
        return pa.table({})
    try:
        return pa.Table.from_batches(_unify(batches))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        # a column whose type differs between batches: one batch keeps mixed values as text
        return pa.Table.from_batches([next(iter_records(records, len(records), on_repair=sink))])


def _to_table(obj: Any, what: str, log: InputLog) -> pa.Table | None:
    """In-memory tabular objects → Arrow table; None if ``obj`` is not one of them."""
    module = type(obj).__module__.split(".")[0]
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, Mapping):
        try:
            return pa.table(dict(obj))
        except UnicodeEncodeError:
            columns = {str(k): list(v) for k, v in obj.items()}
            rows = [dict(zip(columns, vals)) for vals in zip(*columns.values())]
            return _records_table(rows, what, log)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
            raise InputError(
                f"{what}: cannot read the dict of columns as a table ({exc})."
            ) from None
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    if module == "polars":
        import polars as pl

        if isinstance(obj, pl.LazyFrame):
            obj = obj.collect()
        if isinstance(obj, pl.DataFrame):
            return obj.to_arrow()
    if module == "pandas" and type(obj).__name__ == "DataFrame":
        if not obj.columns.is_unique:
            dupes = sorted({str(c) for c in obj.columns[obj.columns.duplicated()]})
            raise InputError(
                f"{what}: the column(s) {', '.join(map(repr, dupes))} appear more than once; "
                "column names must be unique. Rename the duplicates."
            )
        try:
            return pa.Table.from_pandas(obj, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeEncodeError):
            return _records_table(obj.to_dict("records"), what, log)
    if isinstance(obj, list):
        if obj and not all(isinstance(r, Mapping) for r in obj):
            bad = next(i for i, r in enumerate(obj) if not isinstance(r, Mapping))
            raise InputError(
                f"{what}: a list input must hold one dict per row; item {bad} is "
                f"{type(obj[bad]).__name__}. Pass e.g. [{{'text': ...}}, ...]."
            )
        return _records_table([dict(r) for r in obj], what, log)
    return None


def _unify(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
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


def _hf_split(name: str, ds: Any, log: InputLog) -> SplitSource:
    """A datasets.Dataset (respecting select/shuffle indices) or IterableDataset, streamed."""
    cls = type(ds).__name__
    if cls == "IterableDataset":
        from .inputs.records import records_to_batch

        sink = _repair_sink(log, f"IterableDataset[{name}]")

        def iterable_source(batch_size: int) -> Iterator[pa.RecordBatch]:
            for chunk in ds.iter(batch_size=batch_size):
                yield records_to_batch(_columns_to_records(chunk), on_repair=sink)

        return SplitSource(
            name, iterable_source, None, None, f"IterableDataset[{name}]", complete=False
        )

    def dataset_source(batch_size: int) -> Iterator[pa.RecordBatch]:
        arrow_ds = ds.with_format("arrow")
        for table in arrow_ds.iter(batch_size=batch_size):
            yield from table.to_batches()

    schema = ds.features.arrow_schema if hasattr(ds.features, "arrow_schema") else None
    return SplitSource(name, dataset_source, ds.num_rows, schema, f"Dataset[{name}]")


def _columns_to_records(chunk: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    keys = list(chunk)
    if not keys:
        return []
    return [dict(zip(keys, row)) for row in zip(*(chunk[k] for k in keys))]


_MAGIC = re.compile(r"[*?\[]")


def _glob_root(pattern: str) -> Path:
    """The folder a glob pattern starts from: its path up to the first wildcard."""
    parts = Path(pattern).parts
    fixed = []
    for part in parts[:-1]:
        if _MAGIC.search(part):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def _path_splits(spec: str | Path, reading: _Reading) -> dict[str, SplitSource]:
    text = str(spec)
    if _MAGIC.search(text):
        root = _glob_root(text)
        files = sorted(
            Path(p)
            for p in globlib.glob(text, recursive=True)
            if Path(p).is_file() and not Path(p).name.startswith(".")
        )
        if not files:
            raise InputError(f"{text}: the pattern matches no files.")
    else:
        path = Path(text).expanduser()
        if not path.exists():
            parent = path.parent if str(path.parent) else Path(".")
            hint = ""
            if parent.is_dir():
                hint = close_matches(path.name, [p.name for p in parent.iterdir()])
            raise InputError(f"{path}: no such file or folder.{hint}")
        if path.is_dir():
            root = path
            files = sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and _known_format(p) and not p.name.startswith(".")
            )
            if not files:
                raise InputError(
                    f"{path}: the folder holds no .jsonl/.json/.parquet/.csv files to audit."
                )
        else:
            root = None
            files = [path]
    for f in files:
        readers.file_format(f)  # unknown formats fail early, naming the file
    groups: dict[str, list[Path]] = {}
    labels = {f: _split_label(f, root) for f in files}
    kinds = {f: split_kind(label) for f, label in labels.items()}
    if all(k == "other" for k in kinds.values()):
        groups["train"] = files  # one file, or shards of one split
    else:
        for f in files:
            groups.setdefault(kinds[f] if kinds[f] != "other" else labels[f], []).append(f)
    order = {"train": 0, "validation": 1, "test": 2, "other": 3}
    names = sorted(groups, key=lambda n: (order[split_kind(n)], n))
    return {name: _files_split(name, groups[name], reading) for name in names}


def _known_format(p: Path) -> bool:
    try:
        readers.file_format(p)
        return True
    except InputError:
        return False


def _split_label(path: Path, root: Path | None = None) -> str:
    """Split name from a file name (HF shards: train-00000-of-00004), else from its folders
    below the folder or glob root the user gave (data/train/part-0.parquet), else from that
    folder's own name (``data/test/*.jsonl``, ``audit("data/test")``)."""
    name = path.name
    for suffix in reversed(path.suffixes):
        name = name[: -len(suffix)] if name.endswith(suffix) else name
    name = re.sub(r"[-_]\d{3,}(-of-\d+)?$", "", name)
    if split_kind(name) == "other" and root is not None:
        try:
            parts = path.relative_to(root).parent.parts
        except ValueError:
            parts = ()
        for part in (*reversed(parts), root.resolve().name):
            if split_kind(part) != "other":
                return part
    return name


@dataclass
class _Reading:
    """How files are read in one load: the bad-line policy and where notes go."""

    log: InputLog
    on_bad_lines: str = "error"


def _files_split(name: str, paths: list[Path], reading: _Reading) -> SplitSource:
    parts = [
        (str(p), readers.file_batches(p, on_bad_lines=reading.on_bad_lines, log=reading.log))
        for p in paths
    ]

    def source(batch_size: int) -> Iterator[pa.RecordBatch]:
        for _, s in parts:
            yield from s(batch_size)

    counts = [readers.file_num_rows(p) for p in paths]
    num_rows = sum(counts) if all(c is not None for c in counts) else None  # type: ignore[misc]
    return SplitSource(name, source, num_rows, None, ", ".join(str(p) for p in paths), parts=parts)


def _single_input_splits(obj: Any, name: str, reading: _Reading) -> dict[str, SplitSource]:
    if isinstance(obj, (str, Path)):
        splits = _path_splits(obj, reading)
        if len(splits) == 1 and name != "train":
            only = next(iter(splits.values()))
            only.name = name
            return {name: only}
        return splits
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(p, (str, Path)) for p in obj):
        out: dict[str, SplitSource] = {}
        for p in obj:
            for k, v in _path_splits(p, reading).items():
                if k in out:
                    raise InputError(
                        f"split {k!r} comes from two inputs ({out[k].origin} and {v.origin}); "
                        "pass a dict {split_name: path} to name them."
                    )
                out[k] = v
        return out
    cls = type(obj).__name__
    if type(obj).__module__.split(".")[0] == "datasets":
        if cls in ("DatasetDict", "IterableDatasetDict"):
            return {str(k): _hf_split(str(k), v, reading.log) for k, v in obj.items()}
        if cls in ("Dataset", "IterableDataset"):
            split_name = str(getattr(obj, "split", None) or name)
            return {split_name: _hf_split(split_name, obj, reading.log)}
    table = _to_table(obj, name, reading.log)
    if table is not None:
        return {name: _from_arrow_table(name, table, cls)}
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
        for i, (origin, source) in enumerate(split.iter_parts()):
            whole = split.num_rows is not None
            if split.parts:
                cheap, whole = readers.file_schema(Path(origin))
                if cheap is not None and (whole or i > 0):
                    schemas.append(cheap)
                    split.complete = split.complete and whole
                    continue
                whole = whole or read_in_one_block(Path(origin))
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


def _column_names(schema: pa.Schema) -> list[str]:
    return [n for n in schema.names if not n.startswith(readers.TYPE_MARKER_PREFIX)]


def detect_roles(
    schema: pa.Schema, given: Mapping[str, str | None], *, deferred: bool = False
) -> Roles:
    """Column roles from names (and types). ``deferred``: a named column the schema lacks may
    still turn up in later records (JSON Lines); the stream checks that it does."""
    names = _column_names(schema)
    lowered = {n.lower(): n for n in names}
    roles = Roles()
    taken: set[str] = set()
    for role, column in given.items():
        if column is None:
            continue
        if role not in ROLE_NAMES:
            raise InputError(f"unknown column role {role!r}; roles are {', '.join(ROLE_NAMES)}.")
        if column not in names and (not deferred or close_matches(column, names)):
            # a near miss is a typo; otherwise the column may start after the first records
            raise InputError(
                f"{role}={column!r}: no such column. Available columns: {', '.join(names) or '(none)'}."
                + close_matches(column, names)
            )
        setattr(roles, role, column)
        roles.detected[role] = False
        taken.add(column)
    for role, hints in ROLE_HINTS.items():
        if getattr(roles, role) is not None or role in given:
            continue
        for hint in hints:
            column = lowered.get(hint)
            if (
                column is not None
                and column not in taken
                and _fits(role, schema.field(column).type)
            ):
                setattr(roles, role, column)
                roles.detected[role] = True
                taken.add(column)
                break
    if not roles.has("text") and "text" not in given:
        strings = [n for n in names if n not in taken and _is_stringish(schema.field(n).type)]
        if strings:
            roles.text = strings[0]
            roles.detected["text"] = True
    return roles


def _is_stringish(t: pa.DataType) -> bool:
    t = t.value_type if pa.types.is_dictionary(t) else t
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _fits(role: str, t: pa.DataType) -> bool:
    if role == "messages":
        return pa.types.is_list(t) or pa.types.is_large_list(t) or _is_stringish(t)
    if role in ("text", "prompt", "input", "response"):
        return _is_stringish(t) or pa.types.is_null(t)
    return True


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
    reading = _Reading(InputLog(), on_bad_lines)
    if isinstance(data, Mapping) and not _looks_like_record(data):
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
        names = _column_names(schema)
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
        names = _column_names(schema)
        raise InputError(
            "found no text column to audit (looked for "
            + ", ".join(ROLE_HINTS["text"][:4])
            + ", messages, prompt/response). Available columns: "
            + ", ".join(names)
            + ". Name it with text=COLUMN (CLI: --text COLUMN)."
        )
    return corpus


def _looks_like_record(data: Mapping[str, Any]) -> bool:
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

"""Any supported input → a Corpus: named splits that stream Arrow record batches, plus column roles.

Accepted: a path (file, glob or folder of split files), a Hugging Face Dataset / DatasetDict /
IterableDataset, a polars or pandas frame, a pyarrow Table / RecordBatch, a list of dicts, or a
dict mapping split names to any of those. ``split="column"`` partitions one input by a column.
"""

from __future__ import annotations

import glob as globlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pyarrow as pa

from . import readers
from .errors import InputError, close_matches

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
    name: str
    batches: readers.BatchSource
    num_rows: int | None = None
    schema: pa.Schema | None = None
    origin: str = ""
    kind: str = "other"


@dataclass
class Corpus:
    splits: dict[str, SplitSource]
    roles: Roles
    split_column: str | None = None

    def stream(self, batch_size: int) -> Iterator[tuple[str, pa.RecordBatch]]:
        """(split, batch) pairs, each split's rows in input order."""
        if self.split_column is None:
            for name, split in self.splits.items():
                for rb in split.batches(batch_size):
                    if rb.num_rows:
                        yield name, rb
            return
        # one source, partitioned by a column; every split source shares the same batches
        source = next(iter(self.splits.values())).batches
        col = self.split_column
        for rb in source(batch_size):
            if not rb.num_rows:
                continue
            values = rb.column(rb.schema.get_field_index(col)).cast(pa.string()).to_pylist()
            order: dict[str, list[int]] = {}
            for i, v in enumerate(values):
                order.setdefault("null" if v is None else v, []).append(i)
            for name, idx in order.items():
                yield name, rb.take(pa.array(idx, pa.int64()))

    @property
    def schema(self) -> pa.Schema | None:
        for split in self.splits.values():
            if split.schema is not None:
                return split.schema
        return None


# -- input adapters ------------------------------------------------------------------------------


def _from_arrow_table(name: str, table: pa.Table, origin: str) -> SplitSource:
    return SplitSource(name, readers.table_batches(table), table.num_rows, table.schema, origin)


def _to_table(obj: Any, what: str) -> pa.Table | None:
    """In-memory tabular objects → Arrow table; None if ``obj`` is not one of them."""
    module = type(obj).__module__.split(".")[0]
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, Mapping):
        try:
            return pa.table(dict(obj))
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
        try:
            return pa.Table.from_pandas(obj, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            batch = readers.records_to_batch(obj.to_dict("records"))
            return pa.Table.from_batches([batch])
    if isinstance(obj, list):
        if obj and not all(isinstance(r, Mapping) for r in obj):
            bad = next(i for i, r in enumerate(obj) if not isinstance(r, Mapping))
            raise InputError(
                f"{what}: a list input must hold one dict per row; item {bad} is "
                f"{type(obj[bad]).__name__}. Pass e.g. [{{'text': ...}}, ...]."
            )
        batches = list(readers.iter_records([dict(r) for r in obj], 65536))
        if not batches:
            return pa.table({})
        return pa.Table.from_batches(_unify(batches))
    return None


def _unify(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    schema = pa.unify_schemas([b.schema for b in batches], promote_options="permissive")
    out = []
    for b in batches:
        cols = []
        for f in schema:
            idx = b.schema.get_field_index(f.name)
            cols.append(b.column(idx).cast(f.type) if idx >= 0 else pa.nulls(b.num_rows, f.type))
        out.append(pa.RecordBatch.from_arrays(cols, schema=schema))
    return out


def _hf_split(name: str, ds: Any) -> SplitSource:
    """A datasets.Dataset (respecting select/shuffle indices) or IterableDataset, streamed."""
    cls = type(ds).__name__
    if cls == "IterableDataset":

        def iterable_source(batch_size: int) -> Iterator[pa.RecordBatch]:
            for chunk in ds.iter(batch_size=batch_size):
                yield readers.records_to_batch(_columns_to_records(chunk))

        return SplitSource(name, iterable_source, None, None, f"IterableDataset[{name}]")

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


def _path_splits(spec: str | Path) -> dict[str, SplitSource]:
    text = str(spec)
    root: Path | None = None
    if any(ch in text for ch in "*?["):
        files = sorted(Path(p) for p in globlib.glob(text, recursive=True))
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
    return {name: _files_split(name, groups[name]) for name in names}


def _known_format(p: Path) -> bool:
    try:
        readers.file_format(p)
        return True
    except InputError:
        return False


def _split_label(path: Path, root: Path | None = None) -> str:
    """Split name from a file name (HF shards: train-00000-of-00004), else from its folders
    below the folder the user gave (data/train/part-0.parquet)."""
    name = path.name
    for suffix in reversed(path.suffixes):
        name = name[: -len(suffix)] if name.endswith(suffix) else name
    name = re.sub(r"[-_]\d{3,}(-of-\d+)?$", "", name)
    if split_kind(name) == "other" and root is not None:
        for part in reversed(path.relative_to(root).parent.parts):
            if split_kind(part) != "other":
                return part
    return name


def _files_split(name: str, paths: list[Path]) -> SplitSource:
    sources = [readers.file_batches(p) for p in paths]

    def source(batch_size: int) -> Iterator[pa.RecordBatch]:
        for s in sources:
            yield from s(batch_size)

    counts = [readers.file_num_rows(p) for p in paths]
    num_rows = sum(counts) if all(c is not None for c in counts) else None  # type: ignore[misc]
    return SplitSource(name, source, num_rows, None, ", ".join(str(p) for p in paths))


def _single_input_splits(obj: Any, name: str) -> dict[str, SplitSource]:
    if isinstance(obj, (str, Path)):
        splits = _path_splits(obj)
        if len(splits) == 1 and name != "train":
            only = next(iter(splits.values()))
            only.name = name
            return {name: only}
        return splits
    cls = type(obj).__name__
    if type(obj).__module__.split(".")[0] == "datasets":
        if cls in ("DatasetDict", "IterableDatasetDict"):
            return {str(k): _hf_split(str(k), v) for k, v in obj.items()}
        if cls in ("Dataset", "IterableDataset"):
            split_name = str(getattr(obj, "split", None) or name)
            return {split_name: _hf_split(split_name, obj)}
    table = _to_table(obj, name)
    if table is not None:
        return {name: _from_arrow_table(name, table, cls)}
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(p, (str, Path)) for p in obj):
        out: dict[str, SplitSource] = {}
        for p in obj:
            for k, v in _path_splits(p).items():
                if k in out:
                    raise InputError(
                        f"split {k!r} comes from two inputs ({out[k].origin} and {v.origin}); "
                        "pass a dict {split_name: path} to name them."
                    )
                out[k] = v
        return out
    raise InputError(
        f"cannot audit a {type(obj).__module__}.{cls}. Pass a file path, a folder, a Hugging Face "
        "Dataset/DatasetDict, a polars or pandas DataFrame, a pyarrow Table or a list of dicts."
    )


def _peek_schema(split: SplitSource) -> pa.Schema:
    if split.schema is not None:
        return split.schema
    for rb in split.batches(256):
        split.schema = rb.schema
        return rb.schema
    split.schema = pa.schema([])
    return split.schema


def _column_names(schema: pa.Schema) -> list[str]:
    return [n for n in schema.names if not n.startswith(readers.TYPE_MARKER_PREFIX)]


def detect_roles(schema: pa.Schema, given: Mapping[str, str | None]) -> Roles:
    names = _column_names(schema)
    lowered = {n.lower(): n for n in names}
    roles = Roles()
    taken: set[str] = set()
    for role, column in given.items():
        if column is None:
            continue
        if role not in ROLE_NAMES:
            raise InputError(f"unknown column role {role!r}; roles are {', '.join(ROLE_NAMES)}.")
        if column not in names:
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
) -> Corpus:
    """Resolve any supported input into a Corpus with split names, kinds and column roles."""
    if isinstance(data, Mapping) and not _looks_like_record(data):
        if not data:
            raise InputError("the dict of splits is empty; pass {'train': data, ...}.")
        splits: dict[str, SplitSource] = {}
        for key, value in data.items():
            found = _single_input_splits(value, str(key))
            if len(found) == 1:  # the dict key names the split
                splits[str(key)] = next(iter(found.values()))
            else:
                splits.update({f"{key}/{name}": src for name, src in found.items()})
    else:
        splits = _single_input_splits(data, "train")
    if not splits:
        raise InputError("no splits found in the input.")

    first = next(iter(splits.values()))
    schema = _peek_schema(first)
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
        values = _distinct_values(first, split)
        src = first
        splits = {
            v: SplitSource(v, src.batches, None, schema, f"{src.origin} where {split} == {v!r}")
            for v in values
        }
    for name, src in splits.items():
        src.name = name
        src.kind = split_kind(name)
        if src.schema is None:
            _peek_schema(src)
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
    corpus_roles = detect_roles(schema, dict(roles or {}))
    if split is not None:
        corpus_roles.detected.pop("split", None)
    corpus = Corpus(splits, corpus_roles, split_column=split)
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
    for rb in src.batches(65536):
        for v in rb.column(rb.schema.get_field_index(column)).cast(pa.string()).to_pylist():
            seen.setdefault("null" if v is None else v, None)
    return list(seen)


def roles_fields() -> list[str]:
    return [f.name for f in fields(Roles) if f.name != "detected"]

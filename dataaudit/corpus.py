"""Any supported input → a Corpus: named splits that stream Arrow record batches, plus column roles.

Accepted: a path (file, glob or folder of split files), a Hugging Face Dataset / DatasetDict /
IterableDataset, a polars or pandas frame, a pyarrow Table / RecordBatch, a list of dicts, or a
dict mapping split names to any of those. ``split="column"`` partitions one input by a column.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from .errors import InputError
from .inputs.files import file_format
from .inputs.frames import frame_split
from .inputs.hf import hf_splits
from .inputs.jsonl import BAD_LINE_POLICIES
from .inputs.notes import InputLog
from .inputs.partition import column_splits, partition
from .inputs.paths import paths_splits
from .inputs.probes import is_hf_dataset, is_hf_dataset_dict
from .inputs.records import records_split
from .inputs.roles import (
    ROLE_NAMES,
    Roles,
    detect_roles,
    require_text,
    split_kind,
)
from .inputs.schema import peek_schema, union_schemas
from .inputs.shape import Shape
from .inputs.source import Reading, SplitSource

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
    #: how the files' bad lines are read (an engine whose workers read the files needs it)
    on_bad_lines: str = "error"

    def stream(self, batch_size: int) -> Iterator[tuple[str, pa.RecordBatch]]:
        """(split, batch) pairs, each split's rows in input order."""
        shape = Shape(self)
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
                        fmt = file_format(path)
                        files.append({"path": str(path), "format": fmt, "rows": row - start})
            self.log.current_split = None
            shape.close()
            return
        # one source, partitioned by a column; every split source shares the same batches
        first = next(iter(self.splits.values()))
        for origin, source in first.iter_parts():
            for rb in source(batch_size):
                if rb.num_rows:
                    yield from partition(shape.conform(rb, None, None, origin), self.split_column)
        shape.close()


def _single_input_splits(obj: Any, name: str, reading: Reading) -> dict[str, SplitSource]:
    found = paths_splits(obj, name, reading)
    if found is not None:
        return found
    if is_hf_dataset_dict(obj) or is_hf_dataset(obj):
        return hf_splits(obj, str(getattr(obj, "split", None) or name), reading.log)
    if isinstance(obj, list):
        return {name: records_split(name, obj, name, reading.log)}
    frame = frame_split(name, obj, reading.log)
    if frame is not None:
        return {name: frame}
    kind = f"{type(obj).__module__}.{type(obj).__name__}"
    raise InputError(
        f"cannot audit a {kind}. Pass a file path, a folder, a Hugging Face a polars or pandas DataFrame, a pyarrow Table or a list of dicts."
    )


def load_corpus(
    data: Any,
    *,
    split: str | None = None,
    roles: Mapping[str, str | None] | None = None,
    on_bad_lines: str = "error",
    optional_roles: Collection[str] = (),
) -> Corpus:
    """Resolve any supported input into a Corpus with split names, kinds and column roles.

    A role in ``optional_roles`` whose named column the input lacks is dropped instead of being
    an error (the reference of ``audit(new, reference=old)``: an older version without
    ``source``); the rules that need it then skip with a reason.
    """
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
        peek_schema(src, reading.log)
    schema = union_schemas([s.schema for s in splits.values() if s.schema is not None])
    complete = all(s.complete for s in splits.values())
    if split is not None:
        splits = column_splits(splits, split, schema)
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
    given = {
        k: v
        for k, v in dict(roles or {}).items()
        if v is not None and (k not in optional_roles or v in schema.names)
    }
    corpus_roles = detect_roles(schema, given, deferred=not complete)
    corpus = Corpus(
        splits,
        corpus_roles,
        split_column=split,
        log=reading.log,
        schema=schema,
        given_roles=given,
        on_bad_lines=on_bad_lines,
    )
    require_text(corpus_roles, schema)
    return corpus


def looks_like_columns(data: Mapping[str, Any]) -> bool:
    """{'text': [...], 'label': [...]} is one table of columns, not a dict of splits."""
    values = list(data.values())
    return bool(values) and all(
        isinstance(v, list) and (not v or not isinstance(v[0], Mapping)) for v in values
    )

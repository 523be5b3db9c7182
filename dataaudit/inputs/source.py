"""A split as the readers give it: named parts that stream Arrow batches."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from .notes import InputLog

__all__ = ["BatchSource", "Reading", "SplitSource", "table_split"]

BatchSource = Callable[[int], Iterator[pa.RecordBatch]]


@dataclass
class SplitSource:
    """One split: its parts (files, or one in-memory table), read in order as Arrow batches."""

    name: str
    batches: BatchSource
    num_rows: int | None = None
    schema: pa.Schema | None = None
    origin: str = ""
    kind: str = "other"
    #: (origin, source) per file, so the stream can say which file a row came from
    parts: list[tuple[str, BatchSource]] = field(default_factory=list)
    #: the file of each part (a Path or a remote UPath), when parts are files
    paths: list[Any] = field(default_factory=list)
    #: False when later rows may bring columns the schema does not list (JSON Lines)
    complete: bool = True

    def iter_parts(self) -> list[tuple[str, BatchSource]]:
        return self.parts or [(self.origin, self.batches)]


@dataclass
class Reading:
    """How files are read in one load: the bad-line policy and where notes go."""

    log: InputLog
    on_bad_lines: str = "error"


def table_split(name: str, table: pa.Table, origin: str) -> SplitSource:
    """An in-memory Arrow table as a split, streamed in slices (zero-copy)."""

    def source(batch_size: int) -> Iterator[pa.RecordBatch]:
        for rb in table.to_batches(max_chunksize=batch_size):
            if rb.num_rows:
                yield rb

    return SplitSource(name, source, table.num_rows, table.schema, origin)

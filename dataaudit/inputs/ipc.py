"""Arrow IPC files and streams (``.arrow``, as the Hugging Face cache keeps datasets) → Arrow
record batches, memory-mapped when local."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from ..errors import InputError
from .location import is_remote

__all__ = ["arrow_schema", "iter_arrow"]


def _arrow_input(path: Path):
    return pa.memory_map(str(path)) if not is_remote(path) else pa.PythonFile(path.open("rb"))


def iter_arrow(path: Path, batch_size: int) -> Iterator[pa.RecordBatch]:
    """An Arrow IPC file or stream (``datasets`` writes streams), memory-mapped."""
    try:
        with _arrow_input(path) as source:
            try:
                reader = pa.ipc.open_stream(source)
            except pa.ArrowInvalid:
                reader = pa.ipc.open_file(source)
                batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
            else:
                batches = iter(reader)
            for rb in batches:
                for start in range(0, rb.num_rows, batch_size):
                    yield rb.slice(start, batch_size)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(
            f"{path}: cannot read as Arrow IPC ({exc}). The file may be truncated or not Arrow."
        ) from None


def arrow_schema(path: Path) -> tuple[pa.Schema | None, bool]:
    """The schema from the file's header (whole); (None, False) when it cannot be opened (the
    read names the problem)."""
    try:
        with _arrow_input(path) as source:
            try:
                return pa.ipc.open_stream(source).schema, True
            except pa.ArrowInvalid:
                return pa.ipc.open_file(source).schema, True
    except (pa.ArrowInvalid, OSError):
        return None, False

"""Files → Arrow record batches: the format of a file from its name, and per format the adapter
that reads it (``FORMATS``): its batches, its columns when they are cheap to know, its row count
when the file states it. A split of files streams them in order.

One module per format holds its reader: ``jsonl`` (JSON Lines, JSON), ``delimited`` (CSV, TSV),
``parquet``, ``ipc`` (Arrow), ``text`` (.txt).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ..errors import InputError
from .delimited import delimited_schema, iter_delimited
from .ipc import arrow_schema, iter_arrow
from .jsonl import iter_json, iter_jsonl, json_schema, jsonl_schema
from .location import is_remote
from .notes import InputLog
from .parquet import iter_parquet, parquet_num_rows, parquet_schema
from .source import BatchSource, Reading, SplitSource
from .text import iter_text_lines, text_schema

__all__ = [
    "FILE_FORMATS",
    "FORMATS",
    "file_batches",
    "file_format",
    "file_num_rows",
    "file_schema",
    "files_split",
    "first_record_schema",
    "known_format",
]

FILE_FORMATS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "tsv",
    ".arrow": "arrow",  # Arrow IPC, as the Hugging Face cache keeps datasets
    ".txt": "txt",  # one document per line
}


@dataclass(frozen=True)
class FileAdapter:
    """How one format is read."""

    #: (path, batch_size, reading) → batches; problems it may not hide go to ``reading.log``
    read: Callable[[Path, int, Reading], Iterator[pa.RecordBatch]]
    #: path → (columns, whether that list is whole), or (None, False) when only reading tells
    schema: Callable[[Path], tuple[pa.Schema | None, bool]]
    #: path → rows, when the file states them
    num_rows: Callable[[Path], int | None] = lambda path: None
    #: ``schema`` only reads the first record (never whole): a split's first file types its
    #: columns from its first batch instead, and does not peek
    first_record_schema: bool = False


def _jsonl(path: Path, batch_size: int, r: Reading) -> Iterator[pa.RecordBatch]:
    return iter_jsonl(path, batch_size, on_bad_lines=r.on_bad_lines, log=r.log)


def _json(path: Path, batch_size: int, r: Reading) -> Iterator[pa.RecordBatch]:
    return iter_json(path, batch_size, on_bad_lines=r.on_bad_lines, log=r.log)


def _delimited(delimiter: str) -> FileAdapter:
    def read(path: Path, batch_size: int, r: Reading) -> Iterator[pa.RecordBatch]:
        return iter_delimited(path, batch_size, delimiter, on_bad_lines=r.on_bad_lines, log=r.log)

    return FileAdapter(read, lambda path: delimited_schema(path, delimiter))


FORMATS: dict[str, FileAdapter] = {
    "jsonl": FileAdapter(_jsonl, jsonl_schema, first_record_schema=True),
    "json": FileAdapter(_json, json_schema, first_record_schema=True),
    "parquet": FileAdapter(
        lambda path, batch_size, r: iter_parquet(path, batch_size), parquet_schema, parquet_num_rows
    ),
    "csv": _delimited(","),
    "tsv": _delimited("\t"),
    "arrow": FileAdapter(lambda path, batch_size, r: iter_arrow(path, batch_size), arrow_schema),
    "txt": FileAdapter(lambda path, batch_size, r: iter_text_lines(path, batch_size), text_schema),
}


def file_format(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".zst", ".bz2"):
        suffixes = suffixes[:-1]
    fmt = FILE_FORMATS.get(suffixes[-1] if suffixes else "")
    if fmt is None:
        raise InputError(
            f"{path}: unknown file format {path.suffix or '(no extension)'!r}; dataaudit reads "
            f"{', '.join(sorted(FILE_FORMATS))} (optionally .gz, .bz2 or .zst). Convert the file "
            "or rename it with the right extension."
        )
    return fmt


def known_format(path: Path) -> bool:
    try:
        file_format(path)
        return True
    except InputError:
        return False


def file_batches(path: Path, reading: Reading | None = None) -> BatchSource:
    """A batch source for one file; its errors name the file (bad lines stop the read unless
    ``reading`` says otherwise)."""
    adapter = FORMATS[file_format(path)]
    reading = reading if reading is not None else Reading(InputLog())

    def source(batch_size: int) -> Iterator[pa.RecordBatch]:
        try:
            yield from adapter.read(path, batch_size, reading)
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); re-encode it as UTF-8."
            ) from None
        except OSError as exc:  # permissions, a folder where a file was expected, I/O errors
            raise InputError(f"{path}: cannot read the file ({exc.strerror or exc}).") from None
        except Exception as exc:
            if not is_remote(path) or isinstance(exc, InputError):
                raise
            # network and filesystem errors of fsspec implementations have their own types
            raise InputError(f"{path}: cannot read it ({type(exc).__name__}: {exc}).") from None

    return source


def file_schema(path: Path) -> tuple[pa.Schema | None, bool]:
    """The file's columns when they are cheap to know without reading its rows, and whether
    that list is whole: Parquet metadata and CSV headers are; the first record of a JSON Lines
    file is not (a later record may add a key). (None, False) when only reading tells (JSON)."""
    return FORMATS[file_format(path)].schema(path)


def first_record_schema(path: Path) -> bool:
    """Whether :func:`file_schema` of this file only reads its first record (JSON, JSON Lines)."""
    return FORMATS[file_format(path)].first_record_schema


def file_num_rows(path: Path) -> int | None:
    return FORMATS[file_format(path)].num_rows(path)


def files_split(name: str, paths: list[Path], reading: Reading) -> SplitSource:
    """A split of files, read in order (one part per file)."""
    parts = [(str(p), file_batches(p, reading)) for p in paths]

    def source(batch_size: int) -> Iterator[pa.RecordBatch]:
        for _, s in parts:
            yield from s(batch_size)

    counts = [file_num_rows(p) for p in paths]
    num_rows = sum(counts) if all(c is not None for c in counts) else None  # type: ignore[misc]
    return SplitSource(
        name, source, num_rows, None, ", ".join(str(p) for p in paths), parts=parts, paths=paths
    )

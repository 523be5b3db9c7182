"""Streaming readers: local files and in-memory tables → Arrow record batches.

Every reader yields ``pa.RecordBatch`` lazily so a corpus larger than memory is read a batch at a
time. The format readers live in ``inputs/`` (JSON Lines and JSON, CSV/TSV, Python records); this
module picks one by file name and reads Parquet.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from .errors import InputError
from .inputs.location import is_remote, open_binary, pyarrow_source
from .inputs.notes import InputLog
from .inputs.records import TYPE_MARKER_PREFIX
from .inputs.source import BatchSource

__all__ = [
    "FILE_FORMATS",
    "TYPE_MARKER_PREFIX",
    "BatchSource",
    "file_batches",
    "file_format",
    "file_num_rows",
    "file_schema",
    "table_batches",
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


def iter_parquet(path: Path, batch_size: int) -> Iterator[pa.RecordBatch]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(pyarrow_source(path))
        # one row group at a time: over a whole file, the reader keeps every row group it
        # pre-buffered until the iteration ends (1.4 GB of RSS for a 1.4 GB file, measured)
        for group in range(pf.num_row_groups):
            yield from pf.iter_batches(batch_size=batch_size, row_groups=[group])
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(
            f"{path}: cannot read as Parquet ({exc}). The file may be truncated or not Parquet."
        ) from None


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


def iter_text_lines(path: Path, batch_size: int) -> Iterator[pa.RecordBatch]:
    """A .txt file: one document per line (empty lines are documents too: TXT001 counts them;
    a final newline does not make one)."""
    from .inputs.delimited import first_bad_utf8

    found = first_bad_utf8(path)
    if found is not None:
        raise InputError(
            f"{path}:{found[0]}: not valid UTF-8 (byte 0x{found[1]:02x}). Re-encode the file as "
            "UTF-8 (e.g. iconv -f latin1 -t utf-8) or fix that line."
        )
    with open_binary(path) as fh:
        lines: list[str] = []
        for raw in fh:
            lines.append(raw.decode("utf-8").rstrip("\r\n"))
            if len(lines) >= batch_size:
                yield pa.RecordBatch.from_pydict({"text": pa.array(lines, pa.string())})
                lines = []
        if lines:
            yield pa.RecordBatch.from_pydict({"text": pa.array(lines, pa.string())})


def file_batches(
    path: Path, *, on_bad_lines: str = "error", log: InputLog | None = None
) -> BatchSource:
    """A batch source for one file; problems the readers may not hide go to ``log``."""
    from .inputs.delimited import iter_delimited
    from .inputs.jsonl import iter_json, iter_jsonl

    fmt = file_format(path)

    def batches(batch_size: int) -> Iterator[pa.RecordBatch]:
        if fmt == "jsonl":
            return iter_jsonl(path, batch_size, on_bad_lines=on_bad_lines, log=log)
        if fmt == "json":
            return iter_json(path, batch_size, on_bad_lines=on_bad_lines, log=log)
        if fmt == "parquet":
            return iter_parquet(path, batch_size)
        if fmt == "arrow":
            return iter_arrow(path, batch_size)
        if fmt == "txt":
            return iter_text_lines(path, batch_size)
        delimiter = "\t" if fmt == "tsv" else ","
        return iter_delimited(path, batch_size, delimiter, on_bad_lines=on_bad_lines, log=log)

    def source(batch_size: int) -> Iterator[pa.RecordBatch]:
        try:
            yield from batches(batch_size)
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


def file_num_rows(path: Path) -> int | None:
    if file_format(path) == "parquet":
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(pyarrow_source(path)).metadata.num_rows
        except (pa.ArrowInvalid, OSError):
            return None
    return None


def file_schema(path: Path) -> tuple[pa.Schema | None, bool]:
    """The file's columns when they are cheap to know without reading its rows, and whether
    that list is whole: Parquet metadata and CSV headers are; the first record of a JSON Lines
    file is not (a later record may add a key). (None, False) when only reading tells (JSON)."""
    fmt = file_format(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(pyarrow_source(path)).schema_arrow, True
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(
                f"{path}: cannot read as Parquet ({exc}). The file may be truncated or not Parquet."
            ) from None
    if fmt == "txt":
        return pa.schema([("text", pa.string())]), True
    if fmt == "arrow":
        try:
            with _arrow_input(path) as source:
                try:
                    return pa.ipc.open_stream(source).schema, True
                except pa.ArrowInvalid:
                    return pa.ipc.open_file(source).schema, True
        except (pa.ArrowInvalid, OSError):
            return None, False  # the full read names the problem
    if fmt in ("csv", "tsv"):
        from .inputs.delimited import header

        try:
            names = header(path, "\t" if fmt == "tsv" else ",")
        except (pa.ArrowInvalid, OSError):
            return None, False  # the full read names the problem
        return pa.schema([(n, pa.string()) for n in names]), True
    if fmt == "json":
        from .inputs.jsonl import starts_with_array

        if starts_with_array(path):
            return None, False  # an array of records: only reading it tells its columns
        fmt = "jsonl"  # one object (or JSON Lines) under a .json name
    if fmt == "jsonl":
        from .inputs.jsonl import first_record

        rec = first_record(path)
        if rec is None:
            return None, False
        from .inputs.records import records_to_batch

        return records_to_batch([rec]).schema, False
    return None, False


def table_batches(table: pa.Table) -> BatchSource:
    def source(batch_size: int) -> Iterator[pa.RecordBatch]:
        for rb in table.to_batches(max_chunksize=batch_size):
            if rb.num_rows:
                yield rb

    return source

"""The cleaned copy's files: one per split, in the input's format, the kept rows in order.

JSON Lines are copied line for line (compression kept), JSON arrays, Parquet and Arrow keep their
schema, CSV/TSV/text their cells; inputs that are not local files become Parquet.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from .apply import split_column_keep
from .plan import BATCH_ROWS

if TYPE_CHECKING:
    import pyarrow as pa

    from ..corpus import Corpus

__all__ = ["EXTENSIONS", "write_splits"]


EXTENSIONS = {
    "jsonl": ".jsonl",
    "json": ".json",
    "parquet": ".parquet",
    "csv": ".csv",
    "tsv": ".tsv",
    "txt": ".txt",
    "arrow": ".arrow",
}
_CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}


def _split_format(paths: list[Any]) -> tuple[str, str] | None:
    """(format, compression suffix) shared by all of a split's files, or None (then Parquet)."""
    from ..inputs.files import file_format

    if not paths or any(not isinstance(p, Path) for p in paths):
        return None  # remote files or in-memory data: written as Parquet
    kinds = {(file_format(p), _codec_suffix(p)) for p in paths}
    return kinds.pop() if len(kinds) == 1 else None


def _codec_suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    return suffix if suffix in _CODECS else ""


def write_splits(
    corpus: Corpus, keep: dict[str, np.ndarray], tmp: Path, on_bad: str
) -> dict[str, str]:
    """One file per split in ``tmp``; returns split -> file name."""
    for name in corpus.splits:
        if "/" in name or "\\" in name or name in ("", ".", ".."):
            raise InputError(
                f"split {name!r} cannot be a file name in the cleaned copy; pass the splits "
                "as files (train.jsonl, test.jsonl) or a dict with plain names."
            )
    if corpus.split_column is not None:
        # one input, partitioned: each split's rows to its file; the split column stays
        return _write_partitioned(corpus, split_column_keep(corpus, keep), tmp)
    files: dict[str, str] = {}
    for name, source in corpus.splits.items():
        fmt = _split_format(source.paths)
        ext = EXTENSIONS[fmt[0]] + fmt[1] if fmt else ".parquet"
        target = tmp / f"{name}{ext}"
        if fmt is None:
            _write_parquet_stream(_batches_of(source), keep[name], target)
        elif fmt[0] in ("jsonl", "json"):
            _copy_json_split(source.paths, keep[name], fmt[0], on_bad, target)
        elif fmt[0] == "parquet":
            _copy_parquet(source.paths, keep[name], target)
        elif fmt[0] == "arrow":
            _copy_arrow(source.paths, keep[name], target)
        else:  # csv, tsv, txt: text cells; the reader's batches are the rows, in order
            columns = list(source.schema.names) if source.schema is not None else None
            _write_text_table(_batches_of(source), keep[name], target, fmt[0], columns)
        files[name] = target.name
    return files


def _batches_of(source: Any) -> Iterator[pa.RecordBatch]:
    """One split's batches as its reader gives them (the audit's rows, in order)."""
    from ..inputs.arrow import plain_batch

    for _, batches in source.iter_parts():
        for rb in batches(BATCH_ROWS):
            if rb.num_rows:
                yield plain_batch(rb)


def _open_out(path: Path) -> Any:
    import pyarrow as pa

    codec = _CODECS.get(path.suffix.lower())
    return pa.CompressedOutputStream(str(path), codec) if codec else open(path, "wb")  # noqa: SIM115


def _copy_json_split(paths: list[Path], keep: np.ndarray, fmt: str, on_bad: str, target) -> None:
    """A JSON split's kept records: JSON Lines byte for byte; JSON arrays as one array (or, in
    a split that mixes arrays and lines, every record as a line, which the reader also reads)."""
    from ..inputs.jsonl import starts_with_array

    arrays = [fmt == "json" and starts_with_array(p) for p in paths]
    start = 0
    kept: list[Any] = []
    with _open_out(target) as sink:
        for path, array in zip(paths, arrays):
            if array:
                records = _json_records(path, on_bad)
                mask = keep[start : start + len(records)]
                start += len(records)
                kept.extend(r for r, k in zip(records, mask) if k)
                if not all(arrays):
                    for r in kept:
                        sink.write(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n")
                    kept = []
                continue
            for line in _records_of_lines(path, on_bad):
                if start < len(keep) and keep[start]:
                    sink.write(line if line.endswith(b"\n") else line + b"\n")
                start += 1
        if arrays and all(arrays):
            body = ",\n".join(json.dumps(r, ensure_ascii=False) for r in kept)
            sink.write(("[\n" + body + "\n]\n").encode("utf-8"))
    if start != len(keep):
        raise InputError(
            f"{', '.join(map(str, paths))}: {start:,} records where the audit read {len(keep):,}; "
            "the files changed since the audit."
        )


def _records_of_lines(path: Path, on_bad: str) -> Iterator[bytes]:
    """The lines that are records: not blank (and, when unreadable lines were skipped, only
    the readable ones), as the JSON Lines reader counts them."""
    first = True
    for line in _lines(path):
        if first and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        first = False
        if not line.strip() or (on_bad == "skip" and not _is_record(line)):
            continue
        yield line


def _lines(path: Path, block: int = 1 << 20) -> Iterator[bytes]:
    """The file's lines, with their newline, read in blocks (compressed streams have no
    readline)."""
    from ..inputs.location import open_binary

    with open_binary(path) as fh:
        tail = b""
        while chunk := fh.read(block):
            parts = (tail + chunk).split(b"\n")
            tail = parts.pop()
            yield from (p + b"\n" for p in parts)
        if tail:
            yield tail


def _is_record(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def _json_records(path: Path, on_bad: str) -> list[Any]:
    from ..inputs.location import open_binary

    with open_binary(path) as fh:
        records = json.loads(fh.read().decode("utf-8-sig"))
    records = records if isinstance(records, list) else [records]
    return [r for r in records if on_bad != "skip" or isinstance(r, dict)]


def _copy_parquet(paths, keep, target) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..inputs.location import pyarrow_source

    writer = None
    i = 0
    try:
        for path in paths:
            pf = pq.ParquetFile(pyarrow_source(path))
            if writer is None:
                writer = pq.ParquetWriter(str(target), pf.schema_arrow)
            for group in range(pf.num_row_groups):
                for rb in pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[group]):
                    part = rb.filter(pa.array(keep[i : i + rb.num_rows]))
                    i += rb.num_rows
                    if part.num_rows:
                        writer.write_batch(part.cast(writer.schema))
    finally:
        if writer is not None:
            writer.close()


def _copy_arrow(paths, keep, target) -> None:
    import pyarrow as pa

    from ..inputs.ipc import iter_arrow

    writer = schema = None
    i = 0
    try:
        for path in paths:
            for rb in iter_arrow(path, BATCH_ROWS):
                if writer is None:
                    schema = rb.schema
                    writer = pa.ipc.new_stream(str(target), schema)
                part = rb.filter(pa.array(keep[i : i + rb.num_rows]))
                i += rb.num_rows
                writer.write_batch(part.cast(schema))
    finally:
        if writer is not None:
            writer.close()


def _plain(rb: pa.RecordBatch, columns: list[str] | None) -> pa.RecordBatch:
    """The batch without the readers' type markers (and, given, only ``columns``)."""
    import pyarrow as pa

    from ..rule import TYPE_MARKER_PREFIX

    names = [
        n
        for n in rb.schema.names
        if not n.startswith(TYPE_MARKER_PREFIX) and (columns is None or n in columns)
    ]
    return pa.RecordBatch.from_arrays([rb.column(n) for n in names], names=names)


def _filtered(batches: Iterator[pa.RecordBatch], keep: np.ndarray) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    i = 0
    for rb in batches:
        part = rb.filter(pa.array(keep[i : i + rb.num_rows]))
        i += rb.num_rows
        yield part


def _write_parquet_stream(batches, keep, target: Path, columns: list[str] | None = None) -> None:
    import pyarrow.parquet as pq

    writer = None
    try:
        for part in _filtered(batches, keep):
            part = _plain(part, columns)
            if writer is None:
                writer = pq.ParquetWriter(str(target), part.schema)
            writer.write_batch(part.cast(writer.schema))
    finally:
        if writer is not None:
            writer.close()


def _write_text_table(batches, keep, target: Path, fmt: str, columns) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    with _open_out(target) as sink:
        writer = None
        for part in _filtered(batches, keep):
            part = _plain(part, columns)
            if fmt == "txt":
                for text in part.column("text").to_pylist():
                    sink.write(((text or "") + "\n").encode("utf-8"))
                continue
            if fmt == "tsv":  # no quoting in a TSV (the reader has none): cells as they are
                if writer is None:
                    writer = False
                    sink.write(("\t".join(part.schema.names) + "\n").encode("utf-8"))
                cols = [
                    part.column(i).cast(pa.string()).to_pylist() for i in range(part.num_columns)
                ]
                for row in zip(*cols):
                    line = "\t".join("" if v is None else v for v in row) + "\n"
                    sink.write(line.encode("utf-8"))
                continue
            part = part.cast(pa.schema([pa.field(f.name, pa.string()) for f in part.schema]))
            if writer is None:
                options = pacsv.WriteOptions(delimiter="\t" if fmt == "tsv" else ",")
                writer = pacsv.CSVWriter(sink, part.schema, write_options=options)
            writer.write_batch(part)
        if writer:
            writer.close()


def _write_partitioned(corpus: Corpus, mask: np.ndarray, tmp: Path) -> dict[str, str]:
    """A split-column input: each split's kept rows to ``tmp/<split>.parquet`` (Parquet keeps
    every column's type, whatever the input's format)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..inputs.arrow import plain_batch

    column = corpus.split_column
    source = next(iter(corpus.splits.values()))
    writers: dict[str, Any] = {}
    i = 0
    try:
        for _, batches in source.iter_parts():
            for rb in batches(BATCH_ROWS):
                rb = _plain(plain_batch(rb), None)
                part_keep = mask[i : i + rb.num_rows]
                i += rb.num_rows
                values = rb.column(rb.schema.get_field_index(column)).cast(pa.string())
                names = ["null" if v is None else v for v in values.to_pylist()]
                for name in dict.fromkeys(names):
                    sel = np.array([n == name for n in names]) & part_keep
                    part = rb.filter(pa.array(sel))
                    if name not in writers:
                        writers[name] = pq.ParquetWriter(str(tmp / f"{name}.parquet"), part.schema)
                    writers[name].write_batch(part.cast(writers[name].schema))
    finally:
        for w in writers.values():
            w.close()
    return {name: f"{name}.parquet" for name in writers}

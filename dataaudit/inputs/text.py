"""Plain text → Arrow record batches: a ``.txt`` file is one document per line; a folder of
``.txt`` files is one document per file. Text that is not UTF-8 is an error naming the line (the
same check guards CSV/TSV and JSON Lines)."""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from ..errors import InputError
from .location import open_binary
from .source import SplitSource

__all__ = [
    "TEXT_SCHEMA",
    "first_bad_utf8",
    "iter_text_lines",
    "not_utf8",
    "require_utf8",
    "text_documents_split",
]

TEXT_SCHEMA = pa.schema([("text", pa.string())])


def not_utf8(path: Path, line: int, byte: int) -> InputError:
    return InputError(
        f"{path}:{line}: not valid UTF-8 (byte 0x{byte:02x}). Re-encode the file as "
        "UTF-8 (e.g. iconv -f latin1 -t utf-8) or fix that line."
    )


def first_bad_utf8(path: Path) -> tuple[int, int] | None:
    """(line, byte) of the first byte that is not UTF-8, or None."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    line = 1
    with open_binary(path) as fh:
        while chunk := fh.read(1 << 20):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                return line + chunk.count(b"\n", 0, exc.start), chunk[exc.start]
            line += chunk.count(b"\n")
    return None


def require_utf8(path: Path) -> None:
    """Raise naming the line when the file is not UTF-8 (about 1 GB/s)."""
    found = first_bad_utf8(path)
    if found is not None:
        raise not_utf8(path, *found)


def iter_text_lines(path: Path, batch_size: int) -> Iterator[pa.RecordBatch]:
    """A .txt file: one document per line (empty lines are documents too: TXT001 counts them;
    a final newline does not make one)."""
    require_utf8(path)
    with open_binary(path) as fh:
        lines: list[str] = []
        for raw in fh:
            lines.append(raw.decode("utf-8").rstrip("\r\n"))
            if len(lines) >= batch_size:
                yield pa.RecordBatch.from_pydict({"text": pa.array(lines, pa.string())})
                lines = []
        if lines:
            yield pa.RecordBatch.from_pydict({"text": pa.array(lines, pa.string())})


def text_schema(path: Path) -> tuple[pa.Schema, bool]:
    return TEXT_SCHEMA, True


def text_documents_split(name: str, paths: list[Path]) -> SplitSource:
    """A folder of .txt files, one document per file (``text``, and ``path`` to find it)."""

    def source(batch_size: int) -> Iterator[pa.RecordBatch]:
        for start in range(0, len(paths), batch_size):
            chunk = paths[start : start + batch_size]
            texts = []
            for p in chunk:
                require_utf8(p)
                texts.append(p.read_text(encoding="utf-8"))
            yield pa.RecordBatch.from_pydict(
                {
                    "text": pa.array(texts, pa.string()),
                    "path": pa.array(map(str, chunk), pa.string()),
                }
            )

    origin = f"{len(paths)} .txt files ({paths[0].parent}, …)"
    return SplitSource(name, source, len(paths), None, origin)

"""Byte ranges of a JSON Lines file that read exactly as the whole file reads.

The JSON Lines reader parses a file in blocks that end after the last newline of each
``BLOCK_BYTES`` chunk (a chunk without one joins the next). :func:`block_ends` finds those ends
from a small window before each chunk's end, without reading the file; a range of whole blocks,
served block by block (:class:`RangePath`), then gives the reader the same blocks, so pyarrow
types the same columns and a bad line has the same number: a worker reads a part of a large file
as the local engine reads all of it.
"""

from __future__ import annotations

from typing import Any

from .location import is_remote

__all__ = ["RangePath", "block_ends", "splittable"]

_WINDOW = 1 << 16
_COMPRESSED = (".gz", ".bz2", ".zst")


def splittable(path: Any) -> bool:
    """Whether byte ranges of the file can be read on their own (not compressed)."""
    return path.suffix.lower() not in _COMPRESSED


def _open(path: Any) -> Any:
    return path.open("rb") if is_remote(path) else open(path, "rb")  # noqa: SIM115


def block_ends(path: Any, size: int, block_bytes: int) -> list[int]:
    """The offsets where the reader's blocks end, the file's size last: one seek and a read of
    about 64 KB per chunk of ``block_bytes`` (wider when a line is longer)."""
    ends: list[int] = []
    with _open(path) as fh:
        for lo in range(0, size, block_bytes):
            hi = min(lo + block_bytes, size)
            width = _WINDOW
            while True:
                start = max(lo, hi - width)
                fh.seek(start)
                data = fh.read(hi - start)
                cut = data.rfind(b"\n")
                if cut >= 0:
                    ends.append(start + cut + 1)
                    break
                if start == lo:  # no newline in this chunk: its bytes join the next block
                    break
                width *= 8
    if not ends or ends[-1] != size:
        ends.append(size)
    return ends


class _Blocks:
    """The bytes from ``ends[0]`` to ``ends[-1]``, one block per ``read``; counts newlines."""

    def __init__(self, path: Any, ends: list[int]):
        self.fh = _open(path)
        self.fh.seek(ends[0])
        self.ends = ends
        self.next = 1
        self.newlines = 0

    def read(self, n: int = -1) -> bytes:
        if self.next >= len(self.ends):
            return b""
        data = self.fh.read(self.ends[self.next] - self.ends[self.next - 1])
        self.next += 1
        self.newlines += data.count(b"\n")
        return data

    def seekable(self) -> bool:
        return False

    def __enter__(self) -> _Blocks:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.fh.close()


class RangePath:
    """A path to a run of whole blocks of a file, for the JSON Lines reader: it opens as those
    bytes, block by block, and names the file in messages. ``newlines``: the lines read."""

    def __init__(self, path: Any, ends: list[int]):
        self.path, self.ends = path, ends
        self.suffix = path.suffix
        self.suffixes = path.suffixes
        self.name = path.name
        self._blocks: _Blocks | None = None

    def open(self, mode: str = "rb") -> _Blocks:
        self._blocks = _Blocks(self.path, self.ends)
        return self._blocks

    @property
    def newlines(self) -> int:
        return self._blocks.newlines if self._blocks is not None else 0

    def __str__(self) -> str:
        return str(self.path)

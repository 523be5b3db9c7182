"""Where a split's row sits in the files it was read from, for CI annotations.

The report keeps, per split, its files in order with their row counts (``dataset.splits[s].files``),
so split row ``r`` is row ``r - offset`` of one file. A line number is given only where it is
exact: JSON Lines and TSV (a record per non-blank line), CSV (records may span lines: the line
its record starts on), text (a document per line), for a local file, when no record was skipped
(a skipped line shifts every line after it: the place then names the file's row only). JSON
arrays, Parquet and Arrow have rows, not lines.
"""

from __future__ import annotations

import bisect
import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Locator", "Place"]

_LINE_FORMATS = ("jsonl", "csv", "tsv", "txt")


@dataclass(frozen=True)
class Place:
    path: str  # as the audit read it: relative to the working directory when under it
    row: int  # 0-based row within the file
    line: int | None  # 1-based line the row starts on, when exact


class Locator:
    """Split rows → file places for one report; each file is read at most once, and only
    for the rows asked about (``resolve``)."""

    def __init__(self, data: dict[str, Any]):
        splits = (data.get("dataset") or {}).get("splits") or {}
        self._files: dict[str, list[dict[str, Any]]] = {}
        self._starts: dict[str, list[int]] = {}
        for name, info in splits.items():
            files = [f for f in info.get("files") or [] if isinstance(f.get("rows"), int)]
            starts, at = [], 0
            for f in files:
                starts.append(at)
                at += f["rows"]
            self._files[name], self._starts[name] = files, starts
        self.exact_lines = _nothing_skipped(data)
        self._lines: dict[tuple[str, int], int] = {}

    def files(self, split: str) -> list[dict[str, Any]]:
        return self._files.get(split, [])

    def _file_row(self, split: str, row: int) -> tuple[dict[str, Any], int] | None:
        starts = self._starts.get(split)
        if not starts or row < 0:
            return None
        i = bisect.bisect_right(starts, row) - 1
        f = self._files[split][i]
        within = row - starts[i]
        return (f, within) if within < f["rows"] else None

    def resolve(self, wanted: list[tuple[str, int]]) -> None:
        """Find the lines of these split rows (one pass per file that holds some)."""
        per_file: dict[str, tuple[str, set[int]]] = {}
        for split, row in wanted:
            found = self._file_row(split, row)
            if found is None or not self.exact_lines:
                continue
            f, within = found
            if f.get("format") in _LINE_FORMATS and (f["path"], within) not in self._lines:
                per_file.setdefault(f["path"], (f["format"], set()))[1].add(within)
        for path, (fmt, rows) in per_file.items():
            for within, line in _lines_of(path, fmt, rows).items():
                self._lines[(path, within)] = line

    def place(self, split: str, row: int) -> Place | None:
        found = self._file_row(split, row)
        if found is None:
            return None
        f, within = found  # lines are known for the rows resolve() was given
        return Place(_shown_path(f["path"]), within, self._lines.get((f["path"], within)))


def _nothing_skipped(data: dict[str, Any]) -> bool:
    """Whether every record of every file was read (else line numbers may be shifted)."""
    if ((data.get("config") or {}).get("on_bad_lines") or "error") == "error":
        return True
    for r in data.get("results") or []:
        if r.get("code") == "INPUT001":
            return any(
                m.get("name") == "skipped_records" and m.get("value") == 0 for m in r["metrics"]
            )
    return False  # skipping was allowed and nothing says whether it happened


def _shown_path(path: str) -> str:
    if "://" in path:
        return path
    absolute = os.path.abspath(path)
    here = os.getcwd()
    if absolute == here or absolute.startswith(here.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, here)
    return path


def _lines_of(path: str, fmt: str, rows: set[int]) -> dict[int, int]:
    """{row: line} for the rows of a local line-based file; {} when it cannot be read."""
    from ..inputs.location import open_binary

    if "://" in path or not Path(path).is_file() or not rows:
        return {}
    last = max(rows)
    out: dict[int, int] = {}
    try:
        with open_binary(Path(path)) as fh:
            if fmt == "csv":
                text = io.TextIOWrapper(fh, encoding="utf-8-sig", newline="")
                return _csv_lines(csv.reader(text), rows, last)
            record = -1 if fmt == "tsv" else 0  # a TSV's first record is its header
            for number, raw in enumerate(_split_lines(fh), start=1):
                # a text file's every line is a document, empty ones too
                blank = not raw.strip() if fmt == "jsonl" else not raw.rstrip(b"\r")
                if blank and fmt != "txt":
                    continue
                if record in rows:
                    out[record] = number
                if record >= last:
                    break
                record += 1
    except (OSError, UnicodeDecodeError, csv.Error):
        return {}
    return out


def _split_lines(fh: Any) -> Any:
    """The file's lines split on ``\\n`` only (as the readers split them), without it."""
    tail = b""
    while True:
        chunk = fh.read(1 << 20)
        if not chunk:
            break
        parts = (tail + chunk).split(b"\n")
        tail = parts.pop()
        yield from parts
    if tail:
        yield tail


def _csv_lines(reader: Any, rows: set[int], last: int) -> dict[int, int]:
    out: dict[int, int] = {}
    record = -1  # the header
    before = 0  # lines read before the current record
    for fields in reader:
        start, before = before + 1, reader.line_num
        if not fields:
            continue  # an empty line is no record
        if record in rows:
            out[record] = start
        if record >= last:
            break
        record += 1
    return out

"""CSV and TSV → Arrow record batches, every column as text.

* Every column is read as a string: CSV has no types, and inferring them from the first block
  fails on a later block that disagrees (a label column that is numeric for 4 MB). Nothing is
  turned into null either: ``""`` and ``"NA"`` stay what the file says.
* Text that is not UTF-8 (a latin-1 export) is an error naming the line, never a binary column
  that every text rule then skips.
* TSV has no quoting (IANA text/tab-separated-values; GLUE and most NLP TSVs keep quotes as
  text): a stray ``"`` can then never swallow the following rows.
* CSV quoting follows RFC 4180. When a value spans lines, the file is checked strictly once:
  a quoted field that closes and is followed by more text is how an unbalanced quote merges the
  rows after it into one value, and that is an error naming the lines.
* A row with the wrong number of fields is an error naming its line, or skipped and noted with
  ``on_bad_lines="skip"``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from .._compute import pc
from ..errors import InputError
from ..rule import Severity
from .location import open_binary
from .notes import InputLog
from .text import require_utf8

__all__ = ["BLOCK_BYTES", "delimited_schema", "header", "iter_delimited"]

BLOCK_BYTES = 4 << 20  # pyarrow parses CSV in blocks of this size


def _strict_quotes(path: Path, delimiter: str) -> None:
    """Parse the file with Python's strict CSV reader; raise on a malformed quoted field."""
    # the csv module refuses fields over 128 KiB by default ("field larger than field limit"),
    # which this check reported as malformed quoting: a valid CSV of e-mails (a 228k-character
    # body, written by polars) could not be audited. Raised only, never lowered.
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    with open_binary(path) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8", newline="")
        reader = csv.reader(text, delimiter=delimiter, strict=True)
        start = 1
        try:
            for _ in reader:
                start = reader.line_num + 1
        except csv.Error as exc:
            span = (
                f"lines {start}-{reader.line_num}" if reader.line_num > start else f"line {start}"
            )
            raise InputError(
                f"{path}:{start}: malformed quoting ({exc}) in the record on {span}: a field that "
                'starts with " must end with " followed by the delimiter or the line end (a quote '
                'inside it is written ""). An unbalanced quote merges the rows after it into one '
                "value, so the file cannot be read as given. Fix the quote on that line."
            ) from None


def header(path: Path, delimiter: str = ",") -> list[str]:
    """The column names of a CSV/TSV file (unique, or an error naming the duplicates)."""
    with open_binary(path) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8", errors="replace", newline="")
        quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
        names = next(csv.reader(text, delimiter=delimiter, quoting=quoting), [])
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(
            f"{path}: the header names {', '.join(map(repr, dupes))} more than once; "
            "column names must be unique. Rename the duplicates."
        )
    return names


def delimited_schema(path: Path, delimiter: str = ",") -> tuple[pa.Schema | None, bool]:
    """The header's columns, all text (whole); (None, False) when the header cannot be read
    (the read names the problem)."""
    try:
        names = header(path, delimiter)
    except (pa.ArrowInvalid, OSError):
        return None, False
    return pa.schema([(n, pa.string()) for n in names]), True


def iter_delimited(
    path: Path,
    batch_size: int,
    delimiter: str = ",",
    *,
    on_bad_lines: str = "error",
    log: InputLog | None = None,
) -> Iterator[pa.RecordBatch]:
    import pyarrow.csv as pcsv

    tsv = delimiter == "\t"
    bad_rows: list[tuple[int | None, int, int, str]] = []

    def invalid_row(row: pcsv.InvalidRow) -> str:
        bad_rows.append((row.number, row.expected_columns, row.actual_columns, row.text))
        return "skip" if on_bad_lines == "skip" else "error"

    parse = pcsv.ParseOptions(
        delimiter=delimiter,
        quote_char=False if tsv else '"',
        newlines_in_values=not tsv,
        invalid_row_handler=invalid_row,
    )
    read = pcsv.ReadOptions(block_size=BLOCK_BYTES, use_threads=False)

    def fail(exc: Exception) -> InputError:
        if bad_rows:
            line, expected, actual, text = bad_rows[-1]
            where = f"{path}:{line}" if line is not None else str(path)
            return InputError(
                f"{where}: expected {expected} fields (as in the header), found {actual} in "
                f"{text[:80]!r}. Fix that line"
                + (
                    " (a TSV has no quoting: a tab inside a value splits it)"
                    if tsv
                    else ' (quote values that hold the delimiter: "a, b")'
                )
                + ", or pass on_bad_lines='skip' / --on-bad-lines skip to skip such rows and "
                "list them in the report."
            )
        return InputError(f"{path}: cannot read as {'TSV' if tsv else 'CSV'} ({exc}).")

    # pyarrow turns non-UTF-8 text into a binary column, or fails in its row handler without a
    # line number: check first (about 1 GB/s), so the error names the line
    require_utf8(path)
    try:
        names = header(path, delimiter)
        convert = pcsv.ConvertOptions(
            column_types={n: pa.string() for n in names}, strings_can_be_null=False
        )
        checked_quotes = tsv
        with open_binary(path) as fh:
            reader = pcsv.open_csv(
                fh, read_options=read, parse_options=parse, convert_options=convert
            )
            seen_bad = 0
            for rb in reader:
                if not checked_quotes and any(
                    pc.any(pc.match_substring(col, "\n")).as_py() for col in rb.columns
                ):
                    _strict_quotes(path, delimiter)
                    checked_quotes = True
                for line, expected, actual, text in bad_rows[seen_bad:]:
                    if log is not None:
                        log.add(
                            "skipped_line",
                            Severity.WARN,
                            "{count} records could not be read and were skipped (on_bad_lines=skip)",
                            place=f"{path}:{line}: expected {expected} fields, found {actual} in "
                            f"{text[:60]!r}",
                        )
                seen_bad = len(bad_rows)
                for start in range(0, rb.num_rows, batch_size):
                    yield rb.slice(start, batch_size)
    except (pa.ArrowInvalid, OSError) as exc:
        raise fail(exc) from None

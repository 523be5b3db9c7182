"""The row flags files (JSON Lines, CSV, Parquet), written from the flags table's columns with
Arrow, a block of rows at a time: the bytes polars' ``write_ndjson`` / ``write_csv`` write for
``Report.flags()`` (and a Parquet file that reads back as that frame) without importing polars,
~0.09 s and 200 modules in an audit that needs it for nothing else.

What polars writes, and this matches: JSON strings as ``json.dumps(ensure_ascii=False)`` escapes
them; a float as its shortest repr, but in decimals from 1e-5 on (``0.00001``), exponents unpadded
(``1e-7``), NaN and infinities ``null``; CSV fields quoted when empty or holding ``,``, ``"``,
CR or LF, a null empty, infinities ``inf``/``-inf``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from .._io import atomic_write, writes_stdout
from .flags import DICT_COLUMNS, FLAG_COLUMNS, FlagTable

if TYPE_CHECKING:
    import pyarrow as pa

#: flags encoded and written at a time (a block's text is ~10-40 MB)
BLOCK_ROWS = 1 << 16
#: rows in a Parquet row group (~ what polars writes: 4 of 125k for 500k rows)
PARQUET_ROWS = 1 << 17


def write_flag_file(flags: Mapping[str, Any], path: str | Path, fmt: str) -> Path:
    """Write a report's flags table (a FlagTable or the stored dict) to ``path`` in ``fmt``
    (jsonl, csv, parquet); a path that is this process' stdout gets CSV, as text."""
    count, columns = flag_columns(flags)
    if writes_stdout(path):
        for piece in encoded_blocks(count, columns, "csv"):
            sys.stdout.write(str(piece, "utf-8"))
        sys.stdout.flush()
        return Path(path)
    if fmt == "parquet":
        return atomic_write(path, lambda p: _write_parquet(count, columns, p))

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            _write_all(fh, encoded_blocks(count, columns, fmt))

    return atomic_write(path, write)


def _write_all(fh: BinaryIO, pieces: Iterator[memoryview]) -> None:
    for piece in pieces:
        fh.write(piece)


def flag_columns(flags: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    """(rows, columns as FlagTable holds them): the few-valued columns as (values, index) with
    a null as a None value, ``row`` and ``score`` numpy (NaN: null), ``id``/``cluster`` Arrow."""
    import numpy as np
    import pyarrow as pa

    from .._arrow import strings

    if isinstance(flags, FlagTable) and flags.columnar:
        return int(flags["count"]), flags.arrays
    columns: dict[str, Any] = {}
    for name in FLAG_COLUMNS:
        value = flags[name]
        if name in DICT_COLUMNS:
            columns[name] = (list(value["values"]), np.asarray(value["index"], np.int64))
        elif name == "row":
            columns[name] = np.asarray(value, np.int64)
        elif name == "score":
            columns[name] = np.array([np.nan if v is None else v for v in value], np.float64)
        else:
            columns[name] = pa.chunked_array([strings(list(value))], pa.large_string())
    return len(columns["row"]), columns


def encoded_blocks(count: int, columns: dict[str, Any], fmt: str) -> Iterator[memoryview]:
    """The file's UTF-8 bytes (``jsonl`` or ``csv``) a block of BLOCK_ROWS flags at a time:
    each column encoded as Arrow text, the lines joined by Arrow; a column with one value in
    the block (DUP002's split, code, severity, null id) joins as part of the literal text."""
    from .._arrow import strings
    from .._compute import call

    json_lines = fmt == "jsonl"
    encode = _json_text if json_lines else _csv_text
    if json_lines:
        glue = [f'{"{" if i == 0 else ","}"{name}":' for i, name in enumerate(FLAG_COLUMNS)]
    else:
        glue = [""] + [","] * (len(FLAG_COLUMNS) - 1)
        yield memoryview((",".join(FLAG_COLUMNS) + "\n").encode())
    distinct = {name: [encode(v) for v in columns[name][0]] for name in DICT_COLUMNS}
    for at in range(0, count, BLOCK_ROWS):
        end = min(at + BLOCK_ROWS, count)
        parts: list[Any] = [""]  # literal text (str) and Arrow text, alternating
        for name, text in zip(FLAG_COLUMNS, glue):
            value = _encoded_column(name, columns[name], at, end, distinct, json_lines)
            parts[-1] += text
            if isinstance(value, str):
                parts[-1] += value
            else:
                parts += [value, ""]
        parts[-1] += "}\n" if json_lines else "\n"
        literals = iter(strings([p for p in parts if isinstance(p, str)] + [""]))
        joined = [p if not isinstance(p, str) else next(literals) for p in parts]
        if len(joined) == 1:  # every column one value: one literal line, repeated
            yield memoryview((parts[0] * (end - at)).encode())
            continue
        yield _text_bytes(call("binary_join_element_wise", *joined, next(literals)))


def _encoded_column(
    name: str, value: Any, at: int, end: int, distinct: dict[str, list[str]], json_lines: bool
) -> pa.Array | str:
    """A block of a column as Arrow text, or as the one str every row of it has."""
    import numpy as np
    import pyarrow as pa

    from .._arrow import numeric_array, strings, take
    from .._compute import cast

    if name in DICT_COLUMNS:
        index = value[1][at:end]
        if (index == index[0]).all():
            return distinct[name][index[0]]
        return take(strings(distinct[name]), index)
    if name == "row":
        return cast(numeric_array(np.asarray(value[at:end], np.int64)), pa.large_string())
    if name == "score":
        return _float_texts(value[at:end], json_lines)
    text = value.slice(at, end - at)
    if text.null_count == len(text):
        return "null" if json_lines else ""
    return (_json_strings if json_lines else _csv_strings)(text)


def _json_text(value: str | None) -> str:
    return "null" if value is None else json.dumps(value, ensure_ascii=False)


def _csv_text(value: str | None) -> str:
    if value is None:
        return ""
    if value == "" or any(c in value for c in ',"\r\n'):
        return '"' + value.replace('"', '""') + '"'
    return value


#: a control character's escape in JSON, as json.dumps (and polars) write it
_CONTROL = {c: json.dumps(chr(c))[1:-1] for c in range(0x20)}


def _json_strings(array: pa.ChunkedArray) -> pa.Array:
    """Arrow text as JSON string literals (null: ``null``), escaped by Arrow: backslashes
    first, then quotes, then each control character the block holds (its bytes scanned by
    numpy: most blocks have none of them)."""
    from .._arrays import sorted_unique
    from .._arrow import one_chunk, string_parts, strings
    from .._compute import call, replace_substring

    text = one_chunk(array)
    parts = string_parts(text)
    assert parts is not None  # a string array
    data = parts[1]
    if ((data == ord('"')) | (data == ord("\\"))).any():
        text = replace_substring(text, "\\", "\\\\")
        text = replace_substring(text, '"', '\\"')
    for code in sorted_unique(data[data < 0x20], in_place=True).tolist():
        text = replace_substring(text, chr(code), _CONTROL[code])
    quote, null, empty = strings(['"', "null", ""])
    return call("coalesce", call("binary_join_element_wise", quote, text, quote, empty), null)


def _csv_strings(array: pa.ChunkedArray) -> pa.Array:
    """Arrow text as CSV fields: quoted (quotes doubled) when empty or holding , " CR or LF;
    a null empty. A block with none of those (its bytes scanned by numpy) is as it is."""
    import numpy as np

    from .._arrow import one_chunk, string_parts, strings, validity
    from .._compute import call, matches_regex, replace_substring

    text = one_chunk(array)
    quote, empty = strings(['"', ""])
    parts = string_parts(text)
    assert parts is not None  # a string array
    offsets, data = parts
    blank = np.diff(offsets) == 0
    valid = validity(text)
    if valid is not None:
        blank &= valid
    special = (data == ord(",")) | (data == ord('"')) | (data == ord("\r")) | (data == ord("\n"))
    if not blank.any() and not special.any():
        return call("coalesce", text, empty)
    needs = matches_regex(text, '^$|[,"\r\n]')
    doubled = replace_substring(text, '"', '""')
    quoted = call("binary_join_element_wise", quote, doubled, quote, empty)
    return call("coalesce", call("if_else", needs, quoted, text), empty)


def _float_texts(values: Any, json_lines: bool) -> pa.Array:
    """Floats as polars writes them (see the module docstring; NaN: null): Arrow's text (the
    shortest digits, as repr, ~4x faster), which is polars' but for a missing ``.0`` (Arrow
    "3"), NaN and infinities, and two ranges Arrow writes the other way (1e-6 <= |value| <
    1e-5 in decimals, 1e10 <= |value| < 1e16 with an exponent): those (with a margin) by
    _float_text. Checked against polars on 7.8M floats of every exponent."""
    import numpy as np
    import pyarrow as pa

    from .._arrow import mask_array, numeric_array, strings
    from .._compute import call, cast

    floats = np.ascontiguousarray(values, np.float64)
    texts = cast(numeric_array(floats), pa.large_string())
    with np.errstate(invalid="ignore"):
        size = np.abs(floats)
        whole = (floats == np.trunc(floats)) & (size < 9e9)
        other = ((size >= 9e-7) & (size < 2e-5)) | ((size >= 9e9) & (size < 2e16))
        other |= np.isnan(floats) | np.isinf(floats)
    if whole.any():
        point, empty = strings([".0", ""])
        with_point = call("binary_join_element_wise", texts, point, empty)
        texts = call("if_else", mask_array(whole), with_point, texts)
    if other.any():
        fixed = [_float_text(repr(v), json_lines) for v in floats[other].tolist()]
        texts = call("replace_with_mask", texts, mask_array(other), strings(fixed))
    return texts


def _float_text(text: str, json_lines: bool) -> str:
    """A float's repr as polars writes it: NaN and infinities ``null`` (CSV: empty, ``inf``,
    ``-inf``), exponents not padded (``1e-7``), 1e-5 <= |value| < 1e-4 in decimals
    (``0.000015``)."""
    if text in ("nan", "inf", "-inf"):
        return "null" if json_lines else text.replace("nan", "")
    if "e-" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = int(exponent)
    if power != -5:
        return f"{mantissa}e{power}"
    sign, digits = ("-", mantissa[1:]) if mantissa.startswith("-") else ("", mantissa)
    return f"{sign}0.0000{digits.replace('.', '')}"


def _text_bytes(array: pa.Array) -> memoryview:
    """The UTF-8 bytes of a text array's values, back to back (no copy)."""
    from .._arrow import string_parts

    parts = string_parts(array)
    assert parts is not None  # a string array
    return memoryview(parts[1])


def _write_parquet(count: int, columns: dict[str, Any], path: Path) -> None:
    """Parquet as polars writes the frame: large_string / int64 / double columns, zstd, a row
    group per PARQUET_ROWS rows, a dictionary only for the few-valued columns (as polars; for
    all, pyarrow's default, the write cost 2.5x the CPU for a larger file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            (n, pa.int64() if n == "row" else pa.float64() if n == "score" else pa.large_string())
            for n in FLAG_COLUMNS
        ]
    )
    values = {name: _decoded(columns[name]) for name in DICT_COLUMNS}
    with pq.ParquetWriter(
        path, schema, compression="zstd", use_dictionary=list(DICT_COLUMNS)
    ) as writer:
        for at in range(0, max(count, 1), PARQUET_ROWS):
            end = min(at + PARQUET_ROWS, count)
            writer.write_table(
                pa.table(
                    [_plain_column(n, columns[n], values, at, end) for n in FLAG_COLUMNS],
                    schema=schema,
                )
            )


def _decoded(value: tuple[list[Any], Any]) -> pa.Array:
    from .._arrow import strings

    return strings(value[0])


def _plain_column(
    name: str, value: Any, values: dict[str, pa.Array], at: int, end: int
) -> pa.Array | pa.ChunkedArray:
    import numpy as np
    import pyarrow as pa

    from .._arrow import numeric_array, take

    if name in DICT_COLUMNS:
        return take(values[name], value[1][at:end])
    if name == "row":
        return numeric_array(np.asarray(value[at:end], np.int64))
    if name == "score":
        part = np.ascontiguousarray(value[at:end], np.float64)
        bits = pa.py_buffer(np.packbits(~np.isnan(part), bitorder="little"))
        return pa.Array.from_buffers(pa.float64(), len(part), [bits, pa.py_buffer(part)])
    return value.slice(at, end - at)

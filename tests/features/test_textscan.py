"""The byte scan behind TXT001-TXT003 gives exactly what the regexes and Arrow's kernels give."""

from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dataaudit._arrow import bools, fixed, take, validity
from dataaudit.features.textscan import BLANK, CONTROL, blank_mask, scan_text
from tests._fresh import run_python

POOL = (
    [chr(c) for c in range(0x20, 0x7F)] * 6
    + [chr(c) for c in range(0x00, 0x20)]
    + ["\x7f", "\x85", "\xa0", "\xad", "é", "Ã", "©", "\ufffd", "\ufeff", "\u1680", "\u2028"]
    + [chr(c) for c in range(0x2000, 0x2010)]
    + ["\u3000", "中", "文", "😀", "\U0010fffd", "\uefbf", "\ue000", "\u205f", "\u2060"]
)


def _texts(seed: int, n: int = 600) -> list[str | None]:
    rng = random.Random(seed)
    out: list[str | None] = [None, "", " ", "\t\n", "\xa0\u200b", "\ufffd", "a\x7f", "\ufeff"]
    for _ in range(n):
        k = rng.choice([0, 1, 2, 3, 8, 40])
        pool = POOL if rng.random() < 0.5 else [" ", "\u3000", "\xa0", "\u200b", "x", "\ufffd"]
        out.append(None if rng.random() < 0.03 else "".join(rng.choices(pool, k=k)))
    return out


def _expected(arr: pa.Array) -> dict[str, np.ndarray]:
    arr = arr.cast(pa.large_string())  # the kernels take no string_view

    def regex(pattern: str) -> np.ndarray:
        return np.array(pc.match_substring_regex(arr, pattern).fill_null(False).to_pylist(), bool)

    return {
        "char_length": np.array(pc.utf8_length(arr).fill_null(-1).to_pylist(), np.int64),
        "non_ascii": ~np.array(pc.string_is_ascii(arr).fill_null(True).to_pylist(), bool),
        "control": regex(CONTROL),
        "replacement": regex("\ufffd"),
        "blank": regex(BLANK),
    }


def _check(arr: pa.Array) -> None:
    want = _expected(arr)
    scan = scan_text(arr)
    for key in ("char_length", "non_ascii", "control", "replacement"):
        assert np.array_equal(getattr(scan, key), want[key]), key
    assert np.array_equal(blank_mask(arr), want["blank"])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", [pa.large_string(), pa.string(), pa.string_view()])
def test_scan_equals_the_regexes(seed, kind):
    texts = _texts(seed)
    arr = pa.array(texts, kind)
    _check(arr)
    _check(arr.slice(5, 300))  # an offset into the buffers
    _check(pa.chunked_array([arr.slice(0, 10), arr.slice(10)]))


def test_dense_non_ascii_takes_the_per_row_kernels():
    rng = random.Random(7)
    texts = [
        "".join(rng.choices(["中", "文", "\ufffd", "\x01", "\x7f", "a", " "], k=30))
        for _ in range(200)
    ]
    _check(pa.array(texts + [None, "", "ascii only"], pa.large_string()))


def test_edge_arrays():
    for arr in (
        pa.array([], pa.large_string()),
        pa.array([None, None], pa.large_string()),
        pa.nulls(3, pa.large_string()),
        pa.array(["", ""], pa.string()),
    ):
        _check(arr)
    scan = scan_text(pa.nulls(2))
    assert scan.char_length.tolist() == [-1, -1] and not scan.control.any()


def test_a_null_slot_with_bytes_is_still_null():
    # Arrow allows a null's slot to hold bytes; they are not the row's text
    offsets = pa.py_buffer(np.array([0, 4, 7], np.int64))
    data = pa.py_buffer("\x01\ufffd".encode() + b"ok!")
    valid = pa.py_buffer(np.packbits([0, 1], bitorder="little"))
    arr = pa.Array.from_buffers(pa.large_string(), 2, [valid, offsets, data], null_count=1)
    scan = scan_text(arr)
    assert scan.char_length.tolist() == [-1, 3]
    assert not scan.control.any() and not scan.replacement.any() and not scan.non_ascii.any()
    assert blank_mask(arr).tolist() == [False, False]


def test_array_helpers():
    arr = pa.array([True, None, False, True, True, False, None, True, False, True])
    for sl in (arr, arr.slice(3), arr.slice(1, 6)):
        want = [bool(v) for v in sl.to_pylist()]
        assert bools(sl).tolist() == want
        assert bools(sl, null=True).tolist() == [True if v is None else v for v in sl.to_pylist()]
        assert validity(sl).tolist() == [v is not None for v in sl.to_pylist()]
    ints = pa.array([1, None, 3, 4], pa.int32()).slice(1)
    assert fixed(ints, -1).tolist() == [-1, 3, 4]
    assert fixed(pa.array([1.5, 2.0], pa.float32())).tolist() == [1.5, 2.0]
    assert take(pa.array(["a", "b", "c"]), np.array([2, 0])).to_pylist() == ["c", "a"]
    assert validity(pa.array([1, 2])) is None


def test_the_cheap_rules_do_not_import_pandas(tmp_path):
    """pyarrow's to_numpy / pa.scalar / pa.array(ndarray) import pandas (0.35-0.7 s) when it is
    installed: the cheap rules' scan reads Arrow buffers instead. A clean file too: its report
    has no flags (an empty flags table once combined its zero chunks through pa.array)."""
    pytest.importorskip("pandas")
    path = tmp_path / "t.parquet"
    import pyarrow.parquet as pq

    texts = ["hello world", "", "caf\u00c3\u00a9", "bad \x01", "\ufffd", None, "x" * 50, "\u3000"]
    pq.write_table(pa.table({"text": pa.array(texts * 50, pa.large_string())}), path)
    clean = tmp_path / "clean.parquet"
    pq.write_table(pa.table({"text": pa.array(["a clean sentence", "another one"] * 50)}), clean)
    lines = tmp_path / "t.jsonl"
    lines.write_text("".join(json.dumps({"text": t, "n": 1}) + "\n" for t in texts * 50))
    code = (
        "import sys, dataaudit\n"
        f"for path in ({str(path)!r}, {str(clean)!r}, {str(lines)!r}):\n"
        "    r = dataaudit.audit(path, select=['TXT001', 'TXT002', 'TXT003', 'FMT001'],"
        " progress=False)\n"
        "    assert r.results, r\n"
        "print('pandas' in sys.modules)\n"
    )
    assert run_python(code) == "False"

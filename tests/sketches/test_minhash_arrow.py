"""minhash reads and builds Arrow arrays with the shared buffer helpers (dataaudit._arrow):
null rows hash as nulls whatever the array's type, and the character-script probe of a
batch does not import pandas."""

from __future__ import annotations

import pyarrow as pa
import pytest

from dataaudit._arrow import strings
from dataaudit.sketches.minhash import EMPTY_HASH, NULL_HASH, text_bytes, text_hashes
from tests._fresh import run_python


def test_an_all_null_column_hashes_as_nulls():
    """A column of Arrow's null type has no validity buffer: every row is null all the same."""
    assert text_hashes(pa.nulls(3)).tolist() == [NULL_HASH] * 3


def test_null_rows_are_empty_and_hash_as_nulls_in_a_slice():
    arr = strings(["a b", None, "", "c d e", None]).slice(1)
    offsets, data = text_bytes(arr)
    assert offsets.tolist() == [0, 0, 0, 5, 5] and bytes(data) == b"c d e"
    got = text_hashes(arr)
    assert got[[0, 3]].tolist() == [NULL_HASH] * 2 and got[1] == EMPTY_HASH
    assert got[2] == text_hashes(strings(["c d e"]))[0]


def test_the_script_probe_does_not_import_pandas():
    pytest.importorskip("pandas")
    code = (
        "import sys\n"
        "from dataaudit._arrow import strings\n"
        "from dataaudit.sketches.minhash import cjk_rows\n"
        "rows = cjk_rows(strings(['plain', None, '日本語のテキストです', 'Ünïcödé']))\n"
        "print(rows.tolist(), 'pandas' in sys.modules)\n"
    )
    assert run_python(code) == "[False, False, True, False] False"

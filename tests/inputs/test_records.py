"""In-memory records: a column of one plain type is built from buffers, exactly as pa.array
types it, so a list of records does not import pandas (pa.array does, on its first call)."""

from __future__ import annotations

import math
import random
import sys

import pyarrow as pa
import pytest

from dataaudit.inputs.records import _plain_column, _text_and_other, records_to_batch
from tests._fresh import run_python


def _same(got: pa.Array, want: pa.Array) -> bool:
    def key(v):
        return "nan" if isinstance(v, float) and math.isnan(v) else v

    return (
        got.type == want.type
        and got.null_count == want.null_count
        and [key(v) for v in got.to_pylist()] == [key(v) for v in want.to_pylist()]
    )


def _column(rng: random.Random) -> list:
    pools = [
        ["a", "", "Straße", "日本", "\ufffd"],
        [0, 1, -5, 2**63 - 1, -(2**63)],
        [0.0, -1.5, 1e300, float("nan"), float("inf")],
        [True, False],
        [0, 7, -(2**53), 2**53, 0.5, -0.0, float("nan")],  # ints and floats: doubles
        [{"a": 1}, [1], "x"],
    ]
    pool = rng.choice(pools)
    if rng.random() < 0.2:
        pool = pool + rng.choice(pools)  # mixed types: left to pa.array
    return [None if rng.random() < 0.2 else rng.choice(pool) for _ in range(rng.randint(0, 12))]


def test_plain_columns_are_what_pa_array_makes():
    rng = random.Random(3)
    built = 0
    for _ in range(500):
        values = _column(rng)
        got = _plain_column(values)
        if got is None:
            continue
        built += 1
        assert _same(got, pa.array(values)), values
    assert built > 250  # most columns took the buffers path


def test_ints_and_floats_are_built_as_doubles():
    values = [1, None, 2.5, -(2**53), float("nan"), 2**53, -0.0]
    got = _plain_column(values)
    assert got is not None and _same(got, pa.array(values))


@pytest.mark.parametrize(
    "values",
    [[None, None], [], [1, True], [2**53 + 1, 0.5], [2**63], ["a", 1], [b"x"], [{"a": 1}], [[1]]],
)
def test_other_columns_are_left_to_pa_array(values):
    assert _plain_column(values) is None


def test_text_mixed_with_other_json_types_is_what_pa_array_rejects():
    """Such a column skips pa.array (its first call imports pandas) for its text form: only
    when pa.array would reject it."""
    rng = random.Random(5)
    mixed = 0
    for _ in range(500):
        values = _column(rng)
        if not _text_and_other(values):
            continue
        mixed += 1
        with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, OverflowError)):
            pa.array(values)
    assert mixed > 20


def test_a_lone_surrogate_is_still_repaired():
    repaired = []
    batch = records_to_batch([{"text": "ok"}, {"text": "bad \ud800"}], on_repair=repaired.append)
    assert batch.column("text").to_pylist() == ["ok", "bad \ufffd"]
    assert repaired == [1]


def test_auditing_records_does_not_import_pandas():
    pytest.importorskip("pandas")
    code = (
        "import sys, dataaudit\n"
        "rows = [{'text': t, 'label': i % 3, 'score': i / 7, 'ok': i % 2 == 0}\n"
        "        for i, t in enumerate(['hello world', '', 'caf\\u00c3\\u00a9', None] * 20)]\n"
        "rows[5]['label'] = None\n"
        "r = dataaudit.audit(rows, select=['TXT001', 'TXT002', 'TXT003', 'FMT001'],"
        " progress=False)\n"
        "assert r.results, r\n"
        "print('pandas' in sys.modules)\n"
    )
    assert run_python(code) == "False"


def test_past_a_million_values_pa_array_types_them(monkeypatch):
    """The buffers path is slower per value than pa.array: past BUFFER_VALUES a process pays
    pandas' import once instead (and once pandas is loaded, pa.array costs nothing more)."""
    import dataaudit.inputs.records as records

    monkeypatch.delitem(sys.modules, "pandas", raising=False)
    monkeypatch.setattr(records, "_buffer_values", 0)
    assert records._without_pa_array(records.BUFFER_VALUES - 1)
    assert records._without_pa_array(10)  # the column that crosses the bound
    assert not records._without_pa_array(1)
    monkeypatch.setattr(records, "_buffer_values", 0)
    monkeypatch.setitem(sys.modules, "pandas", object())
    assert not records._without_pa_array(1)

"""MIX001 source proportions: the fixture's recipe deviation and source drift, and recipes that do
not fit the data."""

from __future__ import annotations

import pytest

from dataaudit import audit
from dataaudit.errors import ConfigError
from tests import FIXTURES
from tests._fresh import run_python

CLS = FIXTURES / "classification"


def _findings(report, code, split=None):
    return [f for f in report.result(code)["findings"] if split is None or f["split"] == split]


@pytest.fixture(scope="module")
def fixture_report():
    return audit(
        str(CLS),
        select=["MIX001"],
        rules={
            "MIX001": {"recipe": {"fortunes": 0.5, "pydoc": 0.4, "glossary": 0.1}, "share": "rows"}
        },
    )


def test_mix001_finds_recipe_deviation_and_test_source_drift(fixture_report, ground_truth):
    found = _findings(fixture_report, "MIX001")
    off = {f["data"]["source"] for f in found if "recipe" in f["data"]}
    assert off == {"fortunes", "pydoc"}  # glossary 9.7% is within ±5% of 10%
    assert fixture_report.status("MIX001") == "fail"
    drift = [f for f in found if "cramers_v" in f["data"]]
    assert [f["split"] for f in drift] == ["test"]
    table = fixture_report.result("MIX001")["details"]["splits"]["train"]
    assert table["fortunes"]["row_share"] == pytest.approx(0.7333, abs=1e-3)
    assert table["fortunes"]["duplicate_rate"] > 0  # the planted exact duplicates are fortunes
    assert "mean_length" in table["pydoc"]


# -- MIX001 bad input -------------------------------------------------------------------------
def test_mix001_recipe_must_sum_to_one():
    with pytest.raises(ConfigError, match="sum to"):
        audit(
            [{"text": "a", "source": "web"}],
            select=["MIX001"],
            rules={"MIX001": {"recipe": {"web": 0.5}}},
        )


def test_mix001_recipe_without_source_column_is_an_error_status():
    report = audit(
        [{"text": "a b"}] * 5, select=["MIX001"], rules={"MIX001": {"recipe": {"web": 1.0}}}
    )
    assert report.status("MIX001") == "error"
    assert "source column" in report.result("MIX001")["message"]
    assert not report.passed


def test_mix001_missing_and_unexpected_sources():
    rows = [{"text": f"row {i}", "source": "web" if i % 2 else "forum"} for i in range(40)]
    report = audit(rows, select=["MIX001"], rules={"MIX001": {"recipe": {"web": 0.5, "code": 0.5}}})
    kinds = {f["fingerprint"]: f for f in _findings(report, "MIX001")}
    messages = " | ".join(f["message"] for f in kinds.values())
    assert "'code'" in messages and "missing" in messages
    assert "'forum' is not in the recipe" in messages


def test_mix001_update_does_not_import_pandas():
    """MIX001's per-batch source codes come from the dictionary indices' buffers (``fixed``), not
    ``fill_null`` with a Python int and ``to_numpy``, which import pandas (~0.3-0.7 s a process).
    A fresh process; token lengths stand in for the tokenizer, whose own path is not this rule's."""

    pytest.importorskip("pandas")
    code = (
        "import sys\n"
        "import numpy as np\n"
        "import pyarrow as pa\n"
        "from dataaudit.features import Batch\n"
        "from dataaudit._arrow import strings\n"
        "from dataaudit.inputs.roles import Roles\n"
        "from dataaudit.rules.mixture.proportions import NO_SOURCE, MixtureProportions\n"
        "from dataaudit.sketches.state import PerSplit\n"
        "class B(Batch):\n"
        "    __slots__ = ()\n"
        "    def feature(self, name, **params):\n"
        "        if name == 'token_lengths':\n"
        "            return np.array([3, 4, 5, 6, -1])\n"
        "        return super().feature(name, **params)\n"
        "text = strings(['a b c', 'd e f g', None, 'a b c', 'x'])\n"
        "source = strings(['web', None, 'books', 'web', None])\n"
        "rb = pa.RecordBatch.from_arrays([text, source], ['text', 'source'])\n"
        "b = B('train', rb, 0, Roles(text='text', source='source'))\n"
        "state = {'tok': 'whitespace', 'splits': PerSplit(dict), 'kinds': {}}\n"
        "MixtureProportions().update(state, b)\n"
        "got = state['splits'].at('train')\n"
        "print(sorted((k, v['rows'], v['tokens'], v['texts']) for k, v in got.items()),\n"
        "      NO_SOURCE in got, 'pandas' in sys.modules)\n"
    )
    got = run_python(code)
    want = "[('(no source)', 2, 4, 2), ('books', 1, 5, 0), ('web', 2, 9, 2)] True False"
    assert got == want

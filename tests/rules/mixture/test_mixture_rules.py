"""MIX001 source proportions: the fixture's recipe deviation and source drift, and recipes that do
not fit the data."""

from __future__ import annotations

import pytest

from dataaudit import audit
from dataaudit.errors import ConfigError
from tests import FIXTURES

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

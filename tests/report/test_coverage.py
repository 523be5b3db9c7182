"""Coverage: a rule that examined part of its scope says so, and so do the report and the verdict.

"Passed means read everything and found nothing": a pass from a rule that read a sample is
a partial pass, and the gate's line must not hide it.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from dataaudit import audit, registry
from dataaudit.report import Report
from dataaudit.report.schema import SCHEMA_PATH
from dataaudit.rule import Coverage, Rule, RuleResult

DOC = "What it does: reads some rows. Why it matters: tests. Example: -. Options: -."
DATA = {"train": [{"text": f"row number {i}"} for i in range(40)]}


class ReadsHalf(Rule):
    __doc__ = DOC
    code = "HALF001"
    name = "test.reads-half"
    requires = ()

    def start(self, ctx):
        return 0

    def update(self, state, batch):
        return state + batch.num_rows

    def merge(self, a, b):
        return a + b

    def finish(self, state, ctx):
        return RuleResult(
            coverage=Coverage(state // 2, state, reason="reads a sample of half (max_rows)")
        )


class ReadsAll(ReadsHalf):
    code = "FULL001"
    name = "test.reads-all"

    def finish(self, state, ctx):
        return RuleResult(coverage=Coverage(state, state))


@pytest.fixture
def register(monkeypatch):
    ruleset = registry.load_rules()
    for cls in (ReadsHalf, ReadsAll):
        monkeypatch.setitem(ruleset.rules, cls.code, cls)
        monkeypatch.setitem(ruleset.origin, cls.code, "test")


def test_partial_coverage_is_in_the_result_the_summary_and_the_verdict(register):
    report = audit(DATA, select=["HALF001", "FULL001", "TXT001"])
    assert report.passed
    half = report.result("HALF001")["coverage"]
    assert half == {
        "examined": 20,
        "in_scope": 40,
        "complete": False,
        "unit": "rows",
        "reason": "reads a sample of half (max_rows)",
    }
    assert report.result("FULL001")["coverage"]["complete"] is True
    assert report.result("TXT001")["coverage"] is None  # reads every row: says nothing
    assert report.data["summary"]["partial_coverage"] == ["HALF001"]
    jsonschema.validate(report.to_dict(), json.loads(SCHEMA_PATH.read_text()))
    text = report.summary()
    assert "gate PASSED on partial coverage" in text
    assert "HALF001 examined 20 of 40 rows (50.0%): reads a sample of half (max_rows)" in text
    assert "partial coverage: 20 of 40" in text  # on the rule's own line too
    # and the report reads back
    again = Report(json.loads(report.to_json()))
    assert again.data["summary"]["partial_coverage"] == ["HALF001"]


def test_full_coverage_keeps_the_plain_verdict(register):
    report = audit(DATA, select=["FULL001", "TXT001"])
    assert report.data["summary"]["partial_coverage"] == []
    assert "gate PASSED (fail_on=" in report.summary()
    assert "partial" not in report.summary()


def test_a_report_before_coverage_still_loads_and_renders(tmp_path):
    report = audit(DATA, select=["TXT001"]).to_dict()
    report["schema_version"] = "1.5"
    for r in report["results"]:
        del r["coverage"]
    del report["summary"]["partial_coverage"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(report))
    assert "gate PASSED (fail_on=" in Report.load(path).summary()


@pytest.mark.parametrize(
    "args, match",
    [
        ((5, 4), "exceeds in_scope"),
        ((-1, 4), "expected a count"),
        ((1.5, 4), "expected a count"),
        ((2, 4), "needs its reason"),
    ],
)
def test_a_coverage_that_cannot_be_true_is_refused(args, match):
    with pytest.raises(ValueError, match=match):
        Coverage(*args)


def test_the_markdown_verdict_says_partial_coverage_too(register):
    md = audit(DATA, select=["HALF001", "TXT001"]).to_markdown()
    assert "passed on partial coverage" in md
    assert "`HALF001` examined 20 of 40 rows: reads a sample of half (max\\_rows)" in md
    assert "partial" not in audit(DATA, select=["FULL001"]).to_markdown()


def test_the_html_verdict_says_partial_coverage_and_escapes_the_reason(register):
    from dataaudit.report.html import render_html

    report = audit(DATA, select=["HALF001", "TXT001"])
    data = report.to_dict()
    data["results"][0]["coverage"]["reason"] = '"><script>alert(1)</script>'
    page = render_html(data)
    assert "gate PASSED on partial coverage" in page
    assert 'id="coverage">Partial coverage: <span title="' in page
    assert "HALF001 examined 20 of 40 rows" in page and "<script>alert" not in page
    assert "partial coverage" not in render_html(audit(DATA, select=["FULL001"]).to_dict())


def test_a_failed_gate_does_not_blame_the_partial_coverage(register):
    """A gate that failed on findings says FAILED, not 'FAILED on partial coverage' (which read
    as if the coverage were the reason); the partial rule is still listed below the verdict."""
    from dataaudit.report.html import render_html

    empty = {"train": DATA["train"] + [{"text": ""}, {"text": "x"}]}  # TXT001 warns
    report = audit(empty, select=["HALF001", "TXT001"], fail_on="warn")
    assert not report.passed and report.status("TXT001") == "fail"
    data = report.to_dict()
    text, md, page = report.summary(), report.to_markdown(), render_html(data)
    assert "gate FAILED (fail_on=" in text and "FAILED on partial" not in text
    assert "HALF001 examined 21 of 42 rows" in text
    assert "❌ FAILED (fail_on=" in md and "`HALF001` examined 21 of 42 rows" in md
    assert "gate FAILED</span>" in page and 'id="coverage">Partial coverage:' in page

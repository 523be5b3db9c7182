"""A training log's findings in the CI formats and in diff, like a rule's (they used to show
only as the gate's reasons)."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

from dataaudit.report.diff import ReportDiff


def _codes(planted):
    return sorted({f["code"] for f in planted.signals["findings"]})


def test_junit_has_a_test_case_per_signal_code(planted, truth):
    suite = ET.fromstring(planted.to_junit())
    cases = {c.get("classname"): c for c in suite.iter("testcase")}
    text = ""
    for code in _codes(planted):
        case = cases[f"dataaudit.{code}"]
        # warn findings under fail_on=error: listed, not a failure (as a rule's)
        assert case.find("failure") is None
        text += case.find("system-out").text
    for plant in truth["planted"].values():
        assert f"step {plant['step']}" in text


def test_sarif_and_github_list_each_signal_finding(planted):
    log = json.loads(planted.to_sarif())
    ids = [r["ruleId"] for r in log["runs"][0]["results"]]
    found = planted.signals["findings"]
    assert sorted(i for i in ids if i.startswith("SIG")) == sorted(f["code"] for f in found)
    fingerprints = {
        r["partialFingerprints"]["dataauditFinding/v1"] for r in log["runs"][0]["results"]
    }
    assert {f["fingerprint"] for f in found} <= fingerprints
    annotations = planted.to_github()
    for f in found:
        assert f["code"] in annotations


def test_diff_of_two_training_runs_compares_their_signals(planted, clean):
    d = ReportDiff(clean.data, planted.data, fail_on="warn")
    new = {f.fingerprint for f in d.findings if f.state == "new"}
    assert {f["fingerprint"] for f in planted.signals["findings"]} <= new
    assert any(r.startswith("SIG") for r in d.regressions)
    back = ReportDiff(planted.data, clean.data, fail_on="warn")
    resolved = {f.fingerprint for f in back.findings if f.state == "resolved"}
    assert {f["fingerprint"] for f in planted.signals["findings"]} <= resolved
    assert not any(r.startswith("SIG") for r in back.regressions)


def test_diff_of_an_audit_and_a_signals_report_says_signals_are_not_compared(planted):
    plain = {k: v for k, v in planted.data.items() if k != "signals"}
    d = ReportDiff(plain, planted.data)
    assert any("only the new report has training signals" in w for w in d.warnings)
    assert not any(f.code.startswith("SIG") for f in d.findings)

"""A baseline of accepted findings: they are reported as suppressed (listed, never hidden), left
out of the rules' statuses and the gate, and a finding that is not in it still counts."""

from __future__ import annotations

import json

import jsonschema
import pytest

import dataaudit
from dataaudit.errors import InputError
from dataaudit.report.baseline import load_baseline, make_baseline
from dataaudit.report.schema import report_schema
from dataaudit.wording import plural

LEAKED = "This sentence sits in both the training and the test split of the data."
TRAIN = [{"text": f"Training row {i} talks about subject {i} at length."} for i in range(20)]
TEST = [{"text": f"Test row {i} covers a different subject {i}."} for i in range(6)]


def _audit(train, test, **kw):
    return dataaudit.audit({"train": train, "test": test}, select=["LEAK001", "TXT001"], **kw)


@pytest.fixture()
def accepted(tmp_path):
    report = _audit([*TRAIN, {"text": LEAKED}], [*TEST, {"text": LEAKED}])
    assert not report.passed  # a leak is an error finding: the gate fails
    path = tmp_path / "accepted.json"
    path.write_text(json.dumps(make_baseline(report.data)))
    return path, report


def test_accepted_findings_are_suppressed_not_hidden(accepted):
    path, before = accepted
    report = _audit([*TRAIN, {"text": LEAKED}], [*TEST, {"text": LEAKED}], baseline=path)
    assert report.passed and report.status("LEAK001") == "pass"
    findings = report.result("LEAK001")["findings"]
    assert findings and all(f["suppressed"] for f in findings)
    assert [f["fingerprint"] for f in findings] == [
        f["fingerprint"] for f in before.result("LEAK001")["findings"]
    ]
    assert report.data["summary"]["suppressed"] == len(findings)
    assert report.data["gate"]["baseline"] == {
        "path": str(path),
        "accepted": len(findings),
        "suppressed": len(findings),
        "stale": 0,
    }
    assert report.flags().filter(code="LEAK001").height > 0  # the rows are still flagged
    text = report.summary()
    assert (
        "suppressed by the baseline" in text
        and f"{plural(len(findings), 'finding')} suppressed" in text
    )
    jsonschema.validate(report.to_dict(), report_schema())


def test_a_new_finding_still_counts_and_a_fixed_one_is_stale(accepted):
    path, _ = accepted
    other = "A second sentence that was copied from training into the test split."
    report = _audit(
        [*TRAIN, {"text": LEAKED}, {"text": other}], [*TEST, {"text": LEAKED}, {"text": other}],
        baseline=path,
    )  # fmt: skip
    assert not report.passed and report.status("LEAK001") == "fail"
    states = sorted(f["suppressed"] for f in report.result("LEAK001")["findings"])
    assert states == [False, True]
    assert any("LEAK001 failed: 1 error finding" in r for r in report.data["gate"]["reasons"])
    fixed = _audit(TRAIN, TEST, baseline=path)
    assert fixed.passed and fixed.data["gate"]["baseline"]["stale"] == 1


def test_a_bad_baseline_is_an_input_error_before_the_scan(tmp_path, accepted):
    _, report = accepted
    given = tmp_path / "report.json"
    report.to_json(given)
    with pytest.raises(InputError, match="this is an audit report, not a baseline"):
        load_baseline(given)
    for body, message in (
        ("[]", "not a dataaudit baseline"),
        ('{"dataaudit_baseline": 1, "findings": [{"fingerprint": "x"}]}', "findings\\[0\\]"),
        ('{"dataaudit_baseline": 1}', "'findings' must be a list"),
    ):
        bad = tmp_path / "bad.json"
        bad.write_text(body)
        with pytest.raises(InputError, match=message):
            _audit(TRAIN, TEST, baseline=bad)
    with pytest.raises(InputError, match="missing.json"):
        _audit(TRAIN, TEST, baseline=tmp_path / "missing.json")


def test_the_baseline_lists_every_finding_sorted(accepted):
    _, report = accepted
    made = make_baseline(report.data)
    fingerprints = [f["fingerprint"] for f in made["findings"]]
    every = [f["fingerprint"] for r in report.results for f in r["findings"]]
    assert sorted(fingerprints) == sorted(every) and every
    assert made["findings"] == sorted(made["findings"], key=lambda f: (f["code"], f["fingerprint"]))
    assert made["report"]["config_hash"] == report.data["config"]["hash"]


def test_the_baseline_can_come_from_the_config(accepted):
    path, _ = accepted
    config = {"select": ["LEAK001", "TXT001"], "baseline": str(path)}
    report = dataaudit.audit(
        {"train": [*TRAIN, {"text": LEAKED}], "test": [*TEST, {"text": LEAKED}]}, config=config
    )
    assert report.passed and report.data["config"]["baseline"] == str(path)
    assert report.data["summary"]["suppressed"] == 1

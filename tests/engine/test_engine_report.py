"""Engine: error isolation, gate, determinism; report: schema, flags, built from rule outcomes."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from dataaudit import audit
from dataaudit.errors import GateFailed
from dataaudit.report import Report
from dataaudit.report.schema import SCHEMA_PATH, report_schema
from dataaudit.rule import Rule, RuleResult

DATA = {
    "train": [
        {"text": t, "label": "a"}
        for t in ["hello world", "   ", "caf\ufffd", "hello world", "ok then"]
    ],
    "test": [{"text": "fresh text", "label": "a"}],
}


def strip_times(d):
    d = json.loads(json.dumps(d))
    d.pop("created")
    d.pop("seconds")
    d.pop("timings")
    for r in d["results"]:
        r.pop("seconds")
    return d


def test_report_validates_against_the_committed_schema():
    report = audit(DATA)
    schema = json.loads(SCHEMA_PATH.read_text())
    assert schema == report_schema(), (
        "report.schema.json is stale: regenerate it with `dataaudit schema`"
    )
    jsonschema.validate(report.to_dict(), schema)
    broken = report.to_dict()
    broken["results"][0]["status"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_same_input_same_json_apart_from_times():
    a, b = audit(DATA).to_dict(), audit(DATA).to_dict()
    assert strip_times(a) == strip_times(b)
    assert (
        a["dataset"]["splits"]["train"]["content_hash"]
        == b["dataset"]["splits"]["train"]["content_hash"]
    )


def test_content_hash_is_order_independent_and_content_sensitive():
    rows = DATA["train"]
    h = lambda rs: audit({"train": rs}).data["dataset"]["splits"]["train"]["content_hash"]  # noqa: E731
    assert h(rows) == h(list(reversed(rows)))
    assert h(rows) != h(rows[:-1])
    assert h(rows) != h(rows + rows[:1])  # a duplicated row changes it
    assert h(rows) != h([{**rows[0], "text": "hello World"}] + rows[1:])


def test_batch_size_does_not_change_the_report():
    a = audit(DATA, batch_size=1).to_dict()
    b = audit(DATA, batch_size=1000).to_dict()
    a["config"].pop("batch_size"), b["config"].pop("batch_size")
    a["config"].pop("hash"), b["config"].pop("hash")
    assert strip_times(a) == strip_times(b)


class Exploding(Rule):
    """What it does: raises. Why it matters: tests isolation. Example: -. Options: none."""

    code = "BOOM001"
    name = "test.boom"
    requires = ()

    def start(self, ctx):
        return 0

    def update(self, state, batch):
        raise RuntimeError("kaboom")

    def merge(self, a, b):
        return a + b

    def finish(self, state, ctx):
        return RuleResult()


def test_a_crashing_rule_is_an_error_and_the_others_still_run(monkeypatch):
    from dataaudit import registry

    ruleset = registry.load_rules()
    monkeypatch.setitem(ruleset.rules, "BOOM001", Exploding)
    monkeypatch.setitem(ruleset.origin, "BOOM001", "test")
    report = audit(DATA, select=["BOOM001", "TXT001"])
    assert report.status("BOOM001") == "error"
    assert "kaboom" in report.result("BOOM001")["message"]
    assert report.status("TXT001") == "warn"
    assert report.passed is False
    with pytest.raises(GateFailed, match="BOOM001"):
        report.raise_for_status()


def test_fail_on_and_severity_override():
    assert audit(DATA, select=["TXT001"]).passed
    assert not audit(DATA, select=["TXT001"], fail_on="warn").passed
    report = audit(DATA, select=["TXT001"], rules={"TXT001": {"severity": "error"}})
    assert report.status("TXT001") == "fail" and not report.passed
    report = audit(DATA, select=["TXT001"], rules={"TXT001": {"severity": "info"}}, fail_on="warn")
    assert report.status("TXT001") == "pass" and report.passed


def test_rules_without_their_inputs_are_skipped_with_a_reason():
    from dataaudit import registry

    class NeedsLabel(Exploding):
        """What it does: -. Why it matters: -. Example: -. Options: none."""

        code = "BOOM002"
        requires = ("label",)

    ruleset = registry.load_rules()
    try:
        ruleset.rules["BOOM002"] = NeedsLabel
        ruleset.origin["BOOM002"] = "test"
        report = audit([{"text": "a"}], select=["BOOM002"])
    finally:
        ruleset.rules.pop("BOOM002")
        ruleset.origin.pop("BOOM002")
    assert report.status("BOOM002") == "skipped"
    assert "label" in report.result("BOOM002")["message"]
    assert report.passed


def test_flags_frame_and_examples_are_bounded():
    long = "x" * 5000 + "\ufffd"
    report = audit([{"text": long}] * 12, select=["TXT002"], rules=None)
    flags = report.flags()
    assert flags.columns == [
        "split",
        "row",
        "id",
        "code",
        "severity",
        "action",
        "cluster",
        "score",
        "detail",
    ]
    assert flags["row"].to_list() == list(range(12))
    finding = report.result("TXT002")["findings"][0]
    assert finding["count"] == 12
    assert len(finding["examples"]) == 5  # max_examples
    assert len(finding["examples"][0]["text"]) < 300  # untrusted text bounded
    assert re.match(r"^TXT002-[0-9a-f]{16}$", finding["fingerprint"])


def test_fingerprints_are_stable_across_versions():
    a = audit(DATA, select=["TXT001"]).result("TXT001")["findings"][0]["fingerprint"]
    more = {"train": DATA["train"] + [{"text": "another row", "label": "a"}], "test": DATA["test"]}
    b = audit(more, select=["TXT001"]).result("TXT001")["findings"][0]["fingerprint"]
    assert a == b


def test_json_and_flags_are_written_atomically(tmp_path, monkeypatch):
    report = audit(DATA)
    out = tmp_path / "report.json"
    report.to_json(out)
    assert Report.load(out).passed == report.passed
    report.write_flags(tmp_path / "flags.parquet")
    import polars as pl

    assert pl.read_parquet(tmp_path / "flags.parquet").height == report.flags().height

    def failing_dumps(*a, **k):
        raise OSError("disk full")

    target = tmp_path / "again.parquet"
    monkeypatch.setattr("pyarrow.parquet.ParquetWriter.write_table", failing_dumps)
    with pytest.raises(OSError):
        report.write_flags(target)
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_report_builds_from_rule_outcomes_without_the_local_engine():
    """Report.build takes what any engine hands over: each rule's outcome and each split's
    identity (a Ray engine has no local ScanState)."""
    import pyarrow as pa

    from dataaudit.config import load_config
    from dataaudit.context import AuditContext, SplitInfo
    from dataaudit.corpus import Roles
    from dataaudit.identity import SplitIdentity
    from dataaudit.rule import Finding, Flag, RuleOutcome, Severity

    def rule(code: str) -> Rule:
        return type(code, (Rule,), {"code": code, "name": f"test.{code.lower()}"})()

    identity = SplitIdentity()
    identity.update(pa.record_batch({"text": ["a", "b", "c"]}))
    ctx = AuditContext({"train": SplitInfo("train", "train")}, Roles(text="text"))
    found = RuleResult(findings=[Finding("two bad rows", "k", count=2)], flags=[Flag("train", 2)])
    outcomes = [
        RuleOutcome(rule("TST001"), Severity.WARN, found, seconds=0.25),
        RuleOutcome(rule("TST002"), Severity.ERROR, found),
        RuleOutcome(rule("TST003"), Severity.WARN, error="ValueError: boom"),
        RuleOutcome(rule("TST004"), Severity.WARN, skipped="needs the label column role(s)"),
        RuleOutcome(rule("TST005"), Severity.WARN, RuleResult()),
    ]
    report = Report.build(
        outcomes,
        {"train": identity},
        ctx,
        load_config(),
        stopped="a worker died",
        plugin_errors=[],
        seconds=1.0,
    )
    jsonschema.validate(report.to_dict(), report_schema())
    assert [r["status"] for r in report.results] == ["warn", "fail", "error", "skipped", "pass"]
    assert report.result("TST001")["seconds"] == 0.25
    assert report.data["dataset"]["splits"]["train"]["rows"] == 3
    reasons = report.data["gate"]["reasons"]
    assert reasons[0].startswith("the scan stopped before the end of the input: a worker died")
    assert "TST002 failed: 1 error finding (fail_on=error)" in reasons
    assert not report.passed
    flags = report.flags()
    assert flags["code"].to_list() == ["TST001", "TST002"]
    assert flags["severity"].to_list() == ["warn", "error"]  # the rule's configured severity

"""The verdict says what did not run, and a pipeline can demand that rules ran (require_rules)
and that the data has column roles (require_roles)."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

import jsonschema
import pytest

import dataaudit
from dataaudit.cli import main
from dataaudit.config import AuditConfig, load_config
from dataaudit.errors import ConfigError, GateFailed, InputError
from dataaudit.report.model import gate_reasons
from dataaudit.report.schema import report_schema

ROWS = [{"text": f"sentence {i} about the weather"} for i in range(10)]
LABELED = [{**r, "y": "ab"[i % 2]} for i, r in enumerate(ROWS)]


@pytest.fixture()
def data(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def test_verdict_line_groups_skipped_rules_by_reason(data, capsys):
    assert main(["audit", str(data), "--select", "LBL,TXT001", "--no-progress"]) == 0
    verdict = [x for x in capsys.readouterr().out.splitlines() if x.startswith("gate ")][0]
    assert verdict.startswith("gate PASSED (fail_on=error): ")
    assert "4 skipped (LBL001, LBL002, LBL003, LBL004: no label column)" in verdict


def test_required_rules_that_were_skipped_fail_the_gate(data, tmp_path, capsys):
    out = {k: tmp_path / f"r.{k}" for k in ("json", "html", "junit")}
    args = ["audit", str(data), "--require-rules", "LBL,TXT001", "--no-progress"]
    args += [x for k, p in out.items() for x in (f"--{k}", str(p))]
    assert main(args) == 1
    printed = capsys.readouterr().out
    assert "gate FAILED" in printed
    assert "✗ LBL002 required but skipped: needs the label column role" in printed
    report = json.loads(out["json"].read_text())
    jsonschema.validate(report, report_schema())
    gate = report["gate"]
    assert report["passed"] is False and gate["passed"] is False
    assert gate["required_rules"] == ["LBL", "TXT001"] and gate["fail_on"] == "error"
    assert [r.split(" ")[0] for r in gate["reasons"]] == ["LBL001", "LBL002", "LBL003", "LBL004"]
    assert report["summary"]["fail"] == 0  # no rule failed; the requirement did
    assert "LBL003 required but skipped" in out["html"].read_text()
    suite = ET.parse(out["junit"]).getroot()
    case = next(c for c in suite.iter("testcase") if c.get("classname") == "dataaudit.gate")
    assert "LBL004 required but skipped" in case.find("failure").text
    assert (
        int(suite.get("failures")) == 1
        and int(suite.get("tests")) == report["summary"]["rules"] + 1
    )


def test_required_rules_that_ran_pass(data):
    report = dataaudit.audit(LABELED, label="y", select=["LBL001", "TXT"], require_rules=["LBL001"])
    assert report.passed and report.data["gate"]["reasons"] == []
    report.raise_for_status()


def test_required_rule_not_selected_fails_the_gate():
    report = dataaudit.audit(ROWS, select=["TXT001"], require_rules="TXT002")
    assert not report.passed
    assert report.data["gate"]["reasons"] == [
        "TXT002 required but not selected: add it to select or extend_select "
        "(or remove it from ignore)"
    ]
    with pytest.raises(GateFailed, match="TXT002 required but not selected"):
        report.raise_for_status()


def test_gate_reasons_for_errors_and_failures():
    def result(code, status, message=None, findings=()):
        return {"code": code, "status": status, "message": message, "findings": list(findings)}

    results = [
        result("AA001", "error", "ZeroDivisionError: boom"),
        result("BB001", "fail", findings=[{"severity": "warn"}, {"severity": "info"}]),
        result("CC001", "error", "ValueError: bad"),
        result("DD001", "pass"),
    ]
    assert gate_reasons(results, ["CC001", "DD001"], "warn") == [
        "AA001 errored: ZeroDivisionError: boom",
        "BB001 failed: 1 warn finding (fail_on=warn)",
        "CC001 required but errored: ValueError: bad",
    ]
    assert gate_reasons(results[3:], ["DD001"], "error") == []


def test_a_require_rules_typo_fails_before_the_scan(data, capsys, monkeypatch):
    import dataaudit.engine

    monkeypatch.setattr(dataaudit.engine, "scan", lambda *a, **k: 1 / 0)
    assert main(["audit", str(data), "--require-rules", "LBL0001", "-q"]) == 2
    err = capsys.readouterr().err
    assert "require_rules: 'LBL0001' matches no rule" in err and "Did you mean" in err


def test_require_roles_missing_is_an_input_error_with_the_fix(data, capsys):
    assert main(["audit", str(data), "--require-roles", "label,source", "-q"]) == 2
    err = capsys.readouterr().err
    assert "require_roles: no label, source column was found in the data" in err
    assert "(its columns: 'text')" in err and "--label COLUMN --source COLUMN" in err
    with pytest.raises(InputError, match="no label column"):
        dataaudit.audit(ROWS, require_roles=["label"])


def test_require_roles_present(tmp_path):
    assert dataaudit.audit(LABELED, label="y", select=["TXT001"], require_roles="label").passed
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps({**r, "label": r["y"]}) + "\n" for r in LABELED))
    assert main(["audit", str(path), "--select", "TXT001", "--require-roles", "label", "-q"]) == 0


def test_require_keys_in_config_files(tmp_path):
    pack = tmp_path / "gate.yaml"
    pack.write_text("extends: default\nrequire_rules: [LBL]\nrequire_roles: label\n")
    cfg = load_config(pack)
    assert cfg.require_rules == ["LBL"] and cfg.require_roles == ["label"]
    pack.write_text("require_roles: [lable]\n")
    with pytest.raises(
        ConfigError, match=r"gate.yaml: require_roles: 'lable' is not a column role"
    ):
        load_config(pack)


def test_config_hash_is_unchanged_when_the_new_keys_are_unset():
    # reports written before require_rules/require_roles existed keep comparable config hashes
    import xxhash

    body = {
        k: v
        for k, v in AuditConfig().to_dict().items()
        if k
        not in ("pack", "require_rules", "require_roles", "on_bad_lines", "baseline", "predictions")
        and k != "tolerances"  # read by diffs only: never hashed
    }
    expected = xxhash.xxh3_64_hexdigest(json.dumps(body, sort_keys=True, default=str).encode())
    assert AuditConfig().hash() == expected
    assert AuditConfig(require_rules=["LBL"]).hash() != expected
    assert AuditConfig(predictions="preds.csv").hash() != expected
    assert AuditConfig(baseline="accepted.json").hash() != expected
    assert AuditConfig(tolerances={"TOK001.js": 0.01}).hash() == expected


def test_an_option_default_that_is_not_json_does_not_cost_the_report(monkeypatch):
    import json

    from dataaudit import registry
    from dataaudit.rule import Rule, RuleResult

    class OddDefaults(Rule):
        """What it does: -. Why it matters: -. Example: -. Options: -."""

        code = "ODD001"
        name = "test.odd-defaults"
        requires = ()

        def __init__(self, words: frozenset = frozenset({"a"}), limit: float = float("inf")):
            self.words, self.limit = words, limit

        def start(self, ctx):
            return 0

        def update(self, state, batch):
            return state + batch.num_rows

        def merge(self, a, b):
            return a + b

        def finish(self, state, ctx):
            return RuleResult()

    rules = registry.load_rules()
    monkeypatch.setitem(rules.rules, "ODD001", OddDefaults)
    monkeypatch.setitem(rules.origin, "ODD001", "test")
    report = dataaudit.audit([{"text": "a row"}], select=["ODD001"])
    (odd,) = [r for r in json.loads(report.to_json())["results"] if r["code"] == "ODD001"]
    options = odd["options"]
    assert options == {"words": "frozenset({'a'})", "limit": "inf"}

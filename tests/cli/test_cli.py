"""The CLI as a pipeline gate: exit codes, outputs, rules/explain/schema, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

from dataaudit.cli import main


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "dataaudit.cli", *args], capture_output=True, text=True
    )


@pytest.fixture()
def data(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "a good row"}\n{"text": ""}\n{"text": "caf\\u00c3\\u00a9 ok"}\n')
    return path


def test_audit_writes_reports_and_exits_by_gate(data, tmp_path, capsys):
    out = tmp_path / "out" / "report.json"
    assert (
        main(
            [
                "audit",
                str(data),
                "--json",
                str(out),
                "--flags",
                str(tmp_path / "f.parquet"),
                "--no-progress",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "TXT001" in printed and "gate PASSED" in printed
    report = json.loads(out.read_text())
    assert report["passed"] is True and report["summary"]["flagged_rows"] == 2
    assert main(["audit", str(data), "--fail-on", "warn", "-q"]) == 1
    assert main(["audit", str(data), "--option", "TXT001.severity=error", "-q"]) == 1
    assert main(["audit", str(data), "--ignore", "TXT001,TXT002", "--fail-on", "warn", "-q"]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.slow
def test_usage_input_and_config_errors_exit_2(data, tmp_path):
    for args, needle in [
        (["audit", str(tmp_path / "missing.jsonl")], "no such file"),
        (["audit", str(data), "--select", "NOPE"], "matches no rule"),
        (["audit", str(data), "--label", "lable"], "no such column"),
        (["audit", str(data), "--config", "nopack"], "neither a file nor a rule pack"),
        (["audit", str(data), "--option", "TXT003.max_chars"], "CODE.option=value"),
        (["explain", "XYZ123"], "unknown rule"),
    ]:
        out = run(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert needle in out.stderr and "Traceback" not in out.stderr
    assert run("audit").returncode == 2  # argparse usage error


@pytest.mark.slow
def test_failed_run_writes_no_report(tmp_path):
    bad = tmp_path / "train.jsonl"
    bad.write_text('{"text": "ok"}\n{oops}\n')
    out = run("audit", str(bad), "--json", str(tmp_path / "r.json"))
    assert out.returncode == 2 and "train.jsonl:2" in out.stderr
    assert not (tmp_path / "r.json").exists()


def test_internal_error_exits_3(monkeypatch, data, capsys):
    import dataaudit.api

    def boom(*a, **k):
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(dataaudit.api, "audit", boom)
    assert main(["audit", str(data)]) == 3
    err = capsys.readouterr().err
    assert "internal error: ZeroDivisionError: bug" in err and "Traceback" not in err


def test_rules_explain_schema(capsys):
    assert main(["rules"]) == 0
    listing = capsys.readouterr().out
    assert "TXT001" in listing and "content.empty-text" in listing
    assert main(["explain", "txt003"]) == 0
    text = capsys.readouterr().out
    assert "What it does" in text and "max_chars: 100000" in text
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(schema)


def test_pyproject_in_cwd_is_used(tmp_path, monkeypatch, data, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.dataaudit]\nfail_on = "warn"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["audit", str(data), "-q"]) == 1


def test_summary_escapes_terminal_control_sequences(tmp_path, capsys):
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps({"text": "\x1b[2J\x1b]0;pwned\x07"}) + "\n")
    main(["audit", str(path), "--no-progress"])
    assert "\x1b[2J" not in capsys.readouterr().out


def test_junit_output(data, tmp_path):
    from xml.etree import ElementTree as ET

    path = tmp_path / "junit.xml"
    assert main(["audit", str(data), "--junit", str(path), "--fail-on", "warn", "-q"]) == 1
    suite = ET.parse(path).getroot()
    cases = {c.get("classname"): c for c in suite.iter("testcase")}
    assert cases["dataaudit.TXT001"].find("failure") is not None
    assert int(suite.get("failures")) >= 1 and int(suite.get("tests")) == len(cases)

"""Dataset-derived text (column and split names, values, messages, plugin errors) never reaches
the terminal raw: escape sequences, BEL, carriage returns and bidi overrides are escaped."""

from __future__ import annotations

import copy
import json
import re
from xml.etree import ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dataaudit
from dataaudit.cli import main
from dataaudit.report.diff import diff
from dataaudit.report.escape import plain as safe
from dataaudit.report.text import render_summary

HOSTILE = ["\x1b[2J", "\x1b]0;pwned\x07", "\x07", "a\rb", "\u202eevil", "\x9b31m", "\u2067x"]
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _raw(text: str) -> list[str]:
    return RAW.findall(text.replace("\n", ""))


@pytest.mark.parametrize("bad", HOSTILE)
def test_safe_escapes_each_control(bad):
    assert not _raw(safe(bad)) and not _raw(safe(bad, multiline=True))


def test_summary_escapes_columns_splits_values_and_messages(tmp_path, capsys):
    rows = [{f"te{b}xt": f"value {b} here {i}", f"lab{b}el": b} for i, b in enumerate(HOSTILE)]
    split = {"tr\x1b[31main": rows, "te\u202est": rows[:3]}
    report = dataaudit.audit(split, text=f"te{HOSTILE[0]}xt", label=f"lab{HOSTILE[0]}el")
    report.data["plugin_errors"] = ["plugin x: \x1b[2J boom\x07"]
    text = report.summary()
    assert "\\x1b[31main" in text and "\\x1b[2J" in text  # shown, escaped
    assert not _raw(text), _raw(text)


def test_cli_summary_and_errors_are_escaped(tmp_path, capsys):
    path = tmp_path / "train.jsonl"
    path.write_text(
        "".join(
            json.dumps({"te\x1b[2Jxt": f"row {i} \x1b]0;x\x07", "y\u202e": "a"}) + "\n"
            for i in range(5)
        )  # fmt: skip
    )
    main(["audit", str(path), "--no-progress"])
    out = capsys.readouterr().out
    assert "te\\x1b[2Jxt" in out and not _raw(out)
    assert main(["audit", str(path), "--label", "nope"]) == 2  # lists the data's columns
    err = capsys.readouterr().err
    assert "te\\x1b[2Jxt" in err and not _raw(err)


def test_diff_summary_escapes_report_text():
    base = dataaudit.audit([{"text": f"row {i}"} for i in range(5)] + [{"text": ""}]).to_dict()
    hostile = copy.deepcopy(base)
    hostile["dataset"]["splits"] = {
        "tr\x1b[2Jain": hostile["dataset"]["splits"]["train"],
        "\u202enew": hostile["dataset"]["splits"]["train"],
    }
    hostile["tool"]["version"] = "9\x1b[31m"
    for r in hostile["results"]:
        r["name"] = "n\x07ame"
        for f in r["findings"]:
            f["message"] = "m\rX\x1b[2J"
            f["fingerprint"] = f["fingerprint"][:-1] + ("0" if f["fingerprint"][-1] != "0" else "1")
        for m in r["metrics"]:
            m["name"] = "me\x1btric"
            m["value"] = 99
    text = diff(base, hostile).summary() + diff(hostile, base).summary()
    assert "tr\\x1b[2Jain" in text and not _raw(text), _raw(text)


def test_junit_stays_valid_xml_with_hostile_names():
    report = dataaudit.audit([{"text": "\x1b[2J"}, {"text": ""}], fail_on="warn")
    data = copy.deepcopy(report.data)
    data["results"][0]["name"] = "x\x1b[2Jy"
    from dataaudit.report.junit import render_junit

    suite = ET.fromstring(render_junit(data).split("\n", 1)[1])
    assert "x\\x1b[2Jy" in [c.get("name") for c in suite.iter("testcase")]


def test_render_summary_of_a_failed_gate_escapes_reasons():
    report = dataaudit.audit([{"text": "ok"}], select=["TXT001"])
    data = copy.deepcopy(report.data)
    data["passed"] = False
    data["gate"]["reasons"] = ["X required but skipped: \x1b[2J"]
    text = render_summary(data)
    assert "✗ X required but skipped: \\x1b[2J" in text and not _raw(text)


_BASE = dataaudit.audit(
    [{"text": f"row {i}", "label": "ab"[i % 2]} for i in range(6)] + [{"text": "", "label": "a"}],
    select=["TXT001", "LBL003"],
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=20), min_size=5, max_size=5))
def test_any_text_in_a_report_renders_safely(texts):
    from dataaudit.report.junit import render_junit

    data = copy.deepcopy(_BASE.data)
    split, column, message, name, plugin = texts
    data["dataset"]["splits"] = {split: data["dataset"]["splits"]["train"]}
    data["dataset"]["roles"]["text"]["column"] = column
    for r in data["results"]:
        r["name"] = name
        for f in r["findings"]:
            f["message"] = message
    data["plugin_errors"] = [plugin]
    data["passed"] = False
    data["gate"]["reasons"] = [message]
    assert not _raw(render_summary(data))
    ET.fromstring(render_junit(data).split("\n", 1)[1])  # well-formed XML whatever the text
    json.loads(dataaudit.Report(data).to_json())


def test_lone_surrogates_in_a_report_do_not_lose_it(tmp_path):
    data = copy.deepcopy(_BASE.data)
    txt001 = next(r for r in data["results"] if r["code"] == "TXT001")
    txt001["findings"][0]["message"] = "bad \ud800 text"
    data["dataset"]["roles"]["text"]["column"] = "col\udc80"
    report = dataaudit.Report(data)
    for write, name in (
        (report.to_json, "r.json"),
        (report.to_html, "r.html"),
        (report.to_junit, "r.xml"),
    ):
        write(tmp_path / name)
    written = json.loads((tmp_path / "r.json").read_text())
    txt001 = next(r for r in written["results"] if r["code"] == "TXT001")
    assert txt001["findings"][0]["message"] == "bad \ufffd text"
    text = report.summary()
    assert "\\ud800" in text and "col\\udc80" in text
    text.encode("utf-8")  # printable

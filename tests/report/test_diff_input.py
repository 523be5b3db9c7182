"""`dataaudit diff` on reports it cannot read: exit 2 naming the file and what is wrong, never an
internal error; any mangled report is either compared or refused with an InputError."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dataaudit
from dataaudit.cli import main
from dataaudit.errors import InputError
from dataaudit.report.diff import diff
from dataaudit.report.model import Report

ROWS = [{"text": f"row {i} about the weather"} for i in range(20)] + [{"text": ""}]


@pytest.fixture(scope="module")
def report() -> dict:
    return dataaudit.audit(ROWS, select=["TXT001", "TXT003", "FMT001"]).to_dict()


@pytest.fixture()
def good(tmp_path, report):
    path = tmp_path / "good.json"
    path.write_text(json.dumps(report))
    return path


def _broken(report: dict) -> dict[str, tuple[bytes, str]]:
    text = json.dumps(report, indent=2)
    no_results = {k: v for k, v in report.items() if k != "results"}
    bad_result = copy.deepcopy(report)
    del bad_result["results"][0]["status"]
    bad_type = copy.deepcopy(report)
    bad_type["results"][1]["findings"] = "none"
    bad_metric = copy.deepcopy(report)
    bad_metric["results"][0]["metrics"] = [{"name": "x"}]
    bad_status = copy.deepcopy(report)
    bad_status["results"][0]["status"] = "great"
    newer = {**report, "schema_version": "2.0"}
    return {
        "garbage": (b"\x00\x01binary\xff", "not UTF-8 text"),
        "truncated": (text[: len(text) // 2].encode(), "looks truncated"),
        "latin1": ('{"schema_version": "1.0", "x": "caf\xe9"}'.encode("latin-1"), "not UTF-8"),
        "empty": (b"", "the file is empty"),
        "blank": (b"  \n", "the file is empty"),
        "list": (b"[1, 2]", "the top level is a JSON array"),
        "other-json": (b'{"name": "x"}', "no schema_version"),
        "no-results": (json.dumps(no_results).encode(), "$: missing key 'results'"),
        "result-without-status": (
            json.dumps(bad_result).encode(),
            "$.results[0]: missing key 'status'",
        ),
        "findings-not-a-list": (
            json.dumps(bad_type).encode(),
            "$.results[1].findings: expected array, got string",
        ),
        "metric-without-value": (
            json.dumps(bad_metric).encode(),
            "$.results[0].metrics[0]: missing key 'split'",
        ),
        "unknown-status": (json.dumps(bad_status).encode(), '"great" is not one of'),
        "newer-major": (json.dumps(newer).encode(), "written by a newer dataaudit"),
        "deep": (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "garbage",
        "truncated",
        "latin1",
        "empty",
        "blank",
        "list",
        "other-json",
        "no-results",
        "result-without-status",
        "findings-not-a-list",
        "metric-without-value",
        "unknown-status",
        "newer-major",
        "deep",
    ],
)
@pytest.mark.parametrize("side", ["old", "new"])
def test_unreadable_report_is_exit_2_naming_file_and_problem(
    tmp_path, good, report, capsys, case, side
):
    content, needle = _broken(report)[case]
    bad = tmp_path / f"{case}.json"
    bad.write_bytes(content)
    args = [str(bad), str(good)] if side == "old" else [str(good), str(bad)]
    assert main(["diff", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: ") and needle in err, err
    assert "Traceback" not in err and "internal error" not in err


def test_missing_report_file(tmp_path, good, capsys):
    assert main(["diff", str(tmp_path / "nope.json"), str(good)]) == 2
    assert "nope.json: cannot read a dataaudit report (No such file" in capsys.readouterr().err


def test_a_newer_minor_version_with_extra_keys_is_read(tmp_path, good, report):
    newer = {**report, "schema_version": "1.9", "something_new": {"x": 1}}
    newer["results"] = [{**r, "extra": True} for r in report["results"]]
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(newer))
    assert not diff(str(good), str(path)).regressed


def test_a_1_0_report_without_the_gate_object_is_read(tmp_path, good, report):
    old = {k: v for k, v in report.items() if k != "gate"}
    old["schema_version"] = "1.0"
    path = tmp_path / "v10.json"
    path.write_text(json.dumps(old))
    assert Report.load(path).passed is report["passed"]
    assert not diff(str(path), str(good)).regressed


def test_dicts_and_report_objects_are_checked_too(report):
    with pytest.raises(InputError, match=r"^old report \(dict\): .*missing key 'results'"):
        diff({"schema_version": "1.0"}, report)
    broken = Report(copy.deepcopy(report))
    broken.data["results"][0]["metrics"] = None
    with pytest.raises(InputError, match=r"^new report: .*metrics: expected array, got null"):
        diff(report, broken)


def test_diff_json_to_stdout_keeps_stdout_valid(good, capsys):
    assert main(["diff", str(good), str(good), "--json", "-"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["regressed"] is False and "verdict: no regression" in err


def test_diff_json_over_a_compared_report_is_refused(tmp_path, good, capsys):
    before = good.read_text()
    assert main(["diff", str(good), str(good), "--json", str(good)]) == 2
    assert "it is a report being compared" in capsys.readouterr().err
    assert good.read_text() == before


# -- property: any mangled report is compared or refused, never a crash ----------------------------
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_mangled_reports_are_compared_or_refused(report, data):
    mangled = copy.deepcopy(report)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _paths(mangled) if p]
        path = data.draw(st.sampled_from(paths))
        parent = mangled
        for key in path[:-1]:
            parent = parent[key]
        if data.draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(_json)
    for old, new in ((report, mangled), (mangled, report)):
        try:
            d = diff(old, new)
        except InputError as exc:
            assert "report" in str(exc)
            continue
        d.summary()  # the comparison and its rendering both survive
        json.dumps(d.to_dict(), allow_nan=False)

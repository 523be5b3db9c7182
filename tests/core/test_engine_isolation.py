"""One misbehaving rule costs its own verdict, never the report."""

from __future__ import annotations

import json

import _crashy_rules as crashy
import jsonschema
import numpy as np
import pytest

from dataaudit import audit, registry
from dataaudit.report.schema import report_schema
from dataaudit.rule import Finding, Flag, Metric, Rule, RuleResult

ROWS = [{"text": t} for t in ["hello world", "   ", "caf\ufffd", "ok then"] * 5]


@pytest.fixture
def register(monkeypatch):
    ruleset = registry.load_rules()

    def add(*classes):
        for cls in classes:
            monkeypatch.setitem(ruleset.rules, cls.code, cls)
            monkeypatch.setitem(ruleset.origin, cls.code, "test")

    return add


def _check_report(report) -> dict:
    """The report survives: it serializes as the contract says and validates."""
    data = json.loads(report.to_json())
    jsonschema.validate(data, report_schema())
    report.summary()
    report.to_html()
    return data


# -- values the report cannot hold ----------------------------------------------------------------


class _Unwritable:
    pass


def _finding(**kw):
    return Finding(message="m", key="k", **kw)


BAD_RESULTS = {
    "inf metric": (lambda r: r.metric("x", float("inf")), "metrics[0] 'x'.value: inf is not"),
    "-inf metric": (
        lambda r: r.metric("x", float("-inf"), split="train"),
        "metrics[0] 'x' (split 'train').value: -inf is not a finite number",
    ),
    "str metric": (lambda r: r.metric("x", "0.5"), "metrics[0] 'x'.value: str is not a number"),
    "bad direction": (
        lambda r: r.metrics.append(Metric("x", 1, "sideways")),
        "metrics[0] 'x'.direction: 'sideways' is not a Direction",
    ),
    "set in details": (
        lambda r: r.details.update(x={1, 2}),
        "details['x']: set is not JSON (use a sorted list)",
    ),
    "bytes in thresholds": (
        lambda r: r.thresholds.update(t=b"\x00"),
        "thresholds['t']: bytes is not JSON",
    ),
    "inf deep in details": (
        lambda r: r.details.update(a={"b": [1.0, float("inf")]}),
        "details['a']['b'][1]: inf is not a finite number",
    ),
    "tuple key": (
        lambda r: r.details.update(pairs={("a", "b"): 1}),
        "details['pairs']: key ('a', 'b') is a tuple",
    ),
    "circular details": (
        lambda r: r.details.update(me=r.details),
        "details['me']: contains itself",
    ),
    "complex numpy": (
        lambda r: r.details.update(z=np.complex128(1j)),
        "details['z']: numpy complex128 is not JSON",
    ),
    "object in finding data": (
        lambda r: r.findings.append(_finding(data={"o": _Unwritable()})),
        "findings[0].data['o']: _Unwritable is not JSON",
    ),
    "set in an example": (
        lambda r: r.findings.append(
            _finding(examples=[{"split": "train", "row": 0, "tags": {"a"}}])
        ),
        "findings[0].examples[0]['tags']: set is not JSON",
    ),
    "example without a row": (
        lambda r: r.findings.append(_finding(examples=[{"split": "train", "text": "x"}])),
        "findings[0].examples[0]['row']: None is not a count",
    ),
    "message not a str": (
        lambda r: r.findings.append(Finding(message=42, key="k")),
        "findings[0].message: int 42, expected a str",
    ),
    "negative count": (
        lambda r: r.findings.append(_finding(count=-1)),
        "findings[0].count: -1 is not a count",
    ),
    "unknown severity": (
        lambda r: r.findings.append(_finding(severity="fatal")),
        "findings[0].severity: 'fatal' is not a Severity",
    ),
    "flag with a list as group": (
        lambda r: r.flags.append(Flag("train", 1, group=["g"])),
        "flags[0]: Flag(split='train', row=1, group=['g']",
    ),
    "not a RuleResult": (None, "finish() returned a dict, not a RuleResult"),
}


class BadResult(Rule):
    """What it does: returns what ``make`` builds. Why it matters: -. Example: -. Options: -."""

    code = "BAD001"
    name = "test.bad-result"
    requires = ()
    make = staticmethod(lambda result: None)

    def start(self, ctx):
        return 0

    def update(self, state, batch):
        return state + batch.num_rows

    def merge(self, a, b):
        return a + b

    def finish(self, state, ctx):
        if self.make is None:
            return {"metrics": []}
        result = RuleResult()
        self.make(result)
        return result


@pytest.mark.parametrize("case", list(BAD_RESULTS))
def test_a_result_the_report_cannot_hold_is_an_error_of_that_rule_only(register, case):
    make, reason = BAD_RESULTS[case]
    make = None if make is None else staticmethod(make)
    register(type("Bad", (BadResult,), {"__doc__": BadResult.__doc__, "make": make}))
    report = audit(ROWS, select=["BAD001", "TXT001"])
    data = _check_report(report)
    bad = report.result("BAD001")
    assert bad["status"] == "error"
    assert bad["message"].startswith("the rule's result cannot be written to the report: ")
    assert reason in bad["message"]
    assert (bad["metrics"], bad["findings"], bad["details"]) == ([], [], {})
    assert report.status("TXT001") == "warn"
    assert report.result("TXT001") == audit(ROWS, select=["TXT001"]).result("TXT001") | {
        "seconds": report.result("TXT001")["seconds"]
    }
    assert not report.passed and data["summary"]["error"] == 1
    assert report.flags()["code"].unique().to_list() == ["TXT001"]


def test_numpy_values_and_nan_are_converted_not_rejected(register):
    def make(r):
        r.metric("f32", np.float32(0.5))
        r.metric("i64", np.int64(3))
        r.metric("nan", float("nan"))
        r.details.update(
            arr=np.arange(3),
            nested={np.int64(7): (np.bool_(True), np.float64(0.25), float("nan"))},
            matrix=np.array([[1.5, 2.0]]),
        )
        r.findings.append(
            Finding(
                "m",
                "k",
                count=np.int64(2),
                severity="info",
                examples=[{"split": "train", "row": np.int64(4), "text": "t"}],
                data={"share": np.float32(0.25)},
            )
        )
        r.flags.append(Flag("train", np.int64(4)))

    register(type("Fine", (BadResult,), {"__doc__": BadResult.__doc__, "make": staticmethod(make)}))
    report = audit(ROWS, select=["BAD001"])
    (res,) = [r for r in _check_report(report)["results"] if r["code"] == "BAD001"]
    assert res["status"] == "pass", res["message"]
    assert [m["value"] for m in res["metrics"]] == [0.5, 3, None]
    assert res["details"] == {
        "arr": [0, 1, 2],
        "nested": {"7": [True, 0.25, None]},
        "matrix": [[1.5, 2.0]],
    }
    (finding,) = res["findings"]
    assert (finding["count"], finding["severity"]) == (2, "info")
    assert finding["examples"] == [{"split": "train", "row": 4, "text": "t"}]
    assert finding["data"] == {"share": 0.25}
    assert report.flags()["row"].to_list() == [4]


# -- rules that raise -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "where, workers",
    [
        ("start", 1),
        ("update", 1),
        ("finish", 1),
        ("start", 2),
        ("update", 2),
        ("merge", 2),
        ("finish", 2),
    ],
)
def test_a_rule_that_raises_is_an_error_and_the_others_still_run(register, where, workers):
    register(crashy.Raises, crashy.CountRows)
    report = audit(
        ROWS * 100,
        select=["RAISE001", "OKAY001", "TXT001"],
        rules={"RAISE001": {"where": where}},
        workers=workers,
        batch_size=500,
    )
    _check_report(report)
    assert report.status("RAISE001") == "error"
    assert f"kaboom in {where}" in report.result("RAISE001")["message"]
    assert report.metric("OKAY001", "rows") == len(ROWS) * 100
    assert report.result("TXT001")["findings"][0]["count"] == 500
    assert not report.passed

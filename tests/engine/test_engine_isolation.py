"""One misbehaving rule costs its own verdict, never the report: values the report cannot hold,
states or rules that cannot travel to worker processes, and worker processes that die."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from dataaudit import audit, registry
from dataaudit.report.schema import report_schema
from dataaudit.rule import Finding, Flag, Metric, Rule, RuleResult
from tests.engine import _crashy_rules as crashy

HERE = Path(__file__).resolve().parent
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
        r.metric("flag", np.bool_(True))
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
    assert [m["value"] for m in res["metrics"]] == [0.5, 3, None, 1]
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
        ("skip_reason", 1),
        ("start", 1),
        ("update", 1),
        ("finish", 1),
        pytest.param("start", 2, marks=pytest.mark.slow),
        pytest.param("update", 2, marks=pytest.mark.slow),
        pytest.param("merge", 2, marks=pytest.mark.slow),
        pytest.param("finish", 2, marks=pytest.mark.slow),
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


@pytest.mark.parametrize(
    "where, workers",
    [("update", 1), ("finish", 1), pytest.param("update", 2, marks=pytest.mark.slow)],
)
def test_a_rule_that_calls_sys_exit_is_an_error_not_the_audits_exit(register, where, workers):
    register(crashy.Raises, crashy.CountRows)
    report = audit(
        ROWS * 100,
        select=["RAISE001", "OKAY001"],
        rules={"RAISE001": {"where": where, "how": "exit"}},
        workers=workers,
        batch_size=500,
    )
    assert report.status("RAISE001") == "error"
    assert "the rule called sys.exit(0)" in report.result("RAISE001")["message"]
    assert report.metric("OKAY001", "rows") == len(ROWS) * 100
    assert not report.passed


# -- what cannot travel between worker processes --------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "cls, what",
    [
        (crashy.LambdaState, "the rule's state cannot be sent between worker processes"),
        (crashy.GeneratorState, "the rule's state cannot be sent between worker processes"),
        (crashy.LockState, "the rule's state cannot be sent between worker processes"),
        (crashy.LockedRule, "the rule cannot be sent between worker processes"),
    ],
    ids=["lambda-state", "generator-state", "lock-state", "lock-in-rule"],
)
def test_what_cannot_be_pickled_is_an_error_of_its_rule_with_workers(register, cls, what):
    register(cls, crashy.CountRows)
    one = audit(ROWS * 100, select=[cls.code, "OKAY001", "TXT001"], batch_size=500)
    assert one.status(cls.code) == "pass"  # one process: nothing is pickled
    two = audit(ROWS * 100, select=[cls.code, "OKAY001", "TXT001"], batch_size=500, workers=2)
    _check_report(two)
    message = two.result(cls.code)["message"]
    assert two.status(cls.code) == "error"
    assert message.startswith(what) and "run with workers=1" in message
    for code in ("OKAY001", "TXT001"):
        assert two.result(code)["findings"] == one.result(code)["findings"]
        assert two.result(code)["metrics"] == one.result(code)["metrics"]


@pytest.mark.slow
def test_a_rule_class_that_workers_cannot_import_is_an_error_of_that_rule(register):
    class Local(crashy.CountRows):  # defined in a function: pickle cannot find it by name
        code = "LOCAL001"
        name = "test.local"

    register(Local, crashy.CountRows)
    report = audit(ROWS * 100, select=["LOCAL001", "OKAY001"], batch_size=500, workers=2)
    assert report.status("LOCAL001") == "error"
    assert "cannot be sent between worker processes" in report.result("LOCAL001")["message"]
    assert report.metric("OKAY001", "rows") == len(ROWS) * 100


def _run_script(body: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``body`` in a fresh interpreter (a hang fails the test instead of hanging it)."""
    code = (
        f"import sys; sys.path.insert(0, {str(HERE)!r})\n"
        "import json\n"
        "import _crashy_rules\n"
        "from dataaudit import audit, registry\n"
        "_crashy_rules.register(registry.load_rules())\n" + textwrap.dedent(body)
    )
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout
    )
    return out, time.perf_counter() - t0


@pytest.mark.slow
def test_a_rule_defined_in_the_users_script_is_an_error_with_workers_not_a_hang(tmp_path):
    script = tmp_path / "audit_me.py"
    script.write_text(
        textwrap.dedent(
            """
            import json
            from dataaudit import audit, registry
            from dataaudit.rule import Rule, RuleResult

            class Mine(Rule):
                '''What it does: -. Why it matters: -. Example: -. Options: -.'''
                code = "MINE001"; name = "test.mine"; requires = ()
                def start(self, ctx): return 0
                def update(self, s, b): return s + b.num_rows
                def merge(self, a, b): return a + b
                def finish(self, s, ctx):
                    r = RuleResult(); r.metric("rows", s); return r

            rs = registry.load_rules(); rs.rules["MINE001"] = Mine; rs.origin["MINE001"] = "x"
            rows = [{"text": f"row {i}"} for i in range(5000)]
            r = audit(rows, select=["MINE001", "TXT001"], workers=2, batch_size=500)
            print(json.dumps({x["code"]: [x["status"], x["message"]] for x in r.results}))
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    status, message = results["MINE001"]
    assert status == "error"
    assert "cannot be sent between worker processes" in message
    assert "importable module" in message and "workers=1" in message
    assert results["TXT001"][0] == "pass"


# -- worker processes that die --------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("how", ["kill", "exit"])
def test_a_worker_that_dies_fails_the_gate_with_a_report_instead_of_hanging(how):
    out, seconds = _run_script(
        f"""
        rows = [{{"text": f"row {{i}}", "label": "ab"[i % 2]}} for i in range(6000)]
        r = audit(rows, select=["DIE001", "OKAY001", "TXT001"],
                  rules={{"DIE001": {{"how": {how!r}}}}}, workers=2, batch_size=500)
        r.to_json()
        print(json.dumps({{"passed": r.passed,
                          "results": {{x["code"]: [x["status"], x["message"]] for x in r.results}},
                          "rows": r.data["dataset"]["splits"]["train"]["rows"],
                          "gate": r.data["gate"]}}))
        """
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["passed"] is False
    for code in ("DIE001", "OKAY001", "TXT001"):
        status, message = got["results"][code]
        assert status == "error", code
        assert "a worker process died" in message and "train rows " in message
        assert "fewer workers" in message and "smaller batch size" in message
    assert 2048 <= got["rows"] <= 6000  # what was read before the scan stopped
    assert "a worker process died" in got["gate"]["scan_stopped"]
    assert got["gate"]["reasons"][0].startswith("the scan stopped before the end of the input")
    assert seconds < 60, f"took {seconds:.1f} s"


def test_resources_that_cannot_reach_the_workers_are_a_usage_error_naming_workers_1():
    from dataaudit import engine
    from dataaudit.context import AuditContext
    from dataaudit.corpus import load_corpus
    from dataaudit.errors import ConfigError
    from dataaudit.resources import ReferenceSketches, Resources

    corpus = load_corpus(ROWS)
    # e.g. a plugin's reference sketch holding a function
    sketches = ReferenceSketches({"PLG001": {"splits": {}, "key": lambda text: text}})
    ctx = AuditContext.from_corpus(corpus, resources=Resources(reference=sketches))
    state = engine.start([(crashy.CountRows(), crashy.CountRows.severity)], ctx)
    with pytest.raises(ConfigError, match=r"workers=2: .* cannot be sent .*run with workers=1"):
        engine.scan_parallel(state, corpus.stream(10), ctx, workers=2)

"""The diff as a gate: a metric regresses only when it moves the wrong way beyond its noise or
tolerance and out of its passing band; findings count from the gate's severity; accepted
(suppressed) findings never count. The numbers are the ones the issue reproduced on real text."""

from __future__ import annotations

import copy

import pytest

import dataaudit
from dataaudit.errors import ConfigError
from dataaudit.report.diff import diff

ROWS = [{"text": f"Sentence number {i} says something about the weather."} for i in range(30)]


@pytest.fixture(scope="module")
def base() -> dict:
    return dataaudit.audit(ROWS, select=["TXT001"]).to_dict()


def _report(
    base: dict,
    metrics: list[dict],
    *,
    thresholds: dict | None = None,
    findings: list[dict] | None = None,
    rows: dict[str, int] | None = None,
    status: str = "pass",
    fail_on: str = "error",
    tolerances: dict | None = None,
) -> dict:
    r = copy.deepcopy(base)
    split = r["dataset"]["splits"].pop("train")
    r["dataset"]["splits"] = {n: {**split, "rows": k} for n, k in (rows or {"train": 600}).items()}
    r["fail_on"] = r["gate"]["fail_on"] = fail_on
    r["config"]["tolerances"] = tolerances or {}
    r["results"] = [
        {
            **r["results"][0],
            "code": "XX001",
            "name": "x",
            "status": status,
            "metrics": [
                {"split": "train", "direction": "lower", "unit": None, **m} for m in metrics
            ],
            "thresholds": thresholds or {},
            "findings": findings or [],
        }
    ]
    return r


def _verdicts(d) -> dict[str, str]:
    return {m.name: m.verdict for m in d.metrics}


def test_a_value_inside_its_passing_band_moving_within_it_is_not_a_regression(base):
    # LBL003's label Cramér's V 0.010 → 0.016 with its threshold at 0.1 (issue #12)
    def cramers(v):
        return _report(
            base,
            [{"name": "label_cramers_v", "value": v}],
            thresholds={"max_imbalance": 20.0, "max_cramers_v": 0.1, "min_class_rows": 5},
        )

    d = diff(cramers(0.010), cramers(0.016))
    m = d.metrics[0]
    assert (m.verdict, m.threshold) == ("worse", 0.1)
    assert not d.regressed
    crossed = diff(cramers(0.09), cramers(0.2))
    assert crossed.metrics[0].verdict == "regressed"
    assert "crossing its threshold 0.1" in crossed.regressions[0]
    past = diff(cramers(0.2), cramers(0.4))  # already past it, and worse beyond its noise
    assert past.regressed and "past its threshold" in past.regressions[0]


def test_without_a_threshold_the_same_move_regresses(base):
    def plain(v):
        return _report(base, [{"name": "label_cramers_v", "value": v}])

    assert diff(plain(0.010), plain(0.016)).metrics[0].verdict == "regressed"


def test_sizes_and_caps_are_not_thresholds(base):
    # LBL002's max_rows caps its sample; it says nothing about likely_mislabeled_rows
    def report(v):
        return _report(
            base,
            [{"name": "likely_mislabeled_rows", "value": v}],
            thresholds={"max_rows": 20000, "min_rows": 50, "rows": 7},
        )

    m = diff(report(100), report(400)).metrics[0]
    assert (m.verdict, m.threshold) == ("regressed", None)


def test_a_metric_moving_within_its_reported_noise_is_within(base):
    # TOK001's js 0.004 → 0.008 next to its js_noise of 0.008
    def tok(js, noise):
        return _report(
            base,
            [
                {"name": "js", "value": js},
                {"name": "js_noise", "value": noise, "direction": "none"},
            ],
        )

    d = diff(tok(0.004, 0.008), tok(0.008, 0.0085))
    js = next(m for m in d.metrics if m.name == "js")
    assert (js.verdict, js.basis, js.tolerance) == ("within", "noise", 0.0085)
    assert not d.regressed
    assert diff(tok(0.004, 0.001), tok(0.008, 0.001)).regressed
    # a metric may carry its noise itself
    own = diff(
        _report(base, [{"name": "auc", "value": 0.55, "noise": 0.03}]),
        _report(base, [{"name": "auc", "value": 0.57, "noise": 0.03}]),
    )
    assert (own.metrics[0].verdict, own.metrics[0].basis) == ("within", "noise")


def test_a_rate_that_moves_because_rows_were_removed_is_within_its_binomial_noise(base):
    # FMT001: 1 null text in 600 rows, then the same row in 586 after duplicates were dropped
    old = _report(base, [{"name": "text:null_rate", "value": 1 / 600}])
    new = _report(base, [{"name": "text:null_rate", "value": 1 / 586}], rows={"train": 586})
    m = diff(old, new).metrics[0]
    assert (m.verdict, m.basis) == ("within", "binomial")
    worse = _report(base, [{"name": "text:null_rate", "value": 0.3}], rows={"train": 586})
    assert diff(old, worse).metrics[0].verdict == "regressed"


def test_a_count_within_its_poisson_noise_is_within(base):
    # LEAK001 near_leaks 420 → 425: exact copies became near copies once their twin was removed
    d = diff(
        _report(base, [{"name": "near_leaks", "value": 420}]),
        _report(base, [{"name": "near_leaks", "value": 425}]),
    )
    assert (d.metrics[0].verdict, d.metrics[0].basis) == ("within", "poisson")
    assert not d.regressed
    d = diff(
        _report(base, [{"name": "near_leaks", "value": 420}]),
        _report(base, [{"name": "near_leaks", "value": 600}]),
    )
    assert d.regressed


def test_tolerances_from_the_pack_and_the_caller(base):
    old = _report(base, [{"name": "js", "value": 0.004}], thresholds={"min_js": 0.01})
    new = _report(
        base,
        [{"name": "js", "value": 0.008}],
        thresholds={"min_js": 0.01},
        tolerances={"XX001.js": 0.001},  # as a pack's `tolerances:` lands in the report config
    )
    d = diff(old, new)
    m = d.metrics[0]
    # a set tolerance is the metric's whole judgement: inside the band or not
    assert (m.verdict, m.basis, m.tolerance) == ("regressed", "set", 0.001)
    loose = diff(old, new, tolerances={"XX001.js": "200%"})  # the caller overrides the pack
    assert (loose.metrics[0].verdict, loose.metrics[0].tolerance) == ("within", 0.016)
    assert loose.to_dict()["tolerance"]["metrics"] == {"XX001.js": "200%"}


def test_a_tolerance_that_names_no_metric_is_a_warning_and_a_bad_one_an_error(base):
    old = _report(base, [{"name": "js", "value": 0.004}])
    d = diff(old, old, tolerances={"XX001.jss": 0.1})
    assert any("XX001.jss matches no metric" in w for w in d.warnings)
    for bad in ({"js": 0.1}, {"XX001.js": -1}, {"XX001.js": "lots"}, {"XX001.js": True}):
        with pytest.raises(ConfigError, match="XX001.js|CODE.METRIC"):
            diff(old, old, tolerances=bad)


def _finding(fp: str, severity: str, suppressed: bool = False) -> dict:
    return {
        "fingerprint": fp,
        "severity": severity,
        "message": "m",
        "split": "train",
        "count": 1,
        "examples": [],
        "data": {},
        "suppressed": suppressed,
    }


def test_new_findings_count_from_the_gate_severity(base):
    old = _report(base, [], status="warn", findings=[_finding("XX001-" + "0" * 16, "warn")])
    new_findings = [_finding("XX001-" + "0" * 16, "warn"), _finding("XX001-" + "1" * 16, "warn")]
    new = _report(base, [], status="warn", findings=new_findings)
    # fail_on=error: a new warning in a rule that already warned does not fail the diff gate
    assert not diff(old, new).regressed
    assert diff(old, new, fail_on="warn").regressed
    strict = _report(base, [], status="warn", findings=new_findings, fail_on="warn")
    assert diff(old, strict).regressions == [f"XX001: new warn finding XX001-{'1' * 16}"]
    error = _report(
        base,
        [],
        status="fail",
        findings=[*new_findings[:1], _finding("XX001-" + "2" * 16, "error")],
    )
    assert "XX001: new error finding XX001-" + "2" * 16 in diff(old, error).regressions


def test_a_suppressed_new_finding_is_no_regression(base):
    old = _report(base, [], status="pass")
    new = _report(
        base, [], status="pass", findings=[_finding("XX001-" + "3" * 16, "error", suppressed=True)]
    )
    d = diff(old, new)
    assert [f.state for f in d.findings] == ["new"] and d.findings[0].suppressed
    assert not d.regressed
    assert "(suppressed)" in d.summary()


def test_tolerances_in_a_pack_are_checked_when_it_loads(tmp_path):
    from dataaudit.config import load_config

    pack = tmp_path / "pack.yaml"
    pack.write_text(
        "extends: default\ntolerances:\n  TOK001.js: 0.005\n  lbl003.label_cramers_v: 10%\n"
    )
    assert load_config(pack).tolerances == {"TOK001.js": 0.005, "LBL003.label_cramers_v": "10%"}
    pack.write_text("tolerances:\n  js: 0.005\n")
    with pytest.raises(ConfigError, match="pack.yaml: tolerances: 'js' does not name a metric"):
        load_config(pack)
    pack.write_text("tolerances: [TOK001.js]\n")
    with pytest.raises(ConfigError, match="expected a mapping of CODE.METRIC"):
        load_config(pack)


def _leaky(n_leaks: int, drop: int) -> dict[str, list[dict]]:
    """Train, and a test split whose first ``n_leaks`` rows are copies of train rows; the
    ``drop`` leaked test rows listed first are removed (as a cleaning step would)."""
    words = [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
        "kilo",
        "lima",
    ]
    train = [
        {"text": f"record {i}: " + " ".join(words[(i * 7 + j) % len(words)] for j in range(12))}
        for i in range(200)
    ]
    test = [{"text": train[i]["text"]} for i in range(n_leaks)]
    test += [{"text": f"unrelated test row {i} about {words[i % len(words)]}"} for i in range(60)]
    return {"train": train, "test": test[drop:]}


def test_removing_listed_leaks_from_a_capped_list_is_no_regression():
    """Removing leaked rows that the capped list showed pulls rolled-up ones into the list: they
    are listed now, not new, and the diff gate must not fail on the improvement (it did: 3 'new'
    LEAK001 findings after dropping 3 leaks made a pure improvement REGRESSED)."""
    opts = {"LEAK001": {"max_findings": 5}}
    old = dataaudit.audit(_leaky(12, 0), select=["LEAK001"], rules=opts, fail_on="warn")
    new = dataaudit.audit(_leaky(12, 3), select=["LEAK001"], rules=opts, fail_on="warn")
    (leak,) = [r for r in old.to_dict()["results"] if r["code"] == "LEAK001"]
    rolled = [f for f in leak["findings"] if f.get("rollup")]
    assert [f["count"] for f in rolled] == [7]
    d = diff(old, new, fail_on="warn")
    new_findings = [f for f in d.findings if f.state == "new"]
    assert len(new_findings) == 3 and all(f.surfaced for f in new_findings)
    assert not d.regressed, d.regressions
    assert "rolled it up" in d.summary()


def test_a_new_finding_is_new_when_the_total_grows_or_nothing_was_rolled_up(base):
    def rollup(count: int, split: str | None = "train") -> dict:
        return {
            **_finding("XX001-" + "f" * 16, "info"),
            "count": count,
            "rollup": True,
            "split": split,
        }

    a, b = _finding("XX001-" + "a" * 16, "warn"), _finding("XX001-" + "b" * 16, "warn")
    old = _report(base, [], status="warn", findings=[a, rollup(7)], fail_on="warn")
    moved = _report(base, [], status="warn", findings=[b, rollup(7)], fail_on="warn")
    assert not diff(old, moved).regressed  # total 8 -> 8: b may have been rolled up
    grew = _report(base, [], status="warn", findings=[a, b, rollup(7)], fail_on="warn")
    assert diff(old, grew).regressions == [f"XX001: new warn finding XX001-{'b' * 16}"]
    plain = _report(base, [], status="warn", findings=[a], fail_on="warn")
    swapped = _report(base, [], status="warn", findings=[b], fail_on="warn")
    assert diff(plain, swapped).regressed  # no capped list: b is new
    other = {**b, "split": "test"}
    elsewhere = _report(base, [], status="warn", findings=[a, other, rollup(6)], fail_on="warn")
    assert diff(old, elsewhere).regressed  # train's rollup says nothing about test
    any_split = _report(base, [], status="warn", findings=[a, rollup(7, None)], fail_on="warn")
    assert not diff(
        any_split,
        _report(base, [], status="warn", findings=[other, rollup(7, None)], fail_on="warn"),
    ).regressed  # a rollup without a split covers every split

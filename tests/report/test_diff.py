"""diff(old, new): status transitions, metric deltas by direction, findings by fingerprint."""

from __future__ import annotations

import json

import pytest

import dataaudit
from dataaudit.errors import InputError
from dataaudit.report.diff import ReportDiff, diff

SELECT = ["TXT001", "TXT002", "TXT003", "FMT001"]
CLEAN = [
    {"text": f"Sentence number {i} says something ordinary about the weather.", "label": "a"}
    for i in range(40)
]


def _audit(rows, **kw):
    return dataaudit.audit(rows, select=SELECT, **kw)


@pytest.fixture(scope="module")
def old():
    return _audit(CLEAN)


@pytest.fixture(scope="module")
def new():
    # the new version adds empty rows (TXT001 pass → warn) and mojibake (new TXT002 finding)
    rows = (
        CLEAN
        + [{"text": "", "label": "a"}] * 3
        + [{"text": "The cafÃ© isnâ€™t open", "label": "b"}]
    )
    return _audit(rows)


def test_identical_reports_have_no_changes(old):
    again = _audit(CLEAN)
    d = diff(old, again)
    assert not d.has_changes
    assert not d.regressed
    assert all(r.change == "unchanged" for r in d.rules)
    assert all(f.state == "persisting" for f in d.findings)
    assert "no changes" in d.summary()


def test_added_empty_rows_is_a_regression(old, new):
    d = diff(old, new)
    assert d.regressed and d.has_changes
    rules = {r.code: r for r in d.rules}
    assert (rules["TXT001"].old, rules["TXT001"].new, rules["TXT001"].change) == (
        "pass",
        "warn",
        "regressed",
    )
    assert rules["FMT001"].change == "unchanged"
    m = {(m.code, m.name, m.split): m for m in d.metrics}
    empty = m[("TXT001", "empty_text_rows", "train")]
    assert (empty.old, empty.new, empty.delta, empty.verdict) == (0, 3, 3, "within")
    assert empty.direction == "none"  # a count grows with the dataset; its rate is the verdict
    rate = m[("TXT001", "empty_text_rate", "train")]
    # 3 empty rows in 44 is within three binomial standard errors of none in 40: the status
    # change and the new findings say it, the rate alone is noise at this size
    assert (rate.old, rate.verdict, rate.direction, rate.basis) == (
        0,
        "within",
        "lower",
        "binomial",
    )
    strict = diff(old, new, tolerances={"TXT001.empty_text_rate": 0})
    rate = next(m for m in strict.metrics if m.name == "empty_text_rate")
    assert (rate.verdict, rate.basis) == ("regressed", "set")
    new_findings = {f.code for f in d.findings if f.state == "new"}
    assert {"TXT001", "TXT002"} <= new_findings
    split = d.splits[0]
    assert (split.split, split.state, split.old_rows, split.new_rows) == (
        "train",
        "changed",
        40,
        44,
    )
    assert not d.config_changed and not d.warnings
    assert any("TXT001: status pass → warn" in r for r in d.regressions)


def test_reverse_direction_is_an_improvement(old, new):
    d = diff(new, old)
    assert not d.regressed
    assert d.has_changes
    rules = {r.code: r for r in d.rules}
    assert rules["TXT001"].change == "improved"
    assert {f.code for f in d.findings if f.state == "resolved"} >= {"TXT001", "TXT002"}
    m = {
        (m.code, m.name, m.split): m
        for m in diff(new, old, tolerances={"TXT001.empty_text_rate": "1%"}).metrics
    }
    assert m[("TXT001", "empty_text_rate", "train")].verdict == "improved"


def test_persisting_finding_with_count_change(new):
    more = _audit(
        CLEAN
        + [{"text": "", "label": "a"}] * 5
        + [{"text": "The cafÃ© isnâ€™t open", "label": "b"}]
    )
    d = diff(new, more)
    f = next(f for f in d.findings if f.code == "TXT001")
    assert f.state == "persisting"  # same fingerprint: same split, same category
    assert (f.old_count, f.new_count, f.count_delta) == (3, 5, 2)
    assert "count 3 → 5" in d.summary()
    # a warning that persists (fail_on=error) with a rate inside its noise is no regression;
    # a team that wants every empty row counted sets a tolerance
    assert not d.regressed
    strict = diff(new, more, tolerances={"TXT001.empty_text_rate": 0.01})
    assert strict.regressed
    assert any("TXT001 empty_text_rate [train]" in r for r in strict.regressions)


def test_tolerance_and_direction_judging(old):
    base = old.to_dict()

    def report(values):
        r = dict(base)
        r["results"] = [
            {
                **base["results"][0],
                "code": "XX001",
                "name": "x",
                "status": "pass",
                "metrics": [
                    {"name": n, "split": "train", "value": v, "direction": d, "unit": None}
                    for n, (v, d) in values.items()
                ],
                "findings": [],
            }
        ]
        return r

    a = report({"lo": (1.0, "lower"), "hi": (1.0, "higher"), "free": (1.0, "none"),
                "tiny": (1.0, "lower")})  # fmt: skip
    b = report({"lo": (2.0, "lower"), "hi": (2.0, "higher"), "free": (2.0, "none"),
                "tiny": (1.005, "lower")})  # fmt: skip
    verdicts = {m.name: m.verdict for m in diff(a, b).metrics}
    assert verdicts == {"lo": "regressed", "hi": "improved", "free": "changed", "tiny": "within"}
    strict = {m.name: m.verdict for m in diff(a, b, rel_tol=0).metrics}
    assert strict["tiny"] == "regressed"


def test_config_change_warns_to_change_one_thing_at_a_time(old, new):
    other = dataaudit.audit(
        [r for r in CLEAN] + [{"text": "", "label": "a"}],
        select=SELECT,
        rules={"TXT003": {"min_chars": 5}},
    )
    d = diff(old, other)
    assert d.config_changed
    assert any("one thing at a time" in w for w in d.warnings)
    assert "one thing at a time" in d.summary()
    assert d.to_dict()["dataset"]["config_changed"] is True


def test_paths_dicts_and_json_roundtrip(old, new, tmp_path):
    p_old, p_new = tmp_path / "old.json", tmp_path / "new.json"
    old.to_json(p_old)
    new.to_json(p_new)
    from_paths = diff(str(p_old), p_new)
    from_dicts = diff(old.to_dict(), new.to_dict())
    assert from_paths.to_dict() == from_dicts.to_dict() == diff(old, new).to_dict()
    out = tmp_path / "diff.json"
    text = from_paths.to_json(out)
    loaded = json.loads(out.read_text())
    assert loaded == json.loads(text)
    assert loaded["regressed"] is True
    assert loaded["counts"]["rules"]["regressed"] >= 1
    assert isinstance(from_paths, ReportDiff)
    assert dataaudit.diff is diff


def test_bad_inputs_are_clear_errors(old, tmp_path):
    with pytest.raises(InputError, match="not a dataaudit report"):
        diff({"hello": 1}, old)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="bad.json"):
        diff(bad, old)
    with pytest.raises(InputError, match="takes a Report"):
        diff(42, old)


def test_summary_escapes_control_characters():
    hostile = "\x1b[2J\x1b[31mowned\u202e"
    rows = [{"text": "fine text here"}] * 4
    a = dataaudit.audit({hostile: rows}, select=["TXT001"])
    b = dataaudit.audit({hostile: rows + [{"text": ""}]}, select=["TXT001"])
    s = diff(a, b).summary()
    assert "\x1b" not in s and "\u202e" not in s
    assert "\\x1b" in s


def test_split_added_and_removed(old):
    two = dataaudit.audit({"train": CLEAN, "test": CLEAN[:5]}, select=SELECT)
    states = {s.split: s.state for s in diff(old, two).splits}
    assert states == {"train": "unchanged", "test": "added"}
    states = {s.split: s.state for s in diff(two, old).splits}
    assert states == {"train": "unchanged", "test": "removed"}

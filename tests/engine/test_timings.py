"""The report says where the time went: stages, reading, each feature, each rule's phases."""

from __future__ import annotations

import time

import jsonschema

from dataaudit import Direction, Rule, RuleResult, audit, diff
from dataaudit.features import register_feature
from dataaudit.report.schema import report_schema

ROWS = [{"text": f"The tide came in at {i} past six.", "label": "ab"[i % 2]} for i in range(400)]


@register_feature("test_slow_upper")
def _slow_upper(batch):
    time.sleep(0.01)  # a feature that costs: its time must be the feature's, not the rule's
    return batch.text


class SlowFeatureRule(Rule):
    """What it does: -. Why it matters: -. Example: -. Options: -."""

    code = "TIME001"
    name = "test.timed"
    requires = ()

    def start(self, ctx):
        return 0

    def update(self, state, batch):
        batch.feature("test_slow_upper")
        return state + batch.num_rows

    def merge(self, a, b):
        return a + b

    def finish(self, state, ctx):
        time.sleep(0.05)
        result = RuleResult()
        result.metric("rows", state, Direction.NONE)
        return result


def test_the_report_splits_the_time_by_stage_feature_and_rule_phase():
    report = audit(
        ROWS, select=["TIME001", "TXT001"], batch_size=100, extra_rules=[SlowFeatureRule]
    )
    timings = report.data["timings"]
    jsonschema.validate(report.data, report_schema())
    # no reference: no stage; "report": building the report itself (the flags table)
    assert set(timings["stages"]) == {"load", "scan", "finish", "report"}
    assert timings["scan"]["features"]["test_slow_upper"] >= 0.04  # 4 batches × 10 ms
    phases = timings["rules"]["TIME001"]
    assert phases["finish"] >= 0.05
    assert phases["update"] < 0.02  # the feature's sleep is not charged to the rule
    assert set(timings["rules"]) == {r["code"] for r in report.results}
    # phases add up to the rule's seconds
    rule = report.result("TIME001")
    assert abs(sum(phases.values()) - rule["seconds"]) < 1e-3


def test_workers_add_up_their_feature_and_update_time():
    report = audit(
        ROWS * 20,
        select=["TXT001"],
        workers=2,
        batch_size=500,
    )
    timings = report.data["timings"]
    assert timings["scan"]["features"]  # computed in the workers, summed in the parent
    assert {"start", "update", "merge", "finish"} <= set(timings["rules"]["TXT001"])


def test_diff_shows_what_got_slower_without_gating_on_it():
    old = audit(ROWS, select=["TXT001"]).to_dict()
    new = {**old, "timings": {**old["timings"], "stages": {**old["timings"]["stages"]}}}
    new["timings"]["stages"]["finish"] = old["timings"]["stages"]["finish"] + 5
    d = diff(old, new)
    assert [t["part"] for t in d.slower] == ["stage finish"]
    assert not d.regressed
    assert "slower (timings are information, never a regression)" in d.summary()
    assert "stage finish" in d.summary()

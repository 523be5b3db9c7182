"""Rule.after: a rule finishes after the rules it reads, and sees only their results."""

from __future__ import annotations

import json

from dataaudit import audit
from dataaudit.engine.local import _finish_order
from dataaudit.engine.state import RuleRun
from dataaudit.rule import Finding, Flag, Rule, RuleResult, Severity

SEEN: dict[str, list[str]] = {}


class _Base(Rule):
    groups = ("test",)
    requires = ("text",)

    def start(self, ctx):
        return 0

    def update(self, state, batch):
        return state + batch.num_rows

    def merge(self, a, b):
        return a + b

    def finish(self, state, ctx):
        SEEN[self.code] = sorted(ctx.results)
        result = RuleResult()
        result.flags.append(Flag("train", 0, detail=self.code))
        for code, other in sorted(ctx.results.items()):
            result.findings.append(Finding(f"{code} flagged {len(other.flags)}", key=code))
        return result


class Reader(_Base):
    """Reads XTA001's flags (its code sorts first, so without ``after`` it would finish first)."""

    code, name, after = "XTA000", "test.reader", ("XTA001", "XTA404")


class Writer(_Base):
    code, name = "XTA001", "test.writer"


class Bystander(_Base):
    code, name = "XTA002", "test.bystander"


def test_a_rule_finishes_after_the_rules_it_reads():
    runs = [RuleRun(cls(), Severity.WARN) for cls in (Reader, Writer, Bystander)]
    assert [r.rule.code for r in _finish_order(runs)] == ["XTA001", "XTA000", "XTA002"]
    cyclic_a = type("A", (Writer,), {"code": "XTA010", "after": ("XTA011",)})
    cyclic_b = type("B", (Writer,), {"code": "XTA011", "after": ("XTA010",)})
    runs = [RuleRun(cls(), Severity.WARN) for cls in (cyclic_a, cyclic_b)]
    assert len(_finish_order(runs)) == 2  # a cycle neither hangs nor drops a rule


def test_finish_sees_only_the_declared_results():
    SEEN.clear()
    report = audit(
        [{"text": "a"}, {"text": "b"}],
        select=["XTA"],
        extra_rules=[Reader, Writer, Bystander],
    )
    # a declared rule that did not run (XTA404) is absent; an undeclared one is not shown
    assert SEEN == {"XTA000": ["XTA001"], "XTA001": [], "XTA002": []}
    results = [r for r in json.loads(report.to_json())["results"] if r["code"] >= "XTA"]
    assert [f["message"] for f in results[0]["findings"]] == ["XTA001 flagged 1"]
    # the report lists the rules in code order, whatever order they finished in
    assert [r["code"] for r in results] == ["XTA000", "XTA001", "XTA002"]

"""audit(..., extra_rules=[MyRule]): a rule runs without packaging an entry point."""

from __future__ import annotations

import pytest

from dataaudit import Direction, Finding, Rule, RuleResult, Severity, audit
from dataaudit.errors import ConfigError
from dataaudit.registry import load_rules


class LongRows(Rule):
    """Rows with more than ``max_words`` words.

    What it does: counts words per row. Why it matters: an example. Example: -.
    Options: max_words: the limit.
    """

    code = "MYR001"
    name = "mine.long-rows"
    groups = ("mine",)
    severity = Severity.WARN
    requires = ("text",)

    def __init__(self, max_words: int = 3):
        self.max_words = max_words

    def start(self, ctx):
        return 0

    def update(self, state, batch):
        words = [len((t or "").split()) for t in batch.text.to_pylist()]
        return state + sum(n > self.max_words for n in words)

    def merge(self, a, b):
        return a + b

    def finish(self, state, ctx):
        result = RuleResult()
        result.metric("long_rows", state, Direction.LOWER)
        if state:
            result.findings.append(Finding(f"{state} long rows", key="long"))
        return result


ROWS = [{"text": "one two"}, {"text": "one two three four five"}]


def test_an_extra_rule_runs_selected_by_code_or_group_with_options():
    report = audit(ROWS, select=["MYR001"], extra_rules=[LongRows])
    assert report.metric("MYR001", "long_rows") == 1 and report.status("MYR001") == "warn"
    report = audit(
        ROWS, select=["mine"], rules={"MYR001": {"max_words": 10}}, extra_rules=[LongRows]
    )
    assert report.metric("MYR001", "long_rows") == 0
    assert "MYR001" not in load_rules().rules  # the shared registry is untouched


@pytest.mark.slow
def test_an_extra_rule_runs_in_worker_processes():
    report = audit(
        ROWS * 3000, select=["MYR001"], extra_rules=[LongRows], workers=2, batch_size=500
    )
    assert report.metric("MYR001", "long_rows") == 3000


def test_extra_rules_are_checked_like_plugins():
    class Bad(LongRows):
        code = "TXT901"  # a built-in prefix

    with pytest.raises(ConfigError, match="prefix TXT, which belongs to dataaudit"):
        audit(ROWS, extra_rules=[Bad])
    with pytest.raises(ConfigError, match="not a Rule subclass"):
        audit(ROWS, extra_rules=[object])

    class BadCode(LongRows):
        code = "lower1"

    with pytest.raises(ConfigError, match="a code is 2-5 capital letters"):
        audit(ROWS, extra_rules=[BadCode])


def test_a_rule_its_installed_plugin_registered_may_be_passed_again():
    from dataaudit.registry import RuleSet, with_extra_rules

    installed = RuleSet({"MYR001": LongRows}, {"MYR001": "my-plugin"})  # pip install -e .
    out = with_extra_rules(installed, [LongRows])
    assert out.rules["MYR001"] is LongRows and out.origin["MYR001"] == "my-plugin"

    class Other(LongRows):
        code = "MYR002"

    with pytest.raises(ConfigError, match="prefix MYR, which belongs to my-plugin"):
        with_extra_rules(installed, [Other])  # its prefix is still the plugin's

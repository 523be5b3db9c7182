"""Every registered rule passes the shared conformance suite (dataaudit.testing)."""

from __future__ import annotations

import pytest

from dataaudit.registry import load_rules
from dataaudit.rule import Rule
from dataaudit.testing import CHECKS, check_rule

RULES = sorted(load_rules().rules.values(), key=lambda c: c.code)


@pytest.mark.parametrize("check", sorted(CHECKS))
@pytest.mark.parametrize("rule_cls", RULES, ids=lambda c: c.code)
def test_rule_conformance(rule_cls: type[Rule], check: str) -> None:
    CHECKS[check](rule_cls)


def test_suite_catches_a_rule_that_breaks_the_contract() -> None:
    """The suite must fail a rule whose shards do not merge into one pass."""
    from dataaudit.rule import RuleResult

    class Broken(Rule):
        """Counts rows, but merge drops the second shard.

        What it does: counts. Why it matters: tests. Example: none. Options: none.
        """

        code = "ZZZ001"
        name = "test.broken"
        requires = ()

        def start(self, ctx):
            return 0

        def update(self, state, batch):
            return state + batch.num_rows

        def merge(self, a, b):
            return a  # wrong

        def finish(self, state, ctx):
            r = RuleResult()
            r.metric("rows", state)
            return r

    with pytest.raises(AssertionError, match="merge"):
        check_rule(Broken)


def test_suite_catches_an_option_not_stored_verbatim() -> None:
    from dataaudit.rules.content.extreme_length import ExtremeLength

    class Copying(ExtremeLength):
        """What it does: x. Why it matters: x. Example: x. Options: x."""

        code = "ZZZ002"

        def __init__(self, max_chars: int = 100_000, min_chars: int = 3):
            self.max_chars = int(str(max_chars)) + 0 if max_chars > 10**9 else max_chars
            self.min_chars = [min_chars]  # not verbatim

    with pytest.raises(AssertionError, match="verbatim"):
        check_rule(Copying)

"""Plugin entries that must fail to load, for the plugin tests (a working plugin is
examples/dataaudit-shouting): ``broken`` and ``exits`` fail at import, ``Squatter`` takes a
prefix that dataaudit owns."""

from __future__ import annotations

from dataaudit import Rule, RuleResult


class Squatter(Rule):
    """Tries to use a prefix that dataaudit owns.

    What it does: nothing. Why it matters: tests. Example: none. Options: none.
    """

    code = "TXT901"
    name = "fake.squatter"
    requires = ()

    def start(self, ctx):
        return 0

    def update(self, state, batch):
        return state

    def merge(self, a, b):
        return a

    def finish(self, state, ctx):
        return RuleResult()

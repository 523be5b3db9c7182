"""The plugin's tests: the conformance suite every rule passes, what the rule flags, and that the
installed package registers it."""

from __future__ import annotations

from dataaudit import audit
from dataaudit.testing import check_rule

from dataaudit_shouting import ShoutingText

ROWS = [
    {"text": "BUY NOW, LIMITED OFFER"},
    {"text": "A calm sentence about the sea."},
    {"text": "OK"},  # two letters: fewer than min_letters
    {"text": "2024"},  # no letters
    {"text": "ÜBERALL GROSS"},
    {"text": ""},
]


def test_the_rule_keeps_the_rule_contract():
    check_rule(ShoutingText, data=ROWS)  # AssertionError naming each broken contract


def test_rows_in_capitals_are_flagged_for_review():
    report = audit(ROWS, extra_rules=[ShoutingText], select=["SHOUT"])
    flags = report.flags()
    assert flags["row"].to_list() == [0, 4]
    assert set(flags["action"]) == {"review"}
    assert report.metric("SHOUT001", "shouting_rows") == 2
    assert report.status("SHOUT001") == "warn"


def test_min_letters_is_an_option():
    report = audit(
        ROWS, extra_rules=[ShoutingText], select=["SHOUT"], rules={"SHOUT001": {"min_letters": 2}}
    )
    assert report.flags()["row"].to_list() == [0, 2, 4]


def test_installed_it_runs_by_its_code_like_a_built_in_rule():
    # the entry point in pyproject.toml registers it: no extra_rules needed
    report = audit(ROWS, select=["SHOUT001"])
    assert report.metric("SHOUT001", "shouting_rows") == 2

"""The README's rule table lists exactly the built-in rules, by code and name, in both directions."""

from __future__ import annotations

import re

from dataaudit.registry import load_rules
from tests import ROOT


def readme_rules(text: str) -> dict[str, str]:
    """code -> name from the table under ``## Rules`` (up to the next heading)."""
    section = re.search(r"^## Rules\n(.*?)(?=^#)", text, re.M | re.S)
    assert section, "README.md has no '## Rules' section"
    rows = re.findall(r"^\| *([A-Z]+\d+) *\| *([^|]*?) *\|", section.group(1), re.M)
    assert rows, "the '## Rules' section has no table rows"
    codes = [code for code, _ in rows]
    assert len(codes) == len(set(codes)), f"a code is listed twice: {codes}"
    return dict(rows)


def test_the_readme_rule_table_is_the_registry():
    ruleset = load_rules()
    builtin = {c: cls.name for c, cls in ruleset.rules.items() if ruleset.origin[c] == "dataaudit"}
    listed = readme_rules((ROOT / "README.md").read_text())
    assert sorted(set(builtin) - set(listed)) == [], "rules missing from the README's table"
    assert sorted(set(listed) - set(builtin)) == [], "the README lists rules that do not exist"
    wrong = {c: (listed[c], builtin[c]) for c in builtin if listed[c] != builtin[c]}
    assert wrong == {}, "README name vs rule name"


def test_the_table_parser_sees_a_missing_or_renamed_rule():
    text = (ROOT / "README.md").read_text()
    listed = readme_rules(text)
    assert "DUP002" in listed and listed["DUP002"] == "duplicates.near"
    without = re.sub(r"^\| DUP002 \|.*\n", "", text, flags=re.M)
    assert "DUP002" not in readme_rules(without)
    renamed = text.replace("| DUP002 | duplicates.near |", "| DUP002 | duplicates.close |")
    assert readme_rules(renamed)["DUP002"] == "duplicates.close"


def readme_test_command(text: str) -> str:
    """The command in the code block under the README's **Run the tests** paragraph."""
    found = re.search(r"\*\*Run the tests\*\*.*?```bash\n(.*?)\n```", text, re.S)
    assert found, "README.md has no 'Run the tests' command block"
    return found.group(1).strip()


def test_ci_runs_exactly_the_readme_test_command():
    """CI must run what a new user is told to run: the last command of .ci/run is the README's."""
    command = readme_test_command((ROOT / "README.md").read_text())
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    commands = [ln for ln in lines if ln and not ln.startswith("#")]
    assert commands[-1] == command
    assert readme_test_command("**Run the tests**\n\n```bash\necho hi\n```\n") == "echo hi"

"""The built-in rule table (registry.BUILTIN) is the rule classes, and selecting imports only
the selected rules' modules."""

from __future__ import annotations

import json

from dataaudit.registry import BUILTIN, Builtin, _walk_builtin, load_rules, select_rules
from tests._fresh import run_python


def _row(cls: type) -> Builtin:
    module = cls.__module__.removeprefix("dataaudit.rules.")
    return Builtin(cls.code, module, cls.__qualname__, cls.name, tuple(cls.groups), cls.stable)


def test_builtin_table_lists_every_rule_class_as_it_is():
    expected = sorted((_row(cls) for cls in _walk_builtin()), key=lambda r: r.code)
    listed = sorted(BUILTIN, key=lambda r: r.code)
    assert listed == expected, "registry.BUILTIN should be:\n" + "\n".join(map(repr, expected))


def test_the_table_loads_the_classes_the_modules_define():
    ruleset = load_rules()
    assert {code: ruleset.rules[code] for code in ruleset.rules} == {
        cls.code: cls for cls in _walk_builtin()
    }


def test_selection_imports_only_the_selected_rule_modules():
    code = (
        "import json, sys\n"
        "from dataaudit.api import resolve_rules\n"
        "from dataaudit.config import load_config\n"
        "built, _ = resolve_rules(load_config(None, select=['DUP002']))\n"
        "print(json.dumps([[r.code for r, _ in built],\n"
        "                  sorted(m for m in sys.modules if m.startswith('dataaudit.rules.'))]))\n"
    )
    codes, modules = json.loads(run_python(code))
    assert codes == ["DUP002", "INPUT001"]  # INPUT001 runs in every audit
    packages = {m.split(".")[2] for m in modules}  # shared helpers are _modules
    assert sorted(p for p in packages if not p.startswith("_")) == ["duplicates", "input"]


def test_selectors_match_a_table_row_as_they_match_its_class():
    ruleset = load_rules()
    for selectors in (["default"], ["DUP"], ["duplicates"], ["ALL"], ["sft", "LEN001"]):
        by_row = [c.code for c in select_rules(ruleset, selectors)]
        assert by_row == sorted(
            cls.code
            for cls in _walk_builtin()
            if cls.stable
            and any(
                s in ("ALL", cls.code, cls.name, *cls.groups)
                or cls.code.startswith(s)
                or cls.name.startswith(s + ".")
                for s in selectors
            )
        ), selectors

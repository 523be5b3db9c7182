"""Rules depend only on the rule contract, features, sketches, stats and the resources' types:
never on the input layer, the engine, the reference scan or the report (DESIGN.md, layers)."""

from __future__ import annotations

import ast
from pathlib import Path

import dataaudit
from dataaudit.registry import load_rules
from dataaudit.rules._drift import DriftRule

PACKAGE = Path(dataaudit.__file__).parent
#: modules above the rules; a rule importing one of them (or a submodule) breaks the layering
ABOVE = (
    "dataaudit.api",
    "dataaudit.cli",
    "dataaudit.config",
    "dataaudit.corpus",
    "dataaudit.engine",
    "dataaudit.inputs",
    "dataaudit.reference",
    "dataaudit.registry",
    "dataaudit.remediate",
    "dataaudit.report",
    "dataaudit.resources.contamination",
    "dataaudit.resources.reference",
    "dataaudit.resources.tokenizer",
    "dataaudit.testing",
)


def imported_modules(source: str, module: str) -> set[str]:
    """Absolute names of every module the code of ``module`` imports, at any depth."""
    package = module.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)  # from pkg import module
    return out


def module_name(path: Path) -> str:
    """``dataaudit.rules.x`` for ``rules/x.py``; a package's ``__init__`` is the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts if parts[-1] != "__init__" else (*parts[:-1], "_"))


def breaks_layering(name: str) -> bool:
    return any(name == top or name.startswith(top + ".") for top in ABOVE)


def test_rules_import_nothing_above_them():
    # and neither does what they build on: features, sketches, stats
    files = sorted(
        [*(PACKAGE / "rules").rglob("*.py"), *(PACKAGE / "features").rglob("*.py")]
        + [*(PACKAGE / "sketches").rglob("*.py"), PACKAGE / "stats.py"]
    )
    assert len(files) > 30
    bad = {}
    for path in files:
        names = imported_modules(path.read_text(encoding="utf-8"), module_name(path))
        bad[str(path.relative_to(PACKAGE))] = sorted(n for n in names if breaks_layering(n))
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_layering_check_sees_relative_absolute_and_nested_imports():
    source = (
        "from ...engine import scan\n"
        "from ... import corpus\n"
        "def f():\n"
        "    from ...resources.reference import build_reference\n"
        "    import dataaudit.inputs.files\n"
        "from ...features import Batch\n"
        "from .._drift import DriftRule\n"
    )
    names = imported_modules(source, "dataaudit.rules.leakage.probe")
    assert "dataaudit.rules._drift" in names and "dataaudit.features" in names
    assert sorted(n for n in names if breaks_layering(n)) == [
        "dataaudit.corpus",
        "dataaudit.engine",
        "dataaudit.engine.scan",
        "dataaudit.inputs.files",
        "dataaudit.resources.reference",
        "dataaudit.resources.reference.build_reference",
    ]
    # a package's __init__ resolves relative imports from the package itself
    assert imported_modules(
        "from .. import report", module_name(PACKAGE / "rules" / "__init__.py")
    ) == {
        "dataaudit",
        "dataaudit.report",
    }


def test_every_reference_aware_rule_follows_the_drift_protocol():
    rules = load_rules().rules.values()
    aware = {c.code for c in rules if getattr(c, "reference_aware", False)}
    assert aware == {c.code for c in rules if issubclass(c, DriftRule)}
    assert aware >= {"LEN003", "TOK001", "MIX001", "SHIFT001", "LBL003"}
    for cls in rules:
        if issubclass(cls, DriftRule):
            assert cls.sketch is not DriftRule.sketch, f"{cls.code} has no sketch()"

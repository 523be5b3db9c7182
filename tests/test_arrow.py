"""The Arrow <-> numpy helpers have one home, dataaudit/_arrow.py, that every layer may import."""

from __future__ import annotations

from dataaudit import _arrow
from dataaudit.features import arrays
from tests.rules.test_layering import PACKAGE, imported_modules, module_name


def test_the_helpers_import_nothing_of_dataaudit():
    path = PACKAGE / "_arrow.py"
    names = imported_modules(path.read_text(encoding="utf-8"), module_name(path))
    assert sorted(n for n in names if n.startswith("dataaudit")) == []


def test_the_sketches_do_not_import_the_features():
    files = sorted((PACKAGE / "sketches").rglob("*.py"))
    assert len(files) > 5
    bad = {}
    for path in files:
        names = imported_modules(path.read_text(encoding="utf-8"), module_name(path))
        bad[path.name] = sorted(n for n in names if n.startswith("dataaudit.features"))
    assert {k: v for k, v in bad.items() if v} == {}


def test_features_arrays_is_the_same_code():
    """One implementation: the features layer's names are the neutral module's functions."""
    assert arrays.__all__
    for name in arrays.__all__:
        assert getattr(arrays, name) is getattr(_arrow, name), name

"""`import dataaudit` stays light: heavy dependencies load only when used."""

from __future__ import annotations

import json
import sys

import pytest

from tests import ROOT
from tests._fresh import run_python


@pytest.mark.slow
def test_import_does_not_load_heavy_dependencies():
    code = (
        "import sys, json, dataaudit; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'pyarrow','polars','datasets','sklearn','numpy','tokenizers','datasketch','great_expectations','jsonschema','pandas','numba','llvmlite','scipy','upath','fsspec','huggingface_hub','tqdm'})))"
    )
    assert json.loads(run_python(code)) == []


def test_public_api():
    import dataaudit

    for name in dataaudit.__all__:
        assert getattr(dataaudit, name) is not None


# distribution name -> the module it is imported as
_MODULE = {"pyyaml": "yaml", "scikit-learn": "sklearn", "universal-pathlib": "upath"}


def test_declared_dependencies_are_the_imported_ones():
    """A core dependency is one the package imports; everything it imports is declared."""
    import ast
    import re

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {
        _MODULE.get(name, name).replace("-", "_")
        for name in (
            re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0].lower() for d in project["dependencies"]
        )
    }
    imported = set()
    for path in (ROOT / "dataaudit").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    imported -= set(sys.stdlib_module_names) | {"dataaudit"}
    optional = {"great_expectations", "ray", "transformers", "tomli"}  # extras / old Pythons
    assert imported - optional - {"tomli"} <= declared, imported - declared
    assert declared - {"tomli"} <= imported, declared - imported

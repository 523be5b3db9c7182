"""`import dataaudit` stays light: heavy dependencies load only when used."""

from __future__ import annotations

import json
import subprocess
import sys


def test_import_does_not_load_heavy_dependencies():
    code = (
        "import sys, json, dataaudit; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'pyarrow','polars','datasets','sklearn','numpy','tokenizers','datasketch','great_expectations','pandas','numba','llvmlite'})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_public_api():
    import dataaudit

    for name in dataaudit.__all__:
        assert getattr(dataaudit, name) is not None

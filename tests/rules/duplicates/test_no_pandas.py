"""DUP001, DUP002 and LBL001 audits never import pandas, keyed stage included.

pyarrow imports pandas (0.2-0.7 s of a process) on its first ``pa.array`` of a numpy array,
``pa.scalar``, ``to_numpy`` or compute call given a Python scalar when pandas is installed;
the emit, edges, verification and finish of these rules and the engine's keyed stage build
their arrays from buffers instead (``dataaudit/_arrow.py``). Each check runs in a fresh
process, the CLI as a user runs it.
"""

from __future__ import annotations

import json
import random

import pytest

from tests._fresh import run_python
from tests.rules.texts import WORDS_A

pytest.importorskip("pandas")


def _corpus(path) -> None:
    """Rows with exact copies (DUP001), near copies (DUP002), copies with another label
    (LBL001), ids, and a source column with nulls."""
    rng = random.Random(7)
    rows = []
    for i in range(120):
        text = " ".join(rng.choice(WORDS_A) for _ in range(40))
        rows.append({"id": f"r{i}", "text": text, "label": rng.choice("ab"), "source": "web"})
    for i in range(20):
        rows.append({"id": f"x{i}", "text": rows[i]["text"], "label": "a", "source": None})
        near = rows[30 + i]["text"] + " omega"
        rows.append({"id": f"n{i}", "text": near, "label": "b", "source": "books"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_duplicate_and_conflict_audit_does_not_import_pandas(tmp_path, workers):
    path = tmp_path / "train.jsonl"
    _corpus(path)
    code = (
        "import sys\n"
        "from dataaudit.cli import main\n"
        f"rc = main(['audit', {str(path)!r}, '--select', 'DUP001,DUP002,LBL001',\n"
        "           '--label', 'label', '--source', 'source', '--id', 'id',\n"
        f"           '--workers', {workers!r}, '--json', {str(tmp_path / 'r.json')!r},\n"
        f"           '--flags', {str(tmp_path / 'f.parquet')!r}, '--no-progress', '-q'])\n"
        "print(rc, 'pandas' in sys.modules)\n"
    )
    assert run_python(code).splitlines()[-1] == "0 False"
    report = json.loads((tmp_path / "r.json").read_text())
    status = {r["code"]: r["status"] for r in report["results"]}
    # the rules found what the corpus plants, so their finish paths ran
    assert status["DUP001"] == status["DUP002"] == status["LBL001"] == "warn", status

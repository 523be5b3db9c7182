from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


@pytest.fixture(scope="session")
def truth() -> dict:
    path = FIXTURES / "ground_truth.json"
    if not path.exists():
        pytest.skip("fixtures not built")
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def classification_report():
    import dataaudit

    return dataaudit.audit(
        str(FIXTURES / "classification"),
        select=["DUP", "LEAK"],
        contamination_ref=str(FIXTURES / "contamination_ref.jsonl"),
    )


@pytest.fixture(scope="session")
def chat_report():
    import dataaudit

    return dataaudit.audit(str(FIXTURES / "chat_sft"), select=["DUP", "LEAK"])

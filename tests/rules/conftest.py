"""The fixture reports the duplicate and leakage tests share (one scan each for the session)."""

from __future__ import annotations

import pytest

from tests import FIXTURES


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

"""dataaudit's tests, laid out like the package they test (tests/rules/duplicates tests
dataaudit/rules/duplicates, ...). Folders are packages, so two test files may share a name and a
helper module is imported by its full name (``from tests.rules.texts import BASE``)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

"""The drift rules together (LEN003, TOK001, SHIFT001, MIX001): no verdict on a random split, and
the same verdicts against a reference dataset or a saved report of it."""

from __future__ import annotations

import random

from dataaudit import audit
from tests.rules.texts import WORDS_A, WORDS_B, sentences


def _findings(report, code, split=None):
    return [f for f in report.result(code)["findings"] if split is None or f["split"] == split]


def test_drift_rules_do_not_flag_a_random_split():
    rng = random.Random(3)
    rows = [{"text": t} for t in sentences(rng, 1200, WORDS_A + WORDS_B)]
    data = {"train": rows[:900], "test": rows[900:]}
    report = audit(data, select=["LEN003", "TOK001", "SHIFT001"])
    for code in ("LEN003", "TOK001", "SHIFT001"):
        assert report.status(code) == "pass", (code, report.result(code)["details"])


# -- reference comparison ---------------------------------------------------------------------
def test_reference_dataset_and_saved_report(tmp_path):
    rng = random.Random(5)
    old = {"train": [{"text": t, "source": "a"} for t in sentences(rng, 400, WORDS_A)]}
    same = {"train": [{"text": t, "source": "a"} for t in sentences(rng, 400, WORDS_A)]}
    new = {
        "train": [
            {"text": t, "source": "b"} for t in sentences(rng, 400, WORDS_A + WORDS_B, 30, 60)
        ]
    }
    codes = ["LEN003", "TOK001", "SHIFT001", "MIX001"]
    base = audit(old, select=codes)
    assert base.status("LEN003") == "skipped"  # nothing to compare without a reference
    unchanged = audit(same, select=codes, reference=old)
    for code in codes:
        assert unchanged.status(code) == "pass", code
    changed = audit(new, select=codes, reference=old)
    # another vocabulary, lengths and source: gross shifts, errors that fail the default gate
    for code in codes:
        assert changed.status(code) == "fail", code
        assert any("reference" in f["message"] for f in _findings(changed, code))
    # a saved report carries the sketches of LEN003, TOK001 and MIX001; SHIFT001 needs rows
    path = tmp_path / "old.json"
    base.to_json(path)
    from_report = audit(new, select=codes, reference=str(path))
    for code in ("LEN003", "TOK001", "MIX001"):
        assert from_report.status(code) == "fail", code
    assert from_report.status("SHIFT001") == "skipped"
    assert "reference dataset" in from_report.result("SHIFT001")["message"]

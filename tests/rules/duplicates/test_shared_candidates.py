"""DUP002 and LBL001 band the same signatures the same way, each in its own keyed stage (DUP002
no longer shares LBL001's in-process candidates): together they report what each reports
alone."""

from __future__ import annotations

import random

import dataaudit
from dataaudit.sketches import lsh


def _records(n: int = 400, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(500)]
    bases = [[rng.choice(words) for _ in range(40)] for _ in range(60)]
    out = []
    for i in range(n):
        doc = list(rng.choice(bases))
        for _ in range(rng.randrange(0, 4)):
            doc[rng.randrange(len(doc))] = rng.choice(words)
        label = None if i % 17 == 0 else rng.choice("ab")  # some rows without a label
        out.append({"text": " ".join(doc), "label": label, "split": "train" if i % 5 else "test"})
    return out


def test_results_match_each_rule_alone():
    rows = _records()
    alone = {
        code: dataaudit.audit(rows, select=[code], split="split", label="label")
        for code in ("DUP002", "LBL001")
    }
    both = dataaudit.audit(rows, select=["DUP002", "LBL001"], split="split", label="label")
    for code in ("DUP002", "LBL001"):
        got, want = both.result(code), alone[code].result(code)
        for key in ("status", "metrics", "findings", "details"):
            assert got[key] == want[key], (code, key)
    assert both.result("DUP002")["findings"] and both.result("LBL001")["findings"]


def test_dup002_computes_no_in_process_candidates(monkeypatch):
    """DUP002 finds its candidates in the keyed stage's partitions, not in one process."""
    calls = []
    real = lsh.near_candidates
    monkeypatch.setattr(lsh, "near_candidates", lambda *a, **k: calls.append(1) or real(*a, **k))
    report = dataaudit.audit(_records(200, seed=1), select=["DUP002"], split="split")
    assert calls == []
    assert report.result("DUP002")["metrics"]

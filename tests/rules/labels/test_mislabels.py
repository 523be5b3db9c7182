"""LBL002: likely mislabels via out-of-fold probe + confident learning."""

from __future__ import annotations

import random

import numpy as np

import dataaudit as da
from dataaudit.rules.labels import _probe


def test_fixture_flipped_labels_are_ranked(fixtures_dir, ground_truth):
    report = da.audit(fixtures_dir / "classification", select=["LBL002"])
    res = report.result("LBL002")
    assert res["status"] == "warn"
    flips = {(f["split"], f["row"]) for f in ground_truth["classification"]["flipped_labels"]}
    flags = report.flags()
    flagged = set(zip(flags["split"].to_list(), flags["row"].to_list()))
    assert len(flagged & flips) >= 0.6 * len(flips)  # recall at the default threshold
    ranked = [(r["split"], r["row"]) for r in res["details"]["ranked"]]
    top = ranked[: len(flips)]
    # precision@k far above the 30/900 base rate
    assert len(set(top) & flips) >= 0.3 * len(flips)
    first = res["details"]["ranked"][0]
    assert {"given", "suggested", "confidence", "text"} <= set(first)
    sample = res["details"]["sample"]
    assert sample["rows_sampled"] == 900 and sample["max_rows"] == 20000
    assert set(res["details"]["noise_by_class"]) >= {"computers", "food", "python"}


def test_row_cap_samples_and_is_deterministic(fixtures_dir):
    a = da.audit(
        fixtures_dir / "classification", select=["LBL002"], rules={"LBL002": {"max_rows": 300}}
    )
    b = da.audit(
        fixtures_dir / "classification",
        select=["LBL002"],
        rules={"LBL002": {"max_rows": 300}},
        batch_size=37,
    )
    ra, rb = a.result("LBL002"), b.result("LBL002")
    assert ra["details"]["sample"]["rows_sampled"] == 300
    assert ra["details"] == rb["details"]  # same sample and verdict however it was batched


def test_skipped_with_a_reason_when_too_little_data_or_one_class():
    rows = [{"text": f"some words {i}", "label": "a" if i % 2 else "b"} for i in range(20)]
    report = da.audit({"train": rows}, select=["LBL002"], text="text", label="label")
    assert report.status("LBL002") == "skipped"
    assert "too little data" in report.result("LBL002")["message"]
    rows = [{"text": f"some words {i}", "label": "a"} for i in range(200)]
    report = da.audit({"train": rows}, select=["LBL002"], text="text", label="label")
    assert report.status("LBL002") == "skipped"
    assert "2 classes" in report.result("LBL002")["message"]


def test_confident_learning_flags_planted_errors():
    rng = np.random.default_rng(0)
    n, k = 600, 3
    truth = rng.integers(0, k, n)
    proba = np.full((n, k), 0.1)
    proba[np.arange(n), truth] = 0.8
    proba += rng.uniform(0, 0.05, (n, k))
    proba /= proba.sum(axis=1, keepdims=True)
    given = truth.copy()
    flipped = random.Random(0).sample(range(n), 30)
    for i in flipped:
        given[i] = (truth[i] + 1) % k
    cl = _probe.confident_learning(proba, given)
    found = set(np.flatnonzero(cl.issue).tolist())
    assert found <= set(flipped)  # no false positive on a clean probe
    assert len(found) >= 0.85 * len(flipped)
    assert all(truth[i] == cl.suggested[i] for i in flipped)
    assert 0.02 < cl.noise_rate.mean() < 0.1

"""The batch comparison on the run's data: random batches of the corpus are rarely unusual,
and a batch made of the rows one audit rule flagged is unusual for that rule's family."""

from __future__ import annotations

import numpy as np
import pytest

from dataaudit.signals.batches import compare_batch, load_rows


@pytest.fixture(scope="module")
def table(run_dir, planted):
    t = load_rows(run_dir / "data.jsonl", None, None)
    t.attach_flags(planted.flags())
    return t


def test_random_batches_are_rarely_unusual(table):
    rng = np.random.default_rng(7)
    cache: dict = {}
    unusual = 0
    for _ in range(200):
        rows = rng.choice(table.rows, 16, replace=False)
        unusual += bool(compare_batch(table, rows, cache=cache)["reasons"])
    assert unusual <= 10  # measured: 5 of 200 (7 measures each, z >= 4)


@pytest.mark.parametrize(("code", "family"), [("LBL002", "label_doubts"), ("TXT002", "encoding")])
def test_a_batch_of_flagged_rows_is_unusual_for_its_family(table, code, family):
    flagged = [i for i, codes in enumerate(table.flag_codes) if code in codes]
    rows = np.array(flagged[:16])
    result = compare_batch(table, rows)
    assert result["reasons"][0]["measure"] == family
    assert all(code in w["why"] for w in result["worst"][:5])


def test_the_comparison_is_seeded(table):
    rows = np.arange(16)
    assert compare_batch(table, rows, seed=1) == compare_batch(table, rows, seed=1)
    a = compare_batch(table, rows, seed=1)["effects"]["length"]["random_mean"]
    b = compare_batch(table, rows, seed=2)["effects"]["length"]["random_mean"]
    assert a != b

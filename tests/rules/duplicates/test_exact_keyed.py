"""DUP001 through the engine's keyed stage: its state holds counts, not rows, and its groups,
flags and findings are the direct grouping of the normalized texts, for any worker count."""

from __future__ import annotations

import pickle
import random

import pytest

import dataaudit
from dataaudit.rules.duplicates.exact import ExactDuplicates
from dataaudit.testing import _case

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
]


def _corpus(n: int, seed: int = 3) -> dict[str, list[dict]]:
    """ASCII sentences, ~40% copies (some recased or re-spaced), blank rows, ids and sources."""
    rng = random.Random(seed)
    out: dict[str, list[dict]] = {"train": [], "test": []}
    for split, rows in out.items():
        for i in range(n if split == "train" else n // 4):
            if rows and rng.random() < 0.4:
                text = rng.choice(rows)["text"] or "x"
                text = rng.choice([text, text.upper(), "  " + text.replace(" ", "   ") + "\n"])
            else:
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
            if rng.random() < 0.02:
                text = rng.choice(["", "   ", None])
            rows.append({"id": f"{split}-{i}", "text": text, "source": rng.choice("ab")})
    return out


def _expected(data: dict[str, list[dict]]) -> set[tuple[str, int, str, str]]:
    """(split, row, cluster, kept|duplicate) by grouping casefolded, whitespace-collapsed text."""
    out = set()
    for split, rows in data.items():
        groups: dict[str, list[int]] = {}
        for i, row in enumerate(rows):
            if row["text"] and row["text"].strip():
                groups.setdefault(" ".join(row["text"].casefold().split()), []).append(i)
        for members in groups.values():
            if len(members) > 1:
                out |= {
                    (split, r, str(members[0]), "kept" if r == members[0] else "duplicate")
                    for r in members
                }
    return out


@pytest.mark.parametrize("workers", [None, pytest.param(2, marks=pytest.mark.slow)])
def test_exact_groups_are_the_direct_grouping(workers, monkeypatch):
    from dataaudit.engine import parallel

    monkeypatch.setattr(parallel, "MIN_CHUNK_ROWS", 500)
    monkeypatch.setattr(parallel, "MAX_CHUNK_ROWS", 500)
    data = _corpus(3000)
    report = dataaudit.audit(
        data, select=["DUP001"], batch_size=256, workers=workers, rules={"DUP001": {}}
    )
    flags = report.flags()
    got = {(r["split"], r["row"], r["cluster"], r["detail"]) for r in flags.iter_rows(named=True)}
    expected = _expected(data)
    assert len(expected) > 1000
    assert got == expected
    ids = {(r["split"], r["row"]): r["id"] for r in flags.iter_rows(named=True)}
    assert all(ids[s, r] == f"{s}-{r}" for s, r, _, _ in expected)
    res = report.result("DUP001")
    train = res["details"]["splits"]["train"]
    dups = sum(1 for s, _, _, d in expected if s == "train" and d == "duplicate")
    assert train["duplicate_rows"] == dups
    assert sum(v["duplicate_rows"] for v in train["per_source"].values()) == dups
    assert sum(v["rows"] for v in train["per_source"].values()) == 3000
    top = res["findings"][0]
    assert top["examples"][0]["text"] is not None and len(top["data"]["rows"]) == top["count"] + 1


def test_exact_state_holds_counts_not_rows():
    # the rows travel through the keyed stage: the folded state is the same size for 10x rows
    sizes = []
    for n in (400, 4000):
        case = _case.Case(ExactDuplicates, data=_corpus(n))
        rule, ctx = case.runnable()
        state = case.fold(rule, ctx, case.batches(256))
        sizes.append(len(pickle.dumps(state)))
    assert sizes[1] < sizes[0] + 64, sizes
    assert sizes[1] < 2000, sizes

"""LBL001 through the engine's keyed stage: its state holds counts, not rows, and its conflict
groups are what the in-process search finds (exact input groups joined with the split's MinHash
near-duplicate clusters, LSH candidates verified by estimate), for any worker count or
partitioning."""

from __future__ import annotations

import json
import pickle
import random

import numpy as np
import pytest

import dataaudit
from dataaudit.rules._minhash import DEFAULTS as MINHASH
from dataaudit.rules.labels.conflicting_labels import ConflictingLabels
from dataaudit.sketches.lsh import components, near_duplicate_pairs
from dataaudit.sketches.minhash import EMPTY_HASH
from dataaudit.testing import _case

LABELS = ["pos", "neg", "mixed"]


def _corpus(fixtures_dir, n: int, seed: int = 5) -> dict[str, list[dict]]:
    """Real text (the fixture's), with copies (some recased), near copies (a word dropped or
    changed), null labels, and labels mostly kept per source text, some flipped."""
    texts = [
        json.loads(line)["text"]
        for line in (fixtures_dir / "classification" / "train.jsonl").read_text().splitlines()
    ]
    texts = [t for t in texts if isinstance(t, str) and len(t.split()) > 12]
    rng = random.Random(seed)
    out: dict[str, list[dict]] = {"train": [], "test": []}
    for split, rows in out.items():
        for i in range(n if split == "train" else n // 3):
            base = rng.randrange(len(texts))
            text = texts[base]
            roll = rng.random()
            if roll < 0.15:
                text = text.upper() if rng.random() < 0.5 else "  " + text
            elif roll < 0.35:
                words = text.split()
                k = rng.randrange(len(words))
                words[k] = rng.choice(["", "indeed", words[k]])
                text = " ".join(words)
            label = LABELS[base % 3] if rng.random() < 0.9 else rng.choice(LABELS)
            if rng.random() < 0.05:
                label = None
            rows.append({"id": f"{split}-{i}", "text": text, "label": label})
    return out


def _expected(data, threshold: float = 0.8) -> set[tuple[str, int, str]]:
    """(split, row, group) of every conflicting row, straight from the features: exact groups of
    labeled rows joined with the split's near-duplicate clusters (all rows)."""
    case = _case.Case(ConflictingLabels, data=data)
    rule, ctx = case.runnable()
    per_split: dict[str, dict[str, list]] = {}
    for split, offset, rb in case.batches(64):
        batch = ctx.batch(split, rb, offset)
        sp = per_split.setdefault(split, {"sig": [], "h": [], "y": []})
        sp["sig"].append(np.asarray(batch.feature("minhash", **MINHASH)))
        sp["h"].append(np.asarray(batch.feature("normalized_hash", view="input_text")))
        sp["y"].extend(batch.feature("label").values)
    out = set()
    for split, sp in per_split.items():
        sig, h, y = np.concatenate(sp["sig"]), np.concatenate(sp["h"]), sp["y"]
        labeled = [i for i in range(len(y)) if y[i] is not None and h[i] not in (0, EMPTY_HASH)]
        near = near_duplicate_pairs(sig, threshold)[0]
        # rows -> component: same hash (labeled rows) or same near cluster
        a, b = [], []
        first: dict[int, int] = {}
        for i in labeled:
            a.append(first.setdefault(int(h[i]), i))
            b.append(i)
            if near[i] >= 0:
                a.append(int(near[i]))
                b.append(i)
        comp = components(len(y), np.array(a, np.int64), np.array(b, np.int64))
        groups: dict[int, list[int]] = {}
        for i in labeled:
            groups.setdefault(int(comp[i]) if comp[i] >= 0 else -1 - i, []).append(i)
        for members in groups.values():
            if len({y[i] for i in members}) > 1:
                key = f"conflict-{int(min(h[i] for i in members)):016x}"
                out |= {(split, i, key) for i in members}
    return out


@pytest.mark.parametrize(
    "workers,partitions", [(None, None), (None, 3), pytest.param(2, None, marks=pytest.mark.slow)]
)
def test_conflicts_are_the_in_process_search(fixtures_dir, workers, partitions, monkeypatch):
    from dataaudit.engine import parallel

    monkeypatch.setattr(parallel, "MIN_CHUNK_ROWS", 300)
    monkeypatch.setattr(parallel, "MAX_CHUNK_ROWS", 300)
    if partitions:
        monkeypatch.setattr(ConflictingLabels, "partitions", partitions, raising=False)
    data = _corpus(fixtures_dir, 1500)
    report = dataaudit.audit(data, select=["LBL001"], batch_size=128, workers=workers)
    got = {(r["split"], r["row"], r["cluster"]) for r in report.flags().iter_rows(named=True)}
    expected = _expected(data)
    assert len(expected) > 300
    assert got == expected
    res = report.result("LBL001")
    kinds = {g["kind"] for g in res["details"]["groups"]}
    assert kinds == {"exact", "near"}
    ids = {(r["split"], r["row"]): r["id"] for r in report.flags().iter_rows(named=True)}
    assert all(ids[s, r] == f"{s}-{r}" for s, r, _ in expected)
    top = next(f for f in res["findings"] if not f.get("rollup"))  # a group, not the "N more"
    assert top["examples"][0]["text"] and top["count"] == len(top["data"]["rows"])


def test_state_holds_counts_not_rows(fixtures_dir):
    # the rows travel through the keyed stage: the folded state does not grow with the rows
    sizes = []
    for n in (150, 1500):
        case = _case.Case(ConflictingLabels, data=_corpus(fixtures_dir, n))
        rule, ctx = case.runnable()
        state = case.fold(rule, ctx, case.batches(128))
        sizes.append(len(pickle.dumps(state)))
    assert sizes[1] < sizes[0] + 64, sizes
    assert sizes[1] < 2000, sizes

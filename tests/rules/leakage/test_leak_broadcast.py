"""LEAK001's broadcast join (eval indexed in a prepass, train streamed against it) gives the
in-process search's report: same findings, flags and metrics on the fixtures and on a generated
corpus whose boilerplate fills band buckets past the per-bucket cap, at any batch size and
worker count; and the streamed state keeps the train rows that match, not the others."""

from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pytest

import dataaudit
from dataaudit.rules.leakage import _eval_index as ei
from dataaudit.rules.leakage import overlap
from dataaudit.sketches.lsh import choose_bands
from dataaudit.sketches.minhash import sketch

NOTICE = (
    "This document is distributed under the terms of the license agreement and may be copied "
    "provided that this notice and the copyright statement are kept in every copy, release"
)


def _texts(fixtures_dir) -> list[str]:
    rows = [json.loads(x) for x in (fixtures_dir / "classification/train.jsonl").open()]
    return [r["text"] for r in rows if isinstance(r["text"], str) and len(r["text"]) > 40]


def generated(fixtures_dir, train: int = 600, evals: int = 80, seed: int = 7) -> dict:
    """Train documents of 1-3 fixture texts plus 60 variants and 25 verbatim copies of one
    notice; test: exact copies, near copies (two words replaced), notice variants and fresh
    documents. Each notice row of test shares its band buckets with ~60 train rows (> CAP)."""
    rng = random.Random(seed)
    pool = _texts(fixtures_dir)
    docs = [" ".join(rng.sample(pool, rng.randint(1, 3))) for _ in range(train)]
    for i in rng.sample(range(train), 85):
        docs[i] = f"{NOTICE} {rng.randint(0, 10**6)}."
    for i in rng.sample(range(train), 25):
        docs[i] = f"{NOTICE} 3.11."
    test = []
    for _ in range(evals):
        r = rng.random()
        if r < 0.15:
            test.append(rng.choice(docs))
        elif r < 0.3:
            words = rng.choice(docs).split()
            for _ in range(2):
                words[rng.randrange(len(words))] = "zebra"
            test.append(" ".join(words))
        elif r < 0.4:
            test.append(f"{NOTICE} {rng.randint(0, 10**6)}.")
        else:
            test.append(" ".join(rng.sample(pool, rng.randint(1, 3))))
    test.append(f"{NOTICE} 3.11.")
    ids = [{"id": f"t{i}", "text": t} for i, t in enumerate(docs)]
    return {"train": ids, "test": [{"id": f"e{i}", "text": t} for i, t in enumerate(test)]}


def _body(report) -> dict:
    res = report.result("LEAK001")
    mode = res["details"].pop("mode")
    return {
        "mode": mode,
        "res": json.dumps({k: res[k] for k in ("findings", "metrics", "status", "details")}),
        "flags": report.flags().to_dicts(),
    }


def _both(data, monkeypatch, options=None, **kw) -> tuple[dict, dict]:
    config = {"rules": {"LEAK001": options}} if options else None
    new = _body(dataaudit.audit(data, select=["LEAK001"], config=config, **kw))
    with monkeypatch.context() as m:
        m.setattr(overlap, "MAX_EVAL_ROWS", -1)  # past the cap: the in-process search
        old = _body(dataaudit.audit(data, select=["LEAK001"], config=config, **kw))
    assert (new["mode"], old["mode"]) == ("broadcast", "in-process")
    return new, old


@pytest.mark.parametrize("batch_size", [None, 16])
def test_the_broadcast_join_gives_the_in_process_report(monkeypatch, fixtures_dir, batch_size):
    kw = {"batch_size": batch_size} if batch_size else {}
    for data, options in [
        ("classification", None),
        ("classification", {"verify": "estimate", "threshold": 0.5, "num_perm": 64}),
        ("classification", {"pairs": [["test", "validation"]]}),  # validation: eval and ref
        ("chat_sft", None),
    ]:
        new, old = _both(str(fixtures_dir / data), monkeypatch, options, **kw)
        assert new["res"] == old["res"] and new["flags"] == old["flags"]
        assert new["flags"]  # the fixtures' planted leaks
    data = generated(fixtures_dir)
    new, old = _both(data, monkeypatch, **kw)
    assert new["res"] == old["res"] and new["flags"] == old["flags"]
    flags = new["flags"]
    notice = [f for f in flags if f["split"] == "train" and "near" in f["detail"]]
    exact = [f for f in flags if f["split"] == "train" and "exact" in f["detail"]]
    # the cap is what decides: some notice variants are near copies, not all 85 of them
    assert 0 < len(notice) < 85 and len(exact) >= 25


def test_eval_sides_past_the_cap_run_the_in_process_search(monkeypatch, fixtures_dir):
    """The JSON Lines splits' sizes are unknown before reading: the prepass reads them, stops
    keeping rows past the cap (test + validation: 300 rows > 200) and broadcasts nothing."""
    data = str(fixtures_dir / "classification")
    new = _body(dataaudit.audit(data, select=["LEAK001"]))
    monkeypatch.setattr(overlap, "MAX_EVAL_ROWS", 200)
    kept = []
    finish = overlap.TrainEvalOverlap.prepass_finish

    def spy(rule, pre, ctx):
        kept.append(sum(len(r) for sp in pre["splits"].values() for r in sp["rows"]))
        return finish(rule, pre, ctx)

    monkeypatch.setattr(overlap.TrainEvalOverlap, "prepass_finish", spy)
    capped = _body(dataaudit.audit(data, select=["LEAK001"], batch_size=64))
    assert capped["mode"] == "in-process" and capped["res"] == new["res"]
    assert capped["flags"] == new["flags"]
    assert kept and 0 < kept[0] <= 200  # what the prepass held: the cap at most


@pytest.mark.slow
def test_workers_and_chunks_do_not_change_the_broadcast_report(monkeypatch, fixtures_dir):
    from dataaudit.engine import parallel

    monkeypatch.setattr(parallel, "MIN_CHUNK_ROWS", 50)
    monkeypatch.setattr(parallel, "MAX_CHUNK_ROWS", 50)
    data = generated(fixtures_dir)
    one = _body(dataaudit.audit(data, select=["LEAK001"], batch_size=16))
    new, old = _both(data, monkeypatch, workers=2, batch_size=16)
    assert new == one and new["res"] == old["res"] and new["flags"] == old["flags"]


# -- the pieces --------------------------------------------------------------------------------
def _side(texts: list[str], first_row: int = 0):
    arr = pa.array(texts, pa.large_string())
    sk = sketch(arr, 128, 5, "word", 1)
    h = np.where(sk.text_hashes == np.uint64(0x9E3779B97F4A7C15), 0, sk.text_hashes)
    rows = np.arange(first_row, first_row + len(texts), dtype=np.int64)
    return rows, h.astype(np.uint64), sk.signatures, sk.sets, arr


def _index(texts: list[str]) -> ei.EvalIndex:
    bands, rows = choose_bands(0.7, 128)
    r, h, sig, sets, _ = _side(texts)
    return ei.build_index(r, h, sig, sets, bands, rows)


def _probe(index, m, texts, first_row):
    r, h, sig, sets, arr = _side(texts, first_row)
    return ei.probe(index, m, r, h, sig, sets, None, arr, 0.7)


def _canon(m: ei.Matches) -> tuple:
    ex_r, ex_e, _ = m.exact()
    return (
        ex_r.tolist(),
        ex_e.tolist(),
        m.best_e.tolist(),
        m.best_r.tolist(),
        m.best_snip.to_pylist(),
        m.top_b.tolist(),
        m.top_r.tolist(),
        m.nr_r.tolist(),
        m.nr_e.tolist(),
        m.nr_s.tolist(),
        m.nr_snip.to_pylist(),
    )


def test_matches_are_the_same_whatever_the_batches_and_merge_order(fixtures_dir):
    data = generated(fixtures_dir)
    train = [r["text"] for r in data["train"]]
    index = _index([r["text"] for r in data["test"]])
    whole = _probe(index, ei.Matches(), train, 0)
    assert len(whole.top_r) and len(whole.nr_r) and whole.ex_r
    rng = random.Random(3)
    for _ in range(3):
        cuts = sorted(rng.sample(range(1, len(train)), 12))
        parts = [
            _probe(index, ei.Matches(), train[a:b], a)
            for a, b in zip([0, *cuts], [*cuts, len(train)])
        ]
        rng.shuffle(parts)
        while len(parts) > 1:  # merge in a random tree
            i = rng.randrange(len(parts) - 1)
            parts[i : i + 2] = [ei.merge_matches(parts[i], parts[i + 1])]
        assert _canon(parts[0]) == _canon(whole)


def test_train_rows_that_match_nothing_are_not_held(fixtures_dir):
    data = generated(fixtures_dir)
    index = _index([r["text"] for r in data["test"]])
    rng = random.Random(5)
    m = _probe(index, ei.Matches(), [r["text"] for r in data["train"]], 0)
    held = m.nbytes()
    row = len(data["train"])
    for _ in range(20):  # 20 batches of train rows that share no shingle with the eval rows
        batch = [" ".join(f"w{rng.randrange(10**6)}" for _ in range(30)) for _ in range(100)]
        m = _probe(index, m, batch, row)
        row += len(batch)
    assert m.nbytes() == held


def test_near_pairs_leave_with_their_rows_from_the_buckets_tops(fixtures_dir):
    """A near pair found early is dropped when smaller rows fill its buckets' tops: the
    state after many notice variants holds at most CAP train rows per bucket."""
    index = _index([f"{NOTICE} 42."])
    m = ei.Matches()
    for start in (500, 0):  # later rows first, then smaller ones that take the tops
        texts = [f"{NOTICE} {start + i}." for i in range(40)]
        m = _probe(index, m, texts, start)
    assert np.bincount(m.top_b).max() <= ei.CAP
    assert set(m.nr_r.tolist()) <= set(m.top_r.tolist()) and m.nr_r.max() < 500


def test_a_sequential_scan_appends_its_batches_to_the_state(fixtures_dir):
    """Each batch of a scan in row order adds its top entries, near pairs and new exact keys
    as chunks of their own and copies none of the state's: the chunks held before a batch
    are the very arrays held after it (a merge that joined or re-sorted them, as each batch
    once did, costs the whole state per batch: quadratic in the matches)."""
    data = generated(fixtures_dir)
    train = [r["text"] for r in data["train"]]
    index = _index([r["text"] for r in data["test"]])
    m, grew = ei.Matches(), 0
    for a in range(0, len(train), 20):
        before_tops, before_near, before_best = list(m.tops), list(m.near), list(m.bests)
        m = _probe(index, m, train[a : a + 20], a)
        assert all(x is y for x, y in zip(m.bests, before_best)) and len(m.bests) >= len(
            before_best
        )
        assert all(x is y for x, y in zip(m.tops, before_tops)) and len(m.tops) >= len(before_tops)
        assert all(x is y for x, y in zip(m.near, before_near)) and len(m.near) >= len(before_near)
        grew += len(m.near) > len(before_near)
    assert grew > 5  # batches did add pairs
    assert _canon(m) == _canon(_probe(index, ei.Matches(), train, 0))


def test_batches_out_of_row_order_evict_pairs_as_one_batch_does(fixtures_dir):
    """Batches probed in reverse and in random order, and shards merged in and against row
    order: smaller rows arriving later push rows out of the tops, and their near pairs go;
    the result is the one-batch probe's."""
    data = generated(fixtures_dir)
    train = [r["text"] for r in data["train"]]
    index = _index([r["text"] for r in data["test"]])
    whole = _canon(_probe(index, ei.Matches(), train, 0))
    starts = list(range(0, len(train), 25))
    rng = random.Random(11)
    evicted = 0
    for order in (starts[::-1], rng.sample(starts, len(starts))):
        m, seen = ei.Matches(), set()
        for a in order:
            m = _probe(index, m, train[a : a + 25], a)
            seen |= set(zip(m.nr_r.tolist(), m.nr_e.tolist()))
        assert _canon(m) == whole
        evicted += len(seen - set(zip(m.nr_r.tolist(), m.nr_e.tolist())))
    assert evicted  # some pairs were held and then dropped
    shards = [_probe(index, ei.Matches(), train[a : a + 25], a) for a in starts]
    for fold in (shards, shards[::-1]):  # each merge: the next shard after, or before
        m = ei.Matches()
        for s in fold:
            held = list(m.near) if fold is shards else []
            m = ei.merge_matches(m, s)
            assert all(x is y for x, y in zip(m.near, held)) and len(m.near) >= len(held)
        assert _canon(m) == whole

"""LEAK002's memory: the n-gram index and the eval side stay within what its docstring states."""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.context import AuditContext
from dataaudit.corpus import load_corpus
from dataaudit.features.minhash import ngram_hashes
from dataaudit.resources import Benchmark
from dataaudit.rules.leakage.contamination import NgramContamination
from dataaudit.sketches import ngram_index
from dataaudit.sketches.ngram_index import NgramIndex

MB = 1 << 20


@pytest.fixture
def small_steps(monkeypatch):
    """Many folds and many merge blocks on small inputs."""
    monkeypatch.setattr(ngram_index, "PENDING", 1 << 12)
    monkeypatch.setattr(ngram_index, "CHUNK", 1 << 10)


def _batches(seed: int, n: int, size: int) -> list[np.ndarray]:
    """Random hashes with repeats inside and across batches, and the extreme values."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 2**64 - 1, n, dtype=np.uint64)
    pool[:2] = [0, 2**64 - 1]
    picks = rng.integers(0, n, n + n // 2)
    return [pool[picks[i : i + size]] for i in range(0, len(picks), size)]


def _peak(fn) -> tuple[Any, int]:
    """``fn()`` and the most memory it had allocated at once (numpy reports to tracemalloc)."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = fn()
        return out, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_exact_index_is_the_sorted_set_whatever_the_order_and_grouping(small_steps):
    batches = _batches(0, 60_000, 1500)
    truth = np.unique(np.concatenate(batches))
    one = NgramIndex(budget=10**6)
    for b in batches:
        one.add(b)
    assert one.size == len(truth) and np.array_equal(one.exact, truth)

    shards = []
    for part in (batches[::3], batches[1::3][::-1], batches[2::3]):
        ix = NgramIndex(budget=10**6)
        for b in part:
            ix.add(b)
        shards.append(ix)
    merged = shards[0].merge(shards[1].merge(shards[2]))
    assert np.array_equal(merged.exact, truth)
    # hashes below and above everything already in the set
    merged.add(np.array([1, 2**64 - 2, 1], np.uint64))
    assert merged.contains(np.array([1, 2**64 - 2, 3], np.uint64)).tolist() == [True, True, False]
    assert merged.size == len(truth) + 2
    assert np.all(merged.exact[1:] > merged.exact[:-1])


def test_adding_never_holds_much_more_than_the_index(small_steps):
    batches = _batches(1, 400_000, 5000)  # allocated before the measurement: the caller's

    def build() -> NgramIndex:
        ix = NgramIndex(budget=10**7)
        for b in batches:
            ix.add(b)
        assert ix.size is not None
        return ix

    ix, peak = _peak(build)
    final = ix.nbytes()
    pending = 8 * max(ngram_index.PENDING, ix.size // 16)
    # the documented bound: the index, the pending hashes folded in (about as much again),
    # and chunk-sized work; concatenating the whole set again (as before) would be 2-3x
    assert final == 8 * ix.size
    assert peak <= final + 2 * pending + 64 * 8 * ngram_index.CHUNK, (peak, final)


def test_above_the_budget_only_the_bloom_filter_is_kept(small_steps):
    budget, bloom_bits = 50_000, 1 << 23  # 400 KB of hashes, a 1 MB filter
    batches = _batches(2, 150_000, 5000)

    def build() -> NgramIndex:
        ix = NgramIndex(budget, bloom_bits)
        for b in batches:
            ix.add(b)
        return ix

    ix, peak = _peak(build)
    assert ix.size is None and ix.nbytes() == bloom_bits // 8
    # at the switch both exist for a moment: 8 bytes x budget + the filter
    pending = 8 * max(ngram_index.PENDING, budget // 16)
    assert peak <= 8 * budget + bloom_bits // 8 + 2 * pending + 64 * 8 * ngram_index.CHUNK
    assert ix.contains(np.concatenate(batches)).all()
    rate, peak = _peak(ix.false_positive_rate)
    assert 0 < rate < 0.01
    assert peak < bloom_bits // 8  # counted in chunks, not by unpacking every bit at once


def _context(data: dict[str, list[dict]]) -> tuple[Any, AuditContext]:
    corpus = load_corpus(data)
    return corpus, AuditContext.from_corpus(corpus, seed=0)


def _fold(rule, ctx, corpus, batch_size: int):
    state, offsets = rule.start(ctx), {}
    for split, rb in corpus.stream(batch_size):
        batch = ctx.batch(split, rb, offsets.get(split, 0))
        offsets[split] = offsets.get(split, 0) + rb.num_rows
        state = rule.update(state, batch)
    return state


def _nbytes(obj: Any) -> int:
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(v) for v in obj)
    if isinstance(obj, (np.ndarray, pa.Array, pa.ChunkedArray)):
        return obj.nbytes
    if isinstance(obj, bytes):
        return len(obj)
    return 0


def _doc(rng: np.random.Generator, vocab: list[str], chars: int) -> str:
    words = [vocab[i] for i in rng.integers(0, len(vocab), chars // 4)]
    return " ".join(words)[:chars]


def test_eval_side_keeps_less_than_its_text_and_finds_the_same_rows():
    rng = np.random.default_rng(3)
    syllables = ["ka", "to", "ri", "men", "sol", "ve", "dan", "pur", "lo", "ix", "tra", "be"]
    vocab = sorted({"".join(rng.choice(syllables, rng.integers(1, 4))) for _ in range(3000)})
    train = [_doc(rng, vocab, 2000) for _ in range(60)]
    test = [_doc(rng, vocab, 2000) for _ in range(200)]
    quoted = [5, 77, 150]
    for i in quoted:
        test[i] = test[i][:900] + " " + " ".join(train[i % 60].split()[20:40]) + " " + test[i][900:]
    corpus, ctx = _context(
        {"train": [{"text": t} for t in train], "test": [{"text": t} for t in test]}
    )
    rule = NgramContamination(max_examples_per_finding=2)
    state = _fold(rule, ctx, corpus, 64)

    text_bytes = sum(len(t.encode()) for t in test)
    ngrams = sum(max(0, len(t.split()) - 12) for t in test)
    eval_bytes = _nbytes(state["splits"])
    # compressed text; the n-gram hashes and row numbers (16 bytes an n-gram) and the text, as
    # kept before, are ~3x the text
    assert eval_bytes < 0.5 * text_bytes and eval_bytes < 4 * ngrams
    assert state["index"].nbytes() == 8 * state["index"].size

    result = rule.finish(state, ctx)
    assert [f.row for f in result.flags] == quoted
    (finding,) = result.findings
    assert [e["row"] for e in finding.examples] == quoted[:2]
    assert all(e["span_words"] == 20 for e in finding.examples)


def test_eval_text_and_benchmarks_hash_as_the_shared_feature_does():
    rows = [
        {"text": "Ｆｕｌｌ width, «quoted» text — with Punctuation!! and Straße " * 5},
        {"text": ""},
    ]
    corpus, ctx = _context({"train": rows, "test": rows})
    for split, rb in corpus.stream(8):
        batch = ctx.batch(split, rb, 0)
        mine = ngram_hashes(batch.normalized, 13)  # what finish hashes again from kept text
        shared = batch.feature("ngram_hashes", ngram=13)
        assert len(shared.hashes) > 0
        assert np.array_equal(mine.hashes, shared.hashes)
        assert np.array_equal(mine.per_row, shared.per_row)
        # a benchmark file's items (raw text) hash to the same n-grams as the dataset's rows
        hashes, owner = Benchmark("b.jsonl", batch.text.cast(pa.large_string())).ngrams(13)
        order = np.argsort(shared.hashes, kind="stable")
        assert np.array_equal(hashes, shared.hashes[order])
        assert np.array_equal(owner, shared.row[order])


@pytest.mark.parametrize("protocol", [4, 5])
def test_a_pickled_index_arrives_sorted_and_still_grows(small_steps, protocol):
    import pickle

    a, b = NgramIndex(budget=10**6), NgramIndex(budget=10**6)
    for x in _batches(4, 20_000, 700):
        a.add(x)
    for x in _batches(5, 20_000, 700):
        b.add(x)
    in_a = np.unique(np.concatenate([a.exact, *a.pending]))
    truth = np.union1d(in_a, np.concatenate([b.exact, *b.pending]))
    back = pickle.loads(pickle.dumps(a, protocol=protocol))  # as a worker's state comes back
    assert back.pending == [] and back.pending_n == 0
    back.add(np.array([7], np.uint64))
    # folds into the unpickled array (resized in place, or copied once if it borrows the pickle's)
    assert back.size == len(in_a) + (7 not in in_a)
    merged = pickle.loads(pickle.dumps(b, protocol=protocol)).merge(back)
    assert np.array_equal(merged.exact, np.union1d(truth, [7]))

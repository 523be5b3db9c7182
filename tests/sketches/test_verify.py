"""Verification of LSH candidates: the compiled merge over sorted shingle sets, and the cut of
pairs whose MinHash estimate is clearly below the threshold (it must not cost recall)."""

from __future__ import annotations

import numpy as np
import pytest

from dataaudit.sketches.minhash import (
    Shingles,
    minhash_signatures,
    pair_jaccard,
    shingle_sets,
)


def _pairs_at(threshold: float, size: int, pairs: int, rng) -> Shingles:
    """``pairs`` pairs of sets of ``size`` random hashes with Jaccard just >= ``threshold``."""
    d = int(np.floor(size * (1 - threshold) / (1 + threshold)))
    c = size - d
    hashes, per = [], []
    for _ in range(pairs):
        base = rng.integers(0, 2**64, size=c + 2 * d, dtype=np.uint64)
        hashes += [base[:size], np.concatenate([base[:c], base[size : size + d]])]
        per += [size, size]
    per = np.array(per, np.int64)
    return Shingles(len(per), np.concatenate(hashes), per, per)


def test_sets_are_sorted_distinct_and_match_python():
    rng = np.random.default_rng(3)
    hashes = rng.integers(0, 50, size=400, dtype=np.uint64) << np.uint64(32)
    per = np.array([0, 7, 100, 1, 292], np.int64)
    raw_sets = shingle_sets(Shingles(len(per), hashes, per, per))
    sets = raw_sets.sorted()
    assert sets.distinct and not raw_sets.distinct
    bounds = np.concatenate([[0], np.cumsum(per)])
    for r in range(len(per)):
        want = sorted({int(h >> np.uint64(32)) for h in hashes[bounds[r] : bounds[r + 1]]})
        assert sets.row(r).tolist() == want
    assert sets.sorted(np.array([4, 1])).row(0).tolist() == sets.row(4).tolist()
    i, j = np.array([1, 2, 0, 3]), np.array([2, 4, 0, 3])
    got = pair_jaccard(sets, i, j)
    for k, (a, b) in enumerate(zip(i, j)):
        x, y = set(sets.row(a).tolist()), set(sets.row(b).tolist())
        assert got[k] == (len(x & y) / len(x | y) if x | y else 0.0)
    # unsorted sets: the compared rows are sorted first, same answer
    np.testing.assert_array_equal(pair_jaccard(raw_sets, i, j), got)


def test_sorted_sets_match_numpy_for_every_length_and_value_range():
    # the in-kernel sort (insertion up to 48 values, 8-bit radix beyond: no np.sort, so the
    # kernel allocates nothing) against np.unique, on every byte of the 32-bit values, with
    # duplicates, empty rows and rows listed out of order or twice
    from dataaudit.sketches.minhash import ShingleSets

    rng = np.random.default_rng(11)
    sizes = np.array([0, 1, 2, 47, 48, 49, 50, 300, 0, 1000, 5, 257], np.int64)
    parts = []
    for i, n in enumerate(sizes):
        top = [2**32, 300, 2**32, 2**8, 2**32][i % 5]  # few values: many duplicates
        parts.append(rng.integers(0, top, size=n, dtype=np.uint64).astype(np.uint32))
    parts[3][:] = np.arange(47, dtype=np.uint32)[::-1] * np.uint32(2**26)  # reversed, top byte
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    sets = ShingleSets(offsets, np.concatenate(parts), False)
    for rows in (None, np.array([11, 0, 9, 9, 3, 7], np.int64)):
        got = sets.sorted(rows)
        listed = range(len(sizes)) if rows is None else rows
        assert got.distinct and len(got) == len(listed)
        for r, src in enumerate(listed):
            assert got.row(r).tolist() == np.unique(parts[src]).tolist()
        assert len(got.values) == got.offsets[-1]


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.9])
@pytest.mark.parametrize("size", [2, 5, 12, 60, 500])
def test_estimate_cut_keeps_every_pair_at_the_threshold(threshold, size):
    rng = np.random.default_rng(int(threshold * 100) + size)
    sh = _pairs_at(threshold, size, 1500, rng)
    sig, sets = minhash_signatures(sh), shingle_sets(sh)
    a = np.arange(0, sh.num_rows, 2)
    exact = pair_jaccard(sets, a, a + 1)
    assert (exact >= threshold).all()
    cut = pair_jaccard(sets, a, a + 1, signatures=sig, threshold=threshold)
    np.testing.assert_array_equal(cut, exact)  # none was cut


def test_estimate_cut_skips_dissimilar_pairs_and_decides_like_exact():
    rng = np.random.default_rng(5)
    low = _pairs_at(0.2, 300, 500, rng)
    high = _pairs_at(0.85, 300, 500, rng)
    sh = Shingles(
        low.num_rows + high.num_rows,
        np.concatenate([low.hashes, high.hashes]),
        np.concatenate([low.per_row, high.per_row]),
        np.concatenate([low.tokens, high.tokens]),
    )
    sig, sets = minhash_signatures(sh), shingle_sets(sh)
    a = np.arange(0, sh.num_rows, 2)
    exact = pair_jaccard(sets, a, a + 1)
    cut = pair_jaccard(sets, a, a + 1, signatures=sig, threshold=0.8)
    assert ((cut >= 0.8) == (exact >= 0.8)).all()
    assert (cut[:500] != exact[:500]).mean() > 0.99  # low pairs: the estimate, not merged
    np.testing.assert_array_equal(cut[500:], exact[500:])


def test_two_threads_give_the_same_features_as_one(monkeypatch):
    import pyarrow as pa

    from dataaudit.sketches import minhash
    from dataaudit.sketches.minhash import shingle_auto

    rng = np.random.default_rng(11)
    words = ["alpha", "Beta", "gamma", "機械学習のデータ", "δέλτα", "e"]
    texts = [
        None if i % 97 == 0 else " ".join(rng.choice(words, int(rng.integers(0, 30))))
        for i in range(5000)
    ]
    arr = pa.array(texts, pa.large_string())

    def features():
        sh, unit = shingle_auto(arr)
        return sh, unit, minhash_signatures(sh), shingle_sets(sh).sorted()

    monkeypatch.setattr(minhash, "THREAD_ROWS", 10**9)
    one = features()
    monkeypatch.setattr(minhash, "THREAD_ROWS", 16)
    monkeypatch.setattr(minhash.os, "cpu_count", lambda: 2)
    assert len(minhash._ranges(len(arr))) == 2
    two = features()
    for a, b in [(one[0].hashes, two[0].hashes), (one[0].per_row, two[0].per_row),
                 (one[0].tokens, two[0].tokens), (one[0].text_hashes, two[0].text_hashes),
                 (one[1], two[1]), (one[2], two[2]), (one[3].offsets, two[3].offsets),
                 (one[3].values, two[3].values)]:  # fmt: skip
        np.testing.assert_array_equal(a, b)


def test_tokenizable_text_is_the_same_on_two_threads(monkeypatch):
    import pyarrow as pa

    from dataaudit.features.normalize import tokenizable_array
    from dataaudit.sketches import minhash

    texts = ["Ｆｕｌｌｗｉｄｔｈ ﬁne", None, "Straße ΣΑΣ", "plain ASCII", "İstanbul"] * 1000
    arr = pa.array(texts, pa.large_string())
    monkeypatch.setattr(minhash, "THREAD_ROWS", 10**9)
    one = tokenizable_array(arr)
    monkeypatch.setattr(minhash, "THREAD_ROWS", 16)
    monkeypatch.setattr(minhash.os, "cpu_count", lambda: 2)
    two = tokenizable_array(arr)
    assert two.equals(one) and two.null_count == 1000


def test_components_match_scipy_connected_components():
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from dataaudit.sketches.lsh import components

    rng = np.random.default_rng(0)
    for _ in range(100):
        n, m = int(rng.integers(1, 300)), int(rng.integers(1, 400))
        a, b = rng.integers(0, n, m), rng.integers(0, n, m)
        graph = coo_matrix((np.ones(m, np.int8), (a, b)), shape=(n, n)).tocsr()
        count, comp = connected_components(graph, directed=False)
        smallest = np.full(count, n)
        np.minimum.at(smallest, comp, np.arange(n))
        size = np.bincount(comp, minlength=count)
        want = np.where(size[comp] > 1, smallest[comp], -1)
        np.testing.assert_array_equal(components(n, a, b), want)

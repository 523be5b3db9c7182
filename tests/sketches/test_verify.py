"""Verification of LSH candidates: the compiled merge over sorted shingle sets, and the cut of
pairs whose MinHash estimate is clearly below the threshold (it must not cost recall)."""

from __future__ import annotations

import numpy as np
import pytest

from dataaudit.sketches.minhash import (
    Shingles,
    ShingleSets,
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
    sets = shingle_sets(Shingles(len(per), hashes, per, per))
    assert sets.distinct
    bounds = np.concatenate([[0], np.cumsum(per)])
    for r in range(len(per)):
        want = sorted({int(h >> np.uint64(32)) for h in hashes[bounds[r] : bounds[r + 1]]})
        assert sets.row(r).tolist() == want
    i, j = np.array([1, 2, 0, 3]), np.array([2, 4, 0, 3])
    got = pair_jaccard(sets, i, j)
    for k, (a, b) in enumerate(zip(i, j)):
        x, y = set(sets.row(a).tolist()), set(sets.row(b).tolist())
        assert got[k] == (len(x & y) / len(x | y) if x | y else 0.0)
    # unsorted sets built elsewhere are sorted first: same answer
    raw = ShingleSets(bounds, (hashes >> np.uint64(32)).astype(np.uint32))
    np.testing.assert_array_equal(pair_jaccard(raw, i, j), got)


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

"""The seeded bottom-k sample: the k smallest keys, whatever the batching, sharding or merge order."""

from __future__ import annotations

import numpy as np
import pytest

from dataaudit.sketches.sampling import BottomK, row_keys

SPLITS = {"train": 500, "test": 120}


def _offer(sample: BottomK, split: str, lo: int, hi: int, state: int, made: list[int]) -> None:
    rows = np.arange(lo, hi, dtype=np.int64)

    def items(idx: np.ndarray) -> list[str]:
        made.append(len(idx))
        return [f"{split}:{r}" for r in rows[idx].tolist()]

    sample.offer(split, rows, row_keys(rows, state), items)


def _expected(k: int, state: int) -> list[str]:
    entries = []
    for split, n in SPLITS.items():
        rows = np.arange(n, dtype=np.int64)
        entries += [(int(key), split, r) for key, r in zip(row_keys(rows, state), rows.tolist())]
    return [f"{s}:{r}" for _, s, r in sorted(entries)[:k]]


@pytest.mark.parametrize("batch", [1, 7, 64, 1000])
def test_one_pass_keeps_the_k_smallest_keys(batch):
    sample, made = BottomK(50), []
    for split, n in SPLITS.items():
        for lo in range(0, n, batch):
            _offer(sample, split, lo, min(lo + batch, n), 9, made)
    assert [item for _, _, item in sample.entries()] == _expected(50, 9)
    assert len(sample) == 50


def test_shards_merge_to_one_pass_in_any_order():
    shards = []
    for split, n in SPLITS.items():
        for lo in range(0, n, 90):
            s = BottomK(40)
            _offer(s, split, lo, min(lo + 90, n), 5, [])
            shards.append(s)
    expected = _expected(40, 5)
    for order in (shards, shards[::-1], shards[1::2] + shards[::2]):
        merged = BottomK(40)
        for s in order:
            merged = merged.merge(s)
        assert [item for _, _, item in merged.entries()] == expected


def test_merge_leaves_both_sides_unchanged_and_refuses_another_k():
    a, b = BottomK(10), BottomK(10)
    _offer(a, "train", 0, 100, 1, [])
    _offer(b, "train", 100, 200, 1, [])
    a_items, b_items = list(a.items), list(b.items)
    a.merge(b)
    assert a.items == a_items and b.items == b_items
    with pytest.raises(ValueError, match="k=10 and k=11"):
        a.merge(BottomK(11))


def test_only_rows_that_can_enter_are_materialized():
    sample, made = BottomK(5), []
    _offer(sample, "train", 0, 1000, 3, made)
    assert made == [5]  # a batch larger than k: only its k smallest
    _offer(sample, "train", 1000, 2000, 3, made)
    assert made[-1] <= 5


def test_equal_keys_are_ordered_by_split_then_row():
    def filled(first: str, second: str) -> BottomK:
        s = BottomK(3)
        for split in (first, second):
            rows = np.array([4, 2], np.int64)
            s.offer(split, rows, np.zeros(2, np.uint64), lambda idx, sp=split: [sp] * len(idx))
        return s

    expected = [("a", 2, "a"), ("a", 4, "a"), ("b", 2, "b")]
    assert list(filled("a", "b").entries()) == expected
    assert list(filled("b", "a").entries()) == expected
    assert filled("b", "a").items_by_row() == ["a", "a", "b"]


def test_an_empty_sample_takes_nothing():
    sample = BottomK(0)
    _offer(sample, "train", 0, 10, 1, made := [])
    assert len(sample) == 0 and made == []


@pytest.mark.parametrize("k", [3, 700, 5000])
def test_buffered_offers_cut_back_to_the_same_sample(k):
    """Offers are buffered and cut back to k only now and then (a large k must not cost O(k)
    per batch): the sample read at any point is still the k smallest so far, and it pickles."""
    import pickle

    big = {"train": 4000, "test": 1500}
    sample = BottomK(k)
    seen = []
    for split, n in big.items():
        for lo in range(0, n, 10):
            rows = np.arange(lo, min(lo + 10, n), dtype=np.int64)
            keys = row_keys(rows, 11)
            sample.offer(
                split, rows, keys, lambda idx, r=rows, s=split: [f"{s}:{x}" for x in r[idx]]
            )
            seen += [(int(key), split, int(r)) for key, r in zip(keys, rows)]
            if lo % 1000 == 0:  # reading in the middle gives the k smallest so far
                assert sample.items == [f"{s}:{r}" for _, s, r in sorted(seen)[:k]]
    expected = [f"{s}:{r}" for _, s, r in sorted(seen)[:k]]
    again = pickle.loads(pickle.dumps(sample))
    assert again.items == expected and sample.items == expected and len(sample) == min(k, 5500)

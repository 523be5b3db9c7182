"""The mergeable state types: shards merged in order equal one pass, states pickle and compare by
value, and merges refuse what cannot be combined."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataaudit.sketches.histogram import Histogram
from dataaudit.sketches.state import Additive, Examples, PerSplit, merge_values
from dataaudit.testing._compare import first_difference


def _smallest_first(item: tuple[int, int]) -> tuple[int, int]:
    return item[1], item[0]


def _by_score(item: tuple[int, int]) -> int:
    return item[1]


def _fold(examples: Examples, items: list) -> Examples:
    examples.extend(items)
    return examples


def _shards(items: list, cuts: list[int]) -> list[list]:
    """``items`` cut at ``cuts`` (positions, in any order): consecutive shards, in row order."""
    edges = [0, *sorted(c % (len(items) + 1) for c in cuts), len(items)]
    return [items[lo:hi] for lo, hi in zip(edges, edges[1:])]


# -- Examples -----------------------------------------------------------------------------------
def test_examples_keep_the_first_items_added_and_refuse_the_rest():
    ex = Examples(3)
    assert [ex.add(("row", i)) for i in range(5)] == [True, True, True, False, False]
    assert list(ex) == [("row", 0), ("row", 1), ("row", 2)]
    assert len(ex) == 3 and ex.room == 0


def test_extend_reads_only_as_many_items_as_there_is_room_for():
    ex, read = Examples(4), []

    def items():
        for i in range(1000):
            read.append(i)
            yield i

    ex.add(-1)
    ex.extend(items())
    assert ex.items == [-1, 0, 1, 2]
    assert read == [0, 1, 2]  # a full list costs nothing for the rows it cannot keep
    ex.extend(items())
    assert read == [0, 1, 2]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 30),
    limit=st.integers(0, 8),
    cuts=st.lists(st.integers(0, 40), max_size=4),
    ranked=st.booleans(),
)
def test_shards_merged_in_order_equal_one_pass(n, limit, cuts, ranked):
    # (row, score) with repeated scores, so ties must fall to the earlier row
    items = [(row, (row * 7) % 5) for row in range(n)]
    key = _smallest_first if ranked else None
    one_pass = _fold(Examples(limit, key=key), items)
    parts = [_fold(Examples(limit, key=key), part) for part in _shards(items, cuts)]
    left = parts[0]
    for part in parts[1:]:
        left = left.merge(part)
    right = parts[-1]
    for part in reversed(parts[:-1]):
        right = part.merge(right)
    assert left == one_pass and right == one_pass
    expected = sorted(items, key=key)[:limit] if ranked else items[:limit]
    assert one_pass.items == expected


def test_a_merge_changes_neither_side():
    a, b = _fold(Examples(3), [1, 2]), _fold(Examples(3), [3, 4])
    assert a.merge(b).items == [1, 2, 3]
    assert a.items == [1, 2] and b.items == [3, 4]


def test_ranked_examples_keep_the_best_by_key():
    ex = Examples(2, key=_smallest_first)
    ex.extend([(0, 5), (1, 1), (2, 3)])
    assert ex.add((3, 0)) is True
    assert ex.add((4, 9)) is False
    assert ex.items == [(3, 0), (1, 1)]
    # a tie goes to the item added (or merged) first: the earlier row
    tied = _fold(Examples(1, key=_by_score), [(0, 1)])
    assert _fold(Examples(1, key=_by_score), [(0, 1), (1, 1)]).items == [(0, 1)]
    assert tied.merge(_fold(Examples(1, key=_by_score), [(1, 1)])).items == [(0, 1)]
    tied.extend([(2, 1)])
    assert tied.items == [(0, 1)]


@pytest.mark.parametrize(
    "other", [Examples(4), Examples(3, key=_smallest_first)], ids=["limit", "key"]
)
def test_examples_kept_another_way_do_not_merge(other):
    with pytest.raises(ValueError, match="cannot merge examples"):
        Examples(3).merge(other)


@pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
def test_examples_pickle_and_compare_by_value(protocol):
    ex = _fold(Examples(3, key=_smallest_first), [(0, 2), (1, 1)])
    back = pickle.loads(pickle.dumps(ex, protocol=protocol))
    assert back == ex and back.key is _smallest_first
    assert first_difference(ex, back) is None
    assert first_difference(ex, _fold(Examples(3, key=_smallest_first), [(0, 2)])) is not None


# -- PerSplit -----------------------------------------------------------------------------------
def test_at_starts_a_split_once_with_the_factory():
    made = []

    def new():
        made.append(1)
        return []

    splits = PerSplit(new)
    splits.at("train").append(1)
    splits.at("train").append(2)
    assert splits == {"train": [1, 2]} and len(made) == 1
    assert "test" not in splits and splits.get("test") is None  # reading starts nothing


def test_merge_keeps_the_order_splits_first_appear_and_one_sided_splits():
    a = PerSplit(list, [("train", [1]), ("test", [2])])
    b = PerSplit(list, [("validation", [3]), ("train", [4]), ("extra", [5])])
    merged = a.merge(b)
    assert list(merged) == ["train", "test", "validation", "extra"]
    assert merged == {"train": [1, 4], "test": [2], "validation": [3], "extra": [5]}
    assert isinstance(merged, PerSplit) and merged.new is list
    assert a == {"train": [1], "test": [2]}  # neither side changed
    assert a.merge(PerSplit(list)) == a and PerSplit(list).merge(a) == a


def test_merge_uses_the_states_own_merge_or_the_one_given():
    a = PerSplit(Histogram, [("train", Histogram().add(np.array([1, 2])))])
    b = PerSplit(Histogram, [("train", Histogram().add(np.array([3])))])
    assert a.merge(b)["train"].n == 3
    kept = PerSplit(int, [("train", 5)]).merge(PerSplit(int, [("train", 7)]), max)
    assert kept == {"train": 7}


@pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
def test_per_split_pickles_and_copies_with_its_factory(protocol):
    splits = PerSplit(partial(Examples, 2))
    splits.at("train").add((0, "a"))
    for back in (pickle.loads(pickle.dumps(splits, protocol=protocol)), copy.deepcopy(splits)):
        assert type(back) is PerSplit and back == splits
        assert first_difference(splits, back) is None
        assert back.at("test") == Examples(2)


def test_a_lambda_factory_is_refused_by_pickle_not_lost():
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(PerSplit(lambda: []))


# -- merge_values and Additive ------------------------------------------------------------------
def test_values_merge_by_what_they_hold():
    assert merge_values(2, 3) == 5 and merge_values(0.5, 1) == 1.5
    assert merge_values(np.int64(2), 3) == 5
    assert merge_values([1], [2, 3]) == [1, 2, 3]
    assert merge_values("train", "train") == "train" and merge_values(None, None) is None
    merged = merge_values({"b": 1, "a": [1]}, {"c": 2, "a": [2], "b": 1})
    assert merged == {"b": 2, "a": [1, 2], "c": 2} and list(merged) == ["b", "a", "c"]


@pytest.mark.parametrize(
    ("a", "b"), [("train", "test"), (True, False), (1, True), (True, 1), (None, "x"), (b"a", "a")]
)
def test_labels_must_agree_and_bools_are_not_counts(a, b):
    # a bool is a flag, not a count: 1 + True would silently become 2
    with pytest.raises(ValueError, match="cannot merge states labeled"):
        merge_values(a, b)
    assert merge_values(True, True) is True and merge_values(b"a", b"a") == b"a"


def test_values_without_an_obvious_merge_are_refused():
    with pytest.raises(TypeError, match="give the state a merge"):
        merge_values(np.zeros(2), np.zeros(2))  # add or concatenate? the state must say
    with pytest.raises(TypeError, match="give the state a merge"):
        merge_values((1, 2), (3, 4))


@dataclass
class _Counts(Additive):
    examples: Examples[int]
    kind: str = "train"
    rows: int = 0
    flagged: list[int] = field(default_factory=list)
    by_class: dict[str, int] = field(default_factory=dict)


def test_additive_states_merge_every_field_once():
    a = _Counts(_fold(Examples(2), [1]), rows=3, flagged=[1], by_class={"x": 1})
    b = _Counts(_fold(Examples(2), [4, 5]), rows=4, flagged=[4, 5], by_class={"y": 2, "x": 1})
    assert a.merge(b) == _Counts(
        _fold(Examples(2), [1, 4]), rows=7, flagged=[1, 4, 5], by_class={"x": 2, "y": 2}
    )
    assert a.flagged == [1] and a.rows == 3  # neither side changed


def test_additive_states_refuse_other_types_and_labels():
    with pytest.raises(ValueError, match="cannot merge _Counts with"):
        _Counts(Examples(2)).merge(Examples(2))
    with pytest.raises(ValueError, match="cannot merge states labeled"):
        _Counts(Examples(2), kind="train").merge(_Counts(Examples(2), kind="test"))

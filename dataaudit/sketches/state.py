"""Mergeable rule state: a map of split states, bounded example lists, states merged by field.

A rule's state is a semigroup, as deequ's analyzer states and whylogs' metrics are: ``start``
is the empty state, ``update`` folds a batch in, ``merge`` combines two shards. The types here
carry their own ``merge``, so a rule merges its state in one line per part instead of a loop
over splits and fields:

- :class:`PerSplit`: split name -> that split's state, merged split by split.
- :class:`Examples`: at most ``limit`` items; the first ones added, or the best by a key.
- :class:`Additive`: a dataclass whose fields merge by what they hold (:func:`merge_values`).

Order is part of the contract: shards merge in row order (``a`` holds the rows before ``b``'s),
so keeping ``a``'s items first makes a merge of shards equal one pass over the rows.
Merging consumes both sides: the result may share their parts, so neither is updated after.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from numbers import Number
from typing import Any, Generic, TypeVar

__all__ = ["Additive", "Examples", "PerSplit", "merge_values"]

T = TypeVar("T")
S = TypeVar("S", bound="Additive")
_LABELS = (str, bytes, bool, type(None))  # not counts: a bool summed would become an int


def merge_values(a: Any, b: Any) -> Any:
    """Two shards' values of one field, combined by what they hold.

    Anything with a ``merge`` (a sketch, a state) merges; numbers are counts and add; lists
    are rows and concatenate, ``a``'s first; dicts merge key by key (keys in the order they
    first appear); a str, bytes, bool or None labels the state (a split's kind) and must be the
    same on both sides. Anything else has no obvious merge: give it one.
    """
    if hasattr(a, "merge"):
        return a.merge(b)
    if isinstance(a, _LABELS) or isinstance(b, _LABELS):
        if type(a) is not type(b) or a != b:
            raise ValueError(f"cannot merge states labeled {a!r} and {b!r}")
        return a
    if isinstance(a, (Number, list)):
        return a + b
    if isinstance(a, dict):
        return _merge_keys(a, b, merge_values, {})
    raise TypeError(f"no merge for {type(a).__name__} values: give the state a merge()")


def _merge_keys(a: Mapping, b: Mapping, merge_one: Callable[[Any, Any], Any], out: dict) -> Any:
    """``out`` filled with a's keys then b's new ones; a key on one side keeps its value."""
    for key, value in a.items():
        out[key] = merge_one(value, b[key]) if key in b else value
    for key, value in b.items():
        if key not in a:
            out[key] = value
    return out


class PerSplit(dict[str, T], Generic[T]):
    """Split name -> the rule's state of that split, in the order the splits first appear.

    ``new`` makes a split's empty state the first time :meth:`at` sees the split; it must
    pickle (a class, a function or a ``functools.partial`` of one, never a lambda), since
    states travel to worker processes. Equal to any mapping with the same items.
    """

    def __init__(self, new: Callable[[], T], items: Iterable[tuple[str, T]] = ()):
        super().__init__(items)
        self.new = new

    def at(self, split: str) -> T:
        """The state of ``split``, started empty on first use (what ``update`` writes to)."""
        state = self.get(split)
        if state is None:
            state = self[split] = self.new()
        return state

    def merge(
        self, other: PerSplit[T], merge_one: Callable[[T, T], T] = merge_values
    ) -> PerSplit[T]:
        """Split by split (``merge_one``, by default the states' own merge); a split only one
        side saw is taken as it is. Splits keep the order they first appear in: a's, then the
        ones only b saw."""
        return _merge_keys(self, other, merge_one, PerSplit(self.new))

    def __repr__(self) -> str:
        return f"PerSplit({dict.__repr__(self)})"


@dataclasses.dataclass
class Examples(Generic[T]):
    """At most ``limit`` items (e.g. ``(row, text)`` examples of a finding).

    Without ``key`` it keeps the first items added: since shards merge in row order, the
    first rows of the split, however it was cut. With ``key`` (picklable, e.g. a module
    function) it keeps the ``limit`` smallest by ``key`` (ties: the earlier item), such as the
    worst rows. A merge is the concatenation of both sides, cut (and ranked) the same way.
    """

    limit: int
    items: list[T] = dataclasses.field(default_factory=list)
    key: Callable[[T], Any] | None = None

    @property
    def room(self) -> int:
        """How many more items :meth:`add` takes; a ranked list takes any (they compete)."""
        if self.key is not None:
            return self.limit
        return max(0, self.limit - len(self.items))

    def add(self, item: T) -> bool:
        """Keep ``item`` if there is room (ranked: if it ranks); whether it was kept."""
        if self.key is None:
            if len(self.items) >= self.limit:
                return False
            self.items.append(item)
            return True
        self.extend((item,))
        return any(kept is item for kept in self.items)

    def extend(self, items: Iterable[T]) -> None:
        """Add ``items`` in order, reading only as many as there is room for."""
        if self.key is None:
            self.items.extend(itertools.islice(items, self.room))
        else:
            self.items = sorted([*self.items, *items], key=self.key)[: self.limit]

    def merge(self, other: Examples[T]) -> Examples[T]:
        """Both sides' items, a's first, cut to ``limit`` (a new list; neither side changes)."""
        if other.limit != self.limit or other.key is not self.key:
            raise ValueError(
                f"cannot merge examples kept up to {self.limit} by {_name(self.key)} with "
                f"examples kept up to {other.limit} by {_name(other.key)}"
            )
        out = Examples(self.limit, list(self.items), self.key)
        out.extend(other.items)
        return out

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def _name(key: Callable | None) -> str:
    return "order added" if key is None else getattr(key, "__qualname__", repr(key))


class Additive:
    """A dataclass state whose fields all merge by :func:`merge_values`: counts add, row lists
    concatenate, dicts merge key by key and sketches (histograms, :class:`Examples`) merge.

    Subclass it with ``@dataclass`` and list each field once; its merge follows. A field that
    merges some other way (a maximum, a bound) does not belong here: write that state's merge.
    """

    def merge(self: S, other: S) -> S:
        if type(other) is not type(self):
            raise ValueError(f"cannot merge {type(self).__name__} with {type(other).__name__}")
        return type(self)(
            **{
                f.name: merge_values(getattr(self, f.name), getattr(other, f.name))
                for f in dataclasses.fields(self)  # type: ignore[arg-type]
            }
        )

"""A seeded bottom-k row sample: the k rows with the smallest pseudo-random key.

A row's key is a splitmix64 output of its position (:func:`row_keys`), so the sample is uniform,
the same however the rows were batched, sharded or merged, and of fixed size: memory does not
grow with rows. Merges are exact (the union's k smallest).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .hashing import splitmix64

__all__ = ["BottomK", "row_keys"]


def row_keys(rows: np.ndarray, state: int) -> np.ndarray:
    """The key of each row position: output ``row`` of the splitmix64 stream seeded ``state``."""
    return splitmix64(state, np.asarray(rows, np.int64))


class BottomK:
    """The ``k`` offered rows with the smallest ``(key, split, row)``, each with its item.

    One sample may span several splits; its entries are kept in that order, so a merge does
    not depend on which side came first.
    """

    __slots__ = ("k", "keys", "splits", "rows", "items")

    def __init__(self, k: int):
        self.k = int(k)
        self.keys = np.zeros(0, np.uint64)
        self.splits = np.zeros(0, object)
        self.rows = np.zeros(0, np.int64)
        self.items: list[Any] = []

    def __len__(self) -> int:
        return len(self.items)

    def offer(
        self,
        split: str,
        rows: np.ndarray,
        keys: np.ndarray,
        items: Callable[[np.ndarray], list[Any]],
    ) -> BottomK:
        """Offer rows of ``split`` with their keys; ``items(idx)`` makes the items of the
        positions ``idx`` (into ``rows``) that may enter, so rows that cannot cost nothing."""
        rows = np.asarray(rows, np.int64)
        if self.k <= 0 or not len(rows):
            return self
        cand = np.arange(len(rows))
        if len(self.items) >= self.k:  # only rows that do not lose to the current k-th
            cand = cand[keys <= self.keys[-1]]
        if cand.size > self.k:
            cand = cand[np.lexsort((rows[cand], keys[cand]))[: self.k]]
        if not cand.size:
            return self
        splits = np.full(cand.size, split, object)
        return self._absorb(keys[cand], splits, rows[cand], items(cand))

    def _absorb(self, keys: np.ndarray, splits: np.ndarray, rows: np.ndarray, items: list[Any]):
        all_keys = np.concatenate([self.keys, keys])
        all_splits = np.concatenate([self.splits, splits])
        all_rows = np.concatenate([self.rows, rows])
        all_items = self.items + list(items)
        order = np.lexsort((all_rows, all_splits, all_keys))[: self.k]
        self.keys, self.splits, self.rows = all_keys[order], all_splits[order], all_rows[order]
        self.items = [all_items[i] for i in order]
        return self

    def merge(self, other: BottomK) -> BottomK:
        """A new sample of both (neither side changes)."""
        if other.k != self.k:
            raise ValueError(f"cannot merge bottom-k samples of k={self.k} and k={other.k}")
        out = BottomK(self.k)
        out.keys, out.splits, out.rows, out.items = self.keys, self.splits, self.rows, self.items
        return out._absorb(other.keys, other.splits, other.rows, other.items)

    def entries(self) -> Iterator[tuple[str, int, Any]]:
        """(split, row, item) in key order."""
        return zip(self.splits.tolist(), self.rows.tolist(), self.items)

    def items_by_row(self) -> list[Any]:
        """The items in (split, row) order: deterministic, and the input's own order."""
        order = np.lexsort((self.rows, self.splits))
        return [self.items[i] for i in order]

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
    not depend on which side came first. Offers are buffered and the sample is cut back to ``k``
    only when the buffer holds ``k`` rows (or on reading), so a large ``k`` (a label probe that
    keeps every row it will score) costs amortized O(log k) per row, not O(k) per batch.
    """

    __slots__ = ("k", "_keys", "_splits", "_rows", "_items", "_pending", "_pending_n")

    def __init__(self, k: int):
        self.k = int(k)
        self._keys = np.zeros(0, np.uint64)
        self._splits = np.zeros(0, object)
        self._rows = np.zeros(0, np.int64)
        self._items: list[Any] = []
        # offered rows not yet cut back to k: (keys, splits, rows, items) chunks
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray, list[Any]]] = []
        self._pending_n = 0

    # the sample, cut back to k (reading compacts the buffer)
    @property
    def keys(self) -> np.ndarray:
        self._compact()
        return self._keys

    @property
    def splits(self) -> np.ndarray:
        self._compact()
        return self._splits

    @property
    def rows(self) -> np.ndarray:
        self._compact()
        return self._rows

    @property
    def items(self) -> list[Any]:
        self._compact()
        return self._items

    def __len__(self) -> int:
        self._compact()
        return len(self._items)

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
        if len(self._items) >= self.k:  # only rows that do not lose to the current k-th
            cand = cand[keys <= self._keys[-1]]
        if cand.size > self.k:
            cand = cand[np.lexsort((rows[cand], keys[cand]))[: self.k]]
        if not cand.size:
            return self
        splits = np.full(cand.size, split, object)
        self._pending.append((keys[cand], splits, rows[cand], list(items(cand))))
        self._pending_n += int(cand.size)
        if self._pending_n >= max(self.k, 1024):
            self._compact()
        return self

    def _compact(self) -> None:
        if not self._pending:
            return
        parts = [(self._keys, self._splits, self._rows, self._items), *self._pending]
        self._pending, self._pending_n = [], 0
        all_keys = np.concatenate([p[0] for p in parts])
        all_splits = np.concatenate([p[1] for p in parts])
        all_rows = np.concatenate([p[2] for p in parts])
        all_items = [item for p in parts for item in p[3]]
        order = np.lexsort((all_rows, all_splits, all_keys))[: self.k]
        self._keys, self._splits, self._rows = all_keys[order], all_splits[order], all_rows[order]
        self._items = [all_items[i] for i in order.tolist()]

    def merge(self, other: BottomK) -> BottomK:
        """A new sample of both (neither side changes)."""
        if other.k != self.k:
            raise ValueError(f"cannot merge bottom-k samples of k={self.k} and k={other.k}")
        out = BottomK(self.k)
        out._keys, out._splits, out._rows, out._items = (
            self.keys,
            self.splits,
            self.rows,
            self.items,
        )
        out._pending = [(other.keys, other.splits, other.rows, other.items)]
        out._pending_n = len(other.items)
        out._compact()
        return out

    def entries(self) -> Iterator[tuple[str, int, Any]]:
        """(split, row, item) in key order."""
        self._compact()
        return zip(self._splits.tolist(), self._rows.tolist(), self._items)

    def items_by_row(self) -> list[Any]:
        """The items in (split, row) order: deterministic, and the input's own order."""
        self._compact()
        order = np.lexsort((self._rows, self._splits))
        return [self._items[i] for i in order]

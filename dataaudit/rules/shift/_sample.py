"""A bottom-k row sample: the k rows with the smallest seeded hash of their position.

Mergeable exactly (the union's k smallest), independent of sharding and batch size, and of
fixed size: memory does not grow with rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _mix(rows: np.ndarray, seed: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = rows.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(
            (seed * 0xD1B54A32D192ED03 + 0x632BE59BD9B4E019) & (2**64 - 1)
        )
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


class BottomK:
    __slots__ = ("k", "seed", "keys", "rows", "items")

    def __init__(self, k: int, seed: int):
        self.k = int(k)
        self.seed = int(seed)
        self.keys = np.zeros(0, np.uint64)
        self.rows = np.zeros(0, np.int64)
        self.items: list[str] = []

    def add(self, rows: np.ndarray, texts: Any, keep_chars: int) -> BottomK:
        """Offer rows (positions) with their pyarrow text; null texts are not sampled."""
        valid = np.asarray(texts.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        keys = _mix(np.asarray(rows), self.seed)
        cand = np.flatnonzero(valid)
        if self.keys.size >= self.k:
            cand = cand[keys[cand] < self.keys[-1]]
        if not cand.size:
            return self
        cand = cand[np.argsort(keys[cand], kind="stable")][: self.k]
        new_items = [texts[int(i)].as_py()[:keep_chars] for i in cand]
        return self._absorb(keys[cand], np.asarray(rows)[cand], new_items)

    def _absorb(self, keys: np.ndarray, rows: np.ndarray, items: list[str]) -> BottomK:
        all_keys = np.concatenate([self.keys, keys])
        all_rows = np.concatenate([self.rows, rows])
        all_items = self.items + items
        order = np.lexsort((all_rows, all_keys))[: self.k]
        self.keys, self.rows = all_keys[order], all_rows[order]
        self.items = [all_items[i] for i in order]
        return self

    def merge(self, other: BottomK) -> BottomK:
        out = BottomK(self.k, self.seed)
        out.keys, out.rows, out.items = self.keys, self.rows, list(self.items)
        return out._absorb(other.keys, other.rows, other.items)

    def texts(self) -> list[str]:
        """Sampled texts in row order (deterministic)."""
        order = np.argsort(self.rows, kind="stable")
        return [self.items[i] for i in order]

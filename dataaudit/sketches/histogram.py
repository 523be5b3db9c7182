"""Mergeable fixed-bin histograms and dense count vectors: memory fixed, merges exact.

:class:`Histogram` counts non-negative integers (lengths) in fixed bins: exact bins for 0..127,
then 32 log-spaced bins per octave up to 2**40 (bin width at most ~3% of the value), so every
histogram of every split and every dataset version shares the same edges and two histograms
merge by adding counts. :class:`CountVector` counts ids in ``[0, size)`` (token unigrams).
Both keep exact totals and serialize sparsely (``to_dict`` / ``from_dict``) so a saved report can
carry them as a reference for a later audit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["LENGTH_EDGES", "CountVector", "DistinctCounter", "Histogram", "length_edges"]

_EXACT = 128
_PER_OCTAVE = 32
_MAX_OCTAVE = 40


def length_edges() -> np.ndarray:
    """Lower edges of the length bins, plus a final upper edge (int64, strictly increasing)."""
    edges = list(range(_EXACT))
    for k in range(7, _MAX_OCTAVE):
        base = 1 << k
        step = base // _PER_OCTAVE
        edges.extend(base + s * step for s in range(_PER_OCTAVE))
    edges.append(1 << _MAX_OCTAVE)
    return np.asarray(edges, dtype=np.int64)


LENGTH_EDGES = length_edges()
EDGES_NAME = "length-v1"


class Histogram:
    """Counts of non-negative integers in the fixed :data:`LENGTH_EDGES` bins.

    Also tracks the exact count, sum, min and max. Values >= 2**40 go in the last bin.
    """

    __slots__ = ("counts", "n", "total", "min", "max")
    edges = LENGTH_EDGES

    def __init__(self) -> None:
        self.counts = np.zeros(LENGTH_EDGES.size - 1, dtype=np.int64)
        self.n = 0
        self.total = 0
        self.min: int | None = None
        self.max: int | None = None

    @staticmethod
    def bin_index(values: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(LENGTH_EDGES, values, side="right") - 1
        return np.clip(idx, 0, LENGTH_EDGES.size - 2)

    def add(self, values: np.ndarray) -> Histogram:
        values = np.asarray(values, dtype=np.int64)
        if values.size == 0:
            return self
        if values.min() < 0:
            raise ValueError("Histogram counts non-negative values only")
        self.counts += np.bincount(self.bin_index(values), minlength=self.counts.size)
        self.n += int(values.size)
        self.total += int(values.sum())
        lo, hi = int(values.min()), int(values.max())
        self.min = lo if self.min is None else min(self.min, lo)
        self.max = hi if self.max is None else max(self.max, hi)
        return self

    def merge(self, other: Histogram) -> Histogram:
        out = Histogram()
        out.counts = self.counts + other.counts
        out.n = self.n + other.n
        out.total = self.total + other.total
        mins = [v for v in (self.min, other.min) if v is not None]
        maxs = [v for v in (self.max, other.max) if v is not None]
        out.min = min(mins) if mins else None
        out.max = max(maxs) if maxs else None
        return out

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else float("nan")

    def quantile(self, q: float) -> float:
        """Approximate quantile: linear interpolation inside the bin holding it."""
        if self.n == 0:
            return float("nan")
        target = q * self.n
        cum = np.cumsum(self.counts)
        i = int(np.searchsorted(cum, target, side="left"))
        i = min(i, self.counts.size - 1)
        before = cum[i - 1] if i > 0 else 0
        inside = self.counts[i]
        lo, hi = float(LENGTH_EDGES[i]), float(LENGTH_EDGES[i + 1])
        exact = i < _EXACT or inside == 0
        value = lo if exact else lo + (hi - lo) * (target - before) / inside
        if self.min is not None:
            value = min(max(value, self.min), self.max)
        return float(value)

    def count_at_least(self, edge_index: int) -> int:
        return int(self.counts[edge_index:].sum())

    def count_below(self, edge_index: int) -> int:
        return int(self.counts[:edge_index].sum())

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Histogram)
            and self.n == other.n
            and self.total == other.total
            and self.min == other.min
            and self.max == other.max
            and np.array_equal(self.counts, other.counts)
        )

    def __repr__(self) -> str:
        return f"Histogram(n={self.n}, mean={self.mean:.4g}, min={self.min}, max={self.max})"

    def to_dict(self) -> dict[str, Any]:
        nz = np.flatnonzero(self.counts)
        return {
            "edges": EDGES_NAME,
            "n": self.n,
            "total": self.total,
            "min": self.min,
            "max": self.max,
            "bins": [[int(i), int(self.counts[i])] for i in nz],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Histogram:
        if data.get("edges") != EDGES_NAME:
            raise ValueError(f"histogram edges {data.get('edges')!r} are not {EDGES_NAME!r}")
        out = cls()
        for i, c in data["bins"]:
            out.counts[int(i)] = int(c)
        out.n = int(data["n"])
        out.total = int(data["total"])
        out.min = data.get("min")
        out.max = data.get("max")
        return out


class CountVector:
    """Counts of integer ids in ``[0, size)``: a dense int64 vector, exact and mergeable."""

    __slots__ = ("counts",)

    def __init__(self, size: int):
        self.counts = np.zeros(int(size), dtype=np.int64)

    @property
    def size(self) -> int:
        return int(self.counts.size)

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def add(self, ids: np.ndarray) -> CountVector:
        ids = np.asarray(ids)
        if ids.size == 0:
            return self
        binc = np.bincount(ids, minlength=self.counts.size)
        if binc.size > self.counts.size:  # ids beyond the declared size (added tokens): grow
            grown = np.zeros(binc.size, dtype=np.int64)
            grown[: self.counts.size] = self.counts
            self.counts = grown
        self.counts[: binc.size] += binc
        return self

    def merge(self, other: CountVector) -> CountVector:
        out = CountVector(max(self.size, other.size))
        out.counts[: self.size] += self.counts
        out.counts[: other.size] += other.counts
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CountVector):
            return False
        n = max(self.size, other.size)
        a = np.zeros(n, np.int64)
        b = np.zeros(n, np.int64)
        a[: self.size] = self.counts
        b[: other.size] = other.counts
        return bool(np.array_equal(a, b))

    def __repr__(self) -> str:
        return f"CountVector(size={self.size}, total={self.total})"

    def to_dict(self) -> dict[str, Any]:
        nz = np.flatnonzero(self.counts)
        return {"size": self.size, "ids": nz.tolist(), "counts": self.counts[nz].tolist()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CountVector:
        out = cls(int(data["size"]))
        ids = np.asarray(data["ids"], dtype=np.int64)
        if ids.size:
            out.counts[ids] = np.asarray(data["counts"], dtype=np.int64)
        return out


class DistinctCounter:
    """Distinct count of uint64 hashes: exact up to ``k`` distinct values, a KMV estimate above.

    Keeps the ``k`` smallest distinct hashes (a bottom-k / KMV sketch): memory is fixed, merges
    are exact, and with ``k = 16384`` the estimate's relative error is about 1%.
    """

    __slots__ = ("k", "values")

    def __init__(self, k: int = 16384):
        self.k = int(k)
        self.values = np.zeros(0, dtype=np.uint64)  # sorted, distinct

    def add(self, hashes: np.ndarray) -> DistinctCounter:
        hashes = np.asarray(hashes, dtype=np.uint64)
        if hashes.size:
            self.values = np.unique(np.concatenate([self.values, hashes]))[: self.k]
        return self

    def merge(self, other: DistinctCounter) -> DistinctCounter:
        out = DistinctCounter(self.k)
        out.values = np.unique(np.concatenate([self.values, other.values]))[: self.k]
        return out

    @property
    def exact(self) -> bool:
        return self.values.size < self.k

    def estimate(self) -> float:
        if self.exact:
            return float(self.values.size)
        kth = float(self.values[-1]) / 2.0**64
        return (self.k - 1) / kth if kth > 0 else float(self.values.size)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DistinctCounter)
            and self.k == other.k
            and np.array_equal(self.values, other.values)
        )

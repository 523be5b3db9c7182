"""A set of 64-bit n-gram hashes with bounded memory: exact up to a budget, then a Bloom filter.

The representation depends only on the set's content (exact while it has at most ``budget``
distinct hashes, a Bloom filter of ``bloom_bits`` bits with 4 probes above), so adding hashes in
any order and merging shards in any grouping gives the same final index.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .minhash import mix64

U64 = np.uint64
PROBES = 4


def _sorted_unique(x: np.ndarray) -> np.ndarray:
    x = np.sort(x)
    if len(x) > 1:
        x = x[np.concatenate([[True], x[1:] != x[:-1]])]
    return x


@dataclass
class NgramIndex:
    budget: int = 50_000_000
    bloom_bits: int = 1 << 32
    exact: np.ndarray | None = field(default_factory=lambda: np.empty(0, U64))
    pending: list[np.ndarray] = field(default_factory=list)
    pending_n: int = 0
    bloom: np.ndarray | None = None  # uint64 words

    def add(self, hashes: np.ndarray) -> None:
        if self.bloom is not None:
            self._bloom_add(hashes)
            return
        self.pending.append(np.asarray(hashes, U64))
        self.pending_n += len(hashes)
        if self.pending_n > max(len(self.exact), 1 << 20):
            self._compact()

    def _compact(self) -> None:
        if self.bloom is not None or not self.pending:
            return
        self.exact = _sorted_unique(np.concatenate([self.exact, *self.pending]))
        self.pending, self.pending_n = [], 0
        if len(self.exact) > self.budget:
            self.bloom = np.zeros(self.bloom_bits // 64, U64)
            self._bloom_add(self.exact)
            self.exact = None

    def _positions(self, hashes: np.ndarray) -> list[np.ndarray]:
        h1 = mix64(hashes)
        h2 = mix64(h1 ^ U64(0x5851F42D4C957F2D)) | U64(1)
        m = U64(self.bloom_bits)
        return [(h1 + U64(i) * h2) % m for i in range(PROBES)]

    def _bloom_add(self, hashes: np.ndarray) -> None:
        for pos in self._positions(np.asarray(hashes, U64)):
            np.bitwise_or.at(
                self.bloom, (pos >> U64(6)).astype(np.int64), U64(1) << (pos & U64(63))
            )

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        self._compact()
        hashes = np.asarray(hashes, U64)
        if self.bloom is None:
            idx = np.searchsorted(self.exact, hashes)
            idx = np.minimum(idx, max(len(self.exact) - 1, 0))
            return (self.exact[idx] == hashes) if len(self.exact) else np.zeros(len(hashes), bool)
        hit = np.ones(len(hashes), bool)
        for pos in self._positions(hashes):
            word = self.bloom[(pos >> U64(6)).astype(np.int64)]
            hit &= ((word >> (pos & U64(63))) & U64(1)).astype(bool)
        return hit

    def merge(self, other: NgramIndex) -> NgramIndex:
        out = NgramIndex(self.budget, self.bloom_bits)
        if self.bloom is None and other.bloom is None:
            out.pending = [self.exact, *self.pending, other.exact, *other.pending]
            out.pending_n = 1 << 62
            out._compact()
            return out
        out.bloom = np.zeros(self.bloom_bits // 64, U64)
        for side in (self, other):
            if side.bloom is not None:
                out.bloom |= side.bloom
            else:
                out._bloom_add(np.concatenate([side.exact, *side.pending]))
        return out

    @property
    def size(self) -> int | None:
        """Distinct hashes (None once it is a Bloom filter)."""
        self._compact()
        return None if self.exact is None else len(self.exact)

    def false_positive_rate(self) -> float:
        if self.bloom is None:
            return 0.0
        filled = float(np.unpackbits(self.bloom.view(np.uint8)).mean())
        return filled**PROBES

"""splitmix64 (Steele, Lea & Flood 2014): the one 64-bit mixer of dataaudit.

Content hashes, shingle and row keys, LSH band keys, seeded row samples and halves all mix
with it, so its constants live here only; the compiled kernels (:mod:`.kernels`) build their
inlined copy from these same constants.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GOLDEN", "M1", "M2", "mix64", "splitmix64"]

U64 = np.uint64
GOLDEN = U64(0x9E3779B97F4A7C15)  #: the stream increment (2**64 / golden ratio, odd)
M1 = U64(0xBF58476D1CE4E5B9)  #: the finalizer's first multiplier
M2 = U64(0x94D049BB133111EB)  #: the finalizer's second multiplier
_MASK = (1 << 64) - 1
_BLOCK = 1 << 15  # elements per block of the chained uint64 ops: the block stays in L2 cache


def mix64(x: np.ndarray | int) -> np.ndarray:
    """The splitmix64 finalizer (a bijection on uint64), vectorized; returns a new array.

    Works block by block, in place on the copy: ~4x faster than whole-array passes on large
    arrays, since the five chained ops run on cache-resident blocks.
    """
    x = np.array(x, dtype=U64, ndmin=1)
    tmp = np.empty(min(len(x), _BLOCK), U64)
    for lo in range(0, len(x), _BLOCK):
        b = x[lo : lo + _BLOCK]
        t = tmp[: len(b)]
        np.right_shift(b, U64(30), out=t)
        b ^= t
        b *= M1
        np.right_shift(b, U64(27), out=t)
        b ^= t
        b *= M2
        np.right_shift(b, U64(31), out=t)
        b ^= t
    return x


def splitmix64(state: np.ndarray | int, index: np.ndarray | int) -> np.ndarray:
    """Output number ``index`` of the splitmix64 stream that starts at ``state``:
    ``mix64(state + index * GOLDEN)`` (uint64, wrapping; either argument may be an array)."""
    if not isinstance(state, np.ndarray):
        state = U64(int(state) & _MASK)
    if not isinstance(index, np.ndarray):
        index = U64(int(index) & _MASK)
    with np.errstate(over="ignore"):
        return mix64(state.astype(U64) + index.astype(U64) * GOLDEN)

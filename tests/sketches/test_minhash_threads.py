"""Scratch that kernels write on two threads at once sits on cache lines of its own."""

from __future__ import annotations

import numpy as np
import pytest

from dataaudit.sketches.minhash import own_lines


@pytest.mark.parametrize(
    ("n", "dtype"), [(5, np.uint64), (128, np.uint32), (256, np.int64), (0, np.uint32)]
)
def test_scratch_has_a_cache_line_of_its_own_memory_on_each_side(n, dtype):
    arrays = [own_lines(n, dtype) for _ in range(8)]  # allocated side by side, as threads do
    for a in arrays:
        assert a.shape == (n,) and a.dtype == dtype and not a.any()
        if not n:
            continue
        base = a.base
        start, end = a.ctypes.data, a.ctypes.data + a.nbytes
        assert start - base.ctypes.data >= 64  # no other allocation on the first line
        assert base.ctypes.data + base.nbytes - end >= 64  # nor on the last

"""dataaudit._arrays: numpy helpers."""

from __future__ import annotations

import numpy as np
import pytest

from dataaudit._arrays import sorted_unique


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64, np.uint64, np.float64])
def test_sorted_unique_is_np_unique(dtype):
    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 5, 1000):
        values = rng.integers(0, 50, n).astype(dtype)
        kept = values.copy()
        assert np.array_equal(sorted_unique(values), np.unique(values))
        assert np.array_equal(values, kept)  # a copy is sorted, not the caller's array
        got = sorted_unique(values, in_place=True)
        assert np.array_equal(got, np.unique(kept)) and got.dtype == dtype
    grid = np.array([[3, 1], [1, 2]])
    assert sorted_unique(grid).tolist() == [1, 2, 3]  # flattened, as np.unique does

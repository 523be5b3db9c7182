"""The mergeable count sketches the drift rules keep: histograms, count vectors, distinct counts."""

from __future__ import annotations

import math

import numpy as np

from dataaudit.sketches.histogram import CountVector, DistinctCounter, Histogram


def test_histogram_merge_is_exact_and_roundtrips():
    rng = np.random.default_rng(1)
    values = rng.integers(0, 10**7, 3000)
    whole = Histogram().add(values)
    parts = Histogram().add(values[:1000]).merge(Histogram().add(values[1000:]))
    assert whole == parts
    assert Histogram.from_dict(whole.to_dict()) == whole
    assert whole.n == 3000 and whole.total == int(values.sum()) and whole.max == values.max()
    med = whole.quantile(0.5)
    assert abs(med - np.median(values)) / np.median(values) < 0.04
    small = Histogram().add(np.arange(101))
    assert small.quantile(0.5) == 50


def test_count_vector_and_distinct_counter():
    cv = CountVector(4).add(np.array([0, 1, 1, 6]))  # grows for ids beyond its size
    assert cv.counts.tolist() == [1, 2, 0, 0, 0, 0, 1]
    assert CountVector.from_dict(cv.to_dict()) == cv
    d = DistinctCounter(k=64).add(np.array([1, 2, 2, 3], dtype=np.uint64))
    assert d.exact and d.estimate() == 3
    rng = np.random.default_rng(2)
    big = DistinctCounter(k=4096).add(
        rng.integers(1, 2**64 - 1, 50_000, dtype=np.uint64, endpoint=True)
    )
    assert not big.exact and math.isclose(big.estimate(), 50_000, rel_tol=0.06)

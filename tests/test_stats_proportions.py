"""The proportion statistics the EVAL rules grade with, against independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest, fisher_exact

from dataaudit.stats import (
    benjamini_hochberg,
    binomial_excess,
    cohens_h,
    excess_pvalue,
    wilson_interval,
)


@pytest.mark.parametrize(("k", "n", "events", "total"), [(9, 10, 20, 100), (3, 30, 40, 120),
                                                        (0, 5, 5, 50), (12, 12, 12, 12)])  # fmt: skip
def test_excess_pvalue_is_the_one_sided_fisher_test(k, n, events, total):
    table = [[k, n - k], [events - k, total - n - (events - k)]]
    expected = fisher_exact(table, alternative="greater").pvalue
    assert excess_pvalue(k, n, events, total) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_binomial_excess_is_the_one_sided_binomial_test():
    assert binomial_excess(14, 26, 0.25) == pytest.approx(
        binomtest(14, 26, 0.25, alternative="greater").pvalue
    )
    assert binomial_excess(0, 10, 0.5) == 1.0


def test_wilson_interval():
    lo, hi = wilson_interval(0, 26)
    assert lo == 0.0 and hi == pytest.approx(0.1287, abs=1e-4)  # never [0, 0] at 0 events
    lo, hi = wilson_interval(81, 100)
    assert lo < 0.81 < hi and hi - lo < 0.16
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


def test_benjamini_hochberg_q_values():
    p = [0.01, 0.04, 0.03, 0.5]
    # sorted 0.01, 0.03, 0.04, 0.5 -> 0.04, 0.0533, 0.0533, 0.5 (monotone from the top)
    assert benjamini_hochberg(p) == pytest.approx([0.04, 0.05333, 0.05333, 0.5], abs=1e-4)
    assert benjamini_hochberg([]).size == 0
    assert (benjamini_hochberg(np.array([1.0, 1.0])) == 1.0).all()


def test_cohens_h():
    assert cohens_h(0.9, 0.4) == pytest.approx(1.1287, abs=1e-4)  # 90% overall, 40% on a class
    assert cohens_h(0.5, 0.5) == 0.0 and cohens_h(0.4, 0.9) < 0

"""The drift statistics (dataaudit/stats.py): bounds, known values, scipy's to the last bit, and
no verdict on an empty side."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dataaudit.sketches.histogram import Histogram
from dataaudit.stats import (
    auc_confidence_interval,
    auc_null_sd,
    chi2_contingency,
    chi2_sf,
    js_divergence,
    ks_binned,
    psi,
    quantile_groups,
)


def test_js_divergence_bounds():
    a = np.array([5, 5, 0, 0])
    assert js_divergence(a, a * 3) == pytest.approx(0.0)
    assert js_divergence(a, np.array([0, 0, 5, 5])) == pytest.approx(1.0)
    assert 0 < js_divergence(a, np.array([5, 4, 1, 0])) < 0.1


def test_psi_and_ks_on_shifted_histograms():
    rng = np.random.default_rng(0)
    h1 = Histogram().add(rng.integers(10, 100, 5000))
    h2 = Histogram().add(rng.integers(10, 100, 5000))
    h3 = Histogram().add(rng.integers(50, 140, 5000))
    d_same, p_same = ks_binned(h1.counts, h2.counts)
    d_shift, p_shift = ks_binned(h1.counts, h3.counts)
    assert d_same < 0.05 and p_same > 0.001
    assert d_shift > 0.4 and p_shift < 1e-10
    g = quantile_groups(h1.counts, 10)
    e = np.bincount(g, weights=h1.counts)
    assert psi(e, np.bincount(g, weights=h2.counts)) < 0.05
    assert psi(e, np.bincount(g, weights=h3.counts)) > 1


def test_chi2_sf_matches_known_values():
    assert chi2_sf(3.841458820694124, 1) == pytest.approx(0.05, rel=1e-9)
    assert chi2_sf(18.307038053275146, 10) == pytest.approx(0.05, rel=1e-9)
    stat, dof, p, v = chi2_contingency(np.array([[50, 50], [50, 50]]))
    assert stat == 0 and dof == 1 and p == 1 and v == 0
    _, _, p, v = chi2_contingency(np.array([[90, 10], [10, 90]]))
    assert p < 1e-20 and v == pytest.approx(0.8)


def test_chi2_sf_is_scipys_to_the_last_bit():
    from scipy.stats import chi2

    rng = np.random.default_rng(4)
    for x, dof in zip(rng.gamma(2.0, 20.0, 200), rng.integers(1, 60, 200)):
        assert chi2_sf(float(x), int(dof)) == chi2.sf(x, dof)
    assert chi2_sf(0.0, 3) == 1.0 and chi2_sf(5.0, 0) == 1.0


def test_an_empty_side_is_undefined_not_a_verdict():
    """Every statistic of a comparison with an empty side is nan: nothing was compared."""
    full, empty = np.array([30, 10, 5]), np.zeros(3)
    assert math.isnan(js_divergence(full, empty)) and math.isnan(js_divergence(empty, full))
    stat, dof, p, v = chi2_contingency(np.vstack([full, empty]))
    assert math.isnan(stat) and dof == 0 and math.isnan(p) and math.isnan(v)
    assert math.isnan(ks_binned(full, empty)[0]) and math.isnan(psi(full, empty))


def test_one_shared_category_is_a_perfect_match():
    stat, dof, p, v = chi2_contingency(np.array([[40, 0], [7, 0]]))
    assert (stat, dof, p, v) == (0.0, 0, 1.0, 0.0)
    assert js_divergence(np.array([40, 0]), np.array([7, 0])) == 0.0


def test_cramers_v_never_exceeds_one():
    # perfect association: V is 1, though the arithmetic gives 1.0000000000000002 here
    assert chi2_contingency(np.eye(6))[3] == 1.0


def test_auc_interval_contains_and_narrows():
    lo1, hi1 = auc_confidence_interval(0.7, 100, 100)
    lo2, hi2 = auc_confidence_interval(0.7, 10000, 10000)
    assert lo1 < lo2 < 0.7 < hi2 < hi1


def test_auc_null_sd_is_the_spread_of_auc_under_no_difference():
    """The Mann–Whitney permutation null: the AUC of class-independent scores spreads by
    sqrt((n1 + n2 + 1) / (12 n1 n2)) around 0.5 (SHIFT001's critical value is built on it)."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    n1, n2 = 300, 200
    y = np.r_[np.ones(n1), np.zeros(n2)]
    aucs = [roc_auc_score(y, rng.random(n1 + n2)) for _ in range(2000)]
    assert np.mean(aucs) == pytest.approx(0.5, abs=0.002)
    assert np.std(aucs) == pytest.approx(auc_null_sd(n1, n2), rel=0.05)
    assert auc_null_sd(2000, 2000) == pytest.approx(0.00913, abs=1e-5)
    assert math.isnan(auc_null_sd(0, 5))


def test_excess_pvalues_agree_with_the_scalar_test_element_by_element():
    import numpy as np

    from dataaudit.stats import excess_pvalue, excess_pvalues

    cases = [(3, 10, 5, 100), (0, 10, 5, 100), (5, 5, 5, 100), (2, 0, 5, 50), (7, 20, 30, 60)]
    k, n, events, total = (np.array(c) for c in zip(*cases))
    got = excess_pvalues(k, n, events, total)
    assert np.allclose(got, [excess_pvalue(*c) for c in cases])

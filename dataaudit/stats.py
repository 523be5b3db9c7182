"""Drift statistics with effect sizes, computed from mergeable sketches (counts and histograms).

Verdicts in dataaudit come from effect sizes with documented thresholds, gated by a test that the
effect is not sampling noise: a raw p-value alone flags everything at 10M rows, and an effect
size alone flags noise at 1k rows. Everything here takes counts, never rows.

- :func:`ks_binned`: two-sample Kolmogorov–Smirnov statistic D on shared bins, with its
  asymptotic p-value (conservative with ties and bins).
- :func:`wasserstein_binned`: Wasserstein-1 (earth mover's) distance on shared bins.
- :func:`psi`: population stability index (0.1 moderate, 0.25 large by the usual convention).
- :func:`js_divergence`: Jensen–Shannon divergence in bits, in [0, 1], with per-cell terms.
- :func:`chi2_contingency`: chi² test of a contingency table with Cramér's V.
- :func:`auc_confidence_interval`: Hanley–McNeil interval of a ROC AUC.
- :func:`auc_null_sd`: the standard deviation of an AUC when the two samples do not differ
  (the permutation null of the Mann–Whitney statistic).
- :func:`wilson_interval`: Wilson score interval of a proportion (a precision, a recall).
- :func:`excess_pvalue`: one-sided Fisher exact test that a subset has more events than the rest.
- :func:`binomial_excess`: one-sided binomial test of more successes than a chance rate.
- :func:`benjamini_hochberg`: q-values that control the false discovery rate over many tests.
- :func:`cohens_h`: effect size of a difference between two proportions.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "auc_confidence_interval",
    "auc_null_sd",
    "benjamini_hochberg",
    "binomial_excess",
    "chi2_contingency",
    "chi2_sf",
    "cohens_h",
    "excess_pvalue",
    "js_divergence",
    "js_terms",
    "kolmogorov_pvalue",
    "ks_binned",
    "psi",
    "quantile_groups",
    "wasserstein_binned",
    "wilson_interval",
]


def _probs(counts: np.ndarray) -> np.ndarray:
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    return counts / total if total > 0 else counts


def kolmogorov_pvalue(d: float, n1: int, n2: int) -> float:
    """Asymptotic two-sample KS p-value: P(D >= d) under the null."""
    if n1 <= 0 or n2 <= 0:
        return float("nan")
    en = math.sqrt(n1 * n2 / (n1 + n2))
    lam = (en + 0.12 + 0.11 / en) * d  # Stephens' small-sample correction
    if lam < 1e-3:
        return 1.0
    total = 0.0
    for k in range(1, 101):
        term = 2 * (-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam)
        total += term
        if abs(term) < 1e-12:
            break
    return float(min(max(total, 0.0), 1.0))


def ks_binned(c1: np.ndarray, c2: np.ndarray) -> tuple[float, float]:
    """KS statistic D = max |F1 - F2| over shared bin edges, and its asymptotic p-value."""
    n1, n2 = int(np.sum(c1)), int(np.sum(c2))
    if n1 == 0 or n2 == 0:
        return float("nan"), float("nan")
    f1 = np.cumsum(c1) / n1
    f2 = np.cumsum(c2) / n2
    d = float(np.max(np.abs(f1 - f2)))
    return d, kolmogorov_pvalue(d, n1, n2)


def wasserstein_binned(c1: np.ndarray, c2: np.ndarray, points: np.ndarray) -> float:
    """W1 distance between two binned distributions whose bins sit at ``points`` (increasing)."""
    p1, p2 = _probs(c1), _probs(c2)
    if p1.sum() == 0 or p2.sum() == 0:
        return float("nan")
    gaps = np.diff(np.asarray(points, dtype=np.float64))
    cdf_gap = np.abs(np.cumsum(p1) - np.cumsum(p2))[:-1]
    return float(np.sum(cdf_gap * gaps))


def psi(expected: np.ndarray, actual: np.ndarray, eps: float = 1e-4) -> float:
    """Population stability index of ``actual`` against ``expected`` (counts on the same bins)."""
    e, a = _probs(expected), _probs(actual)
    if e.sum() == 0 or a.sum() == 0:
        return float("nan")
    e = np.clip(e, eps, None)
    a = np.clip(a, eps, None)
    return float(np.sum((a - e) * np.log(a / e)))


def quantile_groups(counts: np.ndarray, groups: int = 10) -> np.ndarray:
    """Map fine bins to about ``groups`` coarse bins of equal mass under ``counts``.

    Returns, per fine bin, its coarse group index (non-decreasing). Used to compute PSI on
    reference deciles without keeping rows.
    """
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if total == 0:
        return np.zeros(counts.size, dtype=np.int64)
    cum_before = np.concatenate([[0.0], np.cumsum(counts)[:-1]]) / total
    g = np.floor(cum_before * groups + 1e-12).astype(np.int64)
    return np.clip(g, 0, groups - 1)


def js_terms(p_counts: np.ndarray, q_counts: np.ndarray) -> np.ndarray:
    """Per-cell Jensen–Shannon terms (bits); they sum to the divergence."""
    p, q = _probs(p_counts), _probs(q_counts)
    m = 0.5 * (p + q)
    out = np.zeros_like(m)
    with np.errstate(divide="ignore", invalid="ignore"):
        tp = np.where(p > 0, p * np.log2(p / m), 0.0)
        tq = np.where(q > 0, q * np.log2(q / m), 0.0)
    out[:] = 0.5 * (tp + tq)
    return out


def js_divergence(p_counts: np.ndarray, q_counts: np.ndarray) -> float:
    """Jensen–Shannon divergence (base 2: 0 = identical, 1 = disjoint) of two count vectors."""
    if np.sum(p_counts) == 0 or np.sum(q_counts) == 0:
        return float("nan")
    return float(max(np.sum(js_terms(p_counts, q_counts)), 0.0))


def chi2_contingency(table: np.ndarray) -> tuple[float, int, float, float]:
    """chi² statistic, degrees of freedom, p-value and Cramér's V of a contingency table whose
    rows are the samples compared.

    Empty rows and columns are left out. With fewer than two non-empty rows there is nothing to
    compare: all nan (undefined, like every statistic here on an empty side). With one non-empty
    column the samples agree exactly: statistic 0, p-value 1, V 0.
    """
    t = np.asarray(table, dtype=np.float64)
    t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0]
    if t.shape[0] < 2:
        return float("nan"), 0, float("nan"), float("nan")
    if t.shape[1] < 2:
        return 0.0, 0, 1.0, 0.0
    n = t.sum()
    expected = np.outer(t.sum(axis=1), t.sum(axis=0)) / n
    stat = float(np.sum((t - expected) ** 2 / expected))
    dof = (t.shape[0] - 1) * (t.shape[1] - 1)
    p = chi2_sf(stat, dof)
    v = min(1.0, math.sqrt(stat / (n * (min(t.shape) - 1))))  # <= 1 but for rounding
    return stat, dof, p, v


def chi2_sf(x: float, dof: int) -> float:
    """P(X >= x) for X ~ chi²(dof) (1 for x <= 0 or dof <= 0)."""
    if x <= 0 or dof <= 0:
        return 1.0
    from scipy.special import chdtrc  # what scipy.stats.chi2.sf computes, without its import

    return float(chdtrc(dof, x))


def auc_confidence_interval(
    auc: float, n_pos: int, n_neg: int, z: float = 1.96
) -> tuple[float, float]:
    """Hanley–McNeil (1982) normal interval of an AUC from ``n_pos`` and ``n_neg`` samples."""
    if n_pos <= 0 or n_neg <= 0 or not math.isfinite(auc):
        return float("nan"), float("nan")
    q1 = auc / (2 - auc)
    q2 = 2 * auc * auc / (1 + auc)
    var = (auc * (1 - auc) + (n_pos - 1) * (q1 - auc * auc) + (n_neg - 1) * (q2 - auc * auc)) / (
        n_pos * n_neg
    )
    # at AUC = 0.5 the formula's variance is that of the Mann–Whitney statistic under the null;
    # never let a degenerate AUC (0 or 1) claim zero uncertainty
    floor = (n_pos + n_neg + 1) / (12 * n_pos * n_neg)
    se = math.sqrt(max(var, floor * 0.25))
    return max(0.0, auc - z * se), min(1.0, auc + z * se)


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of the proportion ``k / n`` (nan, nan when ``n`` is 0); unlike the
    normal interval it stays inside [0, 1] and is honest at 0 and n events."""
    if n <= 0:
        return float("nan"), float("nan")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def excess_pvalue(k: int, n: int, events: int, total: int) -> float:
    """One-sided Fisher exact p-value that a subset of ``n`` of ``total`` rows holds ``k`` or more
    of the ``events`` events by chance (the hypergeometric tail): small when the subset's event
    rate is higher than the rest's. 1 for an empty subset or no events."""
    if n <= 0 or events <= 0 or k <= 0:
        return 1.0
    from scipy.stats import hypergeom  # lazily: scipy.stats is slow to import

    return float(min(1.0, max(0.0, hypergeom.sf(k - 1, total, events, n))))


def excess_pvalues(
    k: np.ndarray, n: np.ndarray, events: np.ndarray, total: np.ndarray
) -> np.ndarray:
    """:func:`excess_pvalue` of many subsets at once (numpy arrays, element by element)."""
    from scipy.stats import hypergeom

    k, n = np.asarray(k, np.int64), np.asarray(n, np.int64)
    events, total = np.asarray(events, np.int64), np.asarray(total, np.int64)
    p = np.clip(hypergeom.sf(k - 1, total, events, n), 0.0, 1.0)
    return np.where((n <= 0) | (events <= 0) | (k <= 0), 1.0, p)


def binomial_excess(k: int, n: int, p: float) -> float:
    """One-sided binomial p-value of ``k`` or more successes in ``n`` trials at rate ``p``."""
    if k <= 0 or n <= 0:
        return 1.0
    from scipy.stats import binom

    return float(min(1.0, max(0.0, binom.sf(k - 1, n, p))))


def benjamini_hochberg(pvalues: np.ndarray | list[float]) -> np.ndarray:
    """Benjamini–Hochberg q-values of ``pvalues`` (same order): a test whose q-value is at most
    ``alpha`` is a discovery at false discovery rate ``alpha`` over all the tests."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(q, 1.0)
    return out


def cohens_h(p1: float, p2: float) -> float:
    """Cohen's h = 2 asin(sqrt p1) - 2 asin(sqrt p2): 0.2 small, 0.5 medium, 0.8 large."""
    return 2 * math.asin(math.sqrt(min(max(p1, 0.0), 1.0))) - 2 * math.asin(
        math.sqrt(min(max(p2, 0.0), 1.0))
    )


def auc_null_sd(n_pos: int, n_neg: int) -> float:
    """Standard deviation of the ROC AUC of scores that do not depend on the class: the
    permutation null of the Mann–Whitney statistic, ``sqrt((n_pos + n_neg + 1) / (12 n_pos
    n_neg))`` (no ties). nan without both classes."""
    if n_pos <= 0 or n_neg <= 0:
        return float("nan")
    return math.sqrt((n_pos + n_neg + 1) / (12 * n_pos * n_neg))

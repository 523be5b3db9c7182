"""LEN003: token-length distributions that differ between splits or against a reference."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, RuleResult, Severity
from ...sketches.histogram import LENGTH_EDGES, Histogram
from ...sketches.state import PerSplit, merge_values
from ...stats import ks_binned, psi, quantile_groups, wasserstein_binned
from .._drift import (
    DriftRule,
    band_severity,
    close_comparisons,
    comparison_plan,
    grade,
    pair_label,
    rounded,
)
from .._origin import check_origin, state_origin


class LengthDrift(DriftRule):
    """Token-length distributions that differ between train and eval splits, or across versions.

    What it does:
        Keeps a fixed-bin histogram of token lengths per split (whitespace words without a
        tokenizer) and compares every validation/test split with train, and every split with the
        matching split of a reference (``audit(new, reference=old)``). It reports three effect
        sizes: the Kolmogorov–Smirnov statistic D (largest gap between the two length CDFs),
        the Wasserstein-1 distance divided by the base split's mean length (how far lengths
        moved, relative to their size) and the PSI on the base split's length deciles.

        Verdict, graded by effect size, only where the KS test rejects "same distribution" at
        ``alpha`` (default 0.001; the test keeps a 200-row split from being flagged for sampling
        noise, the effect thresholds keep a 10M-row audit from flagging irrelevant differences
        that a p-value alone would flag):

        - info: significant, but every effect is below its warn threshold;
        - warn: at least one effect reaches its threshold (``ks >= 0.1``, ``wasserstein >= 0.1``,
          ``psi >= 0.2``);
        - error (fails the default gate): ``ks >= error_ks`` (0.3: the length CDFs are 30 points
          apart somewhere, about the KS distance of two normals a large effect, Cohen's d 0.8,
          apart), e.g. a length filter applied to one split only.

        A pair with a split smaller than ``min_rows`` gets no verdict (reported; the rule is
        ``skipped`` when no pair could be judged). ``details.sketch`` holds each split's length
        histogram, which the HTML report draws per split.

    Why it matters:
        When validation rows are all shorter than training rows (a length filter applied to one
        split only, a different source), validation loss and benchmark numbers stop predicting
        training behaviour, and a model tuned on them underperforms on long inputs.

    Example:
        A validation split built with a "<= 30 words" filter against an unfiltered train split:
        D = 0.45, W = 0.6, PSI = 2.1, p < 1e-30 → an error (D >= error_ks).

    Options:
        ks: KS D threshold (default 0.1).
        wasserstein: threshold on W1 / mean base length (default 0.1).
        psi: PSI threshold (default 0.2; 0.1–0.25 is "moderate" by convention).
        error_ks: KS D from which the drift is an error (default 0.3; 1.0: only
            disjoint lengths err).
        alpha: significance level of the KS test gating the verdict (default 0.001).
        min_rows: pairs with a split of fewer non-null rows get no verdict (default 50).
    """

    code = "LEN003"
    name = "length.drift"
    groups = ("default", "length", "drift")
    severity = Severity.WARN
    requires = ("text",)

    def __init__(
        self,
        ks: float = 0.1,
        wasserstein: float = 0.1,
        psi: float = 0.2,
        alpha: float = 0.001,
        min_rows: int = 50,
        error_ks: float = 0.3,
    ):
        self.ks = ks
        self.wasserstein = wasserstein
        self.psi = psi
        self.alpha = alpha
        self.min_rows = min_rows
        self.error_ks = error_ks

    def check_options(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha={self.alpha} must be in (0, 1)")
        if min(self.ks, self.wasserstein, self.psi) <= 0:
            raise ValueError("ks, wasserstein and psi thresholds must be positive")
        if not self.ks <= self.error_ks <= 1:
            raise ValueError(f"error_ks={self.error_ks} must be in [ks, 1]")
        if self.min_rows < 2:
            raise ValueError(f"min_rows={self.min_rows} must be at least 2")

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        tok = ctx.resources.tokenizer
        return {
            "origin": state_origin(self, ctx, tokenizer=tok.key),
            "tok": tok.key,
            "unit": tok.unit,
            "splits": PerSplit(Histogram),
            "kinds": {},
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        lengths = batch.feature("token_lengths", tokenizer=state["tok"])
        state["splits"].at(batch.split).add(lengths[lengths >= 0])
        state["kinds"][batch.split] = batch.kind
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        splits = a["splits"].merge(b["splits"])
        return {**a, "splits": splits, "kinds": merge_values(a["kinds"], b["kinds"])}

    def sketch(self, state: dict[str, Any]) -> dict[str, Any]:
        return {
            "tokenizer": state["tok"],
            "unit": state["unit"],
            "kinds": dict(state["kinds"]),
            "splits": {n: h.to_dict() for n, h in sorted(state["splits"].items())},
        }

    def compare(self, base: Histogram, other: Histogram) -> dict[str, Any]:
        d, p = ks_binned(base.counts, other.counts)
        w = wasserstein_binned(base.counts, other.counts, LENGTH_EDGES[:-1])
        w_norm = w / max(base.mean, 1.0)
        groups = quantile_groups(base.counts, 10)
        n_groups = int(groups.max()) + 1
        e = np.bincount(groups, weights=base.counts, minlength=n_groups)
        a = np.bincount(groups, weights=other.counts, minlength=n_groups)
        value = psi(e, a)
        effect = d >= self.ks or w_norm >= self.wasserstein or value >= self.psi
        band = grade(significant=p < self.alpha, warn=effect, error=d >= self.error_ks)
        return {
            "ks": d,
            "ks_pvalue": p,
            "wasserstein": w_norm,
            "psi": value,
            "drift": band in ("warn", "error"),
            "severity": band,
            "base_mean": base.mean,
            "mean": other.mean,
            "base_median": base.quantile(0.5),
            "median": other.quantile(0.5),
        }

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        unit = state["unit"]
        result = RuleResult(
            thresholds={
                "ks": self.ks,
                "wasserstein": self.wasserstein,
                "psi": self.psi,
                "alpha": self.alpha,
                "min_rows": self.min_rows,
                "error_ks": self.error_ks,
            },
            details={"unit": unit, "comparisons": {}},
        )
        present = {n: state["kinds"].get(n, "other") for n in state["splits"]}
        pairs, ref, notes = comparison_plan(ctx, self.code, present, state["tok"])
        judged = 0
        for origin, base_name, split in pairs:
            base = (
                state["splits"][base_name]
                if origin == "train"
                else Histogram.from_dict(ref["splits"][base_name])
            )
            other = state["splits"][split]
            label = pair_label(origin, base_name, split)
            if min(base.n, other.n) < self.min_rows:
                notes.append(
                    f"{label}: no verdict ({min(base.n, other.n)} rows < min_rows={self.min_rows})"
                )
                continue
            judged += 1
            c = self.compare(base, other)
            result.details["comparisons"][label] = {k: rounded(v) for k, v in c.items()}
            suffix = "" if origin == "train" else "_vs_reference"
            # how far D moves between two versions by sampling alone: 3 standard errors (D's
            # is about 0.5 sqrt(1/n1 + 1/n2), the difference of two D's sqrt(2) times that)
            noise = round(3 * math.sqrt(0.5 * (1 / base.n + 1 / other.n)), 6)
            result.metric(f"ks{suffix}", c["ks"], Direction.LOWER, split=split, noise=noise)
            result.metric(f"wasserstein{suffix}", c["wasserstein"], Direction.LOWER, split=split)
            result.metric(f"psi{suffix}", c["psi"], Direction.LOWER, split=split)
            band = c["severity"]
            if band is not None:
                what = "drifted" if c["drift"] else "differ slightly (below every threshold)"
                result.findings.append(
                    Finding(
                        message=(
                            f"{label}: token lengths {what} (KS D={c['ks']:.3f}, "
                            f"W={c['wasserstein']:.3f}×mean, PSI={c['psi']:.3f}; mean "
                            f"{c['base_mean']:.1f} → {c['mean']:.1f} {unit}, median "
                            f"{c['base_median']:.0f} → {c['median']:.0f})"
                        ),
                        key=f"{origin}|{base_name}|{split}",
                        severity=band_severity(band),
                        split=split,
                        data={k: rounded(v) for k, v in c.items()} | {"unit": unit},
                    )
                )
        result.details["sketch"] = self.sketch(state)
        close_comparisons(result, notes, judged)
        return result

"""SHIFT001: can a classifier tell train rows from eval rows? (domain-classifier shift test)"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from ..._arrow import bools, take
from ...context import AuditContext
from ...features import Batch
from ...rule import Coverage, Direction, Finding, RuleResult, Severity
from ...sketches.hashing import splitmix64
from ...sketches.sampling import BottomK
from ...sketches.state import PerSplit, merge_values
from ...stats import auc_confidence_interval, auc_null_sd
from .._drift import (
    DriftRule,
    band_severity,
    close_comparisons,
    compares_versions,
    comparison_plan,
    grade,
    pair_label,
)
from .._origin import check_origin, state_origin

_KEEP_CHARS = 1000
#: how much wider the null distribution of the cross-validated AUC is than the Mann–Whitney
#: permutation null of one fixed scorer (the folds' models differ, and they share training rows):
#: measured as sd(AUC) / sd0 on same-distribution splits: Python docs paragraphs 2,000 vs 2,000
#: (40 runs) 1.32 and 500 vs 500 (60 runs) 1.33; fortunes 2,000 vs 2,000 (40 runs) 1.39; seeded
#: random sentences 300 vs 300 (60 runs) 1.40 and 2,000 vs 2,000 (30 runs) 1.45
NULL_INFLATION = 1.4
_ROC_POINTS = 50  # points of the ROC curve kept for the report's chart


def _sample_state(seed: int) -> int:
    """The splitmix64 stream a split's rows are sampled from (a fixed function of the seed)."""
    return (seed * 0xD1B54A32D192ED03 + 0x632BE59BD9B4E019) & (2**64 - 1)


class DomainShift(DriftRule):
    """Train–test shift measured by how well a classifier separates the splits.

    What it does:
        Keeps a seeded random sample of up to ``sample_size`` rows per split (bottom-k by a
        seeded hash of the row's normalized text, so the sample is the same however the rows are
        ordered, batched or sharded; text truncated to 1,000 characters; the report's coverage
        says how many rows that is of the rows with text). At the end, for each
        validation/test split (and each split against the matching reference split when the
        reference is a dataset), it trains a logistic regression on word 1–2-gram TF-IDF
        features to tell the eval sample from the train sample, with seeded stratified
        ``folds``-fold cross-validation and balanced class weights. The out-of-fold ROC AUC is
        the effect size: 0.5 = indistinguishable, 1 = perfectly separable; its 95% interval is
        Hanley–McNeil's.

        The verdict is graded against the null, not a fixed cut-off. Two samples of the same
        text give an AUC near 0.5 whose spread depends only on the sample sizes: the
        Mann–Whitney permutation standard deviation ``sqrt((n1 + n2 + 1) / (12 n1 n2))`` times
        1.4, the widening that cross-validation adds (measured on same-distribution splits of
        real text; 0.012 at 2,000 vs 2,000 rows). Bands:

        - no finding: AUC below the critical value ``0.5 + z × null sd`` (``z`` = 3: 0.538 at
          2,000 vs 2,000 rows, 0.577 at 500 vs 500; one false alarm in ~740 same-distribution
          comparisons);
        - info: above the critical value but below ``min_auc`` (only reachable with a large
          ``sample_size``: a real but negligible difference);
        - warn: above both;
        - error (fails the default gate): the lower bound of the AUC's 95% interval reaches
          ``error_auc`` (0.8: most eval rows are told apart, e.g. a boilerplate line on every
          row, or eval rows from another domain).

        Evidence: the n-grams the classifier weighs most for each side, and in the details the
        ROC curve (``roc``: false/true positive rates) and the null (``auc_null_sd``,
        ``auc_critical``). A pair with fewer than ``min_rows`` sampled rows on a side gets no
        verdict.

    Why it matters:
        Token counts and lengths catch simple drift; a classifier also catches differences in
        topic, style, templates and boilerplate. If eval rows are easy to tell from train rows,
        eval scores do not estimate performance on the training distribution (and vice versa).

    Example:
        A test split with a different source mix: AUC 0.68 [0.63, 0.73], critical value 0.538:
        a warning; n-grams "module", "the function" mark test rows, "--" and "said" train rows.
        A test split whose every row ends with the same appended sentence: AUC 1.000 [0.99,
        1.000], an error naming the sentence's n-grams.

    Options:
        sample_size: rows sampled per split (default 2000).
        z: the critical value is this many null standard deviations above 0.5 (default 3.0;
            1.645 is a 5% false-alarm level).
        min_auc: an AUC above the critical value but below this is only noted (info); it
            matters only when a large ``sample_size`` makes the null narrow (default 0.52).
        error_auc: error when the AUC's lower 95% bound reaches this (default 0.8; 1.0 never
            errs).
        folds: cross-validation folds (default 5).
        min_rows: sampled rows needed on each side for a verdict (default 50).
        top_ngrams: n-grams shown as evidence per side (default 10).
    """

    code = "SHIFT001"
    name = "shift.domain-classifier"
    groups = ("default", "shift", "drift")
    severity = Severity.WARN
    requires = ("text",)

    def __init__(
        self,
        sample_size: int = 2000,
        z: float = 3.0,
        min_auc: float = 0.52,
        error_auc: float = 0.8,
        folds: int = 5,
        min_rows: int = 50,
        top_ngrams: int = 10,
    ):
        self.sample_size = sample_size
        self.z = z
        self.min_auc = min_auc
        self.error_auc = error_auc
        self.folds = folds
        self.min_rows = min_rows
        self.top_ngrams = top_ngrams

    def check_options(self) -> None:
        if self.sample_size < 10 or self.folds < 2 or self.min_rows < self.folds:
            raise ValueError("need sample_size >= 10, folds >= 2 and min_rows >= folds")
        if not 0.5 <= self.min_auc <= 1:
            raise ValueError(f"min_auc={self.min_auc} must be in [0.5, 1]")
        if not 0.5 < self.error_auc <= 1:
            raise ValueError(f"error_auc={self.error_auc} must be in (0.5, 1]")
        if not self.z > 0:
            raise ValueError(f"z={self.z} must be positive")

    def skip_reason(self, ctx: AuditContext) -> str | None:
        reason = super().skip_reason(ctx)
        if reason:
            return reason
        if not ctx.eval_splits() and not compares_versions(ctx):
            return "needs a train split and a validation/test split, or a reference (reference=)"
        return None

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        splits = PerSplit(partial(BottomK, self.sample_size))
        return {
            "origin": state_origin(self, ctx),
            "seed": ctx.seed,
            "splits": splits,
            "kinds": {},
            "seen": {},  # rows with text per split: what the sample was drawn from
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        sample = state["splits"].at(batch.split)
        state["kinds"][batch.split] = batch.kind
        text = batch.text
        idx = np.flatnonzero(bools(text.is_valid()))  # nulls: no text (to_numpy imports pandas)
        rows = batch.row_ids[idx]
        state["seen"][batch.split] = state["seen"].get(batch.split, 0) + int(idx.size)
        # keyed by content, not position: the same rows in another order are the same sample
        content = batch.feature("normalized_hash")[idx]

        def items(cand: np.ndarray) -> list[str]:
            return [t[:_KEEP_CHARS] for t in take(text, idx[cand]).to_pylist()]

        sample.offer(batch.split, rows, splitmix64(_sample_state(state["seed"]), content), items)
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        splits = a["splits"].merge(b["splits"])
        seen = {
            k: a["seen"].get(k, 0) + b["seen"].get(k, 0) for k in sorted({*a["seen"], *b["seen"]})
        }
        return {
            **a,
            "splits": splits,
            "kinds": merge_values(a["kinds"], b["kinds"]),
            "seen": seen,
        }

    def sketch(self, state: dict[str, Any]) -> dict[str, Any]:
        # texts are not written into reports: a saved report cannot serve as this reference
        return {"kinds": dict(state["kinds"]), "splits": dict(state["splits"])}

    @staticmethod
    def _texts(sample: BottomK) -> list[str]:
        """The sampled texts in (key, text) order: a function of the sampled content alone."""
        pairs = sorted(zip(sample.keys.tolist(), sample.items))
        return [t for _, t in pairs]

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        result = RuleResult(
            thresholds={
                "z": self.z,
                "min_auc": self.min_auc,
                "error_auc": self.error_auc,
                "min_rows": self.min_rows,
            },
            details={"comparisons": {}},
        )
        present = {n: state["kinds"].get(n, "other") for n in state["splits"]}
        pairs, ref, notes = comparison_plan(ctx, self.code, present)
        judged = 0
        for origin, base_name, split in pairs:
            base = state["splits"][base_name] if origin == "train" else ref["splits"][base_name]
            other = state["splits"][split]
            label = pair_label(origin, base_name, split)
            a, b = self._texts(base), self._texts(other)
            if min(len(a), len(b)) < self.min_rows:
                notes.append(
                    f"{label}: no verdict ({min(len(a), len(b))} sampled rows < "
                    f"min_rows={self.min_rows})"
                )
                continue
            c = self._classify(a, b, ctx.seed)
            if c is None:
                notes.append(f"{label}: no verdict (no n-grams to learn from)")
                continue
            judged += 1
            lo, hi = auc_confidence_interval(c["auc"], len(b), len(a))
            null_sd = NULL_INFLATION * auc_null_sd(len(b), len(a))
            critical = 0.5 + self.z * null_sd
            band = grade(
                significant=c["auc"] >= critical,
                warn=c["auc"] >= self.min_auc,
                error=lo >= self.error_auc,
            )
            c.update(
                auc_low=round(lo, 6),
                auc_high=round(hi, 6),
                auc_null_sd=round(null_sd, 6),
                auc_critical=round(critical, 6),
                shift=band is not None,
                severity=band,
            )
            result.details["comparisons"][label] = c
            suffix = "" if origin == "train" else "_vs_reference"
            # how far the AUC moves between two versions by sampling alone: 3 standard errors
            # of the difference of two AUCs
            noise = round(3 * math.sqrt(2) * null_sd, 6)
            result.metric(f"auc{suffix}", c["auc"], Direction.LOWER, split=split, noise=noise)
            if band is not None:
                mark = ", ".join(repr(g) for g in c["eval_ngrams"][:5]) or "no n-gram"
                base_mark = ", ".join(repr(g) for g in c["base_ngrams"][:5]) or "no n-gram"
                how = {
                    "error": f"its lower bound reaches error_auc={self.error_auc}",
                    "warn": f"above the {critical:.3f} two same-distribution samples reach "
                    f"at most (z={self.z})",
                    "info": f"above the null's {critical:.3f} but below min_auc={self.min_auc}",
                }[band]
                result.findings.append(
                    Finding(
                        message=(
                            f"{label}: a classifier tells the splits apart (AUC {c['auc']:.3f} "
                            f"[{lo:.3f}, {hi:.3f}]; {how}); {split} is marked by {mark}; "
                            f"{base_name} by {base_mark}"
                        ),
                        key=f"{origin}|{base_name}|{split}",
                        severity=band_severity(band),
                        split=split,
                        data=c,
                    )
                )
        close_comparisons(result, notes, judged)
        if judged:
            used = sorted({s for o, base, s in pairs} | {b for o, b, _ in pairs if o == "train"})
            used = [n for n in used if n in state["seen"]]
            result.coverage = Coverage(
                sum(len(state["splits"][n]) for n in used),
                sum(state["seen"][n] for n in used),
                f"the classifier learns from a seeded sample of sample_size={self.sample_size} "
                "rows per split (its cost grows with it; raise sample_size to read more)",
                "rows with text",
            )
        return result

    def _classify(self, base: list[str], other: list[str], seed: int) -> dict[str, Any] | None:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score, roc_curve
        from sklearn.model_selection import StratifiedKFold

        texts = base + other
        y = np.r_[np.zeros(len(base), np.int64), np.ones(len(other), np.int64)]
        vec = TfidfVectorizer(
            ngram_range=(1, 2), min_df=2, max_features=50_000, sublinear_tf=True, dtype=np.float64
        )
        try:
            x = vec.fit_transform(texts)
        except ValueError:  # empty vocabulary
            return None
        folds = min(self.folds, int(min(len(base), len(other))))
        cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        scores = np.zeros(len(texts))
        for train_idx, test_idx in cv.split(x, y):
            model = LogisticRegression(C=1.0, class_weight="balanced", solver="liblinear")
            model.fit(x[train_idx], y[train_idx])
            scores[test_idx] = model.decision_function(x[test_idx])
        auc = float(roc_auc_score(y, scores))
        fpr, tpr, _ = roc_curve(y, scores)
        keep = np.unique(np.linspace(0, len(fpr) - 1, min(len(fpr), _ROC_POINTS)).round())
        model = LogisticRegression(C=1.0, class_weight="balanced", solver="liblinear").fit(x, y)
        coef = model.coef_[0]
        names = vec.get_feature_names_out()
        order = np.lexsort((names, -coef))
        k = self.top_ngrams
        return {
            "auc": round(auc, 6) if math.isfinite(auc) else 0.5,
            "base_rows": len(base),
            "rows": len(other),
            "eval_ngrams": [str(names[i]) for i in order[:k] if coef[i] > 0],
            "base_ngrams": [str(names[i]) for i in order[::-1][:k] if coef[i] < 0],
            "roc": {
                "fpr": [round(float(fpr[int(i)]), 4) for i in keep],
                "tpr": [round(float(tpr[int(i)]), 4) for i in keep],
            },
        }

"""SHIFT001: can a classifier tell train rows from eval rows? (domain-classifier shift test)"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, RuleResult, Severity
from ...sketches.sampling import BottomK, row_keys
from ...sketches.state import PerSplit, merge_values
from ...stats import auc_confidence_interval
from .._drift import (
    DriftRule,
    close_comparisons,
    compares_versions,
    comparison_plan,
    pair_label,
)
from .._origin import check_origin, state_origin

_KEEP_CHARS = 1000


def _sample_state(seed: int) -> int:
    """The splitmix64 stream a split's rows are sampled from (a fixed function of the seed)."""
    return (seed * 0xD1B54A32D192ED03 + 0x632BE59BD9B4E019) & (2**64 - 1)


class DomainShift(DriftRule):
    """Train–test shift measured by how well a classifier separates the splits.

    What it does:
        Keeps a seeded random sample of up to ``sample_size`` rows per split (bottom-k by a
        hash of the row position, so the sample is the same however the data is sharded; text
        truncated to 1,000 characters). At the end, for each validation/test split (and each split
        against the matching reference split when the reference is a dataset), it trains a
        logistic regression on word 1–2-gram TF-IDF features to tell the eval sample from the
        train sample, with seeded stratified ``folds``-fold cross-validation and balanced class
        weights. The out-of-fold ROC AUC is the effect size: 0.5 = indistinguishable, 1 =
        perfectly separable; its 95% interval is Hanley–McNeil's.

        Verdict: shift when the AUC reaches ``min_auc`` and its interval excludes 0.5. Evidence:
        the n-grams the classifier weighs most for each side. A pair with fewer than
        ``min_rows`` sampled rows on a side gets no verdict.

    Why it matters:
        Token counts and lengths catch simple drift; a classifier also catches differences in
        topic, style, templates and boilerplate. If eval rows are easy to tell from train rows,
        eval scores do not estimate performance on the training distribution (and vice versa).

    Example:
        A test split with a different source mix: AUC 0.68 [0.63, 0.73]; n-grams "module",
        "the function" mark test rows, "--" and "said" mark train rows.

    Options:
        sample_size: rows sampled per split (default 2000).
        min_auc: AUC at which a shift is reported (default 0.6).
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
        min_auc: float = 0.6,
        folds: int = 5,
        min_rows: int = 50,
        top_ngrams: int = 10,
    ):
        self.sample_size = sample_size
        self.min_auc = min_auc
        self.folds = folds
        self.min_rows = min_rows
        self.top_ngrams = top_ngrams

    def check_options(self) -> None:
        if self.sample_size < 10 or self.folds < 2 or self.min_rows < self.folds:
            raise ValueError("need sample_size >= 10, folds >= 2 and min_rows >= folds")
        if not 0.5 < self.min_auc <= 1:
            raise ValueError(f"min_auc={self.min_auc} must be in (0.5, 1]")

    def skip_reason(self, ctx: AuditContext) -> str | None:
        reason = super().skip_reason(ctx)
        if reason:
            return reason
        if not ctx.eval_splits() and not compares_versions(ctx):
            return "needs a train split and a validation/test split, or a reference (reference=)"
        return None

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        splits = PerSplit(partial(BottomK, self.sample_size))
        return {"origin": state_origin(self, ctx), "seed": ctx.seed, "splits": splits, "kinds": {}}

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        sample = state["splits"].at(batch.split)
        state["kinds"][batch.split] = batch.kind
        text = batch.text
        idx = np.flatnonzero(text.is_valid().to_numpy(zero_copy_only=False))  # nulls: no text
        rows = batch.row_ids[idx]

        def items(cand: np.ndarray) -> list[str]:
            return [t[:_KEEP_CHARS] for t in text.take(idx[cand]).to_pylist()]

        sample.offer(batch.split, rows, row_keys(rows, _sample_state(state["seed"])), items)
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        splits = a["splits"].merge(b["splits"])
        return {**a, "splits": splits, "kinds": merge_values(a["kinds"], b["kinds"])}

    def sketch(self, state: dict[str, Any]) -> dict[str, Any]:
        # texts are not written into reports: a saved report cannot serve as this reference
        return {"kinds": dict(state["kinds"]), "splits": dict(state["splits"])}

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        result = RuleResult(
            thresholds={"min_auc": self.min_auc, "min_rows": self.min_rows},
            details={"comparisons": {}},
        )
        present = {n: state["kinds"].get(n, "other") for n in state["splits"]}
        pairs, ref, notes = comparison_plan(ctx, self.code, present)
        judged = 0
        for origin, base_name, split in pairs:
            base = state["splits"][base_name] if origin == "train" else ref["splits"][base_name]
            other = state["splits"][split]
            label = pair_label(origin, base_name, split)
            a, b = base.items_by_row(), other.items_by_row()
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
            c.update(auc_low=round(lo, 6), auc_high=round(hi, 6))
            c["shift"] = bool(c["auc"] >= self.min_auc and lo > 0.5)
            result.details["comparisons"][label] = c
            suffix = "" if origin == "train" else "_vs_reference"
            result.metric(f"auc{suffix}", c["auc"], Direction.LOWER, split=split)
            if c["shift"]:
                mark = ", ".join(repr(g) for g in c["eval_ngrams"][:5])
                base_mark = ", ".join(repr(g) for g in c["base_ngrams"][:5])
                result.findings.append(
                    Finding(
                        message=(
                            f"{label}: a classifier tells the splits apart (AUC {c['auc']:.3f} "
                            f"[{lo:.3f}, {hi:.3f}]); {split} is marked by {mark}; "
                            f"{base_name} by {base_mark}"
                        ),
                        key=f"{origin}|{base_name}|{split}",
                        split=split,
                        data=c,
                    )
                )
        close_comparisons(result, notes, judged)
        return result

    def _classify(self, base: list[str], other: list[str], seed: int) -> dict[str, Any] | None:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score
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
        }

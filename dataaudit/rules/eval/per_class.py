"""EVAL001: classes the model fails, per split, from its predictions."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...context import AuditContext
from ...rule import Direction, Finding, RuleResult, Severity
from ...stats import benjamini_hochberg, cohens_h, excess_pvalue, wilson_interval
from ._rows import EvalRule, Table, gather, grade


class PerClassFailures(EvalRule):
    """Classes the model gets wrong much more often than the rest, with the confusion matrix.

    What it does:
        Joins the model's predictions (``predictions=``) to the rows and, per split with
        predictions, computes each class's precision, recall and F1 with 95% intervals (Wilson
        for precision and recall, a seeded Dirichlet-multinomial bootstrap of the confusion
        matrix for F1), the accuracy and macro F1, and the confusion matrix (true label in
        rows, predicted label in columns). A class is reported when its rows are wrong significantly more often than the
        other rows (recall), or when the rows predicted as it are wrong significantly more often
        (precision): a one-sided Fisher exact test, Benjamini–Hochberg over every test of the
        split at ``alpha``. The finding's severity comes from the effect size, Cohen's h between
        the class and the rest: large (>= 0.8) on at least ``large_support`` rows is an error,
        medium (>= 0.5) a warning, small (>= ``min_effect``) a note. With ``correct``
        predictions (a generative task), the class is the label column and the score its mean.

    Why it matters:
        A model with 90% accuracy can be at 40% on one class, and that class is often the one
        that matters. Aggregate metrics hide it; a per-class table with intervals tells a real
        gap from noise on a small class.

    Example:
        ``test: class 'science' recall 0.42 [0.31, 0.54] vs 0.91 for the other classes (n=60,
        q=1e-12, h=1.1); mostly predicted as 'computers'``.

    Options:
        alpha: false discovery rate over the classes' tests (default 0.05).
        min_effect: smallest effect size (Cohen's h) reported (default 0.2).
        large_support: rows a class needs for a large effect to be an error (default 30).
        max_chars: characters of a wrong row's text kept for examples (default 1000).
        bootstrap: resamples of the confusion matrix for the F1 intervals (default 500).
    """

    code = "EVAL001"
    name = "eval.per-class-failures"
    severity = Severity.WARN

    def __init__(
        self,
        alpha: float = 0.05,
        min_effect: float = 0.2,
        large_support: int = 30,
        max_chars: int = 1000,
        bootstrap: int = 500,
    ):
        self.alpha = alpha
        self.min_effect = min_effect
        self.large_support = large_support
        self.max_chars = max_chars
        self.bootstrap = bootstrap

    def skip_reason(self, ctx: AuditContext) -> str | None:
        reason = super().skip_reason(ctx)
        if reason is None and ctx.roles.label is None:
            return (
                "needs classes: a label column (label=COLUMN); with `correct` predictions and "
                "no label there are no classes to compare (EVAL002 still finds failing slices)"
            )
        return reason

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        t = gather(state["rows"])
        result = RuleResult(
            thresholds={"alpha": self.alpha, "min_effect": self.min_effect},
            details={"splits": {}, "unjudged": dict(state["rows"].unjudged)},
        )
        if t.n == 0:
            result.skipped = _nothing_judged(state["rows"].unjudged)
            return result
        rng = np.random.default_rng(ctx.seed)
        for split in _split_order(t, ctx):
            idx = np.flatnonzero(t.split == split)
            idx = idx[[t.gold[i] is not None for i in idx.tolist()]]  # `correct` without a label
            if not idx.size:
                continue
            self._split(result, t, idx, split, ctx, rng)
        return result

    def _split(
        self,
        result: RuleResult,
        t: Table,
        idx: np.ndarray,
        split: str,
        ctx: AuditContext,
        rng: np.random.Generator,
    ) -> None:
        gold = [t.gold[i] for i in idx.tolist()]
        pred = [t.pred[i] for i in idx.tolist()]
        score = t.score[idx]
        wrong = t.wrong[idx]
        n, errors = len(idx), int(wrong.sum())
        has_pred = any(p is not None for p in pred)
        classes = sorted(set(gold) | ({p for p in pred if p is not None} if has_pred else set()))
        pos = {c: j for j, c in enumerate(classes)}
        g = np.array([pos[c] for c in gold])
        acc = float(score.mean())
        result.metric("accuracy", round(acc, 6), Direction.HIGHER, split=split)
        lo, hi = wilson_interval(int((~wrong).sum()), n)
        info: dict[str, Any] = {
            "rows": n,
            "accuracy": round(acc, 4),
            "accuracy_ci": [round(lo, 4), round(hi, 4)],
        }
        k = len(classes)
        matrix = None
        if has_pred:
            p = np.array([pos[c] for c in pred])
            matrix = np.zeros((k, k), np.int64)
            np.add.at(matrix, (g, p), 1)
            info["confusion"] = {
                "labels": classes,
                "rows": "true label",
                "columns": "predicted label",
                "counts": matrix.tolist(),
            }
        f1_ci = self._f1_intervals(matrix, rng) if matrix is not None else None
        tests: list[tuple[str, str, int, int]] = []  # (class, what, wrong, n)
        rows_info = []
        for j, c in enumerate(classes):
            in_c = g == j
            support = int(in_c.sum())
            row: dict[str, Any] = {"class": c, "support": support}
            if support:
                rec = float(score[in_c].mean())
                rlo, rhi = wilson_interval(int((~wrong[in_c]).sum()), support)
                row.update(recall=round(rec, 4), recall_ci=[round(rlo, 4), round(rhi, 4)])
                tests.append((c, "recall", int(wrong[in_c].sum()), support))
            if matrix is not None:
                predicted = int(matrix[:, j].sum())
                tp = int(matrix[j, j])
                row["predicted"] = predicted
                if predicted:
                    plo, phi = wilson_interval(tp, predicted)
                    row.update(
                        precision=round(tp / predicted, 4),
                        precision_ci=[round(plo, 4), round(phi, 4)],
                    )
                    tests.append((c, "precision", predicted - tp, predicted))
                prec = tp / predicted if predicted else 0.0
                rec = tp / support if support else 0.0
                row["f1"] = round(2 * prec * rec / (prec + rec), 4) if prec + rec else 0.0
                if f1_ci is not None:
                    row["f1_ci"] = [round(float(f1_ci[0][j]), 4), round(float(f1_ci[1][j]), 4)]
            rows_info.append(row)
        if matrix is not None:
            f1s = [r.get("f1", 0.0) for r in rows_info if r["support"]]
            macro = float(np.mean(f1s)) if f1s else 0.0
            info["macro_f1"] = round(macro, 4)
            result.metric("macro_f1", round(macro, 6), Direction.HIGHER, split=split)
        pvalues = [excess_pvalue(w, m, errors, n) for _, _, w, m in tests]
        qvalues = benjamini_hochberg(pvalues)
        worse: dict[str, dict[str, Any]] = {}
        for (c, what, w, m), pv, qv in zip(tests, pvalues, qvalues):
            rest_n, rest_w = n - m, errors - w
            rate = 1 - w / m
            rest = 1 - rest_w / rest_n if rest_n else float("nan")
            h = cohens_h(rest, rate) if rest_n else 0.0
            entry = next(r for r in rows_info if r["class"] == c)
            entry[f"{what}_p"] = float(f"{pv:.4g}")
            entry[f"{what}_q"] = float(f"{qv:.4g}")
            entry[f"{what}_effect"] = round(h, 4)
            entry[f"{what}_rest"] = round(rest, 4) if rest_n else None
            if qv > float(self.alpha):
                continue
            level = grade(
                h,
                m,
                min_effect=float(self.min_effect),
                large_support=int(self.large_support),
            )
            if level is None:
                continue
            cur = worse.get(c)
            if cur is None or h > cur["effect"]:
                worse[c] = {
                    "what": what,
                    "rate": rate,
                    "rest": rest,
                    "n": m,
                    "wrong": w,
                    "p": pv,
                    "q": float(qv),
                    "effect": h,
                    "severity": level,
                }
        worst_recall = min((r["recall"] for r in rows_info if "recall" in r), default=None)
        result.metric("worst_class_recall", worst_recall, Direction.HIGHER, split=split)
        result.metric("classes_failing", len(worse), Direction.LOWER, split=split)
        info["classes"] = rows_info
        result.details["splits"][split] = info
        for c in sorted(worse, key=lambda c: (-worse[c]["effect"], c)):
            result.findings.append(self._finding(t, idx, split, c, worse[c], matrix, classes, ctx))

    def _finding(
        self,
        t: Table,
        idx: np.ndarray,
        split: str,
        c: str,
        w: dict[str, Any],
        matrix: np.ndarray | None,
        classes: list[str],
        ctx: AuditContext,
    ) -> Finding:
        j = classes.index(c)
        if w["what"] == "recall":
            chosen = [i for i in idx.tolist() if t.gold[i] == c and t.wrong[i]]
            what = f"recall {w['rate']:.2f}"
            confusion = ""
            if matrix is not None:
                off = matrix[j].copy()
                off[j] = 0
                if off.sum():
                    top = int(off.argmax())
                    confusion = (
                        f"; mostly predicted as {classes[top]!r} ({int(off[top])} of "
                        f"{int(off.sum())})"
                    )
        else:
            chosen = [i for i in idx.tolist() if t.pred[i] == c and t.wrong[i]]
            what = f"precision {w['rate']:.2f}"
            confusion = ""
            if matrix is not None:
                off = matrix[:, j].copy()
                off[j] = 0
                if off.sum():
                    top = int(off.argmax())
                    confusion = (
                        f"; mostly rows of {classes[top]!r} ({int(off[top])} of {int(off.sum())})"
                    )
        lo, hi = wilson_interval(w["n"] - w["wrong"], w["n"])
        message = (
            f"{split}: class {c!r} {what} [{lo:.2f}, {hi:.2f}] vs {w['rest']:.2f} for the "
            f"other rows (n={w['n']}, q={w['q']:.2g}, effect h={w['effect']:.2f}){confusion}"
        )
        examples = [t.example(ctx, i) for i in chosen[: ctx.max_examples]]
        return Finding(
            message=message,
            key=f"{split}|{c}|{w['what']}",
            severity=Severity(w["severity"]),
            count=w["wrong"],
            split=split,
            examples=examples,
            data={
                "class": c,
                "metric": w["what"],
                "value": round(w["rate"], 4),
                "ci": [round(lo, 4), round(hi, 4)],
                "rest": round(w["rest"], 4),
                "support": w["n"],
                "wrong": w["wrong"],
                "p": float(f"{w['p']:.4g}"),
                "q": float(f"{w['q']:.4g}"),
                "effect_h": round(w["effect"], 4),
            },
        )

    def _f1_intervals(
        self, matrix: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray] | None:
        draws = int(self.bootstrap)
        n = int(matrix.sum())
        if draws <= 0 or n == 0:
            return None
        k = matrix.shape[0]
        # cells resampled from a Dirichlet around the counts (Jeffreys prior, +0.5): an empty
        # cell (no true positive yet) is uncertain too, so a 0 F1 does not get a [0, 0] interval
        alpha = matrix.ravel().astype(np.float64) + 0.5
        f1 = np.empty((draws, k))
        for d in range(draws):
            m = rng.multinomial(n, rng.dirichlet(alpha)).reshape(k, k)
            tp = np.diag(m).astype(float)
            denom = m.sum(axis=0) + m.sum(axis=1)
            f1[d] = np.divide(2 * tp, denom, out=np.zeros(k), where=denom > 0)
        return np.quantile(f1, 0.025, axis=0), np.quantile(f1, 0.975, axis=0)


def _split_order(t: Table, ctx: AuditContext) -> list[str]:
    present = set(t.split.tolist())
    return [s for s in ctx.splits if s in present] + sorted(present - set(ctx.splits))


def _nothing_judged(unjudged: dict[str, int]) -> str:
    if unjudged:
        return (
            f"no row with a prediction has a label to judge it by ({sum(unjudged.values())} "
            "rows with predictions have a null label)"
        )
    return "no row of the dataset has a prediction (check the predictions' keys and splits)"

"""LBL004: a high-capacity probe must be able to memorize a small sample of the training data."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...context import AuditContext
from ...features import Batch
from ...rule import Coverage, Direction, Finding, Rule, RuleResult, Severity
from ...sketches.sampling import BottomK
from ...wording import noun, plural
from .._origin import check_origin, state_origin
from . import _probe, _sample


class Memorization(Rule):
    """A high-capacity probe must fit a small sample of the training rows almost perfectly.

    What it does:
        The first step of debugging a training run - overfit a tiny batch - applied to the data:
        takes a seeded sample of ``sample_rows`` labeled train rows, fits an almost unregularized
        linear max-margin model on word and character n-grams of their normalized inputs, and
        predicts the same rows. Any model that can learn the task can memorize 100 rows; the
        rows it cannot fit are reported with a likely reason: an empty input, an identical input
        with another label in the sample, or a label that does not follow from the input.
        They are flagged with the action ``review`` and the finding's severity. A test of a
        sample by design: the report's coverage says how many of the labeled train rows it
        read (LBL002 judges every row's label, LBL001 every pair of copies that disagree).

    Why it matters:
        If a sample cannot be memorized, training loss will plateau above zero for reasons no
        hyperparameter fixes: the rows are contradictory or their labels are detached from their
        text (a shifted join, a wrong column).

    Example:
        Two sampled rows "refund please" labeled ``billing`` and ``spam`` cannot both be fit:
        both are reported, with the other row as the reason.

    Options:
        sample_rows: rows in the seeded sample of the train split (default 100).
        min_accuracy: warn when the probe fits fewer than this share of the sample (default
            0.98); rows it cannot fit are reported as notes otherwise.
        min_rows: skip with a reason below this many labeled train rows (default 10).
    """

    code = "LBL004"
    name = "labels.memorization"
    groups = ("default", "labels")
    severity = Severity.WARN
    requires = ("input", "label")

    def __init__(self, sample_rows: int = 100, min_accuracy: float = 0.98, min_rows: int = 10):
        self.sample_rows = sample_rows
        self.min_accuracy = min_accuracy
        self.min_rows = min_rows

    def check_options(self) -> None:
        if int(self.sample_rows) < 2:
            raise ValueError(f"sample_rows={self.sample_rows} must be at least 2")
        if not 0 <= float(self.min_accuracy) <= 1:
            raise ValueError(f"min_accuracy={self.min_accuracy} must be in [0, 1]")

    def skip_reason(self, ctx: AuditContext) -> str | None:
        reason = super().skip_reason(ctx)
        if reason is None and ctx.train_split() is None:
            return "needs a train split"
        return reason

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        return {
            "origin": state_origin(self, ctx),
            "seed": ctx.seed,
            "train": ctx.train_split(),
            "labeled": 0,  # labeled train rows offered: the rule's scope
            "sample": BottomK(self.sample_rows),
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        if batch.split == state["train"]:
            state["labeled"] += _sample.offer(
                state["sample"],
                batch,
                state["seed"],
                max_chars=5000,
                view="normalized",
                view_params={"view": "input_text"},
            )
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {
            **a,
            "labeled": a["labeled"] + b["labeled"],
            "sample": a["sample"].merge(b["sample"]),
        }

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        items = _sample.sampled(state["sample"])
        result = RuleResult(
            thresholds={"sample_rows": self.sample_rows, "min_accuracy": self.min_accuracy}
        )
        labels = [it.label for it in items]
        if _probe.sklearn_missing():
            result.skipped = "scikit-learn is not installed (pip install scikit-learn)"
            return result
        if len(items) < int(self.min_rows):
            result.skipped = (
                f"too little data: {plural(len(items), 'labeled train row')}, needs "
                f">= {self.min_rows}"
            )
            return result
        if len(set(labels)) < 2:
            result.skipped = "the sampled train rows have a single class; nothing to fit"
            return result
        texts = [it.text for it in items]
        classes = sorted(set(labels))
        pred = _probe.fit_train_accuracy(texts, labels, seed=state["seed"])
        if pred is None:
            result.skipped = (
                f"no text to fit a probe on: the {plural(len(items), 'sampled train row')} "
                f"{noun(len(items), 'has', 'have')} empty or blank input (TXT001 reports empty text)"
            )
            return result
        result.coverage = Coverage(
            len(items),
            int(state["labeled"]),
            f"a memorization test of a seeded sample of sample_rows={self.sample_rows} labeled "
            f"{state['train']} rows by design (raise sample_rows to read more; LBL002 judges "
            "every row's label)",
            f"labeled {state['train']} rows",
        )
        given = np.array([classes.index(v) for v in labels])
        missed = np.flatnonzero(pred != given).tolist()
        accuracy = 1 - len(missed) / len(items)
        result.metric("sample_rows", len(items), Direction.NONE)
        result.metric("memorization_accuracy", accuracy, Direction.HIGHER)
        by_text: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            by_text.setdefault(t, []).append(i)
        examples = []
        severity = None if accuracy < float(self.min_accuracy) else Severity.INFO
        flagged: dict[str, list[Any]] = {"split": [], "rows": [], "detail": [], "id": []}
        for i in missed:
            split, row, text, label, row_id = items[i][:5]
            twins = [j for j in by_text[text] if j != i and labels[j] != label]
            if not text.strip():
                reason = "empty input"
            elif twins:
                j = twins[0]
                reason = f"identical input in row {items[j].row} labeled {labels[j]!r}"
            else:
                reason = "the label does not follow from the input (or a probe cannot see why)"
            flagged["split"].append(split)
            flagged["rows"].append(row)
            flagged["detail"].append(f"not memorized: {reason}")
            flagged["id"].append(row_id)
            examples.append(
                ctx.example(
                    split, row, text, label=label, predicted=classes[pred[i]], reason=reason
                )
            )
        result.flags.add(**flagged, action="review", severity=severity)
        if missed:
            result.findings.append(
                Finding(
                    message=f"a high-capacity probe fits only {accuracy:.0%} of "
                    f"{plural(len(items), 'sampled ' + state['train'] + ' row')}; "
                    f"{plural(len(missed), 'row')} cannot be memorized",
                    key="not_memorized",
                    severity=severity,
                    count=len(missed),
                    split=state["train"],
                    examples=examples,
                )
            )
        result.details = {
            "sample": {
                "rows": len(items),
                "split": state["train"],
                "seed": state["seed"],
                "how": "seeded uniform sample of labeled train rows (bottom-k of a seeded hash)",
            },
            "not_memorized": examples,
        }
        return result

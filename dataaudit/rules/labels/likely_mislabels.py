"""LBL002: rows whose given label a text probe finds unlikely (confident learning)."""

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


class LikelyMislabels(Rule):
    """Rows whose given label is unlikely under a text probe (confident learning).

    What it does:
        Trains a small seeded text probe (hashed word 1-2-gram tf-idf, logistic loss, k-fold)
        on a bounded sample of the labeled rows of every split, and scores every labeled row
        with a fold model that never saw it: the sampled rows out of fold, every other row by
        the fold model that left out its group. Folds are stratified by label and grouped by
        the normalized input, so copies of one text never sit on both sides of a fold (a
        duplicated wrong label would vouch for itself). Confident learning then sets a per-class
        threshold (the mean probability of a class over the rows labeled with it), counts for
        each row the class it confidently belongs to (the confident joint), calibrates that to
        the label counts to estimate the noise rate per class, and flags the rows labeled i
        whose self-confidence is lowest and whose best guess is another class (as many per
        class as the joint estimates). Reported: a ranked list (given label, suggested label,
        confidence), the estimated noise per class, a given-vs-likely label matrix, and the
        coverage: rows scored of the labeled rows (partial only beyond ``max_scored``, for
        classes too small to model, or for a class whose rows are all one duplicated text).
        Flagged rows have the action ``review`` (relabel or drop after a look), ``given=...
        likely=...`` as detail and the probe's probability of the likely label as score.
        Rows without a word to read (empty, blank, null, only symbols) are read but not scored
        and counted (``rows_without_text``): the probe could only score them on the class
        prior, and empty text is TXT001's finding.

    Why it matters:
        A few percent of wrong labels costs accuracy and, worse, makes evaluation lie: on a
        noisy test split the best model can look worse than a bad one. Confident learning finds
        the candidates to re-check first.

    Example:
        A fortune about a recipe labeled ``computers`` is listed with suggested label ``food``
        and its probability.

    Options:
        max_rows: training cap: the fold models train on a seeded uniform sample of at most
            this many labeled rows (the rows with the smallest seeded hash of split and row;
            exact under sharding; default 50000: on 38k rows of real text with 5% wrong labels,
            training on all of them instead of 20k raised precision from 0.34 to 0.38 at the
            same recall). Rows beyond it are still scored.
        max_scored: scoring cap: at most this many labeled rows are kept and scored (the same
            seeded order; default 500000: ~27 CPU-seconds of finish on 2 cores, and up to
            ``max_chars`` characters of memory per row). Beyond it the report's coverage is
            partial and says so; raise it to score everything.
        folds: cross-validation folds for out-of-fold probabilities (default 5).
        min_rows: skip the probe below this many usable sampled rows (default 50).
        min_class_rows: classes with fewer sampled rows are left out of the probe (default 5).
        max_classes: skip when the label has more classes than this (default 200).
        max_chars: input characters the probe reads per row (default 2000).
        max_listed: length of the ranked list in the report (default 100).
        min_skill: the probe's agreement with the given labels beyond chance (Cohen's kappa of
            its out-of-fold guesses) below which its suggestions are reported as info, not at
            the rule's severity (default 0.7). A probe that barely predicts the label flags
            rows whose text resembles another class, not wrong labels: measured on real text
            with the labels as published, kappa 0.98 on spam/ham e-mails (3 rows flagged) but
            0.43 on fortune categories (34% of rows flagged), 0.52 on State of the Union party
            labels, 0.56 on Python-docs sections (precision 0.35 on planted flips there).
    """

    code = "LBL002"
    name = "labels.likely-mislabeled"
    groups = ("default", "labels")
    severity = Severity.WARN
    requires = ("input", "label")

    def __init__(
        self,
        max_rows: int = _probe.TRAIN_ROWS,
        max_scored: int = 500_000,
        folds: int = 5,
        min_rows: int = 50,
        min_class_rows: int = 5,
        max_classes: int = 200,
        max_chars: int = 2000,
        max_listed: int = 100,
        min_skill: float = 0.7,
    ):
        self.max_rows = max_rows
        self.max_scored = max_scored
        self.folds = folds
        self.min_rows = min_rows
        self.min_class_rows = min_class_rows
        self.max_classes = max_classes
        self.max_chars = max_chars
        self.max_listed = max_listed
        self.min_skill = min_skill

    def check_options(self) -> None:
        if int(self.folds) < 2:
            raise ValueError(f"folds={self.folds} must be at least 2")
        for name in ("max_rows", "max_scored", "min_rows", "max_classes", "max_chars"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be at least 1")
        if int(self.max_scored) < int(self.max_rows):
            raise ValueError(
                f"max_scored={self.max_scored} must be at least max_rows={self.max_rows}: every "
                "training row is scored"
            )
        if not -1.0 <= float(self.min_skill) <= 1.0:
            raise ValueError(f"min_skill={self.min_skill} must be a kappa in [-1, 1]")

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        return {
            "origin": state_origin(self, ctx),
            "seed": ctx.seed,
            "labeled": 0,  # labeled rows offered: the rule's scope
            "sample": BottomK(max(int(self.max_scored), int(self.max_rows))),
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        state["labeled"] += _sample.offer(
            state["sample"], batch, state["seed"], max_chars=self.max_chars
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
        train, beyond = items[: int(self.max_rows)], items[int(self.max_rows) :]
        total = sum(info.num_rows or 0 for info in ctx.splits.values())
        labeled = int(state["labeled"])
        result = RuleResult(
            thresholds={
                "max_rows": self.max_rows,
                "max_scored": self.max_scored,
                "folds": self.folds,
            }
        )
        sample_info = {
            "rows_sampled": len(train),
            "rows_kept": len(items),
            "rows_labeled": labeled,
            "rows_total": total,
            "max_rows": self.max_rows,
            "max_scored": self.max_scored,
            "seed": ctx.seed,
            "how": "uniform seeded sample of labeled rows across all splits (bottom-k of a "
            "seeded hash of split and row): the first max_rows train the fold models, the "
            "rest up to max_scored are scored by them",
            "probe": f"hashed word 1-2-gram tf-idf + logistic loss (SGD), {self.folds}-fold "
            "out-of-fold probabilities, folds stratified by label and grouped by normalized "
            "input",
        }
        result.metric("rows_sampled", len(train), Direction.NONE)
        run = _probe.run_probe(
            train,
            seed=ctx.seed,
            folds=int(self.folds),
            min_rows=int(self.min_rows),
            min_class_rows=int(self.min_class_rows),
            max_classes=int(self.max_classes),
            score=beyond,
        )
        if isinstance(run, str):
            result.skipped = run
            without_text = sum(not _probe.has_words(it.text) for it in train)
            result.details = {"sample": {**sample_info, "rows_without_text": without_text}}
            return result
        cl, classes, kept = run.cl, run.classes, run.items
        n = len(kept)
        result.coverage = self._coverage(labeled, len(items), run)
        result.metric("rows_scored", n, Direction.HIGHER)
        index = {c: j for j, c in enumerate(classes)}
        given = np.array([index[it.label] for it in kept])
        p_given = run.proba[np.arange(n), given]
        flagged = np.flatnonzero(cl.issue)
        order = sorted(flagged.tolist(), key=lambda i: (p_given[i], kept[i].split, kept[i].row))
        total_noise = float((cl.calibrated.sum() - np.trace(cl.calibrated)) / max(n, 1))
        skill = probe_skill(run.proba, given)
        for name, value in skill.items():
            result.metric(f"probe_{name}", round(value, 4), Direction.NONE)
        weak = skill["kappa"] < float(self.min_skill)
        # a weak probe's suggestions are leads, not evidence: reported, at info
        severity = Severity.INFO if weak else None
        result.metric("likely_mislabeled_rows", len(order), Direction.LOWER)
        result.metric("likely_mislabeled_rate", len(order) / n, Direction.LOWER)
        result.metric("estimated_noise_rate", total_noise, Direction.LOWER)
        ranked = []
        pairs: dict[tuple[str, str], list[int]] = {}
        flagged: dict[str, list[Any]] = {
            "split": [],
            "rows": [],
            "detail": [],
            "score": [],
            "id": [],
        }
        for i in order:
            split, row, text, label, row_id = kept[i][:5]
            sug = classes[int(cl.suggested[i])]
            conf = float(run.proba[i, cl.suggested[i]])
            flagged["split"].append(split)
            flagged["rows"].append(row)
            flagged["detail"].append(f"given={label} likely={sug}")
            flagged["score"].append(round(conf, 4))
            flagged["id"].append(row_id)
            pairs.setdefault((label, sug), []).append(i)
            if len(ranked) < int(self.max_listed):
                ranked.append(
                    {
                        "split": split,
                        "row": row,
                        "given": label,
                        "suggested": sug,
                        "confidence": round(conf, 4),
                        "given_probability": round(float(p_given[i]), 4),
                        "text": ctx.truncate(text),
                    }
                )
        result.flags.add(**flagged, action="review", severity=severity)
        for (label, sug), idx in sorted(pairs.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            examples = []
            for i in idx[: ctx.max_examples]:
                split, row, text = kept[i][:3]
                examples.append(
                    ctx.example(
                        split,
                        row,
                        text,
                        given=label,
                        suggested=sug,
                        confidence=round(float(run.proba[i, cl.suggested[i]]), 4),
                    )
                )
            splits = sorted({kept[i].split for i in idx})
            result.findings.append(
                Finding(
                    message=f"{plural(len(idx), 'row')} labeled {label!r} "
                    f"{noun(len(idx), 'looks', 'look')} like {sug!r} "
                    f"(splits: {', '.join(splits)})",
                    key=f"{label}->{sug}",
                    count=len(idx),
                    examples=examples,
                    data={"given": label, "suggested": sug},
                    severity=severity,
                )
            )
        if weak and order:
            top = classes[int(np.bincount(given, minlength=len(classes)).argmax())]
            result.findings.insert(
                0,
                Finding(
                    message=f"the probe predicts the labels only weakly (accuracy "
                    f"{skill['accuracy']:.2f} vs {skill['majority']:.2f} for always "
                    f"{top!r}, kappa {skill['kappa']:.2f} < min_skill={self.min_skill}): the "
                    f"{plural(len(order), 'flagged row')} {noun(len(order), 'is', 'are')} text "
                    "that resembles another class (ambiguous classes, or a label the text "
                    "alone does not predict), not proven label errors; review a sample first",
                    key="probe_skill",
                    count=len(order),
                    severity=Severity.INFO,
                    data={k: round(v, 4) for k, v in skill.items()},
                ),
            )
        result.details = {
            "sample": {
                **sample_info,
                "rows_probed": n,
                "rows_trained": run.trained,
                "rows_scored_beyond_sample": run.scored,
                "rows_without_text": run.without_text,
                "classes_left_out": run.dropped,
                "rows_of_classes_left_out": run.dropped_rows,
                "rows_unjudged": run.unjudged,
            },
            "ranked": ranked,
            "probe_skill": {
                **{k: round(v, 4) for k, v in skill.items()},
                "min_skill": self.min_skill,
                "graded": "info" if weak else "rule severity",
            },
            "noise_by_class": {c: round(float(cl.noise_rate[j]), 4) for j, c in enumerate(classes)},
            "thresholds_by_class": {
                c: round(float(cl.thresholds[j]), 4) for j, c in enumerate(classes)
            },
            "matrix": {
                "labels": classes,
                "rows": "given label",
                "columns": "likely label (confident joint counts)",
                "counts": cl.joint.tolist(),
            },
        }
        return result

    def _coverage(self, labeled: int, kept: int, run: _probe.ProbeRun) -> Coverage:
        """Rows judged (scored, or read and found without text) of the labeled rows, and why
        the others were not."""
        examined = len(run.items) + run.without_text
        why = []
        if labeled > kept:
            why.append(
                f"{plural(labeled - kept, 'labeled row')} beyond max_scored={self.max_scored} "
                "were not scored (raise max_scored)"
            )
        if run.dropped_rows:
            why.append(
                f"{plural(run.dropped_rows, 'row')} of {plural(len(run.dropped), 'class')} with "
                f"fewer than {max(int(self.min_class_rows), int(self.folds))} sampled rows were "
                "not scored (too few to model)"
            )
        if run.unjudged:
            why.append(
                f"{plural(run.unjudged, 'row')} could not be judged: every row of their class "
                "shares one normalized text, so the fold that scores them has none to learn from"
            )
        return Coverage(min(examined, labeled), labeled, "; ".join(why) or None, "labeled rows")


def probe_skill(proba: np.ndarray, given: np.ndarray) -> dict[str, float]:
    """How well the probe's out-of-fold guesses agree with the given labels: accuracy, the
    majority class's share (what always guessing it scores) and Cohen's kappa (agreement beyond
    what the two label distributions give by chance)."""
    n, k = proba.shape
    guess = proba.argmax(axis=1)
    accuracy = float((guess == given).mean()) if n else 0.0
    p_given = np.bincount(given, minlength=k) / max(n, 1)
    p_guess = np.bincount(guess, minlength=k) / max(n, 1)
    chance = float((p_given * p_guess).sum())
    kappa = (accuracy - chance) / (1.0 - chance) if chance < 1.0 else 0.0
    return {"accuracy": accuracy, "majority": float(p_given.max()), "kappa": float(kappa)}

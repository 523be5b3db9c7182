"""LBL003: class balance per split, classes missing from a split, label drift; the per-class table."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, RuleResult, Severity
from ...sketches.sampling import BottomK
from ...sketches.state import Additive, Examples, PerSplit
from ...stats import chi2_contingency, js_divergence
from ...wording import noun, plural
from .._drift import (
    DriftRule,
    band_severity,
    grade,
    pair_label,
    reference_matches,
    reference_sketch,
    unmatched_note,
)
from .._ids import ids_at
from .._origin import check_origin, state_origin
from . import _conflicts, _probe, _sample


@dataclass
class _Split(Additive):
    """One split's labels: class and value-type counts, null-label rows, odd-typed examples."""

    odd: Examples[tuple[int, str, str]]  # (row, value type, value) of non-string labels
    kind: str = ""
    rows: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    types: dict[str, int] = field(default_factory=dict)
    null_rows: list[int] = field(default_factory=list)
    null_ids: list[str | None] = field(default_factory=list)  # the id column at null_rows

    @classmethod
    def start(cls, max_examples: int) -> _Split:
        return cls(Examples(max_examples))


OTHER = "(other)"  # the bucket of the classes a bounded sketch does not list one by one
_UNLISTED = "\x00unlisted"  # internal key: share of a class the reference does not list
_MAX_KEY_CHARS = 200  # longer class names are stored as a prefix + hash in the sketch


def _class_key(cls: str) -> str:
    """The class as stored in a sketch: itself, or a bounded prefix + hash for very long names."""
    if len(cls) <= _MAX_KEY_CHARS:
        return cls
    digest = hashlib.blake2b(cls.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return f"{cls[:160]}…#{digest}"


def _keyed(counts: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for cls, n in counts.items():
        k = _class_key(cls)
        out[k] = out.get(k, 0) + n
    return out


def _v_noise(dof: int, n: float) -> float | None:
    """How far Cramér's V moves by sampling alone (a diff calls smaller moves unchanged): three
    times sqrt(dof / n), the V of two same-distribution samples (chi² ~ dof)."""
    return round(float(3 * np.sqrt(max(dof, 1) / n)), 6) if n > 0 else None


def _js_noise(dof: int, n1: float, n2: float) -> float | None:
    """How far the label JS divergence moves by sampling alone, on the scale of ``_v_noise``:
    for shares this close, JS (bits) ~ chi² (1/n1 + 1/n2) / (8 ln 2), taken at the chi² of
    that V noise (9 dof). Without it a diff judged JS by 5% of its value, so removing
    duplicates from a spam/ham corpus (0.0013 -> 0.0045 bits) was a regression while V stayed
    within its noise."""
    if n1 <= 0 or n2 <= 0:
        return None
    return round(float(9 * max(dof, 1) * (1 / n1 + 1 / n2) / (8 * np.log(2))), 6)


def _share_shifts(classes, base_shares, shares) -> list[tuple[Any, float]]:
    """(class, share change), largest change first: the evidence of a label drift."""
    return sorted(
        ((c, float(shares[i] - base_shares[i])) for i, c in enumerate(classes)),
        key=lambda kv: (-abs(kv[1]), kv[0]),
    )


def _describe_shifts(shifts: list[tuple[Any, float]], top: int = 3) -> str:
    return ", ".join(f"{c!r} {d:+.1%}" for c, d in shifts[:top])


class ClassBalance(DriftRule):
    """Class counts and shares per split, missing classes, label drift, and the per-class table.

    What it does:
        Counts every class per split (labels may be strings, ints, bools or a mix) and reports
        the imbalance ratio (largest / smallest class), classes missing from a split - a class
        that a validation/test split has but train never shows is an error, since no model can
        learn it - rows with a null label (flagged with the action ``review``: label or drop
        them), a label column that mixes types, and label drift of
        each validation/test split against train with effect sizes (Jensen-Shannon divergence
        and Cramér's V of the split x class table) next to the chi-squared p-value, graded by
        Cramér's V: info when significant (p < 0.001) but below ``max_cramers_v`` (0.1), warn
        from it (p < 0.01), error from ``error_cramers_v`` (0.5), which fails the default gate.
        Its ``details.classes`` is the per-class table that answers "which classes fail?" in one
        place: rows and share per split, conflict rate (rows in an exact same-input/different-
        label group, as LBL001), estimated label noise and worst confusions (from the LBL002
        probe on the same seeded sample; the probe runs once per audit for both rules).

        With a reference (``audit(new, reference=old)``, a dataset or a saved report; CLI
        ``--reference``) every split is also compared with the reference split of the same name
        (else the same kind): the same effect sizes and threshold as between splits (metrics
        with the ``_vs_reference`` suffix: ``label_js_divergence_vs_reference``,
        ``label_cramers_v_vs_reference``, ``label_chi2_pvalue_vs_reference``), and classes that
        appeared or disappeared since the reference are findings (notes, severity info, when the
        class would be expected to hold fewer than ``min_expected_rows`` rows). The reference
        side is the rule's sketch, published in ``details.sketch`` so a saved report can serve
        as the reference: per split, the row count and the class counts, bounded to the
        ``max_classes`` largest classes plus an ``"(other)"`` bucket (``other_rows``,
        ``other_classes``) summing the rest; class names longer than 200 characters are kept
        as a prefix + hash. Against a bucketed reference, classes outside its listed ones are
        compared through the ``"(other)"`` bucket and are not reported as new. A reference
        without a label column (or an older report without the sketch) skips the comparison
        with the reason in ``details.notes`` and an info finding.

    Why it matters:
        "A model with 90% accuracy may still fail on one important class": rare classes, classes
        the training data never shows, and a test split whose class mix differs from train make
        aggregate metrics misleading.

    Example:
        ``test`` has 7 rows labeled ``pets`` and ``train`` none: an error finding. ``train`` is
        70% ``computers`` and ``test`` 30%: a drift warning with Cramér's V 0.4.
        ``audit(v2, reference=v1)`` where v1's train was 50% ``spam`` and v2's is 10%: a
        warning "train: label distribution differs from reference train (Cramér's V 0.44...)".

    Options:
        max_imbalance: warn when largest / smallest class count exceeds this (default 20).
        min_class_rows: classes with fewer train rows are noted as rare (default 5).
        min_expected_rows: a train class missing from an eval split is a warning when the split
            would be expected to hold at least this many of it, a note otherwise (default 5).
        max_cramers_v: label drift warns at this effect size, when also p < 0.01 (default 0.1;
            a significant drift below it is noted, severity info).
        error_cramers_v: label drift is an error from this effect size (default 0.5, Cohen's
            "large" for a two-row table: e.g. train 80/20 and test 20/80 over two classes;
            1.0: only disjoint class sets err).
        max_classes: more distinct values than this looks like free text or ids, not classes
            (warned; the table and the reference sketch list the largest classes only;
            default 1000).
        probe: add estimated noise and confusions from the LBL002 probe to the table (default
            true; uses LBL002's default training sample (50,000 rows) and folds, so the probe
            runs once for both).
    """

    code = "LBL003"
    name = "labels.class-balance"
    groups = ("default", "labels")
    severity = Severity.WARN
    requires = ("label",)

    def __init__(
        self,
        max_imbalance: float = 20.0,
        min_class_rows: int = 5,
        min_expected_rows: float = 5.0,
        max_cramers_v: float = 0.1,
        max_classes: int = 1000,
        probe: bool = True,
        error_cramers_v: float = 0.5,
    ):
        self.max_imbalance = max_imbalance
        self.min_class_rows = min_class_rows
        self.min_expected_rows = min_expected_rows
        self.max_cramers_v = max_cramers_v
        self.max_classes = max_classes
        self.probe = probe
        self.error_cramers_v = error_cramers_v

    def check_options(self) -> None:
        if float(self.max_imbalance) < 1:
            raise ValueError(f"max_imbalance={self.max_imbalance} must be >= 1")
        if not 0 < float(self.max_cramers_v) <= 1:
            raise ValueError(f"max_cramers_v={self.max_cramers_v} must be in (0, 1]")
        if not float(self.max_cramers_v) <= float(self.error_cramers_v) <= 1:
            raise ValueError(
                f"error_cramers_v={self.error_cramers_v} must be in [max_cramers_v, 1]"
            )
        if int(self.max_classes) < 1:
            raise ValueError(f"max_classes={self.max_classes} must be >= 1")

    # -- state ----------------------------------------------------------------------------------
    def start(self, ctx: AuditContext) -> dict[str, Any]:
        return {
            "origin": state_origin(self, ctx),
            "seed": ctx.seed,
            "splits": PerSplit(partial(_Split.start, ctx.max_examples)),
            "conflicts": _conflicts.start("label"),
            "sample": BottomK(_probe.TRAIN_ROWS if self.probe else 0),
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        sp: _Split = state["splits"].at(batch.split)
        sp.kind = batch.kind
        lab = batch.feature("label")
        sp.rows += batch.num_rows
        counts, types = sp.counts, sp.types
        nulls = []
        for i, (v, t) in enumerate(zip(lab.values, lab.types)):
            types[t] = types.get(t, 0) + 1
            if v is None:
                sp.null_rows.append(batch.offset + i)
                nulls.append(i)
            else:
                counts[v] = counts.get(v, 0) + 1
                if t != "string":
                    sp.odd.add((batch.offset + i, t, v[:64]))
        if nulls:
            sp.null_ids.extend(ids_at(batch, nulls) or [])
        if batch.roles.has("input"):
            _conflicts.update(state["conflicts"], batch)
            if self.probe:
                _sample.offer(state["sample"], batch, state["seed"], max_chars=2000)
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {
            **a,
            "splits": a["splits"].merge(b["splits"]),
            "conflicts": _conflicts.merge(a["conflicts"], b["conflicts"]),
            "sample": a["sample"].merge(b["sample"]),
        }

    def sketch(self, state: dict[str, Any]) -> dict[str, Any]:
        """Per split: rows, labeled rows, class counts (bounded to ``max_classes`` + other)."""
        cap = int(self.max_classes)
        out: dict[str, Any] = {"max_classes": cap, "kinds": {}, "splits": {}}
        for name, sp in sorted(state["splits"].items()):
            counts = _keyed(sp.counts)
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            rest = ranked[cap:]
            out["kinds"][name] = sp.kind
            out["splits"][name] = {
                "rows": sp.rows,
                "labeled": sum(counts.values()),
                "classes": len(counts),
                "counts": dict(sorted(ranked[:cap])),
                "other_rows": sum(n for _, n in rest),
                "other_classes": len(rest),
            }
        return out

    # -- verdict --------------------------------------------------------------------------------
    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        result = RuleResult(
            thresholds={
                "max_imbalance": self.max_imbalance,
                "max_cramers_v": self.max_cramers_v,
                "error_cramers_v": self.error_cramers_v,
                "min_class_rows": self.min_class_rows,
            }
        )
        splits = state["splits"]
        train = ctx.train_split()
        if train not in splits:
            train = None
        names = sorted(splits, key=lambda n: (n != train, n))
        all_classes: dict[str, int] = {}
        for sp in splits.values():
            for k, v in sp.counts.items():
                all_classes[k] = all_classes.get(k, 0) + v

        for name in names:
            self._split_findings(result, ctx, name, splits[name], train)
        if train is not None:
            self._missing_and_drift(result, ctx, splits, train, names)
        comparisons, notes, ref_shares = self._vs_reference(result, ctx, splits)

        n_classes = len(all_classes)
        result.metric("classes", n_classes, Direction.NONE)
        if n_classes > int(self.max_classes):
            result.findings.append(
                Finding(
                    message=f"the label column has {n_classes:,} distinct values (more than "
                    f"max_classes={self.max_classes}): it looks like free text or an id, not a "
                    "class; the per-class table lists the largest classes only",
                    key="too_many_classes",
                    count=n_classes,
                )
            )
        if train is not None and len(splits[train].counts) == 1:
            (only,) = splits[train].counts
            result.findings.append(
                Finding(
                    message=f"{train}: every labeled row has the same label {only!r}; there is "
                    "nothing to learn",
                    key=f"single_class|{train}",
                    split=train,
                )
            )
        table = self._table(state, ctx, splits, names, all_classes)
        if ref_shares:
            for row in table:
                key = _class_key(row["class"])
                row["reference_share_by_split"] = {
                    n: shares.get(key, shares[_UNLISTED]) for n, shares in ref_shares.items()
                }
        result.details = {
            "classes": table,
            "comparisons": comparisons,
            "notes": notes,
            "sketch": self.sketch(state),
        }
        return result

    # -- against a reference (audit(new, reference=old)) ----------------------------------------
    def _vs_reference(
        self, result: RuleResult, ctx: AuditContext, splits: dict[str, Any]
    ) -> tuple[dict[str, Any], list[str], dict[str, dict[str, float | None]]]:
        comparisons: dict[str, Any] = {}
        notes: list[str] = []
        ref_shares: dict[str, dict[str, float | None]] = {}
        ref = reference_sketch(ctx, self.code)
        if ref is None:
            return comparisons, notes, ref_shares
        reason = None
        if not isinstance(ref, dict):
            reason = "the reference sketch is not readable"
        elif "unavailable" in ref:
            reason = str(ref["unavailable"])
        elif not isinstance(ref.get("splits"), dict) or not ref["splits"]:
            reason = "the reference has no labeled split"
        if reason is not None:
            self._ref_skipped(result, notes, f"reference comparison skipped: {reason}")
            return comparisons, notes, ref_shares
        for split, base in reference_matches(ctx, ref, splits):
            if base is None:
                notes.append(unmatched_note(split))
                continue
            rb = ref["splits"][base]
            label = pair_label("reference", base, split)
            if not isinstance(rb, dict) or not isinstance(rb.get("counts"), dict):
                notes.append(f"{label}: skipped (the reference sketch of {base!r} is malformed)")
                continue
            shares = self._compare_ref(result, split, base, label, splits[split], rb, comparisons)
            if shares is None:
                notes.append(f"{label}: skipped (no labeled rows on one side)")
            else:
                ref_shares[split] = shares
        if not comparisons:
            why = "; ".join(notes) or "no split to compare"
            self._ref_skipped(result, [], f"reference comparison skipped: {why}")
        return comparisons, notes, ref_shares

    @staticmethod
    def _ref_skipped(result: RuleResult, notes: list[str], reason: str) -> None:
        notes.append(reason)
        result.findings.append(
            Finding(message=reason, key="reference_skipped", severity=Severity.INFO)
        )

    def _compare_ref(
        self,
        result: RuleResult,
        split: str,
        base: str,
        label: str,
        sp: _Split,
        rb: dict[str, Any],
        comparisons: dict[str, Any],
    ) -> dict[str, float | None] | None:
        cur = _keyed(sp.counts)
        rc = {str(k): int(v) for k, v in rb["counts"].items()}
        r_other = int(rb.get("other_rows", 0) or 0)
        bucketed = int(rb.get("other_classes", 0) or 0) > 0
        r_total = sum(rc.values()) + r_other
        c_total = sum(cur.values())
        if not r_total or not c_total:
            return None
        if bucketed:
            # classes the reference did not list may hide in its "(other)" bucket
            classes = sorted(rc)
            c_other = sum(n for c, n in cur.items() if c not in rc)
            p = np.array([rc[c] for c in classes] + [r_other], float)
            q = np.array([cur.get(c, 0) for c in classes] + [c_other], float)
            columns = [*classes, OTHER]
            appeared: list[str] = []
        else:
            columns = sorted(set(rc) | set(cur))
            p = np.array([rc.get(c, 0) for c in columns], float)
            q = np.array([cur.get(c, 0) for c in columns], float)
            appeared = sorted(set(cur) - set(rc))
        gone = sorted(c for c in rc if rc[c] and c not in cur)
        js = js_divergence(p, q)
        chi2, dof, pval, v = chi2_contingency(np.vstack([p, q]))
        band = self._drift_band(v, pval)
        drift = band in ("warn", "error")
        result.metric(
            "label_js_divergence_vs_reference",
            js,
            Direction.LOWER,
            split=split,
            noise=_js_noise(dof, r_total, c_total),
        )
        result.metric(
            "label_cramers_v_vs_reference",
            v,
            Direction.LOWER,
            split=split,
            noise=_v_noise(dof, r_total + c_total),
        )
        result.metric("label_chi2_pvalue_vs_reference", pval, Direction.NONE, split=split)
        result.metric("classes_new_vs_reference", len(appeared), Direction.LOWER, split=split)
        result.metric("classes_gone_vs_reference", len(gone), Direction.LOWER, split=split)
        ps, qs = p / p.sum(), q / q.sum()
        comparisons[label] = {
            "reference_split": base,
            "js_divergence": round(js, 6),
            "cramers_v": round(v, 6),
            "chi2": round(chi2, 6),
            "dof": dof,
            "p_value": float(f"{pval:.6g}"),
            "drift": drift,
            "severity": band,
            "reference_rows": r_total,
            "rows": c_total,
            "reference_bucketed": bucketed,
            "new_classes": appeared[:1000],
            "gone_classes": gone[:1000],
        }
        if band is not None:
            shifts = _share_shifts(columns, ps, qs)
            desc = _describe_shifts(shifts)
            result.findings.append(
                Finding(
                    message=f"{split}: label distribution differs "
                    f"{'' if drift else 'slightly '}from reference {base} "
                    f"(Cramér's V {v:.2f}, JS divergence {js:.3f}, p={pval:.2g}); "
                    f"largest share changes: {desc}",
                    key=f"drift_vs_reference|{split}|{base}",
                    severity=band_severity(band),
                    count=c_total,
                    split=split,
                    data={
                        "reference_split": base,
                        "cramers_v": v,
                        "js_divergence": js,
                        "p_value": pval,
                        "shifts": {c: round(d, 6) for c, d in shifts[:20]},
                    },
                )
            )
        if appeared:
            worst = max(cur[c] / c_total * r_total for c in appeared)
            result.findings.append(
                Finding(
                    message=f"{split}: {plural(len(appeared), 'class')} {noun(len(appeared), 'is', 'are')} new since reference "
                    f"{base}: "
                    + ", ".join(f"{c!r} ({plural(cur[c], 'row')})" for c in appeared[:20]),
                    key=f"new_vs_reference|{split}|{base}",
                    severity=None if worst >= float(self.min_expected_rows) else Severity.INFO,
                    count=len(appeared),
                    split=split,
                    data={
                        "reference_split": base,
                        "classes": appeared[:1000],
                        "rows": {c: cur[c] for c in appeared[:1000]},
                    },
                )
            )
        if gone:
            worst = max(rc[c] / r_total * c_total for c in gone)
            result.findings.append(
                Finding(
                    message=f"{split}: {plural(len(gone), 'class')} of reference {base} "
                    f"{noun(len(gone), 'has', 'have')} no rows any more: "
                    + ", ".join(f"{c!r} (had {rc[c]:,})" for c in gone[:20]),
                    key=f"gone_vs_reference|{split}|{base}",
                    severity=None if worst >= float(self.min_expected_rows) else Severity.INFO,
                    count=len(gone),
                    split=split,
                    data={
                        "reference_split": base,
                        "classes": gone[:1000],
                        "reference_rows": {c: rc[c] for c in gone[:1000]},
                    },
                )
            )
        # a class the reference does not list: 0 share, or unknown when it may be in "(other)"
        shares: dict[str, float | None] = {c: round(rc[c] / r_total, 6) for c in rc}
        shares[_UNLISTED] = None if bucketed else 0.0
        return shares

    def _split_findings(self, result, ctx, name, sp, train) -> None:
        counts = sp.counts
        labeled = sum(counts.values())
        nulls = len(sp.null_rows)
        result.metric("classes", len(counts), Direction.NONE, split=name)
        result.metric(
            "null_label_rate",
            nulls / sp.rows if sp.rows else 0.0,
            Direction.LOWER,
            split=name,
        )
        if counts:
            top = max(counts.values())
            low = min(counts.values())
            ratio = top / low
            result.metric("imbalance_ratio", ratio, Direction.LOWER, split=name)
            result.metric("majority_share", top / labeled, Direction.NONE, split=name)
            if len(counts) > 1 and ratio > float(self.max_imbalance):
                big = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
                result.findings.append(
                    Finding(
                        message=f"{name}: classes are imbalanced {ratio:.1f}:1 (largest "
                        f"{big[0][0]!r} {plural(big[0][1], 'row')}, smallest {big[-1][0]!r} "
                        f"{big[-1][1]:,}; max_imbalance={self.max_imbalance})",
                        key=f"imbalance|{name}",
                        count=len(counts),
                        split=name,
                        data={"ratio": ratio},
                    )
                )
        if nulls:
            result.flags.add(
                name,
                np.asarray(sp.null_rows, np.int64),
                detail="null label",
                action="review",
                id=sp.null_ids or None,
            )
            result.findings.append(
                Finding(
                    message=f"{name}: {nulls:,} of {sp.rows:,} rows {noun(nulls, 'has', 'have')} no label (null)",
                    key=f"null_label|{name}",
                    count=nulls,
                    split=name,
                    examples=[ctx.example(name, r) for r in sp.null_rows[: ctx.max_examples]],
                )
            )
        types = {t: n for t, n in sp.types.items() if t != "null"}
        if len(types) > 1:
            desc = ", ".join(f"{t} ({n:,})" for t, n in sorted(types.items()))
            result.findings.append(
                Finding(
                    message=f"{name}: the label column mixes value types: {desc}; "
                    "1 and '1' are the same class here but not to most training code",
                    key=f"mixed_types|{name}",
                    count=sum(types.values()),
                    split=name,
                    examples=[ctx.example(name, r, None, type=t, label=v) for r, t, v in sp.odd],
                    data={"types": dict(sorted(types.items()))},
                )
            )
        if name == train:
            rare = sorted(c for c, n in counts.items() if n < int(self.min_class_rows))
            if rare and len(counts) > 1:
                result.findings.append(
                    Finding(
                        message=f"{name}: {plural(len(rare), 'class')} {noun(len(rare), 'has', 'have')} fewer than "
                        f"{self.min_class_rows} rows: {', '.join(map(repr, rare[:20]))}",
                        key=f"rare|{name}",
                        severity=Severity.INFO,
                        count=len(rare),
                        split=name,
                        data={"classes": rare[:1000]},
                    )
                )

    def _missing_and_drift(self, result, ctx, splits, train, names) -> None:
        tr = splits[train].counts
        tr_total = sum(tr.values())
        for name in names:
            if name == train:
                continue
            ev = splits[name].counts
            ev_total = sum(ev.values())
            for cls in sorted(set(ev) - set(tr)):
                result.findings.append(
                    Finding(
                        message=f"{name}: class {cls!r} ({plural(ev[cls], 'row')}) never appears in "
                        f"{train}; no model trained on {train} can predict it",
                        key=f"unseen|{name}|{cls}",
                        severity=Severity.ERROR,
                        count=ev[cls],
                        split=name,
                        data={"class": cls},
                    )
                )
            missing = sorted(set(tr) - set(ev))
            if missing and ev_total:
                expected = {c: tr[c] / tr_total * ev_total for c in missing}
                worst = max(expected.values())
                result.findings.append(
                    Finding(
                        message=f"{name}: {plural(len(missing), 'class')} of {train} {noun(len(missing), 'has', 'have')} no rows here, "
                        f"so they are not evaluated: {', '.join(map(repr, missing[:20]))}",
                        key=f"missing|{name}",
                        severity=None if worst >= float(self.min_expected_rows) else Severity.INFO,
                        count=len(missing),
                        split=name,
                        data={"classes": missing[:1000], "max_expected_rows": round(worst, 2)},
                    )
                )
            if not ev_total or not tr_total:
                continue
            classes = sorted(set(tr) | set(ev))
            p = np.array([tr.get(c, 0) for c in classes], float)
            q = np.array([ev.get(c, 0) for c in classes], float)
            js = js_divergence(p, q)
            _, dof, pval, v = chi2_contingency(np.vstack([p, q]))
            result.metric(
                "label_js_divergence",
                js,
                Direction.LOWER,
                split=name,
                noise=_js_noise(dof, p.sum(), q.sum()),
            )
            result.metric(
                "label_cramers_v",
                v,
                Direction.LOWER,
                split=name,
                noise=_v_noise(dof, p.sum() + q.sum()),
            )
            result.metric("label_chi2_pvalue", pval, Direction.NONE, split=name)
            band = self._drift_band(v, pval)
            if band is not None:
                shifts = _share_shifts(classes, p / p.sum(), q / q.sum())
                desc = _describe_shifts(shifts)
                slightly = "" if band in ("warn", "error") else "slightly "
                result.findings.append(
                    Finding(
                        message=f"{name}: label distribution differs {slightly}from {train} "
                        f"(Cramér's V {v:.2f}, JS divergence {js:.3f}, p={pval:.2g}); "
                        f"largest share changes: {desc}",
                        key=f"drift|{name}",
                        severity=band_severity(band),
                        count=ev_total,
                        split=name,
                        data={"cramers_v": v, "js_divergence": js, "p_value": pval},
                    )
                )

    def _drift_band(self, v: float, pval: float) -> str | None:
        """Label drift graded by Cramér's V: info when significant (p < 0.001) but below
        ``max_cramers_v``; warn from it (p < 0.01); error from ``error_cramers_v``."""
        if not (v == v and pval == pval):  # nan: nothing to compare
            return None
        big = v >= float(self.max_cramers_v)
        return grade(
            significant=pval < (0.01 if big else 0.001),
            warn=big,
            error=v >= float(self.error_cramers_v),
        )

    def _table(self, state, ctx, splits, names, all_classes) -> list[dict[str, Any]]:
        # conflict rate per class (exact same-input groups, any split)
        conflict_rows: dict[str, int] = {}
        input_rows: dict[str, int] = {}
        vocab = state["conflicts"]["vocab"]
        for sc in _conflicts.find(state["conflicts"]).values():
            for lid, n in sc.label_rows.items():
                input_rows[vocab[lid]] = input_rows.get(vocab[lid], 0) + n
            for g in sc.groups:
                for lid in g.labels:
                    conflict_rows[vocab[lid]] = conflict_rows.get(vocab[lid], 0) + 1
        noise: dict[str, float] = {}
        confusions: dict[str, list[dict[str, Any]]] = {}
        if self.probe and len(state["sample"]):
            run = _probe.run_probe(
                _sample.sampled(state["sample"]),
                seed=state["seed"],
                folds=5,
                min_rows=50,
                min_class_rows=5,
                max_classes=200,
            )
            if not isinstance(run, str):
                for j, c in enumerate(run.classes):
                    noise[c] = round(float(run.cl.noise_rate[j]), 4)
                    row = run.cl.joint[j]
                    conf = sorted(
                        (
                            (run.classes[m], int(row[m]))
                            for m in range(len(row))
                            if m != j and row[m]
                        ),
                        key=lambda kv: (-kv[1], kv[0]),
                    )
                    confusions[c] = [{"likely": m, "rows": n} for m, n in conf[:3]]
        table = []
        top = sorted(all_classes.items(), key=lambda kv: (-kv[1], kv[0]))[: int(self.max_classes)]
        for cls, total in top:
            rows = {n: splits[n].counts.get(cls, 0) for n in names}
            share = {
                n: round(rows[n] / sum(splits[n].counts.values()), 6) if splits[n].counts else 0.0
                for n in names
            }
            table.append(
                {
                    "class": cls,
                    "rows": total,
                    "rows_by_split": rows,
                    "share_by_split": share,
                    "missing_from": [n for n in names if rows[n] == 0],
                    "conflict_rate": round(conflict_rows.get(cls, 0) / input_rows[cls], 6)
                    if input_rows.get(cls)
                    else 0.0,
                    "estimated_noise": noise.get(cls),
                    "worst_confusions": confusions.get(cls, []),
                }
            )
        return table

"""EVAL002: slices of rows where the model fails significantly more often."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...context import AuditContext
from ...rule import Direction, Finding, Flag, RuleResult, Severity
from ...stats import (
    benjamini_hochberg,
    binomial_excess,
    cohens_h,
    excess_pvalue,
    excess_pvalues,
)
from ...wording import plural
from ._rows import EvalRule, Table, gather, grade

#: the rules whose row flags are slice dimensions, and what a flag of each says about the row
FLAG_SLICES = {
    "DUP001": "exact duplicate",
    "DUP002": "near duplicate",
    "LEAK001": "also in another split (leak)",
    "LEAK002": "shares a long n-gram (contamination)",
    "LBL001": "conflicting labels",
    "LBL002": "label doubted",
    "LEN001": "truncated",
    "LEN002": "length outlier",
    "TXT001": "empty text",
    "TXT002": "encoding damage",
    "TXT003": "extreme length",
}


class FailureSlices(EvalRule):
    """Slices of rows (a source, a length range, duplicates, leaks, doubted labels, a split, a
    value of another column) where the model's error rate is significantly higher.

    What it does:
        Joins the model's predictions (``predictions=``) to the rows and searches one-attribute
        slices over what the audit knows of each row: its split, its source, its length
        (quartile buckets of the audit's token lengths), whether another rule flagged it (exact
        or near duplicate, leaked, contaminated, conflicting or doubted label, truncated, length
        outlier, empty, encoding damage: the rules in ``FLAG_SLICES`` that ran) and the values
        of the dataset's other columns with at most ``max_values`` distinct values. Each slice
        of at least ``min_size`` rows is tested against the rest with a one-sided Fisher exact
        test; Benjamini–Hochberg over every slice tested controls the false discovery rate at
        ``alpha``. A significant slice with lift (its error rate over the overall rate) of at
        least ``min_lift`` is a finding, graded by Cohen's h between the slice and the rest
        (large on ``large_support`` rows: error; medium: warning; small: note), with its size,
        error rate, lift, p and q values and wrong rows as examples. Rows that LBL002 doubts
        and whose prediction is the label LBL002 finds likely are reported apart (flagged for
        review): there the label, not the model, may be wrong.
        With ``depth`` 2 it also searches two-attribute slices (``source = 'forum'`` and
        length 300-900 tokens): each pair of tested slices from two dimensions whose overlap has
        at least ``min_size`` rows, at most ``max_pairs`` pairs (those of the highest error rates
        first). A pair is a finding only when it is worse than either attribute alone: its
        error rate at least ``min_lift`` times its worse parent's and its excess within that
        parent significant (one-sided Fisher within the parent; Benjamini–Hochberg over the
        pairs tested at ``alpha``); so a pair never repeats a single-attribute finding.

    Why it matters:
        A model that fails on one source, on long rows or on duplicated rows has learned
        something about the data, not the task; and a test row whose label is wrong counts as
        the model's error. Knowing where it fails says what to fix: the data, the labels or the
        model.

    Example:
        ``source = 'glossary': error rate 0.62 vs 0.18 overall (lift 3.4, 58 rows, q=2e-9)``.

    Options:
        alpha: false discovery rate over all slices tested (default 0.05).
        min_size: smallest slice tested, in rows (default 10).
        min_lift: smallest lift reported (default 1.25).
        min_effect: smallest effect size (Cohen's h) reported (default 0.2).
        large_support: rows a slice needs for a large effect to be an error (default 30).
        max_values: columns with more distinct values are not sliced (default 50).
        max_chars: characters of a wrong row's text kept for examples (default 1000).
        max_listed: slices listed in the details, ranked by q-value (default 50).
        depth: 1 for single-attribute slices only, 2 to add attribute pairs (default 2).
        max_pairs: most attribute pairs tested (default 5000).
    """

    code = "EVAL002"
    name = "eval.failure-slices"
    severity = Severity.WARN
    after = tuple(FLAG_SLICES)
    user_columns = True

    def __init__(
        self,
        alpha: float = 0.05,
        min_size: int = 10,
        min_lift: float = 1.25,
        min_effect: float = 0.2,
        large_support: int = 30,
        max_values: int = 50,
        max_chars: int = 1000,
        max_listed: int = 50,
        depth: int = 2,
        max_pairs: int = 5000,
    ):
        self.alpha = alpha
        self.min_size = min_size
        self.min_lift = min_lift
        self.min_effect = min_effect
        self.large_support = large_support
        self.max_values = max_values
        self.max_chars = max_chars
        self.max_listed = max_listed
        self.depth = depth
        self.max_pairs = max_pairs

    def check_options(self) -> None:
        if int(self.depth) not in (1, 2):
            raise ValueError(f"depth={self.depth}: 1 (single attributes) or 2 (and pairs)")
        if int(self.max_pairs) < 0:
            raise ValueError(f"max_pairs={self.max_pairs} must be >= 0")

    # -- finish ------------------------------------------------------------------------------------
    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        t = gather(state["rows"])
        result = RuleResult(
            thresholds={
                "alpha": self.alpha,
                "min_size": self.min_size,
                "min_lift": self.min_lift,
            }
        )
        if t.n == 0:
            result.skipped = "no row with a prediction has a label or score to judge it by"
            return result
        wrong = t.wrong
        n, errors = t.n, int(wrong.sum())
        rate = errors / n
        result.metric("error_rate", round(rate, 6), Direction.LOWER)
        dims, unavailable = self._dimensions(t, ctx)
        tested: list[dict[str, Any]] = []
        members: list[np.ndarray] = []
        for dim, values in dims.items():
            for value, mask in values:
                m = int(mask.sum())
                if m < int(self.min_size) or m >= n:
                    continue
                k = int(wrong[mask].sum())
                tested.append(
                    {
                        "dimension": dim,
                        "value": value,
                        "size": m,
                        "wrong": k,
                        "error_rate": k / m,
                        "lift": (k / m) / rate if rate else 0.0,
                        "rest_error_rate": (errors - k) / (n - m),
                        "p": excess_pvalue(k, m, errors, n),
                    }
                )
                members.append(mask)
        qvalues = benjamini_hochberg([s["p"] for s in tested])
        for s, q in zip(tested, qvalues):
            s["q"] = float(q)
            s["effect_h"] = cohens_h(1 - s["rest_error_rate"], 1 - s["error_rate"])
        order = sorted(
            range(len(tested)),
            key=lambda i: (tested[i]["q"], -tested[i]["lift"], tested[i]["dimension"],
                           str(tested[i]["value"])),
        )  # fmt: skip
        found = 0
        for i in order:
            s = tested[i]
            if s["q"] > float(self.alpha) or s["lift"] < float(self.min_lift):
                continue
            level = grade(
                s["effect_h"],
                s["size"],
                min_effect=float(self.min_effect),
                large_support=int(self.large_support),
            )
            if level is None:
                continue
            found += 1
            chosen = np.flatnonzero(members[i] & wrong)[: ctx.max_examples]
            result.findings.append(
                Finding(
                    message=f"{_slice_name(s)}: error rate {s['error_rate']:.2f} vs "
                    f"{s['rest_error_rate']:.2f} for the other rows and {rate:.2f} overall "
                    f"(lift {s['lift']:.2f} over overall, "
                    f"{plural(s['size'], 'row')}, q={s['q']:.2g}, effect h={s['effect_h']:.2f})",
                    key=f"slice|{s['dimension']}|{s['value']}",
                    severity=Severity(level),
                    count=s["wrong"],
                    examples=[t.example(ctx, int(j)) for j in chosen],
                    data=_rounded(s),
                )
            )
        result.metric("failing_slices", found, Direction.LOWER)
        result.metric("slices_tested", len(tested), Direction.NONE)
        pairs = self._pairs(tested, members, wrong, rate, t, ctx, result) if self.depth == 2 else []
        agreement = self._label_not_model(result, t, ctx)
        result.details = {
            "rows": n,
            "wrong": errors,
            "error_rate": round(rate, 6),
            "dimensions": {d: len(v) for d, v in dims.items()},
            "unavailable": unavailable,
            "slices": [_rounded(tested[i]) for i in order[: int(self.max_listed)]],
            "slice_pairs": pairs[: int(self.max_listed)],
            "unjudged": dict(state["rows"].unjudged),
            "label_not_model": agreement,
        }
        return result

    def _dimensions(
        self, t: Table, ctx: AuditContext
    ) -> tuple[dict[str, list[tuple[Any, np.ndarray]]], dict[str, str]]:
        dims: dict[str, list[tuple[Any, np.ndarray]]] = {}
        unavailable: dict[str, str] = {}
        if len(set(t.split.tolist())) > 1:
            dims["split"] = _categories(t.split.tolist(), None)
        else:
            unavailable["split"] = "every row with a prediction is in one split"
        if t.source is not None:
            dims["source"] = _categories(t.source, int(self.max_values))
        else:
            unavailable["source"] = "the dataset has no source column (source=COLUMN)"
        dims["length"] = _length_buckets(t.length, ctx.resources.tokenizer.unit)
        keys = {(s, int(r)): i for i, (s, r) in enumerate(zip(t.split.tolist(), t.row.tolist()))}
        for code, meaning in FLAG_SLICES.items():
            res = ctx.results.get(code)
            if res is None:
                unavailable[f"{meaning} ({code})"] = f"{code} did not run in this audit"
                continue
            mask = np.zeros(t.n, bool)
            for f in res.flags:
                i = keys.get((f.split, int(f.row)))
                if i is not None:
                    mask[i] = True
            dims[f"{meaning} ({code})"] = [("yes", mask), ("no", ~mask)]
        for col, values in sorted(t.user.items()):
            distinct = len(set(values))
            if 2 <= distinct <= int(self.max_values):
                dims[f"column {col}"] = _categories(values, int(self.max_values))
            else:
                unavailable[f"column {col}"] = (
                    f"{distinct} distinct value(s); sliced when 2 to max_values={self.max_values}"
                )
        return dims, unavailable

    def _pairs(self, tested, members, wrong, rate, t, ctx, result) -> list[dict[str, Any]]:
        """Two-attribute slices worse than either attribute alone (findings), ranked by q."""
        n, errors = t.n, int(wrong.sum())
        # parents: tested slices with an error; the worst first, so a cap keeps the likeliest
        parents = sorted(
            (i for i, s in enumerate(tested) if s["wrong"]),
            key=lambda i: (-tested[i]["error_rate"], tested[i]["dimension"], str(tested[i]["value"])),
        )  # fmt: skip
        cands: list[tuple[int, int, int, int]] = []  # parent a, parent b, size, wrong
        for x, i in enumerate(parents):
            for j in parents[x + 1 :]:
                if len(cands) >= int(self.max_pairs):
                    break
                if tested[i]["dimension"] == tested[j]["dimension"]:
                    continue
                both = members[i] & members[j]
                m = int(both.sum())
                if m < int(self.min_size) or m in (tested[i]["size"], tested[j]["size"]):
                    continue  # too small, or one attribute implies the other here
                cands.append((i, j, m, int(wrong[both].sum())))
        result.metric("slice_pairs_tested", len(cands), Direction.NONE)
        if not cands:
            result.metric("failing_slice_pairs", 0, Direction.LOWER)
            return []
        a, b, m, k = (np.array(c) for c in zip(*cands))
        # the worse parent: the one the pair must beat
        worse = np.where(
            [tested[x]["error_rate"] >= tested[y]["error_rate"] for x, y in zip(a, b)], a, b
        )
        pm = np.array([tested[x]["size"] for x in worse])
        pk = np.array([tested[x]["wrong"] for x in worse])
        p_within = excess_pvalues(k, m, pk, pm)
        q = benjamini_hochberg(p_within.tolist())
        rows = []
        for c in range(len(cands)):
            s_rate = k[c] / m[c]
            parent_rate = pk[c] / pm[c]
            rest = (errors - k[c]) / (n - m[c])
            rows.append(
                {
                    "slice": " and ".join(sorted(_slice_name(tested[x]) for x in (a[c], b[c]))),
                    "size": int(m[c]),
                    "wrong": int(k[c]),
                    "error_rate": round(float(s_rate), 4),
                    "rest_error_rate": round(float(rest), 4),
                    "worse_parent": _slice_name(tested[worse[c]]),
                    "worse_parent_error_rate": round(float(parent_rate), 4),
                    "lift_over_parent": round(float(s_rate / parent_rate), 4),
                    "p": float(f"{p_within[c]:.4g}"),
                    "q": float(f"{q[c]:.4g}"),
                    "effect_h": round(float(cohens_h(1 - rest, 1 - s_rate)), 4),
                    "_c": c,
                }
            )
        rows.sort(key=lambda r: (r["q"], -r["lift_over_parent"], r["slice"]))
        found = 0
        for r in rows:
            c = r.pop("_c")
            if r["q"] > float(self.alpha) or r["lift_over_parent"] < float(self.min_lift):
                continue
            level = grade(
                r["effect_h"],
                r["size"],
                min_effect=float(self.min_effect),
                large_support=int(self.large_support),
            )
            if level is None:
                continue
            found += 1
            both = members[a[c]] & members[b[c]]
            chosen = np.flatnonzero(both & wrong)[: ctx.max_examples]
            dims = sorted((tested[x]["dimension"], str(tested[x]["value"])) for x in (a[c], b[c]))
            result.findings.append(
                Finding(
                    message=f"{r['slice']}: error rate {r['error_rate']:.2f} vs "
                    f"{r['rest_error_rate']:.2f} for the other rows and "
                    f"{r['worse_parent_error_rate']:.2f} for {r['worse_parent']} alone (lift "
                    f"{r['lift_over_parent']:.2f} over it, {plural(r['size'], 'row')}, "
                    f"q={r['q']:.2g}, effect h={r['effect_h']:.2f})",
                    key="slice2|" + "|".join(f"{d}|{v}" for d, v in dims),
                    severity=Severity(level),
                    count=r["wrong"],
                    examples=[t.example(ctx, int(j)) for j in chosen],
                    data=dict(r),
                )
            )
        result.metric("failing_slice_pairs", found, Direction.LOWER)
        return rows

    def _label_not_model(
        self, result: RuleResult, t: Table, ctx: AuditContext
    ) -> dict[str, Any] | None:
        """Wrong rows whose prediction is the label LBL002 finds likely: the label may be wrong.

        A model that errs at random on a doubted row would name LBL002's likely label one time
        in (classes - 1); reported (and the rows flagged for review) when the agreement is
        significantly above that chance (one-sided binomial test at ``alpha``)."""
        res = ctx.results.get("LBL002")
        if res is None:
            return None
        likely: dict[tuple[str, int], str] = {}
        for f in res.flags:
            detail = f.detail or ""
            if "likely=" in detail:
                likely[(f.split, int(f.row))] = detail.split("likely=", 1)[1]
        doubted = [
            i
            for i in np.flatnonzero(t.wrong).tolist()
            if t.pred[i] is not None and (str(t.split[i]), int(t.row[i])) in likely
        ]
        hits = [i for i in doubted if likely[(str(t.split[i]), int(t.row[i]))] == t.pred[i]]
        classes = {c for c in t.gold if c is not None} | {c for c in t.pred if c is not None}
        chance = 1 / max(len(classes) - 1, 1)
        p = binomial_excess(len(hits), len(doubted), chance)
        result.metric("label_not_model_rows", len(hits), Direction.LOWER)
        agreement = {
            "wrong_doubted_rows": len(doubted),
            "predicted_as_likely": len(hits),
            "chance": round(chance, 4),
            "p": float(f"{p:.4g}"),
        }
        if not hits or p > float(self.alpha):
            return agreement
        for i in hits:
            result.flags.append(
                Flag(
                    str(t.split[i]),
                    int(t.row[i]),
                    detail=f"given={t.gold[i]} predicted={t.pred[i]} (LBL002 likely={t.pred[i]})",
                    action="review",
                    id=t.ids[i],
                )
            )
        splits = sorted({str(t.split[i]) for i in hits})
        result.findings.append(
            Finding(
                message=f"{len(hits)} of the {plural(len(doubted), 'wrong row')} whose label "
                f"LBL002 doubts {'is' if len(hits) == 1 else 'are'} predicted as the label LBL002 finds likely (chance: "
                f"{chance:.0%}, p={p:.2g}): the label, not the model, may be wrong (splits: "
                f"{', '.join(splits)}); relabel them before counting them as the model's errors",
                key="label-not-model",
                count=len(hits),
                examples=[t.example(ctx, i) for i in hits[: ctx.max_examples]],
                data=dict(agreement),
            )
        )
        return agreement


def _categories(values: list[Any], limit: int | None) -> list[tuple[Any, np.ndarray]]:
    arr = np.array(["\x00null" if v is None else str(v) for v in values], dtype=object)
    uniq = sorted(set(arr.tolist()))
    if limit is not None and len(uniq) > limit:
        return []
    return [(None if u == "\x00null" else u, arr == u) for u in uniq]


def _length_buckets(length: np.ndarray, unit: str) -> list[tuple[Any, np.ndarray]]:
    if not len(length):
        return []
    edges = sorted(set(np.quantile(length, [0.25, 0.5, 0.75], method="lower").astype(int)))
    out = []
    lo = int(length.min())
    for e in [*edges, int(length.max())]:
        mask = (length >= lo) & (length <= e)
        if mask.any() and e >= lo:
            out.append((f"{lo}-{e} {unit}", mask))
        lo = e + 1
    return out


def _slice_name(s: dict[str, Any]) -> str:
    dim, value = s["dimension"], s["value"]
    if value in ("yes", "no") and dim.endswith(")") and "(" in dim:
        meaning, code = dim[:-1].rsplit(" (", 1)
        return f"rows {code} flags ({meaning})" if value == "yes" else f"rows {code} does not flag"
    return f"{dim} = {value!r}"


def _rounded(s: dict[str, Any]) -> dict[str, Any]:
    out = dict(s)
    for k in ("error_rate", "rest_error_rate", "lift", "effect_h"):
        out[k] = round(float(out[k]), 4)
    for k in ("p", "q"):
        out[k] = float(f"{out[k]:.4g}")
    out["slice"] = _slice_name(s)
    return out

"""MIX001: the mixture of sources, in rows and tokens, per split and against a declared recipe."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._arrow import fixed, one_chunk
from ..._compute import pc
from ...context import AuditContext
from ...errors import ConfigError
from ...features import Batch
from ...rule import Direction, Finding, RuleResult, Severity
from ...sketches.histogram import DistinctCounter
from ...sketches.state import PerSplit, merge_values
from ...stats import chi2_contingency
from .._drift import DriftRule, band_severity, comparison_plan, grade, pair_label
from .._origin import check_origin, state_origin

NO_SOURCE = "(no source)"


class MixtureProportions(DriftRule):
    """Is the data mixture what you meant? Source shares per split, against a declared recipe.

    What it does:
        Per split and per value of the source column: rows, tokens (whitespace words without a
        tokenizer), their shares, mean length, and the exact-duplicate rate inside the source
        (from the shared normalized-text hash; exact up to 16,384 distinct rows per source, a
        ~1% KMV estimate above). With a ``recipe`` it compares the shares of the checked splits
        (train by default) with the declared ones, graded by the distance from the recipe: a
        share off by more than ``tolerance`` is a warning, by more than ``error_tolerance``
        (default twice the tolerance) an error; a recipe source missing from the data is an
        error; a source not in the recipe is a warning (an error when it holds more than
        ``error_tolerance`` of the data). The total variation distance from the recipe (half the
        sum of the absolute share differences) is the metric ``recipe_distance``; the details
        hold each split's shares beside the recipe (``recipe_shares``) for the report's chart.
        Between splits (eval vs train, and each split vs a reference) it tests whether the
        source mix differs, by Cramér's V of the split × source row counts (an effect size),
        gated by a chi² test at ``alpha``: info below ``min_v``, warn from it, error from
        ``error_v``.

    Why it matters:
        Mixture weights are among the strongest levers on what a model learns; a silently
        broken upsampling step or a missing shard changes them without any error. An eval split
        with another source mix than train measures a different task.

    Example:
        ``recipe: {web: 0.6, code: 0.3, books: 0.1}`` with 0.75 of the tokens from web: MIX001
        fails "train: web is 75.0% of tokens, recipe 60.0% (error beyond ±10.0%)"; at 63% it
        would warn (beyond ±5.0%).

    Options:
        recipe: declared shares by source, summing to 1 (default none: shares are only reported).
        tolerance: allowed absolute deviation of a share from the recipe; beyond it, a warning
            (default 0.05).
        error_tolerance: deviation beyond which it is an error (default none: twice
            ``tolerance``).
        share: compare the recipe with shares of "tokens" (default) or "rows".
        splits: the splits checked against the recipe (default: the train split, or every split
            when there is none).
        min_v: Cramér's V between two splits' source mixes that counts as drift (default 0.1).
        error_v: Cramér's V from which that drift is an error (default 0.5, Cohen's "large";
            1.0: only disjoint source sets err).
        alpha: significance level of the chi² test gating the drift verdict (default 0.001).
    """

    code = "MIX001"
    name = "mixture.proportions"
    groups = ("default", "mixture", "drift")
    severity = Severity.WARN
    requires = ("source",)

    def __init__(
        self,
        recipe: dict[str, float] | None = None,
        tolerance: float = 0.05,
        share: str = "tokens",
        splits: list[str] | None = None,
        min_v: float = 0.1,
        alpha: float = 0.001,
        error_tolerance: float | None = None,
        error_v: float = 0.5,
    ):
        self.recipe = recipe
        self.tolerance = tolerance
        self.share = share
        self.splits = splits
        self.min_v = min_v
        self.alpha = alpha
        self.error_tolerance = error_tolerance
        self.error_v = error_v

    def _error_tolerance(self) -> float:
        return 2 * self.tolerance if self.error_tolerance is None else float(self.error_tolerance)

    def check_options(self) -> None:
        if self.share not in ("tokens", "rows"):
            raise ValueError(f"share={self.share!r} must be 'tokens' or 'rows'")
        if not 0 < self.tolerance < 1:
            raise ValueError(f"tolerance={self.tolerance} must be in (0, 1)")
        if not self.tolerance <= self._error_tolerance() <= 1:
            raise ValueError(f"error_tolerance={self.error_tolerance} must be in [tolerance, 1]")
        if not self.min_v <= self.error_v <= 1:
            raise ValueError(f"error_v={self.error_v} must be in [min_v, 1]")
        if self.recipe is not None:
            if not isinstance(self.recipe, dict) or not self.recipe:
                raise ValueError("recipe must be a mapping of source -> share, e.g. {web: 0.6}")
            bad = {
                k: v
                for k, v in self.recipe.items()
                if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0
            }
            if bad:
                raise ValueError(f"recipe shares must be non-negative numbers, got {bad}")
            total = float(sum(self.recipe.values()))
            if abs(total - 1.0) > 1e-3:
                raise ValueError(
                    f"recipe shares sum to {total:.4g}, not 1: "
                    + ", ".join(f"{k}={v}" for k, v in self.recipe.items())
                )

    def skip_reason(self, ctx: AuditContext) -> str | None:
        if self.recipe and not ctx.roles.has("source"):
            return None  # start() raises: a recipe without a source column is a config error
        return super().skip_reason(ctx)

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        if self.recipe and not ctx.roles.has("source"):
            raise ConfigError(
                "MIX001: a mixture recipe is configured but the dataset has no source column; "
                "name it with source=COLUMN (--column source=COLUMN) or remove the recipe."
            )
        tok = ctx.resources.tokenizer
        return {
            "origin": state_origin(self, ctx, tokenizer=tok.key),
            "tok": tok.key,
            "unit": tok.unit,
            "splits": PerSplit(dict),
            "kinds": {},
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        enc = pc.dictionary_encode(one_chunk(batch.role("source")))
        names = [str(v) for v in enc.dictionary.to_pylist()]
        codes = fixed(enc.indices, null=len(names)).astype(np.int64)
        names.append(NO_SOURCE)
        lengths = batch.feature("token_lengths", tokenizer=state["tok"])
        hashes = batch.feature("normalized_hash")
        state["kinds"][batch.split] = batch.kind
        split = state["splits"].at(batch.split)  # source -> counts
        rows = np.bincount(codes, minlength=len(names))
        toks = np.bincount(codes, weights=np.maximum(lengths, 0), minlength=len(names))
        nonnull = np.bincount(codes, weights=(hashes != 0), minlength=len(names))
        for i in np.flatnonzero(rows):
            name = names[i]
            s = split.get(name)
            if s is None:
                s = split[name] = {
                    "rows": 0,
                    "tokens": 0,
                    "texts": 0,
                    "distinct": DistinctCounter(),
                }
            s["rows"] += int(rows[i])
            s["tokens"] += int(toks[i])
            s["texts"] += int(nonnull[i])
            h = hashes[(codes == i) & (hashes != 0)]
            s["distinct"].add(h)
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        # per split and source: counts add, the distinct counters merge
        splits = a["splits"].merge(b["splits"])
        return {**a, "splits": splits, "kinds": merge_values(a["kinds"], b["kinds"])}

    def sketch(self, state: dict[str, Any]) -> dict[str, Any]:
        return {
            "tokenizer": state["tok"],
            "unit": state["unit"],
            "kinds": dict(state["kinds"]),
            "splits": {
                name: {
                    src: {"rows": s["rows"], "tokens": s["tokens"]}
                    for src, s in sorted(srcs.items())
                }
                for name, srcs in sorted(state["splits"].items())
            },
        }

    def _table(self, srcs: dict[str, Any]) -> dict[str, dict[str, Any]]:
        total_rows = sum(s["rows"] for s in srcs.values())
        total_tokens = sum(s["tokens"] for s in srcs.values())
        out = {}
        for src in sorted(srcs):
            s = srcs[src]
            row: dict[str, Any] = {
                "rows": s["rows"],
                "row_share": round(s["rows"] / total_rows, 6) if total_rows else 0.0,
                "tokens": s["tokens"],
                "token_share": round(s["tokens"] / total_tokens, 6) if total_tokens else 0.0,
                "mean_length": round(s["tokens"] / s["rows"], 3) if s["rows"] else 0.0,
            }
            if "distinct" in s:
                d: DistinctCounter = s["distinct"]
                row["duplicate_rate"] = (
                    round(max(0.0, 1 - d.estimate() / s["texts"]), 6) if s["texts"] else 0.0
                )
                row["duplicate_rate_exact"] = d.exact
            out[src] = row
        return out

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        unit = state["unit"]
        result = RuleResult(
            thresholds={
                "recipe": self.recipe,
                "tolerance": self.tolerance,
                "error_tolerance": self._error_tolerance(),
                "share": self.share,
                "min_v": self.min_v,
                "error_v": self.error_v,
                "alpha": self.alpha,
            },
            details={"unit": unit, "splits": {}, "comparisons": {}},
        )
        tables = {name: self._table(srcs) for name, srcs in sorted(state["splits"].items())}
        result.details["splits"] = tables
        for name, table in tables.items():
            for src, row in table.items():
                result.metric(f"row_share[{src}]", row["row_share"], split=name)
                result.metric(f"token_share[{src}]", row["token_share"], split=name, unit=unit)
        if self.recipe:
            self._check_recipe(result, tables, ctx, unit)
        present = {n: state["kinds"].get(n, "other") for n in state["splits"]}
        pairs, ref, notes = comparison_plan(ctx, self.code, present)
        for origin, base_name, split in pairs:
            base = state["splits"][base_name] if origin == "train" else ref["splits"][base_name]
            other = state["splits"][split]
            label = pair_label(origin, base_name, split)
            sources = sorted(set(base) | set(other))
            table = np.array(
                [
                    [base.get(s, {}).get("rows", 0) for s in sources],
                    [other.get(s, {}).get("rows", 0) for s in sources],
                ]
            )
            stat, dof, p, v = chi2_contingency(table)
            band = grade(significant=p < self.alpha, warn=v >= self.min_v, error=v >= self.error_v)
            drift = band in ("warn", "error")
            result.details["comparisons"][label] = {
                "cramers_v": round(v, 6),
                "chi2": round(stat, 6),
                "dof": dof,
                "pvalue": float(f"{p:.6g}"),
                "drift": drift,
                "severity": band,
            }
            suffix = "" if origin == "train" else "_vs_reference"
            # how far V moves by sampling alone: 3 x sqrt(dof / n), the V of two
            # same-distribution samples (chi² ~ dof)
            noise = round(3 * math.sqrt(max(dof, 1) / table.sum()), 6) if table.sum() else None
            result.metric(f"source_mix_v{suffix}", v, Direction.LOWER, split=split, noise=noise)
            if band is not None:
                bs, os_ = table[0] / table[0].sum(), table[1] / table[1].sum()
                shares = ", ".join(
                    f"{s} {a:.1%}→{b:.1%}"
                    for s, a, b in sorted(zip(sources, bs, os_), key=lambda t: -abs(t[2] - t[1]))
                )
                result.findings.append(
                    Finding(
                        message=f"{label}: source mix differs{'' if drift else ' slightly'} "
                        f"(Cramér's V {v:.3f}): {shares}",
                        key=f"drift|{origin}|{base_name}|{split}",
                        severity=band_severity(band),
                        split=split,
                        data={
                            "cramers_v": round(v, 6),
                            "base": {s: round(float(x), 6) for s, x in zip(sources, bs)},
                            "shares": {s: round(float(x), 6) for s, x in zip(sources, os_)},
                        },
                    )
                )
        result.details["notes"] = notes
        result.details["sketch"] = self.sketch(state)
        return result

    def _check_recipe(
        self, result: RuleResult, tables: dict[str, Any], ctx: AuditContext, unit: str
    ) -> None:
        recipe = {str(k): float(v) for k, v in self.recipe.items()}
        if self.splits:
            checked = [s for s in self.splits if s in tables]
            missing = [s for s in self.splits if s not in tables]
            for s in missing:
                result.findings.append(
                    Finding(
                        message=f"recipe split {s!r} is not in the dataset",
                        key=f"recipe|split|{s}",
                        severity=Severity.ERROR,
                    )
                )
        else:
            train = ctx.train_split()
            checked = [train] if train in tables else sorted(tables)
        col = "token_share" if self.share == "tokens" else "row_share"
        what = unit if self.share == "tokens" else "rows"
        err = self._error_tolerance()
        result.details["recipe_shares"] = {}
        for split in checked:
            table = tables[split]
            sources = sorted(set(recipe) | set(table))
            shares = {src: table.get(src, {}).get(col, 0.0) for src in sources}
            distance = 0.5 * sum(abs(shares[src] - recipe.get(src, 0.0)) for src in sources)
            result.metric("recipe_distance", round(distance, 6), Direction.LOWER, split=split)
            result.details["recipe_shares"][split] = {
                src: {"share": shares[src], "recipe": recipe.get(src)} for src in sources
            }
            for src in sources:
                want = recipe.get(src)
                got = shares[src]
                data = {"source": src, "share": got, "recipe": want, "unit": what}
                if want is None:
                    result.findings.append(
                        Finding(
                            message=f"{split}: source {src!r} is not in the recipe "
                            f"({got:.1%} of {what})",
                            key=f"recipe|unexpected|{split}|{src}",
                            severity=Severity.ERROR if got > err else Severity.WARN,
                            split=split,
                            count=table[src]["rows"],
                            data=data,
                        )
                    )
                elif src not in table:
                    if want > 0:
                        result.findings.append(
                            Finding(
                                message=f"{split}: recipe source {src!r} ({want:.1%}) is missing",
                                key=f"recipe|missing|{split}|{src}",
                                severity=Severity.ERROR,
                                split=split,
                                count=0,
                                data=data,
                            )
                        )
                elif abs(got - want) > self.tolerance:
                    error = abs(got - want) > err
                    band = f"error beyond ±{err:.1%}" if error else f"beyond ±{self.tolerance:.1%}"
                    result.findings.append(
                        Finding(
                            message=(
                                f"{split}: {src!r} is {got:.1%} of {what}, recipe {want:.1%} "
                                f"({band})"
                            ),
                            key=f"recipe|off|{split}|{src}",
                            severity=Severity.ERROR if error else Severity.WARN,
                            split=split,
                            count=table[src]["rows"],
                            data=data,
                        )
                    )

"""LBL001: rows with the same input but different labels."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa

from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, Rule, RuleResult, Severity
from ...sketches.lsh import choose_bands
from .._minhash import DEFAULTS as MINHASH
from .._origin import check_origin, state_origin
from . import _conflicts


class ConflictingLabels(Rule):
    """Rows whose input is the same (or a near duplicate) but whose labels differ.

    What it does:
        Groups rows of each split by their input text after normalization (NFKC, casefold,
        whitespace collapsed; for prompt/input data the prompt and input joined, for chat the
        conversation without its last reply) and, with ``near_duplicates``, joins rows that fall
        in one MinHash near-duplicate cluster (word 5-grams, the duplicate rules' signatures).
        A group whose rows carry more than one label is a conflict: each is reported with all
        its labels and rows (row flags carry the group id as cluster, the row's label as detail
        and the action ``review``: which label is right takes a person), with the conflict rate
        per split and the class pairs that conflict most. Labels may be strings, ints, bools or mixed; null
        labels and empty inputs are left out (LBL003 and TXT001 report them). For prompt/response
        data without a label column the response is the label: identical prompts with different
        responses are reported as info (several good answers can be fine; a model learns their
        average).
        Cost: no process holds every row. The rows meet in the engine's keyed stage (on disk
        locally, through the object store on Ray): each labeled row emits its input hash as a
        key and, with near_duplicates, each row with shingles one key per LSH band (18 at the
        default threshold, 25 bytes each); each row's label id, id, snippet (bounded by the
        report's example length) and 128 MinHash values (~0.5 KB) are stored once and meet
        the candidate pairs that name the row, where the pairs are verified. The state holds
        counts and the label names; the finish sees only rows that have a same-input or
        near-duplicate partner (the clusters' members, without their signatures).

    Why it matters:
        The same input with two labels is either an annotation error or an ill-defined class
        boundary. Either way the model is trained to be uncertain there and evaluation on such
        rows is a coin flip.

    Example:
        ``{"text": "Great phone, battery dies fast", "label": "positive"}`` and
        ``{"text": "great phone,  battery dies fast", "label": "negative"}`` form one group.

    Options:
        near_duplicates: also group rows of one near-duplicate cluster (default true; label
            columns only: for prompt/response data the groups are exact).
        threshold: estimated Jaccard similarity of a near-duplicate pair (default 0.8; the LSH
            bands are DUP002's at the same threshold; pairs are kept by the signature estimate).
        max_findings: at most this many groups become findings (largest first; every
            conflicting row is flagged regardless; default 100).
    """

    code = "LBL001"
    name = "labels.conflicting"
    groups = ("default", "labels")
    severity = Severity.WARN
    requires = ("input",)
    keyed = True  # rows meet by input hash and LSH band in the engine's keyed stage
    member_columns = _conflicts.MEMBER_COLUMNS  # what a cluster member brings to finish_keyed
    fetch_columns = _conflicts.FETCH_COLUMNS  # read for the groups' first rows only

    def __init__(
        self, near_duplicates: bool = True, threshold: float = 0.8, max_findings: int = 100
    ):
        self.near_duplicates = near_duplicates
        self.threshold = threshold
        self.max_findings = max_findings

    def check_options(self) -> None:
        if not 0.0 < float(self.threshold) <= 1.0:
            raise ValueError(f"threshold={self.threshold} must be in (0, 1]")
        if int(self.max_findings) < 0:
            raise ValueError(f"max_findings={self.max_findings} must be >= 0")

    def skip_reason(self, ctx: AuditContext) -> str | None:
        reason = super().skip_reason(ctx)
        if reason:
            return reason
        if not (ctx.roles.label or ctx.roles.response or ctx.roles.messages):
            return (
                "needs a label column (label=COLUMN), or prompt/response or chat data whose "
                "reply plays the label"
            )
        return None

    @staticmethod
    def _mode(ctx: AuditContext) -> str:
        return "label" if ctx.roles.label else "response"

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        mode = self._mode(ctx)
        near = bool(self.near_duplicates) and mode == "label"
        state = _conflicts.keyed_start(mode, snippets=ctx.example_chars, near=near)
        return {**state, "origin": state_origin(self, ctx)}

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        # counts and label names only: the rows go through the keyed stage (emit)
        return _conflicts.keyed_update(state, batch)

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {**_conflicts.keyed_merge(a, b), "origin": a.get("origin")}

    def emit(self, state: dict[str, Any], batch: Batch) -> pa.Table | None:
        """Per labeled row its normalized-input hash; with near duplicates, per row with
        shingles one key per LSH band (see ``_conflicts``)."""
        bands, per_band = choose_bands(float(self.threshold), MINHASH["num_perm"])
        return _conflicts.emit(state, batch, bands, per_band)

    def emit_rows(self, state: dict[str, Any], batch: Batch) -> pa.Table | None:
        """Once per row that emitted a key: its label, input hash, snippet, id and signature."""
        return _conflicts.emit_rows(state, batch)

    def edges(self, part: pa.Table) -> pa.Table:
        return _conflicts.edges(part)

    def verify_pairs(self, pairs: pa.Table, rows: pa.Table) -> pa.Table:
        return _conflicts.verify_pairs(pairs, rows, float(self.threshold))

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        raise RuntimeError(
            f"{self.code} finds its groups in the engine's keyed stage (finish_keyed)"
        )

    def finish_keyed(
        self, state: dict[str, Any], clusters: list[Any], ctx: AuditContext
    ) -> RuleResult:
        return self._result(state, _conflicts.find_keyed(state, clusters), ctx)

    def _result(
        self, state: dict[str, Any], per_split: dict[str, Any], ctx: AuditContext
    ) -> RuleResult:
        mode = state["mode"]
        result = RuleResult(
            thresholds={
                "threshold": self.threshold,
                "near_duplicates": bool(state["near"]),
                "max_findings": self.max_findings,
            }
        )
        vocab = state["vocab"]

        def name(label_id: int) -> str:
            return vocab.get(label_id, f"response:{label_id:016x}")

        all_groups = []
        pair_counts: Counter[tuple[str, str]] = Counter()
        for split, sc in per_split.items():
            conflict_rows = sum(len(g.rows) for g in sc.groups)
            rate = conflict_rows / sc.rows if sc.rows else 0.0
            result.metric("conflict_groups", len(sc.groups), Direction.LOWER, split=split)
            result.metric("conflict_rows", conflict_rows, Direction.LOWER, split=split)
            result.metric("conflict_rate", rate, Direction.LOWER, split=split)
            # the split's flags in one block (columns), not a Flag object per conflicting row
            rows: list[int] = []
            gids: list[str] = []
            details: list[str] = []
            ids: list[str | None] = []
            for g in sc.groups:
                gid = f"conflict-{g.key}"
                rows.extend(g.rows)
                gids.extend([gid] * len(g.rows))
                ids.extend(g.ids)
                if mode == "label":
                    details.extend(f"label={name(lab)}" for lab in g.labels)
                    labs = sorted({name(lab) for lab in g.labels})
                    for i, a in enumerate(labs):
                        for b in labs[i + 1 :]:
                            pair_counts[(a, b)] += 1
                all_groups.append(g)
            result.flags.add(
                split,
                np.asarray(rows, np.int64),
                group=gids,
                detail=details if mode == "label" else "response differs",
                action="review",
                id=ids,
            )
        details_groups = []
        for g in all_groups:
            labels = {
                name(k): v for k, v in sorted(g.label_counts.items(), key=lambda kv: name(kv[0]))
            }
            entry = {
                "split": g.split,
                "group": f"conflict-{g.key}",
                "kind": g.kind,
                "rows": g.rows[:100],
                "labels": labels if mode == "label" else {"distinct_responses": len(labels)},
            }
            details_groups.append(entry)
        ranked = sorted(all_groups, key=lambda g: (-len(g.rows), g.split, g.key))
        for g in ranked[: int(self.max_findings)]:
            gid = f"conflict-{g.key}"
            if mode == "label":
                labs = ", ".join(
                    f"{name(k)!r} x{v}"
                    for k, v in sorted(g.label_counts.items(), key=lambda kv: (-kv[1], name(kv[0])))
                )
                msg = (
                    f"{g.split}: {len(g.rows)} rows with the same input"
                    f"{' (near duplicates)' if g.kind == 'near' else ''} carry different labels: {labs}"
                )
                severity = None
            else:
                msg = (
                    f"{g.split}: {len(g.rows)} rows share one prompt but have "
                    f"{len(g.label_counts)} different responses"
                )
                severity = Severity.INFO
            examples = [
                ctx.example(
                    g.split,
                    r,
                    g.snippet if i == 0 else None,
                    **({"label": name(lab)} if mode == "label" else {}),
                )
                for i, (r, lab) in enumerate(zip(g.rows, g.labels))
            ][: max(ctx.max_examples, 2)]
            result.findings.append(
                Finding(
                    message=msg,
                    key=f"{g.split}|{g.key}",
                    severity=severity,
                    count=len(g.rows),
                    split=g.split,
                    examples=examples,
                    data={"group": gid, "kind": g.kind, "rows": g.rows[:100]},
                )
            )
        if len(ranked) > int(self.max_findings):
            rest = ranked[int(self.max_findings) :]
            result.findings.append(
                Finding(
                    message=f"{len(rest)} more conflict groups ({sum(len(g.rows) for g in rest)} "
                    "rows) are flagged but not listed (raise max_findings to list them)",
                    key="more",
                    severity=None if mode == "label" else Severity.INFO,
                    count=sum(len(g.rows) for g in rest),  # rows, as a listed group counts
                    rollup=True,
                )
            )
        result.details = {
            "mode": mode,
            "groups": details_groups[:1000],
            "class_pairs": [
                {"labels": [a, b], "groups": n}
                for (a, b), n in sorted(pair_counts.items(), key=lambda kv: (-kv[1], kv[0]))
            ][:50],
        }
        return result

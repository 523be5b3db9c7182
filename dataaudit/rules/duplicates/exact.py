"""DUP001: exact duplicates within a split, after normalization."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, Flag, Rule, RuleResult, Severity
from ...sketches.state import PerSplit
from ...wording import plural
from .._columns import append, cat, key_hex, row_columns, texts
from .._ids import take_ids
from .._origin import check_origin, state_origin
from ._sources import per_source, source_values


class ExactDuplicates(Rule):
    """Rows whose text is identical after normalization, within one split.

    What it does:
        Groups the rows of each split by a 64-bit hash of their normalized text: Unicode NFKC,
        casefolded, whitespace runs collapsed to one space and trimmed (the shared
        ``normalized_hash`` feature hashes its words; ASCII rows need no Unicode pass for it). Null, empty and whitespace-only rows are never duplicates of each
        other (TXT001 reports them). It reports the duplicate rate (rows you can remove keeping
        one per group), the number of groups, the largest groups with examples, and the rate per
        source when a source column exists. Every row of a group is flagged with the group id
        (its smallest row) as cluster: the first row ``kept`` with the action ``keep``, the others
        ``duplicate`` with the action ``drop``, so removing the drops keeps one row per group.

    Why it matters:
        Duplicates silently multiply the weight of their text in training and waste compute;
        large groups usually come from a broken crawl, join or upsampling step.

    Example:
        ``"Hello  World"`` and ``"hello world"`` are one group of two rows: one removable row.

    Options:
        max_findings: the largest groups reported as separate findings per split (default 20);
            the rest are summed up in one info finding.
    """

    code = "DUP001"
    name = "duplicates.exact"
    groups = ("default", "duplicates")
    severity = Severity.WARN
    requires = ("text",)

    def __init__(self, max_findings: int = 20):
        self.max_findings = max_findings

    def check_options(self) -> None:
        if int(self.max_findings) < 0:
            raise ValueError(f"max_findings={self.max_findings}: must be >= 0")

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        return {
            "origin": state_origin(self, ctx),
            "chars": ctx.example_chars,
            "splits": PerSplit(dict),
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        cols = row_columns(batch, state["chars"])
        sources = source_values(batch)
        if sources is not None:
            cols["source"] = sources
        append(state, batch.split, **cols)
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {**a, "splits": a["splits"].merge(b["splits"])}

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        result = RuleResult(thresholds={"max_findings": self.max_findings})
        details: dict[str, Any] = {}
        for split in sorted(state["splits"]):
            sp = state["splits"][split]
            rows = cat(sp.get("rows", []), np.int64)
            h = cat(sp.get("hash", []), np.uint64)
            n = len(rows)
            order = np.lexsort((rows, h))
            hs, rs = h[order], rows[order]
            valid = hs != 0
            new = np.concatenate([[True], hs[1:] != hs[:-1]]) if n else np.zeros(0, bool)
            gid = np.cumsum(new) - 1
            size = np.bincount(gid, minlength=int(gid[-1]) + 1 if n else 0)
            in_group = valid & (size[gid] > 1) if n else np.zeros(0, bool)
            removable_sorted = in_group & ~new
            removable = np.zeros(n, bool)
            removable[order] = removable_sorted
            starts = np.flatnonzero(new & in_group)
            dup_rows = int(removable_sorted.sum())
            rate = dup_rows / n if n else 0.0
            result.metric("duplicate_rows", dup_rows, Direction.LOWER, split=split)
            result.metric("duplicate_rate", rate, Direction.LOWER, split=split)
            result.metric("duplicate_groups", len(starts), Direction.LOWER, split=split)
            largest = int(size[gid[starts]].max()) if len(starts) else 0
            result.metric("largest_group", largest, Direction.LOWER, split=split)
            # flags: every member, group id = smallest row (first in sorted order)
            first_row = rs[np.maximum.accumulate(np.where(new, np.arange(n), 0))] if n else rs
            flagged = np.flatnonzero(in_group)
            result.flags.extend(
                Flag(
                    split,
                    row,
                    str(first),
                    "kept" if kept else "duplicate",
                    action="keep" if kept else "drop",
                    id=row_id,
                )
                for row, first, kept, row_id in zip(
                    rs[flagged].tolist(),
                    first_row[flagged].tolist(),
                    new[flagged].tolist(),
                    take_ids(sp.get("ids", []), order[flagged]),
                )
            )
            # findings: the largest groups
            sizes = size[gid[starts]]
            pick = starts[np.lexsort((rs[starts], -sizes))][: int(self.max_findings)]
            need = []
            for s in pick:
                need.extend(range(s, s + min(int(size[gid[s]]), ctx.max_examples)))
            positions = order[np.asarray(need, np.int64)] if need else np.empty(0, np.int64)
            snip = dict(zip(need, texts(sp.get("snip", []), positions)))
            for s in pick:
                k = int(size[gid[s]])
                members = rs[s : s + k]
                result.findings.append(
                    Finding(
                        message=(
                            f"{split}: {k} rows have the same normalized text "
                            f"({k - 1} removable); kept row {int(members[0])}"
                        ),
                        key=f"{split}:{key_hex(hs[s])}",
                        count=k - 1,
                        split=split,
                        examples=[
                            ctx.example(split, int(rs[p]), snip.get(p))
                            for p in range(s, s + min(k, ctx.max_examples))
                        ],
                        data={
                            "rows": [int(r) for r in members[:100]],
                            "size": k,
                        },
                    )
                )
            rest = len(starts) - len(pick)
            if rest > 0:
                rest_rows = int(
                    (sizes.sum() - len(starts)) - sum(int(size[gid[s]]) - 1 for s in pick)
                )
                result.findings.append(
                    Finding(
                        message=f"{split}: {plural(rest, 'more duplicate group')} "
                        f"({plural(rest_rows, 'removable row')})",
                        key=f"{split}:more",
                        severity=Severity.INFO,
                        count=rest_rows,
                        split=split,
                    )
                )
            details[split] = {
                "rows": n,
                "duplicate_rows": dup_rows,
                "groups": len(starts),
                "group_sizes": _size_histogram(sizes),
                "per_source": per_source(sp.get("source", []), removable, n),
            }
        result.details = {"splits": details}
        return result


def _size_histogram(sizes: np.ndarray) -> dict[str, int]:
    """Group count by size bucket: 2, 3-5, 6-10, 11-100, >100."""
    edges = [(2, 2), (3, 5), (6, 10), (11, 100), (101, None)]
    out = {}
    for lo, hi in edges:
        m = sizes >= lo if hi is None else (sizes >= lo) & (sizes <= hi)
        out[f"{lo}+" if hi is None else (str(lo) if lo == hi else f"{lo}-{hi}")] = int(m.sum())
    return out

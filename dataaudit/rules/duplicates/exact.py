"""DUP001: exact duplicates within a split, after normalization."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..._arrow import bools, fixed, indices, numeric_array
from ..._compute import pc
from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, Rule, RuleResult, Severity
from ...sketches.state import PerSplit
from ...wording import plural
from .._columns import key_hex, nonempty_hash, snippet
from .._origin import check_origin, state_origin
from ._sources import source_values, two_labels, with_row_labels


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
    keyed = True  # rows meet by normalized hash in the engine's keyed stage, not in one state

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
        # only counts: the rows themselves go through the keyed stage (emit)
        sp = state["splits"].at(batch.split)
        sp["rows"] = sp.get("rows", 0) + batch.num_rows
        sources = source_values(batch)
        if sources is not None:
            counts = sp.setdefault("sources", {})
            for item in pc.value_counts(sources).to_pylist():
                counts[item["values"]] = counts.get(item["values"], 0) + item["counts"]
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {**a, "splits": a["splits"].merge(b["splits"])}

    def emit(self, state: dict[str, Any], batch: Batch) -> pa.Table | None:
        """One key per row with text: its normalized hash; the payload is what a finding or a
        flag shows of the row (snippet, id, source)."""
        h = nonempty_hash(batch)
        keep = np.flatnonzero(h != 0)
        if not len(keep):
            return None
        at = indices(keep)
        cols: dict[str, Any] = {
            "key": numeric_array(np.asarray(h[keep], np.uint64)),
            "row": numeric_array(np.asarray(batch.row_ids, np.int64)[keep]),
            "snip": snippet(batch, state["chars"]).cast(pa.large_string()).take(at),
        }
        return with_row_labels(cols, batch, at)

    def edges(self, part: pa.Table) -> pa.Table:
        """Rows sorted by (key, split, row): each row with the same key and split as the row
        before it is that row's duplicate (a chain through the group)."""
        keys = fixed(part.column("key"))
        split = part.column("split")
        same_split = bools(pc.equal(split.slice(1), split.slice(0, len(split) - 1)))
        link = np.flatnonzero((keys[1:] == keys[:-1]) & same_split)
        row = part.column("row")
        a, b = indices(link), indices(link + 1)
        return pa.table(
            {
                "split_a": split.take(a),
                "row_a": row.take(a),
                "split_b": split.take(b),
                "row_b": row.take(b),
            }
        )

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        raise RuntimeError(
            f"{self.code} finds its groups in the engine's keyed stage (finish_keyed)"
        )

    def finish_keyed(
        self, state: dict[str, Any], clusters: list[Any], ctx: AuditContext
    ) -> RuleResult:
        result = RuleResult(thresholds={"max_findings": self.max_findings})
        details: dict[str, Any] = {}
        # the members' payload, cluster after cluster (group.at: where a group's rows start)
        table = clusters.rows if clusters else None
        sources = _column(table, "source")
        by_split: dict[str, list[Any]] = {}
        for cluster in clusters:  # a group is one key within one split: never across splits
            by_split.setdefault(cluster[0][0], []).append(cluster)
        for split in sorted(state["splits"]):
            sp = state["splits"][split]
            groups = by_split.get(split, [])
            n = int(sp.get("rows", 0))
            sizes = np.array([len(g) for g in groups], np.int64)
            dup_rows = int(sizes.sum() - len(sizes))
            rate = dup_rows / n if n else 0.0
            result.metric("duplicate_rows", dup_rows, Direction.LOWER, split=split)
            result.metric("duplicate_rate", rate, Direction.LOWER, split=split)
            result.metric("duplicate_groups", len(groups), Direction.LOWER, split=split)
            largest = int(sizes.max()) if len(sizes) else 0
            result.metric("largest_group", largest, Direction.LOWER, split=split)
            # flags: every member, group id = smallest row (the first member)
            removable: dict[str, int] = {}
            if groups:
                _flag_groups(result, split, table, groups, sizes)
            if sources is not None:
                for group in groups:
                    for name in sources[group.at + 1 : group.at + len(group)]:
                        removable[name] = removable.get(name, 0) + 1
            # findings: the largest groups (ties: the smaller first row)
            firsts = np.array([g[0][1] for g in groups], np.int64)
            pick = np.lexsort((firsts, -sizes))[: int(self.max_findings)]
            for i in pick.tolist():
                group, k = groups[i], int(sizes[i])
                members = [row for _, row in group]
                shown = min(k, ctx.max_examples)
                snips = table.column("snip").slice(group.at, shown).to_pylist()
                result.findings.append(
                    Finding(
                        message=(
                            f"{split}: {k} rows have the same normalized text "
                            f"({k - 1} removable); kept row {members[0]}"
                        ),
                        key=f"{split}:{key_hex(table.column('key')[group.at].as_py())}",
                        count=k - 1,
                        split=split,
                        examples=[ctx.example(split, members[p], snips[p]) for p in range(shown)],
                        data={"rows": members[:100], "size": k},
                    )
                )
            rest = len(groups) - len(pick)
            if rest > 0:
                rest_rows = dup_rows - int(sizes[pick].sum() - len(pick))
                result.findings.append(
                    Finding(
                        message=f"{split}: {plural(rest, 'more duplicate group')} "
                        f"({plural(rest_rows, 'removable row')})",
                        key=f"{split}:more",
                        severity=Severity.INFO,
                        count=rest_rows,
                        split=split,
                        rollup=True,
                    )
                )
            details[split] = {
                "rows": n,
                "duplicate_rows": dup_rows,
                "groups": len(groups),
                "group_sizes": _size_histogram(sizes),
                "per_source": _per_source(sp.get("sources"), removable, n),
            }
        result.details = {"splits": details}
        return result


def _flag_groups(
    result: RuleResult, split: str, table: pa.Table, groups: list[Any], sizes: np.ndarray
) -> None:
    """Flag every member of ``groups`` (one split's) at once, in group order: the first row
    ``kept`` (keep), the others ``duplicate`` (drop); the group id is its first row."""
    starts = np.array([g.at for g in groups], np.int64)
    ends = np.cumsum(sizes)
    offset = np.arange(int(ends[-1]), dtype=np.int64) - np.repeat(ends - sizes, sizes)
    at = np.repeat(starts, sizes) + offset  # each member's row in the clusters' table
    rows = fixed(table.column("row"))
    first = offset == 0
    result.flags.add(
        split,
        rows[at],
        group=np.repeat(rows[starts], sizes),  # the first row, written as text
        detail=two_labels(first, "kept", "duplicate"),
        action=two_labels(first, "keep", "drop"),
        id=table.column("id").take(indices(at)) if "id" in table.column_names else None,
    )


def _column(table: pa.Table | None, name: str) -> list[Any] | None:
    if table is None or name not in table.column_names:
        return None
    return table.column(name).to_pylist()


def _per_source(
    rows: dict[str, int] | None, removable: dict[str, int], n: int
) -> dict[str, dict[str, float | int]]:
    """{source: {rows, duplicate_rows, duplicate_rate}}, sources sorted."""
    if not rows or n == 0:
        return {}
    return {
        name: {
            "rows": int(rows[name]),
            "duplicate_rows": int(removable.get(name, 0)),
            "duplicate_rate": float(removable.get(name, 0) / rows[name]) if rows[name] else 0.0,
        }
        for name in sorted(rows)
    }


def _size_histogram(sizes: np.ndarray) -> dict[str, int]:
    """Group count by size bucket: 2, 3-5, 6-10, 11-100, >100."""
    edges = [(2, 2), (3, 5), (6, 10), (11, 100), (101, None)]
    out = {}
    for lo, hi in edges:
        m = sizes >= lo if hi is None else (sizes >= lo) & (sizes <= hi)
        out[f"{lo}+" if hi is None else (str(lo) if lo == hi else f"{lo}-{hi}")] = int(m.sum())
    return out

"""Shared machinery for rules that test each row independently and flag the rows that fail.

A subclass says which categories of problem it checks and returns one boolean mask per category
per batch; counting, bounded examples, row flags (with their ids and the category's action),
metrics, findings and merging live here once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from ..context import AuditContext
from ..features import Batch
from ..rule import Direction, Finding, Flag, Rule, RuleResult, Severity
from ._ids import ids_at
from ._origin import check_origin, state_origin


@dataclass(frozen=True)
class Category:
    key: str
    message: str  # "{count} rows ({rate}) ..." formatted in finish
    severity: Severity | None = None  # None: the rule's severity
    #: what the default remedy does with a flagged row: drop (unusable), review (look first)
    action: str = "review"


class RowCheckRule(Rule):
    """Base for per-row checks. Subclasses define ``categories`` and :meth:`check`."""

    categories: ClassVar[tuple[Category, ...]] = ()
    #: the text view shown in examples
    example_view: ClassVar[str] = "text"

    def check(self, batch: Batch) -> dict[str, np.ndarray]:
        """One boolean mask (len = batch rows) per category key that applies to this batch."""
        raise NotImplementedError

    def active_categories(self, ctx: AuditContext) -> tuple[Category, ...]:
        return self.categories

    # -- state: {"limit": (examples, chars), "splits": {split: {"rows": n, "cats": {key: {...}}}}}
    def start(self, ctx: AuditContext) -> dict[str, Any]:
        return {
            "origin": state_origin(self, ctx),
            "limit": (ctx.max_examples, ctx.example_chars),
            "splits": {},
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        max_examples, chars = state["limit"]
        split = state["splits"].setdefault(batch.split, {"rows": 0, "cats": {}})
        split["rows"] += batch.num_rows
        masks = self.check(batch)
        texts: list[str | None] | None = None
        for key, mask in masks.items():
            idx = np.flatnonzero(np.asarray(mask, dtype=bool))
            cat = split["cats"].setdefault(key, _empty_cat())
            cat["count"] += int(idx.size)
            if not idx.size:
                continue
            rows = (idx + batch.offset).tolist()
            cat["rows"].extend(rows)
            ids = ids_at(batch, idx)
            if ids is not None:
                cat.setdefault("ids", []).extend(ids)
            need = max_examples - len(cat["examples"])
            if need > 0:
                if texts is None:
                    view = batch.feature(self.example_view)
                    texts = (
                        view.to_pylist()
                        if isinstance(view, (pa.Array, pa.ChunkedArray))
                        else list(view)
                    )
                for i in idx[:need]:
                    t = texts[i]
                    cat["examples"].append(
                        (int(i + batch.offset), None if t is None else t[: chars + 64])
                    )
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        max_examples = a["limit"][0]
        out: dict[str, Any] = {"origin": a.get("origin"), "limit": a["limit"], "splits": {}}
        for name in list(a["splits"]) + [n for n in b["splits"] if n not in a["splits"]]:
            sa = a["splits"].get(name, {"rows": 0, "cats": {}})
            sb = b["splits"].get(name, {"rows": 0, "cats": {}})
            cats = {}
            for key in list(sa["cats"]) + [k for k in sb["cats"] if k not in sa["cats"]]:
                ca = sa["cats"].get(key, _empty_cat())
                cb = sb["cats"].get(key, _empty_cat())
                cats[key] = {
                    "count": ca["count"] + cb["count"],
                    "rows": ca["rows"] + cb["rows"],
                    "examples": (ca["examples"] + cb["examples"])[:max_examples],
                }
                if "ids" in ca or "ids" in cb:
                    cats[key]["ids"] = ca.get("ids", []) + cb.get("ids", [])
            out["splits"][name] = {"rows": sa["rows"] + sb["rows"], "cats": cats}
        return out

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        result = RuleResult(thresholds=self.thresholds())
        by_key = {c.key: c for c in self.active_categories(ctx)}
        for split, info in state["splits"].items():
            rows = info["rows"]
            for key, cat in by_key.items():
                data = info["cats"].get(key, _empty_cat())
                count = data["count"]
                result.metric(f"{key}_rows", count, Direction.NONE, split=split, unit="rows")
                result.metric(
                    f"{key}_rate", count / rows if rows else 0.0, Direction.LOWER, split=split
                )
                if not count:
                    continue
                ids = data.get("ids") or [None] * len(data["rows"])
                result.flags.extend(
                    Flag(split, r, detail=key, action=cat.action, severity=cat.severity, id=i)
                    for r, i in zip(data["rows"], ids)
                )
                rate = count / rows if rows else 0.0
                result.findings.append(
                    Finding(
                        message=f"{split}: {count:,} of {rows:,} rows ({rate:.2%}) {cat.message}",
                        key=f"{split}|{key}",
                        severity=cat.severity,
                        count=count,
                        split=split,
                        examples=[ctx.example(split, r, t) for r, t in data["examples"]],
                        data={"category": key, "rate": rate},
                    )
                )
        return result

    def thresholds(self) -> dict[str, Any]:
        return {}


def _empty_cat() -> dict[str, Any]:
    return {"count": 0, "rows": [], "examples": []}

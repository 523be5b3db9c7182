"""The rule of this plugin. One file, one class, as dataaudit's own rules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow.compute as pc
from dataaudit import Direction, Finding, Flag, Rule, RuleResult, Severity


class ShoutingText(Rule):
    """Rows written entirely in capitals.

    What it does:
        Flags rows whose text has at least ``min_letters`` letters and no lower-case one.
        Flagged rows have the action ``review``: a person decides whether to drop them or
        to fix their case.

    Why it matters:
        Shouting rows usually come from one broken source (a headline scraper, an
        upper-cased export); a model trained on them shouts back.

    Example:
        ``"BUY NOW, LIMITED OFFER"`` is flagged; ``"OK"`` has too few letters, and ``"2024"``
        none.

    Options:
        min_letters: rows with fewer letters are never flagged (default 3).
    """

    code = "SHOUT001"  # a plugin owns its prefix (SHOUT); dataaudit's own prefixes are refused
    name = "shouting.all-caps"
    groups = ("shouting",)  # not "default": it runs when selected (--select SHOUT)
    severity = Severity.WARN
    requires = ("text",)

    def __init__(self, min_letters: int = 3):
        self.min_letters = min_letters  # stored as given: dataaudit validates and reports it

    def start(self, ctx: Any) -> dict[str, Any]:
        # the option travels with the state, so merge can refuse a state built with another
        return {"min_letters": self.min_letters, "rows": []}

    def update(self, state: dict[str, Any], batch: Any) -> dict[str, Any]:
        text = batch.text  # the text view of this batch of rows (chat is rendered as text)
        upper = pc.fill_null(pc.utf8_is_upper(text), False)  # cased letters, none lower-case
        letters = pc.fill_null(pc.count_substring_regex(text, r"\p{L}"), 0)
        hits = pc.and_(upper, pc.greater_equal(letters, self.min_letters))
        rows = np.flatnonzero(hits.to_numpy(zero_copy_only=False))
        state["rows"] += [(batch.split, int(batch.offset + i)) for i in rows]
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        if a["min_letters"] != b["min_letters"]:
            raise ValueError("SHOUT001: cannot merge states built with different min_letters")
        return {**a, "rows": a["rows"] + b["rows"]}

    def finish(self, state: dict[str, Any], ctx: Any) -> RuleResult:
        rows = sorted(state["rows"])  # shards may arrive in any order
        result = RuleResult()
        result.metric("shouting_rows", len(rows), Direction.LOWER)
        result.flags = [
            Flag(split, row, action="review", detail="all capitals") for split, row in rows
        ]
        if rows:
            result.findings.append(
                Finding(
                    f"{len(rows)} rows are written in capitals", key="shouting", count=len(rows)
                )
            )
        return result

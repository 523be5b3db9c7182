"""A plugin rule written the way a third party would: only the public dataaudit API."""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc

from dataaudit import Finding, Rule, RuleResult, Severity


class ShoutingText(Rule):
    """Rows written entirely in capitals.

    What it does:
        Flags rows whose text has letters and no lower-case ones.

    Why it matters:
        Shouting rows usually come from a headline scraper.

    Example:
        ``"BUY NOW"`` is flagged.

    Options:
        min_letters: shorter texts are ignored.
    """

    code = "FAKE001"
    name = "fake.shouting"
    groups = ("fake",)
    severity = Severity.WARN
    requires = ("text",)

    def __init__(self, min_letters: int = 3):
        self.min_letters = min_letters

    def start(self, ctx):
        # the option travels with the state, so merge can refuse a state built with another
        return {"min_letters": self.min_letters, "rows": []}

    def update(self, state, batch):
        text = batch.text
        upper = pc.fill_null(pc.equal(text, pc.utf8_upper(text)), False).to_numpy(
            zero_copy_only=False
        )
        longer = pc.fill_null(pc.greater_equal(pc.utf8_length(text), self.min_letters), False)
        hits = np.flatnonzero(np.asarray(upper) & np.asarray(longer.to_numpy(zero_copy_only=False)))
        state["rows"] += [(batch.split, int(i + batch.offset)) for i in hits]
        return state

    def merge(self, a, b):
        if a["min_letters"] != b["min_letters"]:
            raise ValueError("FAKE001: cannot merge states built with different min_letters")
        return {**a, "rows": a["rows"] + b["rows"]}

    def finish(self, state, ctx):
        rows = state["rows"]
        result = RuleResult()
        result.metric("shouting_rows", len(rows), "lower")
        if rows:
            result.findings.append(
                Finding(f"{len(rows)} rows shout", key="shouting", count=len(rows))
            )
        return result


class Squatter(ShoutingText):
    """Tries to use a prefix that dataaudit owns.

    What it does: nothing. Why it matters: tests. Example: none. Options: none.
    """

    code = "TXT901"
    name = "fake.squatter"

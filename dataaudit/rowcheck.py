"""The base of rules that test each row on its own and flag the rows that fail.

Write a per-row check by subclassing :class:`RowCheckRule`: name the kinds of problem it finds
in ``categories`` and return, per batch, one boolean mask per category (True: the row has the
problem). The rest is done here, the same way for every such rule: counts per split, row flags
(with the row's id and the category's action), bounded examples, the ``<key>_rows`` and
``<key>_rate`` metrics, one finding per split and category, and a state that merges across
shards and worker processes::

    import numpy as np
    from dataaudit import Category, RowCheckRule, Severity

    class ShoutingText(RowCheckRule):
        \"\"\"Rows written in capitals.

        What it does: flags rows whose letters are all capitals.
        Why it matters: shouted text is usually scraped boilerplate.
        Example: ``{"text": "BUY NOW!!!"}`` is flagged.
        Options: min_letters: rows with fewer letters are never flagged (default 5).
        \"\"\"

        code = "SHOUT001"
        name = "content.shouting"
        severity = Severity.WARN
        categories = (Category("shouting", "are written in capitals", action="review"),)

        def __init__(self, min_letters: int = 5):
            self.min_letters = min_letters  # store options as given; use them in check()

        def check(self, batch):
            texts = batch.text.to_pylist()  # the text view: text, or chat/prompt rendered
            loud = [
                t is not None and t.isupper() and sum(map(str.isalpha, t)) >= self.min_letters
                for t in texts
            ]
            return {"shouting": np.array(loud, dtype=bool)}

Its finding reads ``train: 3 of 1,000 rows (0.30%) are written in capitals`` (the category's
``message`` follows the count). Override :meth:`RowCheckRule.active_categories` to report only
the categories a dataset can have (e.g. replies only for chat data), :meth:`thresholds` to
show options in the report, ``example_view`` to show another text view in the examples, and
``finish`` (calling ``super().finish``) to adjust findings. Check it with
``dataaudit.testing.check_rule(ShoutingText)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from .context import AuditContext
from .features import Batch
from .rule import Direction, Finding, Rule, RuleResult, Severity
from .rules._columns import SNIPPET_EXTRA
from .rules._ids import ids_at
from .rules._origin import check_origin, state_origin
from .sketches.state import Additive, Examples, PerSplit
from .wording import plural

__all__ = ["Category", "RowCheckRule"]


@dataclasses.dataclass(frozen=True)
class Category:
    """One kind of problem a row check finds."""

    key: str
    #: what the flagged rows do, after "{count} of {rows} rows ({rate})": "are empty"
    message: str
    #: the finding's severity; None: the rule's
    severity: Severity | None = None
    #: what the default remedy does with a flagged row: drop (unusable), review (look first)
    action: str = "review"


@dataclasses.dataclass
class _Flagged(Additive):
    """One category's flagged rows in one split."""

    examples: Examples[tuple[int, str | None]]  # (row, text cut a little beyond the bound)
    rows: list[int] = dataclasses.field(default_factory=list)
    ids: list[str | None] = dataclasses.field(default_factory=list)  # empty: no id column


@dataclasses.dataclass
class _Split(Additive):
    rows: int = 0
    cats: dict[str, _Flagged] = dataclasses.field(default_factory=dict)


class RowCheckRule(Rule):
    """Base of per-row checks: subclasses set ``categories`` and implement :meth:`check`
    (see the module docstring for an example)."""

    categories: ClassVar[tuple[Category, ...]] = ()
    #: the text view shown in examples (a feature name, e.g. "text" or "response_text")
    example_view: ClassVar[str] = "text"

    def check(self, batch: Batch) -> dict[str, np.ndarray]:
        """One boolean mask (one value per batch row) per category key that applies here."""
        raise NotImplementedError

    def active_categories(self, ctx: AuditContext) -> tuple[Category, ...]:
        """The categories reported for this dataset (all of ``categories`` by default)."""
        return self.categories

    def thresholds(self) -> dict[str, Any]:
        """The options reported as the result's thresholds."""
        return {}

    # -- state: {"origin", "limit": (examples, chars), "splits": PerSplit[_Split]}
    def start(self, ctx: AuditContext) -> dict[str, Any]:
        return {
            "origin": state_origin(self, ctx),
            "limit": (ctx.max_examples, ctx.example_chars),
            "splits": PerSplit(_Split),
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        max_examples, chars = state["limit"]
        split: _Split = state["splits"].at(batch.split)
        split.rows += batch.num_rows
        texts: list[str | None] | None = None
        for key, mask in self.check(batch).items():
            idx = np.flatnonzero(np.asarray(mask, dtype=bool))
            cat = split.cats.get(key)
            if cat is None:
                cat = split.cats[key] = _Flagged(Examples(max_examples))
            if not idx.size:
                continue
            cat.rows.extend((idx + batch.offset).tolist())
            cat.ids.extend(ids_at(batch, idx) or [])
            room = cat.examples.room
            if room:
                texts = self._texts(batch) if texts is None else texts
                cat.examples.extend(
                    (int(i + batch.offset), _cut(texts[i], chars)) for i in idx[:room]
                )
        return state

    def _texts(self, batch: Batch) -> list[str | None]:
        view = batch.feature(self.example_view)
        return view.to_pylist() if isinstance(view, (pa.Array, pa.ChunkedArray)) else list(view)

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {**a, "splits": a["splits"].merge(b["splits"])}

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        result = RuleResult(thresholds=self.thresholds())
        by_key = {c.key: c for c in self.active_categories(ctx)}
        split: _Split
        for name, split in state["splits"].items():
            rows = split.rows
            for key, cat in by_key.items():
                flagged = split.cats.get(key)
                count = len(flagged.rows) if flagged is not None else 0
                rate = count / rows if rows else 0.0
                result.metric(f"{key}_rows", count, Direction.NONE, split=name, unit="rows")
                result.metric(f"{key}_rate", rate, Direction.LOWER, split=name)
                if not count:
                    continue
                result.flags.add(
                    name,
                    np.asarray(flagged.rows, np.int64),
                    detail=key,
                    action=cat.action,
                    severity=cat.severity,
                    id=flagged.ids or None,
                )
                result.findings.append(
                    Finding(
                        message=f"{name}: {count:,} of {plural(rows, 'row')} ({rate:.2%}) {cat.message}",
                        key=f"{name}|{key}",
                        severity=cat.severity,
                        count=count,
                        split=name,
                        examples=[ctx.example(name, r, t) for r, t in flagged.examples],
                        data={"category": key, "rate": rate},
                    )
                )
        return result


def _cut(text: str | None, chars: int) -> str | None:
    return None if text is None else text[: chars + SNIPPET_EXTRA]

"""A row check whose examples say what is wrong with each row, not only which rows.

:class:`DetailRowCheck` is a :class:`~dataaudit.rowcheck.RowCheckRule` whose ``check_rows``
returns, per category, the flagged rows of the batch with a short description of the problem
("turn 3: role 'usr' is not a known role", "parse error at line 1 column 17: ..."). The counts,
flags, metrics, findings and mergeable state are the base class's; an example's text is the
description followed by the row's text, so the report shows why the row was flagged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...features import Batch
from ...rowcheck import RowCheckRule, _Flagged, _Split
from ...sketches.state import Examples
from .._ids import ids_at

#: a description is cut to this many characters (dataset text is untrusted and unbounded)
DETAIL_CHARS = 160


def cut(text: Any, chars: int = DETAIL_CHARS) -> str:
    text = text if isinstance(text, str) else repr(text)
    return text if len(text) <= chars else text[:chars] + "…"


class DetailRowCheck(RowCheckRule):
    """Base of row checks that describe each flagged row (see the module docstring)."""

    def check_rows(self, batch: Batch) -> dict[str, dict[int, str]]:
        """Per category key: {row index in the batch: what is wrong}. Every active category
        should have a key (an empty dict when no row has the problem)."""
        raise NotImplementedError

    def check_rows_with(self, state: dict[str, Any], batch: Batch) -> dict[str, dict[int, str]]:
        """:meth:`check_rows` for rules that also read or count into their state."""
        return self.check_rows(batch)

    def check(self, batch: Batch) -> dict[str, np.ndarray]:
        masks = {}
        for key, rows in self.check_rows(batch).items():
            mask = np.zeros(batch.num_rows, dtype=bool)
            mask[list(rows)] = True
            masks[key] = mask
        return masks

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        max_examples, chars = state["limit"]
        split: _Split = state["splits"].at(batch.split)
        split.rows += batch.num_rows
        texts: list[str | None] | None = None
        for key, rows in self.check_rows_with(state, batch).items():
            cat = split.cats.get(key)
            if cat is None:
                cat = split.cats[key] = _Flagged(Examples(max_examples))
            if not rows:
                continue
            idx = np.array(sorted(rows), dtype=np.int64)
            cat.rows.extend((idx + batch.offset).tolist())
            cat.ids.extend(ids_at(batch, idx) or [])
            room = cat.examples.room
            if room:
                texts = self._texts(batch) if texts is None else texts
                cat.examples.extend(
                    (int(i + batch.offset), _example(rows[int(i)], texts[i], chars))
                    for i in idx[:room]
                )
        return state


def _example(detail: str, text: str | None, chars: int) -> str:
    detail = cut(detail)
    if not text:
        return detail
    return f"[{detail}] {text[:chars]}"

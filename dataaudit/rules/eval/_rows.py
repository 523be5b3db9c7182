"""What the EVAL rules keep of each row that has a prediction, and their shared base.

The ``prediction`` feature joins the audit's predictions to a batch; each rule keeps, per row
with a prediction: where it is (split, row, id), the true and predicted class, the score (1
right, 0 wrong, or a ``correct`` score), the predicted class's probability, the source, a
length, the values of the dataset's other low-cardinality columns, and the text of the rows the
model gets wrong (cut to ``max_chars``; only they are shown or clustered). The state is a list
of chunks in row order: a merge concatenates, so shards combine exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ...context import AuditContext
from ...features import Batch
from ...rule import ROLE_NAMES, TYPE_MARKER_PREFIX, Rule
from .._ids import ids_at
from .._origin import check_origin, state_origin

#: a row the model got wrong: its score is below this (0/1 for labels)
WRONG_BELOW = 0.5
#: at most this many other columns are kept per row, each value cut to this many characters
MAX_USER_COLUMNS, MAX_VALUE_CHARS = 20, 100


def needs_predictions(ctx: AuditContext) -> str | None:
    """Why an EVAL rule cannot run: no predictions were given."""
    if ctx.resources.predictions is None:
        return (
            "needs a model's predictions: pass audit(data, predictions=...) or --predictions "
            "FILE (a .csv/.jsonl/.parquet keyed by row or id, or a column name)"
        )
    return None


class EvalRule(Rule):
    """An EVAL rule: runs only with predictions, keeps :class:`Rows`."""

    groups = ("predictions", "eval")
    requires = ("text",)
    #: keep the user's own low-cardinality columns too (EVAL002 slices by them)
    user_columns = False

    def skip_reason(self, ctx: AuditContext) -> str | None:
        return needs_predictions(ctx) or super().skip_reason(ctx)

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        tok = ctx.resources.tokenizer.key
        return {"origin": state_origin(self, ctx, tokenizer=tok), "tok": tok, "rows": Rows()}

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        collect(
            state["rows"],
            batch,
            tok=state["tok"],
            max_chars=int(self.max_chars),
            user=self.user_columns,
        )
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {**a, "rows": a["rows"].merge(b["rows"])}


@dataclass
class Chunk:
    split: str
    rows: np.ndarray
    ids: list[str | None] | None
    gold: list[str | None]
    pred: list[str | None]
    score: np.ndarray
    confidence: np.ndarray
    source: list[str | None] | None
    length: np.ndarray
    user: dict[str, list[str | None]]
    text: list[str | None]  # the text of wrong rows, None for right ones


@dataclass
class Rows:
    """The chunks of the rows with a prediction, in row order (mergeable: concatenation)."""

    chunks: list[Chunk] = field(default_factory=list)
    #: rows with a prediction but no label to judge it by, per split
    unjudged: dict[str, int] = field(default_factory=dict)

    def merge(self, other: Rows) -> Rows:
        unjudged = dict(self.unjudged)
        for k, v in other.unjudged.items():
            unjudged[k] = unjudged.get(k, 0) + v
        return Rows(self.chunks + other.chunks, unjudged)


def _user_columns(batch: Batch, skip: set[str]) -> list[str]:
    out = []
    for f in batch.data.schema:
        if f.name in skip or f.name.startswith(TYPE_MARKER_PREFIX):
            continue
        t = f.type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if (
            pa.types.is_string(t)
            or pa.types.is_large_string(t)
            or pa.types.is_boolean(t)
            or pa.types.is_integer(t)
        ):
            out.append(f.name)
        if len(out) >= MAX_USER_COLUMNS:
            break
    return out


def _strings(arr: pa.Array, at: np.ndarray) -> list[str | None]:
    values = arr.take(pa.array(at, pa.int64())).to_pylist()
    return [None if v is None else str(v)[:MAX_VALUE_CHARS] for v in values]


def collect(rows: Rows, batch: Batch, *, tok: str, max_chars: int, user: bool) -> Rows:
    """Fold the batch's rows that have a prediction into ``rows``."""
    p = batch.feature("prediction")
    at = np.flatnonzero(p.has)
    if not at.size:
        return rows
    judged = at[~np.isnan(p.score[at])]
    if len(judged) < len(at):
        rows.unjudged[batch.split] = rows.unjudged.get(batch.split, 0) + len(at) - len(judged)
    if not judged.size:
        return rows
    at = judged
    score = p.score[at]
    wrong = score < WRONG_BELOW
    texts = batch.text.take(pa.array(at[wrong], pa.int64())).to_pylist()
    text: list[str | None] = [None] * len(at)
    for i, t in zip(np.flatnonzero(wrong).tolist(), texts):
        text[i] = (t or "")[:max_chars]
    lengths = np.asarray(batch.feature("token_lengths", tokenizer=tok), np.int64)[at]
    src = batch.role("source")
    preds = batch.resources.predictions
    skip = {c for r in ROLE_NAMES if (c := getattr(batch.roles, r, None))}
    if preds is not None and preds.column:
        skip.add(preds.column)
    cols = _user_columns(batch, skip) if user else []
    rows.chunks.append(
        Chunk(
            split=batch.split,
            rows=batch.row_ids[at],
            ids=ids_at(batch, at),
            gold=[p.gold[i] for i in at.tolist()],
            pred=[p.pred[i] for i in at.tolist()],
            score=score.astype(np.float64),
            confidence=p.confidence[at].astype(np.float64),
            source=_strings(src, at) if src is not None else None,
            length=lengths,
            user={c: _strings(batch.column(c), at) for c in cols},
            text=text,
        )
    )
    return rows


@dataclass
class Table:
    """All kept rows, concatenated (what ``finish`` reads)."""

    split: np.ndarray
    row: np.ndarray
    ids: list[str | None]
    gold: list[str | None]
    pred: list[str | None]
    score: np.ndarray
    confidence: np.ndarray
    source: list[str | None] | None
    length: np.ndarray
    user: dict[str, list[str | None]]
    text: list[str | None]

    @property
    def n(self) -> int:
        return len(self.row)

    @property
    def wrong(self) -> np.ndarray:
        """Rows the model got wrong (computed once: finish asks per row)."""
        cached = self.__dict__.get("_wrong")
        if cached is None:
            cached = self.__dict__["_wrong"] = self.score < WRONG_BELOW
        return cached

    def example(self, ctx: AuditContext, i: int, **extra: Any) -> dict[str, Any]:
        out = {"label": self.gold[i]} if self.gold[i] is not None else {}
        if self.pred[i] is not None:
            out["predicted"] = self.pred[i]
        if not np.isnan(self.confidence[i]):
            out["confidence"] = round(float(self.confidence[i]), 4)
        if self.ids[i] is not None:
            out["id"] = self.ids[i]
        return ctx.example(str(self.split[i]), int(self.row[i]), self.text[i], **out, **extra)


def gather(rows: Rows) -> Table:
    chunks = rows.chunks
    n = sum(len(c.rows) for c in chunks)
    cols: list[str] = []
    for c in chunks:
        cols += [k for k in c.user if k not in cols]

    def cat(name: str) -> list[Any]:
        return [v for c in chunks for v in getattr(c, name)]

    def arr(name: str, dtype: Any) -> np.ndarray:
        parts = [getattr(c, name) for c in chunks]
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

    has_source = any(c.source is not None for c in chunks)
    return Table(
        split=np.array([c.split for c in chunks for _ in range(len(c.rows))], dtype=object),
        row=arr("rows", np.int64),
        ids=[v for c in chunks for v in (c.ids or [None] * len(c.rows))],
        gold=cat("gold"),
        pred=cat("pred"),
        score=arr("score", np.float64),
        confidence=arr("confidence", np.float64),
        source=[v for c in chunks for v in (c.source or [None] * len(c.rows))]
        if has_source
        else None,
        length=arr("length", np.int64),
        user={
            k: [v for c in chunks for v in c.user.get(k, [None] * len(c.rows))] for k in cols
        },
        text=cat("text"),
    ) if n else Table(
        np.zeros(0, object), np.zeros(0, np.int64), [], [], [], np.zeros(0), np.zeros(0),
        None, np.zeros(0, np.int64), {}, [],
    )  # fmt: skip


def grade(effect: float, support: int, *, min_effect: float, large_support: int) -> str | None:
    """Severity of a significant shortfall by its effect size (Cohen's h) and support: large
    (h >= 0.8) on at least ``large_support`` rows is an error, medium (h >= 0.5) a warning,
    small (>= ``min_effect``) a note; below that, no finding."""
    if effect >= 0.8 and support >= large_support:
        return "error"
    if effect >= 0.5:
        return "warn"
    if effect >= min_effect:
        return "info"
    return None

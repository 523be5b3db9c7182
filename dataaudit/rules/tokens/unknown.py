"""TOK002: unknown and byte-fallback tokens: text the tokenizer does not really cover."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, Rule, RuleResult, Severity
from ...sketches.state import Additive, Examples, PerSplit
from ...wording import noun, plural
from .._columns import SNIPPET_EXTRA
from .._ids import ids_at
from .._origin import check_origin, state_origin


def _most_unknown_first(item: tuple[int, int, float, str]) -> tuple[int, int]:
    return -item[0], item[1]


@dataclass
class _Split(Additive):
    #: (unknown tokens, row, rate, text) of the rows with the most unknown tokens
    worst: Examples[tuple[int, int, float, str]]
    tokens: int = 0
    unknown: int = 0
    rows_with: int = 0
    #: the flagged rows, their rates and ids (ids empty without an id column)
    rows: list[int] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    ids: list[str | None] = field(default_factory=list)

    @classmethod
    def start(cls, max_examples: int) -> _Split:
        return cls(Examples(max_examples, key=_most_unknown_first))


class UnknownTokens(Rule):
    """The share of unknown (``[UNK]``) and byte-fallback (``<0x..>``) tokens per split.

    What it does:
        Looks up every token id of every row in a table of the tokenizer's unknown token and, for
        byte-fallback tokenizers (SentencePiece style), its ``<0xNN>`` byte tokens. Reports the
        rate per split (unknown tokens / all tokens) and the rows with the most such tokens, and
        flags every row whose own rate exceeds ``max_row_rate``. Byte-level BPE tokenizers cannot
        produce unknown tokens; the rule then reports 0 and says why. Without a tokenizer the
        rule is skipped: the word fallback has no vocabulary.

    Why it matters:
        Unknown tokens erase information: the model sees the same ``[UNK]`` for every emoji, CJK
        character or accented letter the vocabulary lacks. Byte fallback keeps the information but
        spends 3–4 tokens per character, blowing up sequence lengths. A high rate means the data
        and the tokenizer do not match (wrong language, wrong tokenizer, encoding damage).

    Example:
        A WordPiece tokenizer trained on English applied to a Greek split: 23% of its tokens are
        ``[UNK]``; the worst rows are listed with their rates.

    Options:
        max_rate: a split whose rate exceeds this gets a warning (default 0.001).
        max_row_rate: rows whose own rate exceeds this are flagged (default 0.1).
    """

    code = "TOK002"
    name = "tokens.unknown"
    groups = ("default", "tokens")
    severity = Severity.WARN
    requires = ("text",)

    def __init__(self, max_rate: float = 0.001, max_row_rate: float = 0.1):
        self.max_rate = max_rate
        self.max_row_rate = max_row_rate

    def check_options(self) -> None:
        if not (0 <= self.max_rate <= 1 and 0 <= self.max_row_rate <= 1):
            raise ValueError("max_rate and max_row_rate must be in [0, 1]")

    def skip_reason(self, ctx: AuditContext) -> str | None:
        reason = super().skip_reason(ctx)
        if reason:
            return reason
        if not ctx.resources.tokenizer.given:
            return (
                "needs a tokenizer (tokenizer= / --tokenizer): the word fallback has no vocabulary"
            )
        return None

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        tok = ctx.resources.tokenizer
        return {
            "origin": state_origin(self, ctx, tokenizer=tok.key),
            "tok": tok.key,
            "limit": (ctx.max_examples, ctx.example_chars),
            "splits": PerSplit(partial(_Split.start, ctx.max_examples)),
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        handle = batch.resources.tokenizer_named(state["tok"])
        s: _Split = state["splits"].at(batch.split)
        toks = batch.feature("tokens", tokenizer=state["tok"])
        lengths = np.maximum(toks.lengths, 0)
        s.tokens += int(lengths.sum())
        table = handle.unknown_table
        if table is None or not table.any() or toks.ids.size == 0:
            return state
        ids = toks.ids.astype(np.int64)
        hit = np.zeros(ids.size, dtype=bool)
        inside = ids < table.size
        hit[inside] = table[ids[inside]]
        if not hit.any():
            return state
        per_row = np.bincount(toks.row_ids()[hit], minlength=lengths.size)
        s.unknown += int(per_row.sum())
        s.rows_with += int(np.count_nonzero(per_row))
        rate = np.divide(per_row, lengths, out=np.zeros(lengths.size), where=lengths > 0)
        flagged = np.flatnonzero(rate > self.max_row_rate)
        s.rows.extend((flagged + batch.offset).tolist())
        s.rates.extend(rate[flagged].tolist())
        s.ids.extend(ids_at(batch, flagged) or [])
        max_examples, chars = state["limit"]
        cand = np.flatnonzero(per_row)
        cand = cand[np.lexsort((cand, -per_row[cand]))][:max_examples]
        texts = batch.text
        s.worst.extend(
            (
                int(per_row[i]),
                int(i + batch.offset),
                float(rate[i]),
                (texts[int(i)].as_py() or "")[: chars + SNIPPET_EXTRA],
            )
            for i in cand
        )
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {**a, "splits": a["splits"].merge(b["splits"])}

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        handle = ctx.resources.tokenizer_named(state["tok"])
        result = RuleResult(
            thresholds={"max_rate": self.max_rate, "max_row_rate": self.max_row_rate},
            details={"tokenizer": state["tok"], "can_produce_unknown": handle.can_produce_unknown},
        )
        if not handle.can_produce_unknown:
            result.details["note"] = (
                "this tokenizer has no unknown or byte-fallback tokens (e.g. byte-level BPE): "
                "every byte is representable, so the rate is 0 by construction"
            )
        for split in sorted(state["splits"]):
            s: _Split = state["splits"][split]
            rate = s.unknown / s.tokens if s.tokens else 0.0
            result.metric("unknown_rate", rate, Direction.LOWER, split=split)
            result.metric("rows_with_unknown", s.rows_with, Direction.LOWER, split=split)
            result.flags.add(
                split,
                np.asarray(s.rows, np.int64),
                detail="unknown_tokens",
                action="review",
                score=np.asarray(s.rates, np.float64),
                id=s.ids or None,
            )
            if rate > self.max_rate:
                result.findings.append(
                    Finding(
                        message=(
                            f"{split}: {s.unknown:,} of {plural(s.tokens, 'token')} ({rate:.3%}) "
                            f"{noun(s.unknown, 'is', 'are')} unknown or byte-fallback, in "
                            f"{plural(s.rows_with, 'row')}"
                        ),
                        key=f"{split}|unknown",
                        count=s.rows_with,
                        split=split,
                        examples=[
                            ctx.example(split, r, t, unknown_tokens=n, rate=round(rr, 4))
                            for n, r, rr, t in s.worst
                        ],
                        data={"rate": rate, "rows_flagged": len(s.rows)},
                    )
                )
        return result

"""LEN001: rows longer than the model's context, and responses cut off entirely."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, Rule, RuleResult, Severity
from ...sketches.histogram import Histogram
from ...sketches.state import Additive, Examples, PerSplit
from ...wording import noun, plural
from .._columns import SNIPPET_EXTRA
from .._ids import ids_at
from .._origin import check_origin, state_origin
from ._hist import chart_histograms


@dataclass
class _Over(Additive):
    """The rows of one split at or over a length bound: flagged with their length and id."""

    examples: Examples[tuple[int, int, str]]  # (row, length, text)
    rows: list[int] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    ids: list[str | None] = field(default_factory=list)  # empty without an id column

    def add(self, batch: Batch, idx: np.ndarray, lengths: np.ndarray, chars: int) -> None:
        if not idx.size:
            return
        self.rows.extend((idx + batch.offset).tolist())
        self.lengths.extend(lengths[idx].tolist())
        self.ids.extend(ids_at(batch, idx) or [])
        room = self.examples.room
        if room:
            texts = batch.text
            self.examples.extend(
                (
                    int(i + batch.offset),
                    int(lengths[i]),
                    (texts[int(i)].as_py() or "")[: chars + SNIPPET_EXTRA],
                )
                for i in idx[:room]
            )


@dataclass
class _Split(Additive):
    truncated: _Over  # rows longer than max_seq_len
    cut: _Over  # rows whose prompt alone fills max_seq_len: the response is lost
    rejected_examples: Examples[tuple[int, str]]  # (row, why the chat template rejects it)
    rows: int = 0
    lost: int = 0  # tokens (words without a tokenizer) past max_seq_len in truncated rows
    rejected: int = 0
    lengths: Histogram = field(default_factory=Histogram)  # every row's length (chart data)

    @classmethod
    def start(cls, max_examples: int) -> _Split:
        return cls(
            _Over(Examples(max_examples)), _Over(Examples(max_examples)), Examples(max_examples)
        )


class Truncation(Rule):
    """Rows whose token length exceeds ``max_seq_len`` are cut off in training.

    What it does:
        Tokenizes every row's text view with the audit's tokenizer (chat rows as the whole
        conversation rendered by the tokenizer's chat template when it has one, special tokens
        included, else as ``role: content`` lines; prompt/response rows as prompt and response
        joined; ``details.measured_on`` says which) and counts rows
        longer than ``max_seq_len`` tokens, with the tokens that would be lost. For prompt/response
        and chat data it also counts rows whose prompt alone (the conversation before the last
        reply) already fills the context: their response is cut off entirely, so the row trains on
        nothing. Without a tokenizer, lengths are whitespace words and the report says so.
        Truncated rows are flagged ``truncated`` with the action ``review`` (their start still
        trains) and rows whose response is lost ``response_lost`` with the action ``drop``; the
        score is the row's (or the prompt's) length, the severity that of the finding. Rows the
        chat template rejects (its ``raise_exception``, e.g. roles that do not alternate) are a
        warning of their own: a trainer applying the template would fail or skip them.

    Why it matters:
        A trainer silently truncates long rows: the end of a document, or the answer of an SFT
        sample, never reaches the model. A response truncated away entirely is a wasted (or, with
        a loss on the prompt, harmful) sample.

    Example:
        With ``max_seq_len: 2048`` and a Llama tokenizer, 3% of a chat set is longer than 2048
        tokens and 40 rows have a 2100-token system prompt: LEN001 fails with both counts.

    Options:
        max_seq_len: the model's context length in tokens (required; the rule is skipped without
            it).
        max_rate: the share of truncated rows above which the finding is an error (default
            0.01); below it, truncation is a warning.
    """

    code = "LEN001"
    name = "length.truncation"
    groups = ("default", "length")
    severity = Severity.ERROR
    requires = ("text",)

    def __init__(self, max_seq_len: int | None = None, max_rate: float = 0.01):
        self.max_seq_len = max_seq_len
        self.max_rate = max_rate

    def check_options(self) -> None:
        if self.max_seq_len is not None and (
            not isinstance(self.max_seq_len, int) or self.max_seq_len < 1
        ):
            raise ValueError(f"max_seq_len={self.max_seq_len!r} must be a positive integer")
        if not 0 <= self.max_rate <= 1:
            raise ValueError(f"max_rate={self.max_rate!r} must be in [0, 1]")

    def skip_reason(self, ctx: AuditContext) -> str | None:
        if self.max_seq_len is None:
            return (
                "max_seq_len is not set: give the model's context length, e.g. "
                "rules: {LEN001: {max_seq_len: 4096}} (the sft pack sets it)"
            )
        return super().skip_reason(ctx)

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        tok = ctx.resources.tokenizer
        roles = ctx.roles
        has_prompt = not roles.text and bool(roles.messages or (roles.prompt and roles.response))
        templated = tok.chat_template is not None and bool(roles.messages) and not roles.text
        return {
            "origin": state_origin(self, ctx, tokenizer=tok.key),
            "tok": tok.key,
            "unit": tok.unit,
            "prompt": has_prompt,
            # chat rows measured as the tokenizer's chat template renders them
            "views": ("templated", "templated_prompt") if templated else ("text", "input_text"),
            "template": tok.chat_template.describe() if templated else None,
            "chat": bool(roles.messages) and not roles.text,
            "limit": (ctx.max_examples, ctx.example_chars),
            "splits": PerSplit(partial(_Split.start, ctx.max_examples)),
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        limit = self.max_seq_len
        chars = state["limit"][1]
        s: _Split = state["splits"].at(batch.split)
        s.rows += batch.num_rows
        full_view, prompt_view = state["views"]
        lengths = batch.feature("token_lengths", tokenizer=state["tok"], view=full_view)
        s.lengths.add(lengths[lengths >= 0])  # null rows (-1) have no length
        if state["template"] is not None:
            errors = batch.feature("chat_rendering", tokenizer=state["tok"]).errors
            bad = [i for i, e in enumerate(errors) if e is not None]
            s.rejected += len(bad)
            s.rejected_examples.extend((i + batch.offset, errors[i]) for i in bad)
        over = np.flatnonzero(lengths > limit)
        s.lost += int((lengths[over] - limit).sum())
        s.truncated.add(batch, over, lengths, chars)
        if state["prompt"]:
            plen = batch.feature("token_lengths", tokenizer=state["tok"], view=prompt_view)
            s.cut.add(batch, np.flatnonzero(plen >= limit), plen, chars)
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {**a, "splits": a["splits"].merge(b["splits"])}

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        unit = state["unit"]
        result = RuleResult(
            thresholds={"max_seq_len": self.max_seq_len, "max_rate": self.max_rate},
            details={
                "unit": unit,
                "tokenizer": state["tok"],
                "measured_on": _measured_on(state),
                "chat_template": state["template"],
                # per-split length histograms in shared bins, with max_seq_len: chart data
                "histograms": chart_histograms(
                    {name: sp.lengths for name, sp in state["splits"].items()},
                    unit,
                    max_seq_len=self.max_seq_len,
                ),
            },
        )
        limit = self.max_seq_len
        for split in sorted(state["splits"]):
            s: _Split = state["splits"][split]
            rows = s.rows
            truncated = len(s.truncated.rows)
            rate = truncated / rows if rows else 0.0
            result.metric("truncated_rows", truncated, Direction.LOWER, split=split)
            result.metric("truncated_rate", rate, Direction.LOWER, split=split)
            result.metric(f"{unit}_lost", s.lost, Direction.LOWER, split=split, unit=unit)
            if truncated:
                severity = Severity.ERROR if rate > self.max_rate else Severity.WARN
                _flag(result, split, s.truncated, "truncated", severity)
                result.findings.append(
                    Finding(
                        message=(
                            f"{split}: {truncated:,} of {plural(rows, 'row')} ({rate:.2%}) "
                            f"{noun(truncated, 'is', 'are')} longer "
                            f"than max_seq_len={limit:,} {unit}; {s.lost:,} {unit} would be cut"
                        ),
                        key=f"{split}|truncated",
                        severity=severity,
                        count=truncated,
                        split=split,
                        examples=[
                            ctx.example(split, r, t, length=n, unit=unit)
                            for r, n, t in s.truncated.examples
                        ],
                        data={"rate": rate, "unit": unit},
                    )
                )
            if state["template"] is not None:
                result.metric("template_rejected_rows", s.rejected, Direction.LOWER, split=split)
            if s.rejected:
                result.findings.append(
                    Finding(
                        message=(
                            f"{split}: the chat template rejects {s.rejected:,} of "
                            f"{plural(rows, 'row')} (e.g. {s.rejected_examples.items[0][1]!r}); a trainer "
                            "applying it would fail or skip them. Their lengths were measured "
                            "on the plain rendering"
                        ),
                        key=f"{split}|template_rejected",
                        severity=Severity.WARN,
                        count=s.rejected,
                        split=split,
                        examples=[
                            ctx.example(split, r, None, reason=reason)
                            for r, reason in s.rejected_examples
                        ],
                        data={"template": state["template"]},
                    )
                )
            if state["prompt"]:
                cut = len(s.cut.rows)
                cut_rate = cut / rows if rows else 0.0
                result.metric("response_lost_rows", cut, Direction.LOWER, split=split)
                result.metric("response_lost_rate", cut_rate, Direction.LOWER, split=split)
                if cut:
                    severity = Severity.ERROR if cut_rate > self.max_rate else Severity.WARN
                    _flag(result, split, s.cut, "response_lost", severity)
                    result.findings.append(
                        Finding(
                            message=(
                                f"{split}: {cut:,} of {plural(rows, 'row')} ({cut_rate:.2%}) "
                                f"{noun(cut, 'has', 'have')} a "
                                f"prompt of at least max_seq_len={limit:,} {unit}: the response is "
                                "cut off entirely and the row trains on nothing"
                            ),
                            key=f"{split}|response_lost",
                            severity=severity,
                            count=cut,
                            split=split,
                            examples=[
                                ctx.example(split, r, t, prompt_length=n, unit=unit)
                                for r, n, t in s.cut.examples
                            ],
                            data={"rate": cut_rate, "unit": unit},
                        )
                    )
        return result


def _measured_on(state: dict[str, Any]) -> str:
    if state["template"]:
        return f"the tokenizer's chat template ({state['template']['source']})"
    if state.get("chat"):
        return "chat rows as 'role: content' lines (the tokenizer has no chat template)"
    return "the text view"


def _flag(result: RuleResult, split: str, over: _Over, kind: str, severity: Severity) -> None:
    """Flag the rows of ``over``, their length as score."""
    result.flags.add(
        split,
        np.asarray(over.rows, np.int64),
        detail=kind,
        action="drop" if kind == "response_lost" else "review",
        severity=severity,
        score=np.asarray(over.lengths, np.float64),
        id=over.ids or None,
    )

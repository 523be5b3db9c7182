"""LEN001: rows longer than the model's context, and responses cut off entirely."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, Flag, Rule, RuleResult, Severity
from .._ids import ids_at
from .._origin import check_origin, state_origin


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
            "splits": {},
        }

    @staticmethod
    def _empty() -> dict[str, Any]:
        return {
            "rows": 0,
            "truncated": 0,
            "lost": 0,
            "cut": 0,
            "flags": [],
            "examples": [],
            "cut_flags": [],
            "cut_examples": [],
            # per flagged row: its length and id (when the dataset has an id column)
            "flag_len": [],
            "flag_ids": [],
            "cut_len": [],
            "cut_ids": [],
            # rows the chat template rejects, and (row, reason) examples of them
            "rejected": 0,
            "rejected_examples": [],
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        limit = self.max_seq_len
        max_examples, chars = state["limit"]
        s = state["splits"].setdefault(batch.split, self._empty())
        s["rows"] += batch.num_rows
        full_view, prompt_view = state["views"]
        lengths = batch.feature("token_lengths", tokenizer=state["tok"], view=full_view)
        if state["template"] is not None:
            errors = batch.feature("chat_rendering", tokenizer=state["tok"]).errors
            bad = [i for i, e in enumerate(errors) if e is not None]
            s["rejected"] += len(bad)
            room = max_examples - len(s["rejected_examples"])
            s["rejected_examples"].extend((i + batch.offset, errors[i]) for i in bad[:room])
        over = np.flatnonzero(lengths > limit)
        s["truncated"] += int(over.size)
        s["lost"] += int((lengths[over] - limit).sum())
        texts = None
        if over.size:
            s["flags"].extend((over + batch.offset).tolist())
            s["flag_len"].extend(lengths[over].tolist())
            s["flag_ids"].extend(ids_at(batch, over) or [])
            need = max_examples - len(s["examples"])
            if need > 0:
                texts = batch.text
                for i in over[:need]:
                    t = texts[int(i)].as_py()
                    s["examples"].append((int(i + batch.offset), int(lengths[i]), t[: chars + 64]))
        if state["prompt"]:
            plen = batch.feature("token_lengths", tokenizer=state["tok"], view=prompt_view)
            cut = np.flatnonzero(plen >= limit)
            s["cut"] += int(cut.size)
            if cut.size:
                s["cut_flags"].extend((cut + batch.offset).tolist())
                s["cut_len"].extend(plen[cut].tolist())
                s["cut_ids"].extend(ids_at(batch, cut) or [])
                need = max_examples - len(s["cut_examples"])
                if need > 0:
                    texts = batch.text if texts is None else texts
                    for i in cut[:need]:
                        t = texts[int(i)].as_py()
                        s["cut_examples"].append(
                            (int(i + batch.offset), int(plen[i]), (t or "")[: chars + 64])
                        )
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        max_examples = a["limit"][0]
        out = {**a, "splits": {}}
        for name in list(a["splits"]) + [n for n in b["splits"] if n not in a["splits"]]:
            sa = a["splits"].get(name, self._empty())
            sb = b["splits"].get(name, self._empty())
            out["splits"][name] = {
                "rows": sa["rows"] + sb["rows"],
                "truncated": sa["truncated"] + sb["truncated"],
                "lost": sa["lost"] + sb["lost"],
                "cut": sa["cut"] + sb["cut"],
                "flags": sa["flags"] + sb["flags"],
                "examples": (sa["examples"] + sb["examples"])[:max_examples],
                "cut_flags": sa["cut_flags"] + sb["cut_flags"],
                "cut_examples": (sa["cut_examples"] + sb["cut_examples"])[:max_examples],
                **{k: sa[k] + sb[k] for k in ("flag_len", "flag_ids", "cut_len", "cut_ids")},
                "rejected": sa["rejected"] + sb["rejected"],
                "rejected_examples": (sa["rejected_examples"] + sb["rejected_examples"])[
                    :max_examples
                ],
            }
        return out

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        unit = state["unit"]
        result = RuleResult(
            thresholds={"max_seq_len": self.max_seq_len, "max_rate": self.max_rate},
            details={
                "unit": unit,
                "tokenizer": state["tok"],
                "measured_on": _measured_on(state),
                "chat_template": state["template"],
            },
        )
        limit = self.max_seq_len
        for split in sorted(state["splits"]):
            s = state["splits"][split]
            rows = s["rows"]
            rate = s["truncated"] / rows if rows else 0.0
            result.metric("truncated_rows", s["truncated"], Direction.LOWER, split=split)
            result.metric("truncated_rate", rate, Direction.LOWER, split=split)
            result.metric(f"{unit}_lost", s["lost"], Direction.LOWER, split=split, unit=unit)
            if s["truncated"]:
                severity = Severity.ERROR if rate > self.max_rate else Severity.WARN
                result.flags.extend(
                    _flags(split, s["flags"], s["flag_len"], s["flag_ids"], "truncated", severity)
                )
                result.findings.append(
                    Finding(
                        message=(
                            f"{split}: {s['truncated']:,} of {rows:,} rows ({rate:.2%}) are longer "
                            f"than max_seq_len={limit:,} {unit}; {s['lost']:,} {unit} would be cut"
                        ),
                        key=f"{split}|truncated",
                        severity=severity,
                        count=s["truncated"],
                        split=split,
                        examples=[
                            ctx.example(split, r, t, length=n, unit=unit)
                            for r, n, t in s["examples"]
                        ],
                        data={"rate": rate, "unit": unit},
                    )
                )
            if state["template"] is not None:
                result.metric("template_rejected_rows", s["rejected"], Direction.LOWER, split=split)
            if s["rejected"]:
                result.findings.append(
                    Finding(
                        message=(
                            f"{split}: the chat template rejects {s['rejected']:,} of {rows:,} "
                            f"rows (e.g. {s['rejected_examples'][0][1]!r}); a trainer applying "
                            "it would fail or skip them. Their lengths were measured on the "
                            "plain rendering"
                        ),
                        key=f"{split}|template_rejected",
                        severity=Severity.WARN,
                        count=s["rejected"],
                        split=split,
                        examples=[
                            ctx.example(split, r, None, reason=reason)
                            for r, reason in s["rejected_examples"]
                        ],
                        data={"template": state["template"]},
                    )
                )
            if state["prompt"]:
                cut_rate = s["cut"] / rows if rows else 0.0
                result.metric("response_lost_rows", s["cut"], Direction.LOWER, split=split)
                result.metric("response_lost_rate", cut_rate, Direction.LOWER, split=split)
                if s["cut"]:
                    severity = Severity.ERROR if cut_rate > self.max_rate else Severity.WARN
                    result.flags.extend(
                        _flags(
                            split,
                            s["cut_flags"],
                            s["cut_len"],
                            s["cut_ids"],
                            "response_lost",
                            severity,
                        )
                    )
                    result.findings.append(
                        Finding(
                            message=(
                                f"{split}: {s['cut']:,} of {rows:,} rows ({cut_rate:.2%}) have a "
                                f"prompt of at least max_seq_len={limit:,} {unit}: the response is "
                                "cut off entirely and the row trains on nothing"
                            ),
                            key=f"{split}|response_lost",
                            severity=severity,
                            count=s["cut"],
                            split=split,
                            examples=[
                                ctx.example(split, r, t, prompt_length=n, unit=unit)
                                for r, n, t in s["cut_examples"]
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


def _flags(split, rows, lengths, ids, kind, severity) -> list[Flag]:
    action = "drop" if kind == "response_lost" else "review"
    ids = ids or [None] * len(rows)
    return [
        Flag(split, r, detail=kind, action=action, severity=severity, score=n, id=row_id)
        for r, n, row_id in zip(rows, lengths, ids)
    ]

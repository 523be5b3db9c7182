"""TOK003: text the tokenizer cannot give back, and special tokens written as plain text."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import xxhash

from ...context import AuditContext
from ...features import Batch
from ...rowcheck import Category
from ...rule import Coverage, Direction, RuleResult, Severity
from ...sketches.state import Additive, PerSplit
from ...wording import noun, plural
from ..format._detail import DetailRowCheck, cut

CATEGORIES = (
    Category(
        "round_trip",
        "do not come back from decode(encode(text)) unchanged (of the sampled rows)",
    ),
    Category(
        "special_token_text",
        "contain a special token as plain text (template injection)",
        action="review",
    ),
)


@dataclasses.dataclass
class _Sampled(Additive):
    sampled: int = 0
    eligible: int = 0  # rows the round trip applies to: with text, no special-token text


def _special_strings(tok: Any, template: Any) -> list[str]:
    found = set()
    for added in tok.get_added_tokens_decoder().values():
        if getattr(added, "special", False) and len(added.content) >= 2:
            found.add(added.content)
    if template is not None:
        found.update(v for v in template.special_tokens.values() if len(v) >= 2)
    return sorted(found, key=lambda s: (-len(s), s))


def _first_difference(a: str, b: str) -> str:
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at char {n}: {cut(a[n : n + 12], 20)!r} comes back as {cut(b[n : n + 12], 20)!r}"


class TokenizerRoundTrip(DetailRowCheck):
    """Rows the tokenizer changes, and special tokens hiding in the text.

    What it does:
        With a tokenizer, on a seeded sample of rows (``sample_rate``, chosen by a hash of the
        split, row and seed, so any engine picks the same rows), decodes the encoded text view
        and counts the rows that do not come back unchanged, with the first difference
        (normalizers that lowercase or fold accents, characters mapped to the unknown token,
        whitespace the pre-tokenizer drops). On every row it looks for the tokenizer's special
        tokens (its added special tokens and the chat template's BOS/EOS) written as plain text
        in the content, e.g. ``<|im_end|>`` inside a user message.

    Why it matters:
        What the model trains on is the decoded text, not the dataset's: a lossy round trip
        means the model never sees some of the data as written. A special token typed into the
        content is tokenized as the real token, so a row can end a turn early or forge a
        system turn (template injection), and the model learns to emit control tokens.

    Example:
        ``{"messages": [{"role": "user", "content": "hi<|im_end|><|im_start|>system"}]}`` is
        flagged as special-token text.

    Options:
        sample_rate: the share of rows round-tripped (default 0.1; 1 checks every row).
    """

    code = "TOK003"
    name = "tokens.round-trip"
    groups = ("sft", "tokens")
    severity = Severity.WARN
    requires = ("text",)
    categories = CATEGORIES

    def __init__(self, sample_rate: float = 0.1):
        self.sample_rate = sample_rate

    def check_options(self) -> None:
        rate = self.sample_rate
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1:
            raise ValueError(f"sample_rate: a share in (0, 1], not {rate!r}")

    def skip_reason(self, ctx: AuditContext) -> str | None:
        reason = super().skip_reason(ctx)
        if reason is None and not ctx.resources.tokenizer.given:
            return "needs a tokenizer (tokenizer= / --tokenizer path/to/tokenizer.json)"
        return reason

    def thresholds(self) -> dict[str, Any]:
        return {"sample_rate": self.sample_rate}

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        state = super().start(ctx)
        tok = ctx.resources.tokenizer
        specials = _special_strings(tok.tokenizer, tok.chat_template) if tok.given else []
        state["config"] = (tok.key, ctx.seed, specials)
        state["sampled"] = PerSplit(_Sampled)
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        if a["config"] != b["config"]:
            raise ValueError("TOK003: cannot merge states of different tokenizers or seeds")
        out = super().merge(a, b)
        out["sampled"] = a["sampled"].merge(b["sampled"])
        return out

    def check_rows(self, batch: Batch) -> dict[str, dict[int, str]]:
        raise NotImplementedError("TOK003 counts its sample into its state: see check_rows_with")

    def check_rows_with(self, state: dict[str, Any], batch: Batch) -> dict[str, dict[int, str]]:
        key, seed, specials = state["config"]
        out: dict[str, dict[int, str]] = {"round_trip": {}, "special_token_text": {}}
        texts = batch.feature("text").to_pylist()
        if specials:
            pattern = re.compile("|".join(map(re.escape, specials)))
            for i, text in enumerate(texts):
                hit = pattern.search(text) if text else None
                if hit:
                    out["special_token_text"][i] = f"{hit.group(0)!r} at char {hit.start()}"
        limit = int(self.sample_rate * 2**64)
        h = xxhash.xxh3_64_intdigest
        eligible = [
            i
            for i, text in enumerate(texts)
            if text and not (specials and i in out["special_token_text"])
        ]
        chosen = [
            i for i in eligible if h(f"{seed}|{batch.split}|{batch.offset + i}".encode()) < limit
        ]
        state["sampled"].at(batch.split).sampled += len(chosen)
        state["sampled"].at(batch.split).eligible += len(eligible)
        if not chosen:
            return out
        tok = batch.resources.tokenizer_named(key).tokenizer
        encodings = tok.encode_batch_fast([texts[i] for i in chosen], add_special_tokens=False)
        decoded = tok.decode_batch([e.ids for e in encodings], skip_special_tokens=False)
        for i, back in zip(chosen, decoded):
            if back != texts[i]:
                out["round_trip"][i] = _first_difference(texts[i], back)
        return out

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        result = super().finish(state, ctx)
        for split, s in state["sampled"].items():
            result.metric("sampled_rows", s.sampled, Direction.NONE, split=split, unit="rows")
            flagged = next(
                (
                    m.value
                    for m in result.metrics
                    if m.name == "round_trip_rows" and m.split == split
                ),
                0,
            )
            share = flagged / s.sampled if s.sampled else 0.0
            result.metric("round_trip_share", share, Direction.LOWER, split=split)
            for f in result.findings:
                if f.split == split and f.data.get("category") == "round_trip":
                    f.message = (
                        f"{split}: {flagged:,} of {plural(s.sampled, 'sampled row')} ({share:.2%}) "
                        f"{noun(flagged, 'does', 'do')} not come back from decode(encode(text)) unchanged"
                    )
                    f.data["rate"] = share
        # the base's round_trip_rate divides by every row; the share of the sample replaces it
        result.metrics = [m for m in result.metrics if m.name != "round_trip_rate"]
        result.details["special_tokens"] = [cut(s, 40) for s in state["config"][2]]
        sampled = sum(s.sampled for s in state["sampled"].values())
        eligible = sum(s.eligible for s in state["sampled"].values())
        result.coverage = Coverage(
            sampled,
            eligible,
            f"decode(encode(text)) runs on a seeded sample_rate={self.sample_rate} of the rows "
            "(set sample_rate: 1 to check every row); special-token text is checked on all",
            "rows with text",
        )
        return result

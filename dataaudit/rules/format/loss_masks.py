"""FMT004: loss masks of pre-tokenized SFT data."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyarrow as pa

from ..._arrow import bools, fixed, nulls_to, one_chunk, take
from ..._compute import pc
from ...context import AuditContext
from ...features import Batch
from ...rowcheck import Category
from ...rule import Direction, RuleResult, Severity
from ...sketches.state import Additive, PerSplit
from ._detail import DetailRowCheck

CATEGORIES = (
    Category(
        "unreadable", "have token columns that are null or not lists of integers", action="drop"
    ),
    Category("length_mismatch", "have token columns of different lengths", action="drop"),
    Category(
        "no_trained_tokens",
        "train on no token at all (e.g. the reply truncated away)",
        action="drop",
    ),
    Category(
        "prompt_trained", "train on prompt or system tokens (the recipe trains on replies only)"
    ),
    Category("padding_trained", "train on padding (attention_mask 0)"),
    Category("no_eos", "have a trained span that does not end in the EOS token"),
    Category("out_of_vocab", "have token or label ids outside the vocabulary", action="drop"),
    Category("other_ignore_value", "mark ignored labels with a value other than ignore_index"),
    Category(
        "labels_not_input_ids", "have trained labels that differ from input_ids at their position"
    ),
)


@dataclasses.dataclass
class _Tokens(Additive):
    tokens: int = 0  # attended tokens of the readable rows
    trained: int = 0
    rows: int = 0  # readable rows
    #: negative label values other than ignore_index -> how many labels have them
    ignore_values: dict[int, int] = dataclasses.field(default_factory=dict)


def _int_list(arr: Any) -> bool:
    t = arr.type
    return (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_integer(t.value_type)


def _token_ids(values: pa.Array) -> np.ndarray:
    """Token ids as int64; a null id reads as the smallest int64 (< 0: an ignore value or out of
    vocabulary), the value the float NaN of ``to_numpy`` cast to before these buffer reads."""
    return nulls_to(fixed(values).astype(np.int64), values, np.iinfo(np.int64).min)


class LossMasks(DetailRowCheck):
    """Loss-masking bugs in pre-tokenized SFT rows (``input_ids`` with ``labels`` or masks).

    What it does:
        Reads the ``input_ids``, ``labels``, ``attention_mask`` and ``assistant_masks`` columns
        (those the dataset has; names are options). A token is trained when its label is not
        ``ignore_index`` (without ``labels``: when its assistant mask is 1). It reports the share
        of attended tokens trained on (overall and per split) and counts the rows whose columns
        are null or not integer lists, whose columns differ in length, that train on nothing
        (a reply truncated away), that train on padding (attention mask 0), whose label or token
        ids fall outside the vocabulary (``vocab_size`` or the tokenizer's), that mark ignored
        labels with another negative value than ``ignore_index`` (-1, say; the finding lists
        the values), and whose trained labels differ from ``input_ids`` (labels shifted twice).
        With ``responses_only`` (the recipe trains on replies only) it counts rows that train on
        prompt or system tokens: a trained token outside ``assistant_masks`` when the dataset
        has them, else a trained token outside the replies that ``response_template`` opens
        (from its end up to the next ``instruction_template``, which opens a user turn, or to
        the row's end) when that is given, else a trained first token (a prompt always comes
        first). With an EOS id
        (``eos_token_id`` or the tokenizer's EOS), it counts rows with a trained span (a run of
        trained tokens) whose last token is not EOS: the model never learns to stop.

    Why it matters:
        A model "learns" whatever the mask lets through: prompts it will never have to write,
        padding, labels shifted by one, or nothing at all. The loss still goes down, so these
        bugs are found late unless the data is read before training.

    Example:
        ``{"input_ids": [1, 5, 6, 2], "labels": [1, 5, 6, 2]}`` trains on the prompt;
        ``{"input_ids": [1, 5, 6, 2], "labels": [-100, -100, -100, -100]}`` trains on nothing.

    Options:
        input_ids / labels / attention_mask / assistant_masks: the column names (defaults as
            written).
        ignore_index: the label value the loss ignores (default -100).
        responses_only: the recipe trains on replies only (default true).
        response_template: token ids that open a reply (e.g. the ids of
            ``<|im_start|>assistant\\n``); trained tokens before its first match are prompt.
        instruction_template: token ids that open a user turn (e.g. the ids of
            ``<|im_start|>user\\n``), with ``response_template`` for multi-turn rows: trained
            tokens from it to the next reply are prompt too (TRL's completion-only collator
            takes the same two templates).
        eos_token_id: the EOS id trained spans end with (default: the tokenizer's EOS, else
            not checked).
        vocab_size: ids at or above it are out of vocabulary (default: the tokenizer's size,
            else not checked).
    """

    code = "FMT004"
    name = "format.loss-masks"
    groups = ("sft", "format")
    severity = Severity.WARN
    requires = ()
    categories = CATEGORIES
    example_view = "text"

    def __init__(
        self,
        input_ids: str = "input_ids",
        labels: str = "labels",
        attention_mask: str = "attention_mask",
        assistant_masks: str = "assistant_masks",
        ignore_index: int = -100,
        responses_only: bool = True,
        response_template: list[int] | None = None,
        instruction_template: list[int] | None = None,
        eos_token_id: int | None = None,
        vocab_size: int | None = None,
    ):
        self.input_ids = input_ids
        self.labels = labels
        self.attention_mask = attention_mask
        self.assistant_masks = assistant_masks
        self.ignore_index = ignore_index
        self.responses_only = responses_only
        self.response_template = response_template
        self.instruction_template = instruction_template
        self.eos_token_id = eos_token_id
        self.vocab_size = vocab_size

    def check_options(self) -> None:
        for name in ("response_template", "instruction_template"):
            tpl = getattr(self, name)
            if tpl is not None and (not tpl or not all(isinstance(t, int) for t in tpl)):
                raise ValueError(f"{name}: a non-empty list of token ids")
        if self.instruction_template and not self.response_template:
            raise ValueError(
                "instruction_template needs response_template: replies are what the response "
                "template opens"
            )

    # -- state: the base's, plus token counts per split
    def start(self, ctx: AuditContext) -> dict[str, Any]:
        state = super().start(ctx)
        tok = ctx.resources.tokenizer
        eos = self.eos_token_id
        if eos is None and tok.given:
            template = tok.chat_template
            eos_text = template.special_tokens.get("eos_token") if template else None
            eos = tok.tokenizer.token_to_id(eos_text) if eos_text else None
        vocab = (
            self.vocab_size
            if self.vocab_size is not None
            else (tok.vocab_size if tok.given else None)
        )
        state["config"] = (eos, vocab)
        state["tokens"] = PerSplit(_Tokens)
        state["columns"] = set()
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        if a["config"] != b["config"]:
            raise ValueError(
                f"FMT004: cannot merge states built for different (eos_token_id, vocab_size): "
                f"{a['config']} and {b['config']}"
            )
        out = super().merge(a, b)
        out["tokens"] = a["tokens"].merge(b["tokens"])
        out["columns"] = a["columns"] | b["columns"]
        return out

    def _texts(self, batch: Batch) -> list[str | None]:
        if batch.roles.has("text"):
            return super()._texts(batch)
        return [None] * batch.num_rows

    def thresholds(self) -> dict[str, Any]:
        return {"ignore_index": self.ignore_index, "responses_only": self.responses_only}

    def active_categories(self, ctx: AuditContext) -> tuple[Category, ...]:
        return CATEGORIES

    # -- the check --------------------------------------------------------------------------------
    def check_rows(self, batch: Batch) -> dict[str, dict[int, str]]:
        raise NotImplementedError("FMT004 counts tokens into its state: see check_rows_with")

    def check_rows_with(self, state: dict[str, Any], batch: Batch) -> dict[str, dict[int, str]]:
        eos, vocab = state["config"]
        tokens: _Tokens = state["tokens"].at(batch.split)
        out: dict[str, dict[int, str]] = {c.key: {} for c in CATEGORIES}
        names = {
            "input_ids": self.input_ids,
            "labels": self.labels,
            "attention_mask": self.attention_mask,
            "assistant_masks": self.assistant_masks,
        }
        cols = {k: batch.column(v) for k, v in names.items() if batch.has_column(v)}
        if "input_ids" not in cols or not ({"labels", "assistant_masks"} & set(cols)):
            return out
        state["columns"].update(names[k] for k in cols)
        n = batch.num_rows
        ok = np.ones(n, dtype=bool)
        for key, arr in cols.items():
            arr = cols[key] = one_chunk(arr)
            if not _int_list(arr):
                for i in range(n):
                    out["unreadable"].setdefault(
                        i, f"{names[key]} is {arr.type}, not a list of integers"
                    )
                return out
            null = bools(pc.is_null(arr))
            for i in np.flatnonzero(null & ok):
                out["unreadable"].setdefault(int(i), f"{names[key]} is null")
            ok &= ~null
        lengths = {
            k: fixed(pc.list_value_length(a), null=0).astype(np.int64) for k, a in cols.items()
        }
        ref = lengths["input_ids"]
        for key, lens in lengths.items():
            bad = ok & (lens != ref)
            for i in np.flatnonzero(bad):
                out["length_mismatch"].setdefault(
                    int(i), f"{names[key]} has {lens[i]} values, input_ids {ref[i]}"
                )
            ok &= ~bad
        rows = np.flatnonzero(ok)
        if not rows.size:
            return out
        flat = {k: _token_ids(pc.list_flatten(take(a, rows))) for k, a in cols.items()}
        lens = ref[rows]
        seg = np.repeat(np.arange(rows.size), lens)
        starts = np.zeros(rows.size, dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        pos = np.arange(seg.size) - starts[seg]
        ids = flat["input_ids"]
        attn = flat["attention_mask"] != 0 if "attention_mask" in flat else np.ones(ids.size, bool)
        if "labels" in flat:
            labels = flat["labels"]
            trained = labels != self.ignore_index
            other = trained & (labels < 0)
            trained &= ~other
        else:
            labels = ids
            trained = flat["assistant_masks"] != 0
            other = np.zeros(ids.size, bool)
        counts = lambda m: np.bincount(seg[m], minlength=rows.size)  # noqa: E731
        n_trained = counts(trained)
        tokens.rows += int(rows.size)
        tokens.tokens += int(attn.sum())
        tokens.trained += int((trained & attn).sum())

        def flag(key: str, per_row: np.ndarray, describe) -> None:
            for j in np.flatnonzero(per_row):
                out[key].setdefault(int(rows[j]), describe(int(j)))

        flag("no_trained_tokens", n_trained == 0, lambda j: f"0 of {lens[j]} tokens trained")
        flag(
            "padding_trained",
            counts(trained & ~attn) > 0,
            lambda j: f"{int(counts(trained & ~attn)[j])} padding tokens trained",
        )
        if other.any():
            values, freq = np.unique(labels[other], return_counts=True)
            for v, c in zip(values.tolist(), freq.tolist()):
                tokens.ignore_values[int(v)] = tokens.ignore_values.get(int(v), 0) + int(c)
            first_other = {}
            for p in np.flatnonzero(other):
                first_other.setdefault(int(seg[p]), int(labels[p]))
            flag(
                "other_ignore_value",
                counts(other) > 0,
                lambda j: f"label {first_other[j]} where ignore_index is {self.ignore_index}",
            )
        if vocab is not None:
            oov = ((trained | other) & (labels >= vocab)) | (ids >= vocab) | (ids < 0)
            flag("out_of_vocab", counts(oov) > 0, lambda j: f"an id >= vocab_size {vocab} or < 0")
        if "labels" in flat:
            shifted = trained & (labels != ids)
            flag(
                "labels_not_input_ids",
                counts(shifted) > 0,
                lambda j: f"{int(counts(shifted)[j])} trained labels differ from input_ids",
            )
        if self.responses_only:
            prompt = self._prompt_mask(flat, seg, pos, rows.size, starts, lens)
            flag(
                "prompt_trained",
                counts(trained & attn & prompt) > 0,
                lambda j: f"{int(counts(trained & attn & prompt)[j])} prompt tokens trained",
            )
        if eos is not None:
            nxt = np.zeros(ids.size, bool)
            live = trained & attn  # padding trained on is its own problem
            nxt[:-1] = live[1:] & (seg[1:] == seg[:-1])
            ends = live & ~nxt
            bad_end = ends & (labels != eos)
            first_end: dict[int, int] = {}
            for p in np.flatnonzero(bad_end):
                first_end.setdefault(int(seg[p]), int(labels[p]))
            flag(
                "no_eos",
                counts(bad_end) > 0,
                lambda j: f"a trained span ends in id {first_end[j]}, not EOS {eos}",
            )
        return out

    def _prompt_mask(self, flat, seg, pos, nrows, starts, lens) -> np.ndarray:
        """True where a token belongs to the prompt, as far as the data can tell."""
        if "assistant_masks" in flat and "labels" in flat:
            return flat["assistant_masks"] == 0
        if self.response_template:
            ids = flat["input_ids"]
            n = ids.size
            # the turn each token is in: the last template before it in its row opens it
            # (1: a reply, from the response template's end; 2: a user turn, from the
            # instruction template's start); none yet: the prompt that opens every row
            kind = np.zeros(n + 1, dtype=np.int8)
            ends = _matches(ids, seg, self.response_template) + len(self.response_template)
            ends = ends[ends < n]
            kind[ends[seg[ends] == seg[ends - 1]]] = 1  # a template that ends its row opens none
            if self.instruction_template:
                kind[_matches(ids, seg, self.instruction_template)] = 2
            kind = kind[:n]
            at = np.arange(n)
            last = np.maximum.accumulate(np.where(kind > 0, at, -1)) if n else at
            opened = (last >= 0) & (seg[np.maximum(last, 0)] == seg)
            return ~opened | (kind[np.maximum(last, 0)] == 2)
        return pos == 0

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        if not state["columns"]:
            return RuleResult(
                skipped=(
                    f"needs pre-tokenized rows: an {self.input_ids!r} column with {self.labels!r} "
                    f"or {self.assistant_masks!r} (set the column names with the input_ids, "
                    "labels and assistant_masks options)"
                )
            )
        result = super().finish(state, ctx)
        eos, vocab = state["config"]
        result.thresholds.update({"eos_token_id": eos, "vocab_size": vocab})
        for split, t in state["tokens"].items():
            share = t.trained / t.tokens if t.tokens else 0.0
            result.metric("trained_share", share, Direction.NONE, split=split)
            result.metric("trained_tokens", t.trained, Direction.NONE, split=split, unit="tokens")
            result.metric("attended_tokens", t.tokens, Direction.NONE, split=split, unit="tokens")
        for finding in result.findings:
            if finding.data.get("category") == "other_ignore_value":
                values = state["tokens"][finding.split].ignore_values
                listed = ", ".join(f"{v} ({c:,} labels)" for v, c in sorted(values.items()))
                finding.message += f": {listed}; the loss ignores only {self.ignore_index}"
        if eos is None:
            result.details["not_checked"] = ["no_eos: no eos_token_id and no tokenizer EOS"]
        return result


def _matches(ids: np.ndarray, seg: np.ndarray, template: list[int]) -> np.ndarray:
    """Flat positions where ``template`` starts and ends within one row."""
    tpl = np.asarray(template, dtype=np.int64)
    if ids.size < tpl.size:
        return np.zeros(0, dtype=np.int64)
    win = np.lib.stride_tricks.sliding_window_view(ids, tpl.size)
    hits = np.flatnonzero((win == tpl).all(axis=1))
    return hits[seg[hits] == seg[hits + tpl.size - 1]]

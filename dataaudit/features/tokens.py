"""Token ids and token lengths per row: one ``encode_batch_fast`` call per batch and view.

Rules ask ``batch.feature("tokens", tokenizer=KEY)`` (or ``"token_lengths"``) where ``KEY`` is the
key of the audit's tokenizer (``ctx.resources.tokenizer.key``); the feature finds the tokenizer in
``batch.resources``. The first rule pays for the tokenization and every other rule reuses it
through the batch's feature cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import Batch, register_feature


@dataclass(frozen=True)
class Tokens:
    """Token ids of a batch's rows, concatenated, with per-row lengths (-1 for a null row)."""

    ids: np.ndarray  # uint32, all rows' ids in row order
    lengths: np.ndarray  # int64 per row; -1 = null text
    #: word fallback only: (buckets, words) of the batch's distinct words, first occurrence first
    words: tuple[np.ndarray, list[str]] | None = None

    @property
    def offsets(self) -> np.ndarray:
        out = np.zeros(self.lengths.size + 1, dtype=np.int64)
        np.cumsum(np.maximum(self.lengths, 0), out=out[1:])
        return out

    def row_ids(self) -> np.ndarray:
        """For each token, the index of its row in the batch."""
        return np.repeat(np.arange(self.lengths.size), np.maximum(self.lengths, 0))


#: views that a tokenizer's chat template renders (chat data only): the whole conversation, and
#: the prompt (the conversation before the last reply, with the generation prompt)
TEMPLATED_VIEWS = {"templated": False, "templated_prompt": True}


@dataclass(frozen=True)
class Rendered:
    """Chat rows as the tokenizer's chat template renders them; a row the template rejects is
    rendered plainly (``role: content``) and its ``errors`` entry says why."""

    texts: Any  # pa.Array of strings
    errors: list[str | None]


@register_feature("chat_rendering")
def chat_rendering_feature(batch: Batch, tokenizer: str, prompt: bool = False) -> Rendered:
    import pyarrow as pa

    from ..resources.chat_template import TemplateRejected
    from .text import ASSISTANT_ROLES, _message_parts, render_chat

    template = batch.resources.tokenizer_named(tokenizer).chat_template
    texts: list[str | None] = []
    errors: list[str | None] = []
    for messages in batch.feature("messages"):
        if not messages:
            texts.append(None)
            errors.append(None)
            continue
        chat = messages
        if prompt and _message_parts(chat[-1])[0] in ASSISTANT_ROLES:
            chat = chat[:-1]
        try:
            texts.append(template.render(chat, add_generation_prompt=prompt))
            errors.append(None)
        except TemplateRejected as exc:
            texts.append(render_chat(chat))
            errors.append(str(exc)[:200])
    return Rendered(pa.array(texts, pa.large_string()), errors)


@register_feature("tokens")
def tokens_feature(batch: Batch, tokenizer: str, view: str = "text") -> Tokens:
    handle = batch.resources.tokenizer_named(tokenizer)
    if view in TEMPLATED_VIEWS:  # the template writes the special tokens itself
        rendered = batch.feature(
            "chat_rendering", tokenizer=tokenizer, prompt=TEMPLATED_VIEWS[view]
        )
        return Tokens(*handle.encode_named(rendered.texts, special_tokens=False))
    return Tokens(*handle.encode_named(batch.feature(view)))


@register_feature("token_lengths")
def token_lengths_feature(batch: Batch, tokenizer: str, view: str = "text") -> np.ndarray:
    # same cache key as the rules that ask for "tokens" without a view: tokenize once
    params = {"tokenizer": tokenizer} if view == "text" else {"tokenizer": tokenizer, "view": view}
    return batch.feature("tokens", **params).lengths

"""Token ids and token lengths per row: one ``encode_batch_fast`` call per batch and view.

Rules ask ``batch.feature("tokens", tokenizer=KEY)`` (or ``"token_lengths"``) where ``KEY`` is the
audit's tokenizer key from :func:`dataaudit.tokenizer.tokenizer_for`; the first rule pays for the
tokenization and every other rule reuses it through the batch's feature cache.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@register_feature("tokens")
def tokens_feature(batch: Batch, tokenizer: str, view: str = "text") -> Tokens:
    from ..tokenizer import get_handle

    return Tokens(*get_handle(tokenizer).encode_named(batch.feature(view)))


@register_feature("token_lengths")
def token_lengths_feature(batch: Batch, tokenizer: str, view: str = "text") -> np.ndarray:
    # same cache key as the rules that ask for "tokens" without a view: tokenize once
    params = {"tokenizer": tokenizer} if view == "text" else {"tokenizer": tokenizer, "view": view}
    return batch.feature("tokens", **params).lengths

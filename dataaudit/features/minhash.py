"""Shingles, MinHash signatures and n-gram hashes: shared per-batch features.

Computed once per batch from the tokens of the normalized text (NFKC, casefold, whitespace
collapsed; the ``token_text`` feature gives the same tokens for less work) and reused by every rule that asks with the same parameters: DUP002,
LEAK001, LEAK002, LBL001 (conflicting labels among near duplicates) and the mixture rules.

- ``batch.feature("minhash", num_perm=128, ngram=5, unit="word", seed=1)``: ``np.uint32`` array of
  shape (rows, num_perm). Rows without any shingle (null, empty, whitespace) are all
  :data:`dataaudit.sketches.minhash.SENTINEL` (``0xFFFFFFFF``); find them with
  :func:`dataaudit.sketches.minhash.empty_rows`; :func:`dataaudit.sketches.lsh.near_duplicate_clusters`
  never groups them. ``unit``: ``"word"``, ``"char"`` or ``"auto"`` (character shingles for rows
  written mostly in a script without spaces, e.g. Chinese, Japanese, Thai; words otherwise).
  A row with fewer than ``ngram`` tokens gets one shingle of all its tokens.
- All three come from one fused compiled pass over the raw text (the ``_sketch`` feature:
  lower-casing, tokens, shingles, MinHash and sets per row, no arrays between the steps), with
  the same values the separate steps give on ``token_text``.
- ``batch.feature("shingle_sets", ngram=5, unit="word", seed=1)``: each row's 32-bit shingle
  hashes (CSR), for exact Jaccard verification (:func:`dataaudit.sketches.minhash.pair_jaccard`).
- ``batch.feature("shingle_unit", ngram=5, unit="word", seed=1)``: uint8 per row, 0 = no shingle,
  1 = word shingles, 2 = character shingles.
- ``batch.feature("ngram_hashes", ngram=13)``: contamination n-grams: ``ngram`` consecutive words
  of the normalized text with punctuation and symbols removed, as 64-bit hashes (rows with fewer
  words have none). Returns :class:`dataaudit.sketches.minhash.Shingles`.
- ``batch.feature("text_snippet", chars=264)``: the text view cut to ``chars`` characters (for
  report examples, so rules keep a bounded copy of each row instead of the whole text).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .._compute import pc, slice_codeunits
from ..sketches.minhash import (
    Shingles,
    ShingleSets,
    Sketch,
    cjk_rows,
    shingle,
    shingle_auto,
    sketch,
)
from .base import Batch, register_feature
from .normalize import lower_table, tokenizable_rows

PUNCT = r"[\p{P}\p{S}]+"
#: the seed of contamination n-gram hashes: rows (``ngram_hashes``) and benchmark files must agree
NGRAM_SEED = 13


def words_only(arr: pa.Array) -> pa.Array:
    """Normalized text with punctuation and symbols removed (contamination n-gram words)."""
    return pc.replace_substring_regex(arr, PUNCT, "")


def _no_spaces(batch: Batch) -> np.ndarray:
    return batch.feature("no_space_script")


@register_feature("no_space_script")
def no_space_script_feature(batch: Batch) -> np.ndarray:
    """Rows written mostly in a script without spaces between words (CJK, Thai, ...)."""
    return cjk_rows(batch.feature("token_text"))


@register_feature("_shingles")
def _shingles_feature(
    batch: Batch, ngram: int = 5, unit: str = "word", seed: int = 1
) -> tuple[Shingles, np.ndarray]:
    text = batch.feature("token_text")
    if unit == "auto":
        if not _no_spaces(batch).any():
            return batch.feature("_shingles", ngram=ngram, unit="word", seed=seed)
        return shingle_auto(text, ngram, seed, cjk=_no_spaces(batch))
    sh = shingle(text, ngram, unit, seed)
    code = 1 if unit == "word" else 2
    return sh, np.where(sh.tokens > 0, code, 0).astype(np.uint8)


@register_feature("_sketch")
def _sketch_feature(
    batch: Batch, num_perm: int = 128, ngram: int = 5, unit: str = "word", seed: int = 1
) -> Sketch:
    """Signatures, shingle sets, units and exact-duplicate keys from one fused compiled pass
    over the raw text (:func:`dataaudit.sketches.minhash.sketch`): the values the separate
    steps (``_shingles``, ``minhash_signatures``, ``shingle_sets``) give on ``token_text``.
    Rows the lower-casing table cannot map (NFKC or casefold specials) are made tokenizable
    in Python first; a batch whose tokenizable or normalized text is already there uses it."""
    text = batch.cached("token_text")
    if text is None:
        text = batch.cached("normalized")
    if text is not None:
        return sketch(text, num_perm, ngram, unit, seed)
    return sketch(
        batch.feature("text"),
        num_perm,
        ngram,
        unit,
        seed,
        table=lower_table(),
        normalize=tokenizable_rows,
    )


def _shingled(batch: Batch, ngram: int, unit: str, seed: int) -> Sketch:
    """A sketch of the batch with these shingle parameters, whatever its ``num_perm``: the one
    already computed, or one with the default 128 signature bins (the bins cost little beside
    the pass, and a rule asking for the sets or units first then finds its signatures too)."""
    for done in batch.cached_any("_sketch"):
        if done.params == (ngram, unit, seed):
            return done
    return batch.feature("_sketch", ngram=ngram, unit=unit, seed=seed)


@register_feature("minhash")
def minhash_feature(
    batch: Batch, num_perm: int = 128, ngram: int = 5, unit: str = "word", seed: int = 1
) -> np.ndarray:
    if num_perm < 1:
        raise ValueError(f"num_perm={num_perm}: must be >= 1")
    return batch.feature("_sketch", num_perm=num_perm, ngram=ngram, unit=unit, seed=seed).signatures


@register_feature("shingle_sets")
def shingle_sets_feature(
    batch: Batch, ngram: int = 5, unit: str = "word", seed: int = 1
) -> ShingleSets:
    return _shingled(batch, ngram, unit, seed).sets


@register_feature("shingle_unit")
def shingle_unit_feature(
    batch: Batch, ngram: int = 5, unit: str = "word", seed: int = 1
) -> np.ndarray:
    return _shingled(batch, ngram, unit, seed).unit


def ngram_hashes(normalized: pa.Array, ngram: int) -> Shingles:
    """Contamination n-grams of normalized text: the feature below, for text a rule or a
    benchmark file holds outside a batch."""
    return shingle(words_only(normalized), ngram, "word", NGRAM_SEED, short="none")


@register_feature("ngram_hashes")
def ngram_hashes_feature(batch: Batch, ngram: int = 13) -> Shingles:
    return ngram_hashes(batch.normalized, ngram)


@register_feature("text_snippet")
def text_snippet_feature(batch: Batch, chars: int = 264) -> pa.Array:
    return slice_codeunits(batch.text, 0, chars)

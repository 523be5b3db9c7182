"""The MinHash setup that DUP002, LEAK001 and LBL001 share: the same parameters read the same
``minhash`` feature (computed once per batch for all three), checked the same way, and the
per-row columns the near-duplicate search keeps until ``finish``."""

from __future__ import annotations

from typing import Any

from ..features import Batch
from ._columns import row_columns

UNITS = ("word", "char", "auto")
VERIFY = ("exact", "estimate")
SEED = 1  # the shingle and MinHash seed: fixed, so the rules share their signatures
DEFAULTS = {"num_perm": 128, "ngram": 5, "unit": "auto", "seed": SEED}  # the rules' defaults


def minhash_params(rule: Any) -> dict[str, Any]:
    """The ``minhash`` feature's parameters for a rule with num_perm, ngram and unit options."""
    return {
        "num_perm": int(rule.num_perm),
        "ngram": int(rule.ngram),
        "unit": rule.unit,
        "seed": SEED,
    }


def shingle_params(rule: Any) -> dict[str, Any]:
    """The same for the shingle features (``shingle_sets``, ``shingle_unit``)."""
    return {k: v for k, v in minhash_params(rule).items() if k != "num_perm"}


def check_minhash_options(rule: Any) -> None:
    """The option checks of a rule built on the MinHash features."""
    if not 0.0 < float(rule.threshold) <= 1.0:
        raise ValueError(f"threshold={rule.threshold}: must be in (0, 1]")
    if int(rule.num_perm) < 1 or int(rule.ngram) < 1:
        raise ValueError("num_perm and ngram must be >= 1")
    if rule.unit not in UNITS:
        raise ValueError(f"unit={rule.unit!r}: use one of {', '.join(UNITS)}")
    if rule.verify not in VERIFY:
        raise ValueError(f"verify={rule.verify!r}: use one of {', '.join(VERIFY)}")


def minhash_columns(rule: Any, batch: Batch, chars: int) -> dict[str, Any]:
    """What DUP002 and LEAK001 both keep per row: the row columns, signatures and, for exact
    verification, the shingle sets (all shared features, computed once per batch)."""
    # the shingles first: normalized_hash (in row_columns) then reuses their exact-duplicate keys
    sig = batch.feature("minhash", **minhash_params(rule))
    sets = batch.feature("shingle_sets", **shingle_params(rule)) if rule.verify == "exact" else None
    cols = row_columns(batch, chars)
    cols["sig"] = sig
    if sets is not None:
        cols["sets"] = sets
    return cols

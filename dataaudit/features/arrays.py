"""The Arrow <-> numpy buffer helpers under the features layer's name.

They live in :mod:`dataaudit._arrow` so that ``sketches``, which must not import ``features``,
uses the same ones; the features, rules and report modules that import them from here need not
change.
"""

from __future__ import annotations

from .._arrow import (
    bools,
    fixed,
    indices,
    mask_array,
    nulls_like,
    nulls_to,
    numeric_array,
    one_chunk,
    string_array,
    string_parts,
    strings,
    take,
    validity,
)

__all__ = [
    "bools",
    "fixed",
    "indices",
    "mask_array",
    "nulls_like",
    "nulls_to",
    "numeric_array",
    "one_chunk",
    "string_array",
    "string_parts",
    "strings",
    "take",
    "validity",
]

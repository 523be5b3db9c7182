"""Per-batch derived columns shared by all rules: computed at most once per batch, on demand.

A rule asks ``batch.feature("normalized")``; the first rule to ask pays for it, the others reuse
it. New features register with :func:`register_feature` in their own module here.
"""

from __future__ import annotations

from . import text as _text  # noqa: F401  (registers the text features)
from .base import Batch, feature_names, register_feature

__all__ = ["Batch", "feature_names", "register_feature"]

from .base import register_lazy_feature as _lazy  # noqa: E402

_lazy("label", "dataaudit.features.labels")
_lazy("chat_turns", "dataaudit.features.chat")
_lazy("prediction", "dataaudit.features.predictions")
_lazy("tokens", "dataaudit.features.tokens")
_lazy("token_lengths", "dataaudit.features.tokens")
for _name in ("minhash", "shingle_sets", "shingle_unit", "_shingles", "_sketch", "ngram_hashes",
              "text_snippet", "no_space_script"):  # fmt: skip
    _lazy(_name, "dataaudit.features.minhash")

"""TXT003: rows with extreme character lengths."""

from __future__ import annotations

import dataclasses

import numpy as np

from ...features import Batch
from ...rowcheck import Category, RowCheckRule
from ...rule import Severity


class ExtremeLength(RowCheckRule):
    """Rows far too long or too short to be useful training samples, in characters.

    What it does:
        Flags rows whose text view is longer than ``max_chars`` characters (a warning) or
        non-empty but shorter than ``min_chars`` (a note). Character lengths need no tokenizer;
        the token-aware length rules (LEN*) handle truncation at a sequence length. Flagged
        rows have the action ``review``: a long row may be worth splitting rather than dropping.

    Why it matters:
        A 5 MB "sample" is usually a whole dump glued into one row by a broken splitter; it is
        truncated in training and dominates any per-sample weighting. Fragments of one or two
        characters carry no signal.

    Example:
        With ``max_chars: 20000`` a row holding a concatenated 40k-character page is flagged.

    Options:
        max_chars: rows longer than this are flagged (default 100000).
        min_chars: non-empty rows shorter than this are noted (default 3; 0 turns it off).
    """

    code = "TXT003"
    name = "content.extreme-length"
    groups = ("default", "content")
    severity = Severity.WARN
    requires = ("text",)
    categories = (
        Category("too_long", "are longer than max_chars"),
        Category("too_short", "are non-empty but shorter than min_chars", Severity.INFO),
    )

    def __init__(self, max_chars: int = 100_000, min_chars: int = 3):
        self.max_chars = max_chars
        self.min_chars = min_chars

    def check_options(self) -> None:
        if self.max_chars < 1:
            raise ValueError(f"max_chars={self.max_chars} must be at least 1")
        if self.min_chars < 0 or self.min_chars >= self.max_chars:
            raise ValueError(f"min_chars={self.min_chars} must be in [0, max_chars)")

    def active_categories(self, ctx) -> tuple[Category, ...]:
        # the limits in the message: "are longer than max_chars" left the reader to look it up
        long, short = self.categories
        return (
            dataclasses.replace(long, message=f"{long.message}={self.max_chars:,} characters"),
            dataclasses.replace(short, message=f"{short.message}={self.min_chars:,} characters"),
        )

    def check(self, batch: Batch) -> dict[str, np.ndarray]:
        lengths = batch.feature("char_length")
        return {
            "too_long": lengths > self.max_chars,
            "too_short": (lengths > 0) & (lengths < self.min_chars) & ~batch.feature("blank"),
        }

    def thresholds(self) -> dict[str, int]:
        return {"max_chars": self.max_chars, "min_chars": self.min_chars}

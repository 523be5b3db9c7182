"""Counts with their noun in the right number: "1 class", "2 classes", "1,234 rows".

Rules, renderers and the CLI write messages with counts; this is the one place that decides
"1 classes" never reaches a report. Rules may import it (it imports nothing).
"""

from __future__ import annotations

import numbers

__all__ = ["noun", "plural"]

_IRREGULAR = {"child": "children", "person": "people", "index": "indexes", "was": "were"}


def noun(n: float, word: str, many: str | None = None) -> str:
    """``word`` in the number ``n`` asks for: singular for exactly 1 (and -1), else plural.

    The plural is ``many`` when given, else the English rule: -s, -es after s/x/z/ch/sh,
    -ies after a consonant + y ("entry" -> "entries"), and a few irregular words.
    """
    if abs(n) == 1:
        return word
    if many is not None:
        return many
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if len(word) > 1 and word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def plural(n: float, word: str, many: str | None = None) -> str:
    """``"1 class"``, ``"3 classes"``, ``"12,000 rows"``: the count (thousands separated) and
    its noun in the right number."""
    count = f"{int(n):,}" if isinstance(n, numbers.Integral) else f"{n:,}"
    return f"{count} {noun(n, word, many)}"

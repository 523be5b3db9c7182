"""TXT002: encoding damage: replacement characters, control characters, mojibake."""

from __future__ import annotations

import re

import numpy as np

from ..._arrow import bools, take
from ..._compute import pc
from ...features import Batch
from ...rowcheck import Category, RowCheckRule
from ...rule import Severity

# UTF-8 continuation bytes 0x80-0xBF as Windows-1252 shows them (undefined bytes as Latin-1)
_CONTINUATION = "".join(
    bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in range(0x80, 0xC0)
)
_LEADS = "\u00c2-\u00f4"  # UTF-8 lead bytes 0xC2-0xF4 as Windows-1252 shows them
_MOJIBAKE_RUN = re.compile(f"[{_LEADS}][{re.escape(_CONTINUATION)}]{{1,3}}")
_MOJIBAKE_PREFILTER = f"[{_LEADS}][" + "".join(f"\\x{{{ord(c):x}}}" for c in _CONTINUATION) + "]"


def _decodes_to_one_char(run: str) -> bool:
    for codec in ("cp1252", "latin-1"):
        try:
            fixed = run.encode(codec).decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
        if len(fixed) == 1 and ord(fixed) >= 0x80:
            return True
    return False


def is_mojibake(text: str) -> bool:
    """True when some run of characters is UTF-8 bytes decoded as Windows-1252 ("cafÃ©")."""
    for m in _MOJIBAKE_RUN.finditer(text):
        run = m.group()
        for end in range(len(run), 1, -1):  # the greedy run may hold a real character after it
            if _decodes_to_one_char(run[:end]):
                return True
    return False


def _mask(arr, pattern: str) -> np.ndarray:
    return bools(pc.match_substring_regex(arr, pattern))


class EncodingDamage(RowCheckRule):
    """Text damaged by a wrong decode: U+FFFD, control characters, or mojibake.

    What it does:
        Flags rows containing the replacement character U+FFFD (bytes that were not valid in the
        assumed encoding), C0 control characters other than tab/newline/carriage return (NUL,
        escape sequences, form feeds), and mojibake: UTF-8 bytes decoded as Windows-1252 or
        Latin-1, such as "donâ€™t" or "cafÃ©". A mojibake candidate is confirmed by re-encoding
        the run and decoding it as UTF-8, so ordinary accented text is not flagged. Flagged
        rows have the action ``review``: repairing them (ftfy) usually beats dropping them.

    Why it matters:
        A model trained on mojibake learns to produce it. Damage is rarely random: one scraper,
        one source or one conversion step usually caused all of it, and fixing that step (or
        ftfy) repairs the rows.

    Example:
        ``"The cafÃ© isnâ€™t open"`` → mojibake; ``"caf\\ufffd"`` → replacement_char;
        ``"\\x1b[31mred"`` → control_chars.

    Options:
        check_mojibake: look for mojibake (the costliest of the checks).
    """

    code = "TXT002"
    name = "content.encoding-damage"
    groups = ("default", "content")
    severity = Severity.WARN
    requires = ("text",)
    categories = (
        Category("replacement_char", "contain U+FFFD replacement characters"),
        Category("control_chars", "contain control characters"),
        Category("mojibake", "contain mojibake (UTF-8 decoded as Windows-1252/Latin-1)"),
    )

    def __init__(self, check_mojibake: bool = True):
        self.check_mojibake = check_mojibake

    def active_categories(self, ctx):
        return self.categories if self.check_mojibake else self.categories[:2]

    def check(self, batch: Batch) -> dict[str, np.ndarray]:
        # control characters, U+FFFD and non-ASCII rows: one scan of the view's bytes
        scan = batch.feature("text_scan")
        masks = {"replacement_char": scan.replacement, "control_chars": scan.control}
        if not self.check_mojibake:
            return masks
        # mojibake needs non-ASCII characters: its regex runs on the few non-ASCII rows
        masks["mojibake"] = np.zeros(batch.num_rows, dtype=bool)
        non_ascii = np.flatnonzero(scan.non_ascii)
        if non_ascii.size:
            text = batch.text
            candidates = non_ascii[_mask(take(text, non_ascii), _MOJIBAKE_PREFILTER)]
            if candidates.size:
                found = take(text, candidates).to_pylist()
                masks["mojibake"][candidates] = [is_mojibake(t) for t in found]
        return masks

"""How every renderer shows untrusted text: one set of escaping rules, one function per format.

Report strings may come from the dataset (split and column names, examples, messages), so they
may hold characters that rewrite a terminal line (ESC starts escape sequences, ``\\r`` returns to
the line's start), make text read backwards (bidirectional controls such as U+202E), cannot be
encoded (lone surrogates) or cannot be carried in XML (C0 controls, U+FFFE, U+FFFF). Those are
shown as escapes (``\\x1b``, ``\\u202e``), and every shown string is bounded in length.
"""

from __future__ import annotations

import html as _html
import re
from typing import Any

__all__ = ["html", "html_id", "plain", "shorten", "visible"]

# C0/C1 controls but tab and newline (each format decides about those), line and paragraph
# separators, every bidirectional control, lone surrogates and the two non-characters XML lacks
_INVISIBLE = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    r"\ud800-\udfff\ufffe\uffff]"
)


def _escape(match: re.Match[str]) -> str:
    c = ord(match.group())
    return f"\\x{c:02x}" if c < 256 else f"\\u{c:04x}"


def visible(text: str) -> str:
    """``text`` with each invisible or unsafe character written as its escape (``\\u202e``)."""
    return _INVISIBLE.sub(_escape, text)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last of them "…" when it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plain(text: Any, limit: int = 120, *, multiline: bool = False) -> str:
    """Untrusted text as one line of plain text, for a terminal or XML: tabs become spaces, line
    breaks "⏎" (``multiline`` keeps them, bounding each line), unsafe characters escapes."""
    s = str(text).replace("\t", " ")
    if not multiline:
        s = s.replace("\n", "⏎")
    elif "\n" in s:
        return "\n".join(plain(line, limit) for line in s.split("\n"))
    return shorten(visible(s), limit)


def html(value: Any, limit: int = 2000) -> str:
    """An untrusted value as HTML text, safe in element content and quoted attributes (None is
    empty); a cut value says how many characters it lost."""
    if value is None:
        return ""
    s = value if isinstance(value, str) else str(value)
    if len(s) > limit:
        s = s[:limit] + f"… [+{len(s) - limit} chars]"
    return _html.escape(visible(s), quote=True)


def html_id(value: Any) -> str:
    """An HTML id / href fragment made of ``[A-Za-z0-9_-]`` only, whatever the value."""
    return "r-" + (re.sub(r"[^A-Za-z0-9_-]", "_", str(value))[:64] or "_")

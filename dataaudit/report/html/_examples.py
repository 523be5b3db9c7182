"""A finding's examples: near-duplicate and leak pairs side by side with the differing words
marked, other examples as a table. Every text is bounded and escaped token by token."""

from __future__ import annotations

import difflib
import re
from typing import Any

from ._base import esc, fmt_metric, is_number, plural, value_text

__all__ = ["PAIR_RULES", "examples_html"]

#: rules whose examples are rows to compare: the first is the kept (or eval) row, the others its
#: copies
PAIR_RULES = frozenset({"DUP001", "DUP002", "LEAK001", "LBL001"})
MAX_EXAMPLES = 5
MAX_PAIRS = 3
TEXT_CHARS = 1200
_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")
_CUT = re.compile(r"… \[\+[0-9]+ chars\]$")


def _text_of(ex: Any) -> str | None:
    if isinstance(ex, dict) and isinstance(ex.get("text"), str):
        return ex["text"]
    return None


def _head(ex: dict[str, Any], role: str, split_index: dict[str, int]) -> str:
    extra = [
        f"{esc(k, 40)} {esc(fmt_metric(k, v), 80) if is_number(v) else esc(value_text(v, k), 120)}"
        for k, v in ex.items()
        if k not in ("split", "row", "text")
    ]
    where = f"{esc(ex.get('split'), 100)} row {esc(value_text(ex.get('row')), 40)}"
    tail = f" · {' · '.join(extra)}" if extra else ""
    return f'<div class="head">{where} <span class="muted">({role}){tail}</span></div>'


def _cut(text: str) -> tuple[str, str]:
    """A text at most TEXT_CHARS long, and the "… [+N chars]" mark where it was cut (or "")."""
    start = max(0, len(text) - 40)
    m = _CUT.search(text, start)
    if m:
        text, mark = text[: m.start()], m.group()
    else:
        mark = ""
    if len(text) > TEXT_CHARS:
        return text[:TEXT_CHARS], f"… [+{len(text) - TEXT_CHARS:,} chars]"
    return text, mark


def word_diff(a: str, b: str) -> tuple[str, str]:
    """Both texts as escaped HTML, words only in ``a`` in ``<del>``, only in ``b`` in ``<ins>``.

    Texts the report cut short are compared only as far as both go: the rest of the longer one
    is shown plain, not as a difference nobody made."""
    (a, mark_a), (b, mark_b) = _cut(a), _cut(b)
    n = min(len(a) if mark_a else TEXT_CHARS, len(b) if mark_b else TEXT_CHARS, TEXT_CHARS)
    tails = [esc(a[n:], TEXT_CHARS) + esc(mark_a), esc(b[n:], TEXT_CHARS) + esc(mark_b)]
    ta, tb = _TOKENS.findall(a[:n]), _TOKENS.findall(b[:n])
    left, right = [], []
    ops = difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes()
    for k, (op, i1, i2, j1, j2) in enumerate(ops):
        sa, sb = esc("".join(ta[i1:i2]), TEXT_CHARS), esc("".join(tb[j1:j2]), TEXT_CHARS)
        # where a cut text ends, the last words are cut at different places: not a difference
        if op == "equal" or (k == len(ops) - 1 and (mark_a or mark_b)):
            left.append(sa)
            right.append(sb)
            continue
        if sa:
            left.append(f"<del>{sa}</del>")
        if sb:
            right.append(f"<ins>{sb}</ins>")
    return "".join(left) + tails[0], "".join(right) + tails[1]


def _split_attr(ex: dict[str, Any], split_index: dict[str, int]) -> str:
    i = split_index.get(str(ex.get("split")))
    return f' data-split="{i}"' if i is not None else ""


def _pairs(examples: list[dict[str, Any]], code: str, split_index: dict[str, int]) -> str:
    with_text = [ex for ex in examples if _text_of(ex) is not None]
    if len(with_text) < 2:
        return ""
    first, rest = with_text[0], with_text[1 : 1 + MAX_PAIRS]
    role_a = "eval row" if code == "LEAK001" else "kept row" if code.startswith("DUP") else "row"
    role_b = "train copy" if code == "LEAK001" else "copy" if code.startswith("DUP") else "row"
    out = []
    for ex in rest:
        a, b = word_diff(_text_of(first) or "", _text_of(ex) or "")
        out.append(
            f'<div class="pair"><div>{_head(first, role_a, split_index)}<div class="text">{a}</div>'
            f'</div><div>{_head(ex, role_b, split_index)}<div class="text">{b}</div></div></div>'
        )
    left = len(with_text) - 1 - len(rest)
    if left > 0:
        out.append(f'<p class="muted small">… {plural(left, "more row")} in the JSON report</p>')
    return "".join(out)


def _table(examples: list[Any], split_index: dict[str, int]) -> str:
    keys: list[str] = []
    for ex in examples:
        if isinstance(ex, dict):
            keys += [str(k) for k in ex if str(k) not in keys]
    order = [k for k in ("split", "row") if k in keys]
    order += [k for k in keys if k not in ("split", "row", "text")][:6]
    order += ["text"] if "text" in keys else []
    out = ["<table><thead><tr>"]
    out += [f"<th>{esc(k, 40)}</th>" for k in order or ["example"]]
    out.append("</tr></thead><tbody>")
    for ex in examples[:MAX_EXAMPLES]:
        if not isinstance(ex, dict):
            out.append(
                f'<tr><td><div class="text">{esc(value_text(ex), TEXT_CHARS)}</div></td></tr>'
            )
            continue
        cells = []
        for k in order:
            v = ex.get(k)
            if k == "text" and isinstance(v, str):
                cells.append(f'<td><div class="text">{esc(v, TEXT_CHARS)}</div></td>')
            elif is_number(v):
                cells.append(f'<td class="num">{esc(fmt_metric(k, v), 80)}</td>')
            else:
                cells.append(f"<td>{esc(value_text(v, k), 300)}</td>")
        out.append(f"<tr{_split_attr(ex, split_index)}>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    if len(examples) > MAX_EXAMPLES:
        out.append(
            f'<p class="muted small">… {len(examples) - MAX_EXAMPLES} more in the JSON report</p>'
        )
    return "".join(out)


def examples_html(examples: Any, code: str, split_index: dict[str, int]) -> str:
    """The examples of one finding: side-by-side pairs for duplicate/leak rules, else a table."""
    if not isinstance(examples, list) or not examples:
        return ""
    if code in PAIR_RULES:
        dicts = [ex for ex in examples if isinstance(ex, dict)]
        pairs = _pairs(dicts, code, split_index)
        if pairs:
            return pairs
    return _table(examples, split_index)

"""What every HTML page shares: number formats, escaping helpers, tables, the page shell.

Report strings may come from the dataset, so every one of them goes through :func:`esc`
(``escape.html``: unsafe characters made visible, length bounded, HTML-escaped for element
content and quoted attributes). Nothing from the report reaches a ``<style>``/``<script>``
block, an unquoted attribute or a URL; ``id``/``href`` anchors are ``escape.html_id`` of
``[A-Za-z0-9_-]`` only, and split names reach ``data-`` attributes as their index, never as text.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from typing import Any

from ...rule import Severity, Status
from ...wording import noun
from ..escape import html as esc_plain
from ..escape import html_id

__all__ = [
    "COLORS",
    "SEVERITY_CLASS",
    "SPLIT_COLORS",
    "as_dict",
    "as_list",
    "chart_section",
    "badge",
    "esc",
    "esc_plain",
    "fmt_metric",
    "fmt_value",
    "html_id",
    "is_number",
    "num",
    "page",
    "pct",
    "plural",
    "ratio",
    "status_of",
    "table",
    "value_text",
]

#: a status's colour (severities borrow one: SEVERITY_CLASS); the page's CSS and the notebook
#: summary's inline styles both use these
COLORS = {
    "pass": "#1a7f37",
    "warn": "#9a6700",
    "fail": "#cf222e",
    "error": "#8250df",
    "skipped": "#6e7781",
    "info": "#0969da",
}
#: the colour class a finding's severity is shown in
SEVERITY_CLASS = {Severity.ERROR.value: "fail", Severity.WARN.value: "warn", "info": "info"}
#: one colour per split, in the order the dataset lists its splits (train first)
SPLIT_COLORS = ("#0969da", "#e16f24", "#1a7f37", "#8250df", "#bf3989", "#0a7b83", "#6e7781")
_STATUSES = frozenset(s.value for s in Status)


# a run of 40 non-space characters (an entity counts as one) that goes on: where a line of
# unbroken dataset text may wrap, so it cannot widen a table or the page
_RUN = re.compile(r"(?:&[#\w]+;|[^\s&]){40}(?=&[#\w]+;|[^\s&])")


def esc(value: Any, limit: int = 2000) -> str:
    """Untrusted text as HTML element content: escaped, bounded, and breakable inside long
    unbroken runs (``<wbr>``). Attributes, ``<title>``, ``<option>`` and SVG take ``esc_plain``."""
    return _RUN.sub(lambda m: m.group() + "<wbr>", esc_plain(value, limit))


def status_of(r: dict[str, Any]) -> str:
    """A rule's status as a CSS class: one of the known statuses (anything else is an error)."""
    st = r.get("status")
    return st if st in _STATUSES else "error"


def severity_of(f: dict[str, Any]) -> str:
    sev = f.get("severity")
    return sev if sev in SEVERITY_CLASS else "info"


def badge(text: str, cls: str) -> str:
    """A coloured pill; ``cls`` is one of the COLORS keys (never report text)."""
    return f'<span class="badge s-{cls}">{esc(text, 40)}</span>'


# -- numbers ------------------------------------------------------------------------------------
def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def num(value: Any) -> str:
    """A number as people read it: thousands separated, at most 4 significant decimals."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value != 0 and (abs(value) >= 1e9 or abs(value) < 1e-4):
            return f"{value:.3g}"
        if value.is_integer():
            return f"{value:,.0f}"
        if abs(value) < 1:
            return f"{value:.3g}"  # 3 significant digits: 0.358, 0.0029
        digits = max(0, 4 - len(str(int(abs(value)))))  # 4 significant digits, at least 0 dp
        return f"{value:,.{digits}f}".rstrip("0").rstrip(".")
    return esc_plain(value, 200)


def plural(n: Any, word: str, words: str | None = None) -> str:
    """ "1 row", "2 rows": a count with its noun in the right number (``wording.noun``)."""
    return f"{num(n)} {noun(n, word, words)}"


def pct(value: float) -> str:
    """A share as a percentage (0.0017 → "0.17%", 0.53 → "53.3%")."""
    if value == 0:
        return "0%"
    return f"{value:.2%}" if abs(value) < 0.1 else f"{value:.1%}"


def ratio(value: float) -> str:
    """A ratio as a ratio: 8.0 → "8.0×" (never a percentage)."""
    return f"{value:,.1f}×" if abs(value) < 100 else f"{value:,.0f}×"


_SHARE = re.compile(r"(rate|share|fraction|accuracy)$")
_RATIO = re.compile(r"ratio$")
_PVALUE = re.compile(r"(p_?value|pvalue)$")


def _base_name(name: str) -> str:
    """``token_share[web]`` → ``token_share``; ``text:null_rate`` → ``null_rate``."""
    name = re.sub(r"\[.*\]$", "", name)
    return name.rsplit(":", 1)[-1].lower()


def _key_for(child: str, parent: str) -> str:
    """The name that says how to format a nested value: its own key when that says what it is
    (``share``, ``ratio``...), else its parent's (``share_by_split: {train: 0.25}``)."""
    base = _base_name(child)
    if _SHARE.search(base) or _RATIO.search(base) or _PVALUE.search(base):
        return child
    if re.search(r"(rate|share|noise)", parent):
        return "share"
    return "ratio" if "ratio" in parent else child


def fmt_metric(name: Any, value: Any, unit: Any = None) -> str:
    """A value formatted by what its name says it is: a share, a ratio, a p-value, a count."""
    if not is_number(value):
        return "—" if value is None else num(value)
    base = _base_name(str(name))
    if _SHARE.search(base) and -1.0 <= value <= 1.0:
        return pct(value)
    if _RATIO.search(base):
        return ratio(value)
    if _PVALUE.search(base):
        return f"{value:.2g}"
    text = num(value)
    if unit and unit not in ("rows", "count"):
        text += f" {esc(unit, 20)}"
    return text


def fmt_value(value: Any, key: str = "") -> str:
    """One detail value as readable HTML text (never JSON syntax), bounded in length."""
    return esc(value_text(value, key), 400)


def value_text(value: Any, key: str = "", depth: int = 0) -> str:
    """Nested values as one plain line: ``a: 1 · b: 2``, ``x, y, z``; formatted by key name."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if is_number(value):
        return fmt_metric(key, value)
    if isinstance(value, float):
        return str(value)
    if isinstance(value, dict):
        if depth > 2:
            return f"{len(value)} entries"
        items = list(value.items())
        shown = " · ".join(
            f"{k}: {value_text(v, _key_for(str(k), key), depth + 1)}" for k, v in items[:12]
        )
        return shown + (f" · … {len(items) - 12} more" if len(items) > 12 else "")
    if isinstance(value, (list, tuple)):
        if depth > 2:
            return f"{len(value)} items"
        shown = ", ".join(value_text(v, key, depth + 1) for v in value[:20])
        return shown + (f", … {len(value) - 20} more" if len(value) > 20 else "")
    return str(value)


# -- tables -------------------------------------------------------------------------------------
def _cell(value: Any, key: str) -> str:
    if is_number(value) or isinstance(value, bool):
        return f'<td class="num">{fmt_metric(key, value)}</td>'
    if value is None:
        return '<td class="muted">—</td>'
    return f'<td><span class="text">{fmt_value(value, key)}</span></td>'


def table(headers: list[Any], rows: list[list[Any]], *, limit: int = 100, cls: str = "") -> str:
    """A table of values (cells formatted by their column's name); at most ``limit`` rows."""
    keys = [str(h) for h in headers]
    out = [f'<table class="{cls}"><thead><tr>' if cls else "<table><thead><tr>"]
    out += [f"<th>{esc(h, 80)}</th>" for h in headers]
    out.append("</tr></thead><tbody>")
    for row in rows[:limit]:
        out.append("<tr>" + "".join(_cell(v, k) for v, k in zip(row, keys)) + "</tr>")
    out.append("</tbody></table>")
    if len(rows) > limit:
        left = plural(len(rows) - limit, "more row")
        out.append(f'<p class="muted">… {left} in the JSON report</p>')
    return "".join(out)


# -- the page -----------------------------------------------------------------------------------
_COLOR_VARS = ";".join(f"--{name}:{color}" for name, color in COLORS.items())
CSS = (
    f":root{{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#f6f8fa;{_COLOR_VARS}}}"
    + """
*{box-sizing:border-box}[hidden]{display:none!important}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);
margin:0 auto;padding:0 24px 48px;max-width:1240px;overflow-wrap:break-word}
h1{font-size:20px;margin:14px 0 6px}h2{font-size:17px;margin:22px 0 8px;border-bottom:1px solid
var(--line);padding-bottom:4px}h3{font-size:15px;margin:4px 0 4px}h4{font-size:14px;margin:12px 0 4px}
a{color:#0969da}.muted{color:var(--muted)}.small{font-size:12px}
.verdict{display:inline-block;font-weight:700;font-size:18px;padding:3px 12px;border-radius:6px;
color:#fff;margin-right:8px}.verdict.passed{background:var(--pass)}.verdict.failed{background:var(--fail)}
.badge{display:inline-block;min-width:58px;text-align:center;font-size:11px;font-weight:700;
padding:1px 6px;border-radius:10px;color:#fff;text-transform:uppercase;vertical-align:1px}
.s-pass{background:var(--pass)}.s-warn{background:var(--warn)}.s-fail{background:var(--fail)}
.s-error{background:var(--error)}.s-skipped{background:var(--skipped)}.s-info{background:var(--info)}
.s-improved{background:var(--pass)}.s-regressed{background:var(--fail)}.s-changed{background:var(--info)}
.s-unchanged,.s-persisting{background:var(--skipped)}.s-new{background:var(--fail)}
.s-resolved{background:var(--pass)}.s-added,.s-removed{background:var(--info)}
.s-worse{background:var(--warn)}.s-within{background:var(--skipped)}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--bg)}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.problems{width:100%}table.problems td:nth-child(2),table.problems td:nth-child(3){white-space:nowrap}
table.problems td:last-child{width:60%}
.rule{border:1px solid var(--line);border-radius:8px;padding:8px 16px 10px;margin:14px 0}
.rule.st-fail,.rule.st-error{border-left:6px solid var(--fail)}.rule.st-warn{border-left:6px solid
var(--warn)}.rule.st-pass{border-left:6px solid var(--pass)}.rule.st-skipped{border-left:6px solid
var(--skipped)}
.finding{border-top:1px dashed var(--line);padding:6px 0}.finding.brief{padding:2px 0;border-top:none}.finding.suppressed{opacity:.6}
.text{white-space:pre-wrap;word-break:break-word;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,
Consolas,monospace}
div.text{max-height:12em;overflow:auto}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:8px;margin:6px 0}
.pair>div{border:1px solid var(--line);border-radius:6px;padding:4px 8px;min-width:0}
.pair .head{font-size:12px;color:var(--muted);margin-bottom:2px}
del{background:#ffebe9;text-decoration:none;color:#82071e}ins{background:#dafbe1;
text-decoration:none;color:#116329}
details{margin:8px 0}summary{cursor:pointer;color:var(--muted)}
.chart{margin:8px 0 4px}.chart h4{margin:6px 0 2px}
svg{display:block;margin:2px 0 8px;max-width:100%;height:auto}
svg text{font:11px system-ui,sans-serif;fill:var(--fg)}svg .muted{fill:var(--muted)}
.legend{font-size:12px;margin:2px 0}.legend span.sw{display:inline-block;width:10px;height:10px;
border-radius:2px;margin:0 4px 0 10px;vertical-align:-1px}
.chips span{display:inline-block;border:1px solid var(--line);border-radius:10px;padding:0 7px;
margin:2px 3px 2px 0;font:12px ui-monospace,monospace;background:var(--bg)}
#filters{position:sticky;top:0;background:#fff;border-bottom:1px solid var(--line);padding:6px 0;
z-index:2;font-size:13px}#filters label{margin-right:8px;white-space:nowrap}
#filters .group{margin-right:16px;display:inline-block}
.meta{font-size:13px;color:var(--muted);margin:4px 0}
ul.reasons{margin:4px 0 6px;padding-left:20px}
"""
)

#: the page's only script: the status / severity / split filters. Its hash is the one script the
#: Content-Security-Policy allows, so script text that reached the page from data would not run
FILTER_JS = """(function(){
var bar=document.getElementById('filters');if(!bar)return;bar.hidden=false;
function on(kind){var m={};bar.querySelectorAll('input[data-f="'+kind+'"]').forEach(
function(i){m[i.value]=i.checked;});return m;}
function apply(){var st=on('status'),sv=on('severity'),sel=document.getElementById('f-split'),
sp=sel?sel.value:'';
document.querySelectorAll('[data-status],[data-severity],[data-split]').forEach(function(e){
var a=e.getAttribute('data-status'),b=e.getAttribute('data-severity'),
c=e.getAttribute('data-split');
e.hidden=(a!==null&&st[a]===false)||(b!==null&&sv[b]===false)||(sp!==''&&c!==null&&c!==sp);});}
bar.addEventListener('change',apply);apply();})();"""

_JS_HASH = base64.b64encode(hashlib.sha256(FILTER_JS.encode()).digest()).decode()
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    f"script-src 'sha256-{_JS_HASH}'; base-uri 'none'; form-action 'none'"
)


def page(title: str, body: str, *, script: bool = True) -> str:
    """A complete self-contained page: inline CSS, the filter script, no external assets."""
    js = f"<script>{FILTER_JS}</script>" if script else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{esc_plain(title, 200)}</title>"
        f"<style>{CSS}</style></head>\n<body>\n{body}\n{js}\n</body></html>\n"
    )


def chart_section(title: str, body: str, note: str = "") -> str:
    """A titled chart block with an optional note under it; nothing when there is no chart."""
    if not body:
        return ""
    note_html = f'<p class="muted small">{esc(note, 400)}</p>' if note else ""
    return f'<div class="chart"><h4>{esc(title, 200)}</h4>{body}{note_html}</div>'


def as_dict(value: Any) -> dict[str, Any]:
    """A report field that should be an object, or {} (a report is read as untrusted JSON)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """A report field that should be an array, or []."""
    return value if isinstance(value, list) else []

"""The HTML report: one self-contained file (inline CSS and SVG, no scripts, no external assets).

Every string that comes from the report may come from the dataset (split and column names,
examples, messages, details), so all of it is untrusted: it goes through :func:`escape.html
<dataaudit.report.escape.html>` (unsafe characters made visible, length bounded, HTML-escaped for
element content and quoted attributes) and never into a ``<style>`` block or an unquoted
attribute. The only attributes built from report data are ``id``/``href`` anchors, made by
``escape.html_id`` of ``[A-Za-z0-9_-]`` only. A Content-Security-Policy that forbids scripts is a
second line of defence.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..rule import Severity, Status
from .escape import html as esc
from .escape import html_id

__all__ = ["render_compact", "render_html"]

_MAX_TABLE_ROWS = 200
_MAX_BARS = 30
#: a status's colour (severities borrow one: _SEVERITY_CLASS); the page's CSS and the notebook
#: summary's inline styles both use these
_COLORS = {
    "pass": "#1a7f37",
    "warn": "#9a6700",
    "fail": "#cf222e",
    "error": "#8250df",
    "skipped": "#6e7781",
    "info": "#0969da",
}
#: the colour class a finding's severity is shown in
_SEVERITY_CLASS = {Severity.ERROR: "fail", Severity.WARN: "warn", Severity.INFO: "info"}
_STATUSES = frozenset(s.value for s in Status)

_COLOR_VARS = ";".join(f"--{name}:{color}" for name, color in _COLORS.items())
_CSS = (
    f"\n:root{{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#f6f8fa;{_COLOR_VARS}}}"
    + """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);
margin:0;padding:0 24px 48px;max-width:1200px}
h1{font-size:22px;margin:20px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid
var(--line);padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}h4{font-size:14px;margin:12px 0 4px}
.muted{color:var(--muted)}.verdict{display:inline-block;font-weight:700;font-size:18px;padding:4px 12px;
border-radius:6px;color:#fff}.verdict.passed{background:var(--pass)}.verdict.failed{background:var(--fail)}
.badge{display:inline-block;min-width:58px;text-align:center;font-size:12px;font-weight:700;
padding:1px 6px;border-radius:10px;color:#fff;text-transform:uppercase}
.s-pass{background:var(--pass)}.s-warn{background:var(--warn)}.s-fail{background:var(--fail)}
.s-error{background:var(--error)}.s-skipped{background:var(--skipped)}.s-info{background:var(--info)}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--bg)}td.num{text-align:right;font-variant-numeric:tabular-nums}
.rule{border:1px solid var(--line);border-radius:8px;padding:4px 16px 10px;margin:14px 0}
.rule.st-fail,.rule.st-error{border-left:6px solid var(--fail)}.rule.st-warn{border-left:6px solid
var(--warn)}.rule.st-pass{border-left:6px solid var(--pass)}.rule.st-skipped{border-left:6px solid
var(--skipped)}
.finding{border-top:1px dashed var(--line);padding:6px 0}
pre,.text{white-space:pre-wrap;word-break:break-word;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,
Consolas,monospace;margin:0}
pre.block{background:var(--bg);padding:6px 8px;border-radius:6px;max-height:320px;overflow:auto}
.cards{display:flex;gap:10px;flex-wrap:wrap;margin:10px 0}.card{border:1px solid var(--line);
border-radius:8px;padding:6px 12px;min-width:90px}.card b{font-size:20px;display:block}
svg{display:block;margin:6px 0 10px}svg text{font:11px system-ui,sans-serif;fill:var(--fg)}
.toc td{border:none;padding:1px 8px}
"""
)


def _num(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-4):
            return f"{value:.4g}"
        return f"{value:,.4f}".rstrip("0").rstrip(".") if value % 1 else f"{value:,.0f}"
    return esc(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _cell(value: Any) -> str:
    if _is_number(value) or isinstance(value, bool):
        return f'<td class="num">{_num(value)}</td>'
    if value is None:
        return '<td class="muted">—</td>'
    if isinstance(value, (dict, list)):
        return f'<td><span class="text">{esc(_json(value), 500)}</span></td>'
    return f'<td><span class="text">{esc(value)}</span></td>'


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


# -- building blocks ----------------------------------------------------------------------------
def _table(headers: list[Any], rows: list[list[Any]], *, limit: int = _MAX_TABLE_ROWS) -> str:
    out = ["<table><thead><tr>"]
    out += [f"<th>{esc(h)}</th>" for h in headers]
    out.append("</tr></thead><tbody>")
    for row in rows[:limit]:
        out.append("<tr>" + "".join(_cell(v) for v in row) + "</tr>")
    out.append("</tbody></table>")
    if len(rows) > limit:
        out.append(f'<p class="muted">… {len(rows) - limit:,} more rows in the JSON report</p>')
    return "".join(out)


def _bar_chart(items: list[tuple[Any, float]], *, title: str | None = None, fmt: Any = None) -> str:
    """Horizontal bars, one per (label, value); labels and title are escaped."""
    items = [(label, float(v)) for label, v in items if _is_number(v)][:_MAX_BARS]
    if not items:
        return ""
    fmt = fmt or _num
    label_w, bar_w, row_h, top = 220, 380, 20, 22 if title else 4
    height = top + row_h * len(items) + 4
    vmax = max(abs(v) for _, v in items) or 1.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 90}" '
        f'height="{height}" role="img">'
    ]
    if title:
        parts.append(f'<text x="0" y="14" font-weight="bold">{esc(title, 120)}</text>')
    for i, (label, v) in enumerate(items):
        y = top + i * row_h
        w = max(1.0, bar_w * abs(v) / vmax) if v else 0.0
        color = _COLORS["info"] if v >= 0 else _COLORS["fail"]
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{esc(label, 40)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" '
            f'fill="{color}" rx="2"><title>{esc(label, 200)}: {esc(fmt(v))}</title></rect>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + 14}">{esc(fmt(v))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _pct(v: float) -> str:
    return f"{v:.2%}"


def _is_fraction_name(name: str) -> bool:
    return bool(re.search(r"(rate|share|fraction|ratio|pct|percent)$", name))


# -- sections -----------------------------------------------------------------------------------
def _header(data: dict[str, Any]) -> str:
    passed = bool(data.get("passed"))
    s = data.get("summary", {})
    tool = data.get("tool", {})
    cards = "".join(
        f'<div class="card"><span class="badge s-{k}">{k}</span><b>{_num(s.get(k, 0))}</b></div>'
        for k in (st.value for st in Status.worst_first())
    )
    cfg = data.get("config", {})
    return (
        "<header><h1>dataaudit report</h1>"
        f'<p><span class="verdict {"passed" if passed else "failed"}">'
        f"gate {'PASSED' if passed else 'FAILED'}</span> "
        f'<span class="muted">fail_on={esc(data.get("fail_on"))} · {_num(s.get("rules", 0))} rules'
        f" · {_num(s.get('flagged_rows', 0))} rows flagged · "
        f"{esc(tool.get('name', 'dataaudit'))} {esc(tool.get('version', ''))} · "
        f"{esc(data.get('created', ''))} · config {esc(cfg.get('pack', ''))} "
        f"#{esc(cfg.get('hash', ''))} · schema {esc(data.get('schema_version', ''))} · "
        f"{_num(data.get('seconds', 0))} s</span></p>"
        f"{_gate(data)}"
        f'<div class="cards">{cards}</div></header>'
    )


def _gate(data: dict[str, Any]) -> str:
    """Why the gate failed, and what it required (``require_rules`` / ``require_roles``)."""
    gate = data.get("gate") or {}
    parts = []
    required = [
        f"{label}: {', '.join(str(x) for x in gate.get(key) or [])}"
        for key, label in (("required_rules", "required rules"), ("required_roles", "roles"))
        if gate.get(key)
    ]
    if required:
        parts.append(f'<p class="muted">{esc(" · ".join(required))}</p>')
    reasons = gate.get("reasons") or []
    if reasons and not data.get("passed"):
        items = "".join(f'<li><span class="text">{esc(r)}</span></li>' for r in reasons)
        parts.append(f'<ul class="gate-reasons">{items}</ul>')
    return "".join(parts)


def _dataset(data: dict[str, Any]) -> str:
    ds = data.get("dataset", {})
    splits = ds.get("splits", {}) or {}
    rows = []
    for name, info in splits.items():
        cols = ", ".join(f"{c.get('name')}: {c.get('type')}" for c in info.get("columns", []))
        rows.append([name, info.get("kind"), info.get("rows"), cols, info.get("content_hash")])
    out = ["<section><h2>Dataset</h2>"]
    out.append(_table(["split", "kind", "rows", "columns", "content hash"], rows))
    sizes = [(name, info.get("rows")) for name, info in splits.items()]
    if len(sizes) > 1:
        out.append(_bar_chart(sizes, title="rows per split"))
    roles = ds.get("roles", {}) or {}
    if roles:
        out.append("<h3>Column roles</h3>")
        out.append(
            _table(
                ["role", "column", "auto-detected"],
                [[r, v.get("column"), bool(v.get("detected"))] for r, v in roles.items()],
            )
        )
    out.append("</section>")
    return "".join(out)


def _toc(results: list[dict[str, Any]]) -> str:
    rows = []
    for r in results:
        st = _status(r)
        n = len(r.get("findings") or [])
        rows.append(
            f'<tr><td><span class="badge s-{st}">{st}</span></td>'
            f'<td><a href="#{html_id(r.get("code"))}">{esc(r.get("code"))}</a></td>'
            f"<td>{esc(r.get('name'))}</td>"
            f'<td class="muted">{_num(n)} finding{"s" * (n != 1)}</td></tr>'
        )
    return f'<section><h2>Rules</h2><table class="toc">{"".join(rows)}</table></section>'


def _status(r: dict[str, Any]) -> str:
    st = r.get("status")
    return st if st in _STATUSES else "error"


def _worst_first(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rules in the order every renderer lists them: by status, worst first, then by code."""
    order = Status.worst_first()
    return sorted(results, key=lambda r: (order.index(_status(r)), str(r.get("code"))))


def _metrics(metrics: list[dict[str, Any]]) -> str:
    if not metrics:
        return ""
    rows = [
        [m.get("name"), m.get("split"), m.get("value"), m.get("direction"), m.get("unit")]
        for m in metrics
    ]
    out = ["<h4>Metrics</h4>", _table(["metric", "split", "value", "better", "unit"], rows)]
    # per-split bars for every metric reported on more than one split
    by_name: dict[str, list[tuple[Any, Any]]] = {}
    for m in metrics:
        by_name.setdefault(str(m.get("name")), []).append((m.get("split"), m.get("value")))
    charts = 0
    for name, vals in by_name.items():
        if len(vals) > 1 and charts < 8:
            fmt = _pct if _is_fraction_name(name) else None
            out.append(_bar_chart(vals, title=name, fmt=fmt))
            charts += 1
    # with a single split, chart the rate-like metrics side by side
    if not charts:
        rates = [
            (
                m.get("name") if m.get("split") is None else f"{m.get('name')} [{m.get('split')}]",
                m.get("value"),
            )
            for m in metrics
            if _is_fraction_name(str(m.get("name"))) and _is_number(m.get("value"))
        ]
        if len(rates) > 1 and any(v for _, v in rates):
            out.append(_bar_chart(rates, title="rates", fmt=_pct))
    return "".join(out)


def _examples(examples: list[Any]) -> str:
    if not examples:
        return ""
    keys: list[str] = []
    for ex in examples:
        if isinstance(ex, dict):
            keys += [k for k in ex if k not in keys]
    order = [k for k in ("split", "row", "text") if k in keys] + [
        k for k in keys if k not in ("split", "row", "text")
    ]
    rows = [[ex.get(k) for k in order] if isinstance(ex, dict) else [ex] for ex in examples]
    return _table(order or ["example"], rows)


def _finding(f: dict[str, Any]) -> str:
    sev = f.get("severity") if f.get("severity") in _SEVERITY_CLASS else "info"
    sev_class = _SEVERITY_CLASS[sev]
    out = [
        '<div class="finding">',
        f'<span class="badge s-{sev_class}">{esc(sev)}</span> {esc(f.get("message"))}',
        f'<div class="muted">split {esc(f.get("split") or "—")} · count {_num(f.get("count", 0))}'
        f" · fingerprint <code>{esc(f.get('fingerprint'))}</code></div>",
    ]
    data = f.get("data")
    if data:
        out.append(f'<pre class="block">{esc(_json(data), 4000)}</pre>')
    out.append(_examples(f.get("examples") or []))
    out.append("</div>")
    return "".join(out)


def _details_value(key: str, value: Any) -> str:
    title = f"<h4>{esc(key)}</h4>"
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        cols: list[str] = []
        for row in value:
            cols += [k for k in row if k not in cols]
        table = _table(cols, [[row.get(c) for c in cols] for row in value])
        return title + table + _details_chart(key, value, cols)
    if isinstance(value, dict) and value:
        if all(isinstance(v, dict) for v in value.values()):
            cols = []
            for row in value.values():
                cols += [k for k in row if k not in cols]
            rows = [[k] + [row.get(c) for c in cols] for k, row in value.items()]
            return title + _table(["key", *cols], rows)
        rows = [[k, v] for k, v in value.items()]
        chart = ""
        if sum(_is_number(v) for v in value.values()) > 1:
            fmt = _pct if _is_fraction_name(key) else None
            chart = _bar_chart([(k, v) for k, v in value.items() if _is_number(v)], fmt=fmt)
        return title + _table(["key", "value"], rows) + chart
    if isinstance(value, (list, dict)):
        return title + f'<pre class="block">{esc(_json(value), 4000)}</pre>'
    return title + f'<p><span class="text">{esc(value)}</span></p>'


def _details_chart(key: str, rows: list[dict[str, Any]], cols: list[str]) -> str:
    """A bar chart of a table: label = first text column, value = its share/rate/count column."""
    label_col = next((c for c in cols if any(isinstance(r.get(c), str) for r in rows)), None)
    numeric = [c for c in cols if c != label_col and all(_is_number(r.get(c)) for r in rows)]
    if label_col is None or not numeric or len(rows) < 2:
        return ""
    value_col = next((c for c in numeric if _is_fraction_name(c)), None) or next(
        (c for c in numeric if c in ("count", "rows", "n")), numeric[0]
    )
    fmt = _pct if _is_fraction_name(value_col) else None
    return _bar_chart(
        [(r.get(label_col), r.get(value_col)) for r in rows],
        title=f"{key}: {value_col} by {label_col}",
        fmt=fmt,
    )


def _rule(r: dict[str, Any]) -> str:
    st = _status(r)
    out = [
        f'<section class="rule st-{st}" id="{html_id(r.get("code"))}">',
        f'<h3><span class="badge s-{st}">{st}</span> {esc(r.get("code"))} '
        f'<span class="muted">{esc(r.get("name"))}</span></h3>',
        f'<div class="muted">severity {esc(r.get("severity"))} · '
        f"{_num(r.get('flagged_rows', 0))} rows flagged · {_num(r.get('seconds', 0))} s</div>",
    ]
    if r.get("message"):
        out.append(f'<p><span class="text">{esc(r.get("message"))}</span></p>')
    options = r.get("options") or {}
    if options:
        out.append(
            "<h4>Options</h4>" + _table(["option", "value"], [[k, v] for k, v in options.items()])
        )
    thresholds = r.get("thresholds") or {}
    if thresholds:
        out.append(
            "<h4>Thresholds</h4>"
            + _table(["threshold", "value"], [[k, v] for k, v in thresholds.items()])
        )
    out.append(_metrics(r.get("metrics") or []))
    findings = r.get("findings") or []
    if findings:
        out.append(f"<h4>Findings ({len(findings)})</h4>")
        out += [_finding(f) for f in findings]
    details = r.get("details") or {}
    if details:
        out.append("<h4>Details</h4>")
        out += [_details_value(str(k), v) for k, v in details.items()]
    out.append("</section>")
    return "".join(out)


def render_html(data: dict[str, Any]) -> str:
    """The report dict (``Report.data``) as one self-contained HTML page."""
    results = _worst_first(data.get("results", []) or [])
    verdict = "PASSED" if data.get("passed") else "FAILED"
    body = [
        _header(data),
        _dataset(data),
        _toc(results),
        "<section><h2>Results</h2>",
        *[_rule(r) for r in results],
        "</section>",
    ]
    errors = data.get("plugin_errors") or []
    if errors:
        body.append("<section><h2>Plugin errors</h2><ul>")
        body += [f'<li><span class="text">{esc(err)}</span></li>' for err in errors]
        body.append("</ul></section>")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>dataaudit report · gate {verdict}</title>"
        f"<style>{_CSS}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


_COMPACT_FINDINGS = 3  # findings shown per failing or warning rule
_SHOWN_COMPACT = (Status.ERROR, Status.FAIL, Status.WARN)  # the rules the notebook summary lists


def _pill(text: str, color: str) -> str:
    return (
        f'<span style="background:{color};color:#fff;border-radius:8px;padding:0 6px;'
        f'font-size:11px;font-weight:700;text-transform:uppercase">{esc(text)}</span>'
    )


def render_compact(data: dict[str, Any]) -> str:
    """A short HTML summary for notebooks (``Report._repr_html_``): the verdict, the counts,
    the gate's reasons and the failing, erroring and warning rules with their top findings.

    Inline styles only (a notebook page must not inherit report CSS); every value escaped.
    """
    passed = bool(data.get("passed"))
    s = data.get("summary", {}) or {}
    verdict = _pill(
        f"gate {'passed' if passed else 'failed'}", _COLORS["pass" if passed else "fail"]
    )
    counts = " · ".join(
        f"{_num(s.get(k, 0))} {k}" for k in (st.value for st in Status.worst_first())
    )
    splits = data.get("dataset", {}).get("splits", {}) or {}
    rows = ", ".join(
        f"{esc(name, 100)}: {_num(info.get('rows', 0))}" for name, info in splits.items()
    )
    out = [
        '<div style="font:13px/1.45 system-ui,sans-serif">',
        f"<div><b>dataaudit</b> {verdict} "
        f'<span style="color:#656d76">fail_on={esc(data.get("fail_on"))} · {counts} · '
        f"{_num(s.get('flagged_rows', 0))} rows flagged · rows {rows}</span></div>",
    ]
    reasons = (data.get("gate") or {}).get("reasons") or []
    if reasons and not passed:
        items = "".join(f"<li>{esc(r, 300)}</li>" for r in reasons[:10])
        out.append(f'<ul style="margin:4px 0">{items}</ul>')
    shown = _worst_first(
        [r for r in data.get("results", []) or [] if r.get("status") in _SHOWN_COMPACT]
    )
    if shown:
        cell = 'style="border:1px solid #d0d7de;padding:2px 6px;text-align:left;vertical-align:top"'
        out.append('<table style="border-collapse:collapse;margin-top:4px">')
        for r in shown:
            st = _status(r)
            findings = (r.get("findings") or [])[:_COMPACT_FINDINGS]
            lines = "<br>".join(
                f"{_pill(str(f.get('severity')), _COLORS[_SEVERITY_CLASS.get(f.get('severity'), 'skipped')])} "
                f"{esc(f.get('message'), 300)}"
                for f in findings
            ) or esc(r.get("message"), 300)
            more = len(r.get("findings") or []) - len(findings)
            if more > 0:
                lines += f'<br><span style="color:#656d76">… {more:,} more</span>'
            out.append(
                f"<tr><td {cell}>{_pill(st, _COLORS[st])}</td>"
                f"<td {cell}><b>{esc(r.get('code'))}</b> {esc(r.get('name'))}</td>"
                f"<td {cell}>{lines}</td></tr>"
            )
        out.append("</table>")
    out.append(
        '<div style="color:#656d76">report.to_html(path): the full report · '
        "report.flags(): the flagged rows · report.apply(data): drop them</div></div>"
    )
    return "".join(out)

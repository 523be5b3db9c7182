"""The report page: verdict and the rules that need attention first, then each rule's findings
with examples and the chart that fits it, then (collapsed) its options, metrics and details.

The page is bounded whatever the dataset: findings, examples, rows and chart items are capped,
and a byte budget shared by the rule sections (worst first) shortens the later ones.
"""

from __future__ import annotations

from typing import Any

from ...rule import Status
from ..text import engine_text
from ._base import (
    SEVERITY_CLASS,
    badge,
    esc,
    esc_plain,
    fmt_metric,
    html_id,
    is_number,
    num,
    page,
    plural,
    severity_of,
    status_of,
    table,
    value_text,
)
from ._charts import CHART_KEYS, Context, rule_chart
from ._examples import examples_html
from ._signals import signals_html

__all__ = ["MAX_BYTES", "render_html"]

#: the page never exceeds this many characters (its bytes are at most ~1.1x that: the text is
#: escaped, so non-ASCII is rare outside the examples)
MAX_BYTES = 1_800_000
_RULE_BUDGET = 160_000  # a rule section's share at most, before findings are cut short
_FULL_FINDINGS = 8  # findings shown with their examples; the next ones as one line each
_MAX_FINDINGS = 40
#: detail keys that are a rule's saved state (for a later audit's ``reference=``), not results
_INTERNAL = frozenset({"sketch"})
_ATTENTION = (Status.ERROR.value, Status.FAIL.value, Status.WARN.value)


def _order(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rules as every renderer lists them: by status, worst first, then by code."""
    order = [s.value for s in Status.worst_first()]
    return sorted(results, key=lambda r: (order.index(status_of(r)), str(r.get("code"))))


def _severity_counts(findings: list[dict[str, Any]]) -> str:
    """ "2 error, 1 warn", the findings a baseline accepted counted apart ("3 suppressed")."""
    counts: dict[str, int] = {}
    for f in findings:
        key = "suppressed" if f.get("suppressed") else severity_of(f)
        counts[key] = counts.get(key, 0) + 1
    order = ("error", "warn", "info", "suppressed")
    return ", ".join(f"{counts[s]} {s}" for s in order if s in counts)


# -- top of the page ----------------------------------------------------------------------------
def _header(data: dict[str, Any]) -> str:
    passed = bool(data.get("passed"))
    s = data.get("summary") or {}
    gate = data.get("gate") or {}
    reasons = [str(x) for x in gate.get("reasons") or []]
    counts = " · ".join(
        f"{num(s.get(k, 0))} {k}" for k in (st.value for st in Status.worst_first()) if s.get(k)
    )
    partial = _partial_coverage(data)
    verdict = (
        f'<div id="verdict"><span class="verdict {"passed" if passed else "failed"}">'
        f"gate {'PASSED' if passed else 'FAILED'}{' on partial coverage' if partial and passed else ''}</span>"
        f'<span class="muted">fail_on={esc(data.get("fail_on"), 20)} · '
        f"{plural(s.get('rules', 0), 'rule')}: {esc(counts)} · "
        f"{plural(s.get('flagged_rows', 0), 'row')} flagged{_baseline(gate)}</span></div>"
    )
    out = ["<header><h1>dataaudit report</h1>", verdict]
    if partial:  # "passed" means read everything and found nothing: say what was not read
        out.append(f'<p class="muted small" id="coverage">Partial coverage: {partial}</p>')
    if reasons and not passed:
        # a few lines, so the table of failing rules below stays on the first screen
        items = "".join(f'<li><span class="text">{esc(r, 300)}</span></li>' for r in reasons[:6])
        more = f"<li>… {len(reasons) - 6} more</li>" if len(reasons) > 6 else ""
        out.append(f'<ul class="reasons">{items}{more}</ul>')
    out.append(_dataset_line(data))
    out.append("</header>")
    return "".join(out)


def _partial_coverage(data: dict[str, Any]) -> str:
    """``LBL004 examined 100 of 600 labeled train rows (why) · ...`` for the rules that gave
    their verdict on part of their scope (schema 1.6 ``coverage``); empty when none did."""
    parts = []
    for r in data.get("results") or []:
        c = r.get("coverage") if isinstance(r, dict) else None
        if not isinstance(c, dict) or c.get("complete") is not False:
            continue
        if r.get("status") in ("error", "skipped"):
            continue
        parts.append(
            f'<span title="{esc_plain(c.get("reason"), 300)}">{esc(r.get("code"), 20)} examined '
            f"{num(c.get('examined'))} of {num(c.get('in_scope'))} "
            f"{esc(c.get('unit') or 'rows', 40)}</span>"
        )
    return " · ".join(parts[:12])


def _baseline(gate: dict[str, Any]) -> str:
    """What a baseline of accepted findings took out of the verdict (shown, never hidden)."""
    b = gate.get("baseline")
    if not isinstance(b, dict):
        return ""
    stale = f", {num(b.get('stale'))} no longer found" if b.get("stale") else ""
    return (
        f" · {plural(b.get('suppressed', 0), 'finding')} suppressed by the baseline "
        f"{esc(b.get('path'), 200)} ({num(b.get('accepted', 0))} accepted{stale})"
    )


def _dataset_line(data: dict[str, Any]) -> str:
    ds = data.get("dataset") or {}
    splits = ds.get("splits") or {}
    parts = [
        f"{esc(name, 100)} {num((info or {}).get('rows'))}"
        for name, info in list(splits.items())[:20]
    ]
    roles = ds.get("roles") or {}
    role_text = " ".join(
        f"{esc(role, 40)}={esc((v or {}).get('column'), 100)}"
        for role, v in list(roles.items())[:12]
    )
    tok = (data.get("resources") or {}).get("tokenizer")
    tok_text = esc((tok or {}).get("name"), 100) if isinstance(tok, dict) else "whitespace words"
    tool = data.get("tool") or {}
    cfg = data.get("config") or {}
    engine = engine_text(data)
    engine_part = f' · <span id="engine">engine {esc(engine, 120)}</span>' if engine else ""
    return (
        f'<p class="meta">rows: {" · ".join(parts)} · columns {role_text} · lengths in '
        f"{tok_text} · config {esc(cfg.get('pack'), 60)}{engine_part} · "
        f"{esc(tool.get('name'), 40)} {esc(tool.get('version'), 40)} · "
        f"{esc(data.get('created'), 40)}</p>"
    )


def _filters(data: dict[str, Any], splits: list[str]) -> str:
    """The filter bar: hidden until the page's script shows it (the page reads fine without)."""
    statuses = "".join(
        f'<label><input type="checkbox" data-f="status" value="{st.value}" checked> '
        f"{st.value}</label>"
        for st in Status.worst_first()
    )
    severities = "".join(
        f'<label><input type="checkbox" data-f="severity" value="{sev}" checked> {sev}</label>'
        for sev in SEVERITY_CLASS
    )
    options = "".join(
        f'<option value="{i}">{esc_plain(s, 40)}</option>' for i, s in enumerate(splits)
    )
    return (
        '<div id="filters" hidden>'
        f'<span class="group"><b>rules</b> {statuses}</span>'
        f'<span class="group"><b>findings</b> {severities}</span>'
        f'<span class="group"><label><b>split</b> <select id="f-split">'
        f'<option value="">all</option>{options}</select></label></span></div>'
    )


def _attention(results: list[dict[str, Any]]) -> str:
    """The rules that need attention (failing, erroring, warning), each with its top finding."""
    rows = []
    for r in results:
        st = status_of(r)
        if st not in _ATTENTION:
            continue
        findings = [f for f in r.get("findings") or [] if isinstance(f, dict)]
        counted = [f for f in findings if not f.get("suppressed")] or findings
        top = esc(counted[0].get("message"), 240) if counted else esc(r.get("message"), 240)
        more = (
            f' <span class="muted">(+{len(findings) - 1} more)</span>' if len(findings) > 1 else ""
        )
        code = r.get("code")
        rows.append(
            f'<tr data-status="{st}"><td>{badge(st, st)}</td>'
            f'<td><a href="#{html_id(code)}"><b>{esc(code, 40)}</b></a> '
            f'<span class="muted">{esc(r.get("name"), 80)}</span></td>'
            f"<td>{esc(_severity_counts(findings)) or '—'}</td>"
            f'<td class="num">{num(r.get("flagged_rows", 0))}</td>'
            f"<td>{top}{more}</td></tr>"
        )
    if not rows:
        return '<section id="attention"><p><b>No rule fails or warns.</b></p></section>'
    return (
        '<section id="attention"><h2>Needs attention</h2><table class="problems"><thead><tr>'
        "<th>status</th><th>rule</th><th>findings</th><th>rows flagged</th><th>top finding</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>{_quiet(results)}</section>"
    )


def _quiet(results: list[dict[str, Any]]) -> str:
    """Passed and skipped rules in a line each: skipped ones with their reason."""
    passed = [r for r in results if status_of(r) == "pass"]
    skipped = [r for r in results if status_of(r) == "skipped"]
    out = []
    if passed:
        links = ", ".join(
            f'<a href="#{html_id(r.get("code"))}">{esc(r.get("code"), 40)}</a>'
            for r in passed[:200]
        )
        out.append(f'<p class="small" data-status="pass">{badge("pass", "pass")} {links}</p>')
    for r in skipped[:200]:
        out.append(
            f'<p class="small" data-status="skipped">{badge("skipped", "skipped")} '
            f'<a href="#{html_id(r.get("code"))}">{esc(r.get("code"), 40)}</a> '
            f'<span class="muted">{esc(r.get("message"), 300)}</span></p>'
        )
    return "".join(out)


# -- one rule -----------------------------------------------------------------------------------
def _finding(
    f: dict[str, Any], code: str, split_index: dict[str, int], *, full: bool = True
) -> str:
    sev = severity_of(f)
    split = f.get("split")
    idx = split_index.get(str(split)) if split is not None else None
    split_attr = f' data-split="{idx}"' if idx is not None else ""
    head = f"{badge(sev, SEVERITY_CLASS[sev])} {esc(f.get('message'), 1000)}"
    cls = "finding"
    if f.get("suppressed"):  # accepted in the baseline: shown, but out of the status and gate
        head += ' <span class="muted small">(suppressed by the baseline)</span>'
        cls += " suppressed"
    if not full:
        return f'<div class="{cls} brief" data-severity="{sev}"{split_attr}>{head}</div>'
    data = f.get("data")
    facts = (
        {k: v for k, v in data.items() if not isinstance(v, (list, dict)) or len(v) <= 8}
        if isinstance(data, dict)
        else {}
    )
    facts_html = f'<div class="muted small">{esc(value_text(facts), 400)}</div>' if facts else ""
    where = f"split {esc(split, 100)} · " if split is not None else ""
    return (
        f'<div class="{cls}" data-severity="{sev}"{split_attr}>{head}'
        f'<div class="muted small">{where}count {num(f.get("count", 0))} · fingerprint '
        f"{esc(f.get('fingerprint'), 60)}</div>{facts_html}"
        f"{examples_html(f.get('examples'), code, split_index)}</div>"
    )


def _metrics_table(metrics: list[Any]) -> str:
    rows = [
        [m.get("name"), m.get("split"), fmt_metric(m.get("name"), m.get("value"), m.get("unit")),
         m.get("direction")]
        for m in metrics
        if isinstance(m, dict)
    ]  # fmt: skip
    return table(["metric", "split", "value", "better"], rows, limit=150)


def _details_value(key: str, value: Any) -> str:
    title = f"<h4>{esc(key, 80)}</h4>"
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        cols: list[str] = []
        for row in value[:50]:
            cols += [str(k) for k in row if str(k) not in cols]
        cols = cols[:12]
        return title + table(cols, [[row.get(c) for c in cols] for row in value], limit=30)
    if isinstance(value, dict) and value:
        if all(isinstance(v, dict) for v in value.values()):
            cols = []
            for row in list(value.values())[:50]:
                cols += [str(k) for k in row if str(k) not in cols]
            cols = cols[:12]
            rows = [[k] + [row.get(c) for c in cols] for k, row in value.items()]
            return title + table(["", *cols], rows, limit=30)
        return title + table(["", key], [[k, v] for k, v in value.items()], limit=30)
    if isinstance(value, list) and not value:
        return title + '<p class="muted">none</p>'
    text = fmt_metric(key, value) if is_number(value) else esc(value_text(value, key), 1000)
    return title + f'<p><span class="text">{text}</span></p>'


def _collapsed(r: dict[str, Any]) -> str:
    """Options, thresholds, metrics and details: there when wanted, out of the way."""
    code = str(r.get("code"))
    parts = []
    options = r.get("options") or {}
    if isinstance(options, dict) and options:
        parts.append(
            "<h4>Options</h4>"
            + table(["option", "value"], [[k, v] for k, v in options.items()], limit=50)
        )
    thresholds = r.get("thresholds") or {}
    if isinstance(thresholds, dict) and thresholds:
        parts.append(
            "<h4>Thresholds</h4>"
            + table(["threshold", "value"], [[k, v] for k, v in thresholds.items()], limit=50)
        )
    metrics = r.get("metrics") or []
    if isinstance(metrics, list) and metrics:
        parts.append("<h4>Metrics</h4>" + _metrics_table(metrics))
    details = r.get("details") or {}
    skip = _INTERNAL | CHART_KEYS.get(code, frozenset())
    if isinstance(details, dict):
        parts += [_details_value(str(k), v) for k, v in details.items() if k not in skip][:30]
    if not parts:
        return ""
    return (
        "<details><summary>Options, thresholds, metrics and details</summary>"
        + "".join(parts)
        + "</details>"
    )


def _rule(r: dict[str, Any], ctx: Context, split_index: dict[str, int], budget: int) -> str:
    st = status_of(r)
    code = str(r.get("code"))
    findings = [f for f in r.get("findings") or [] if isinstance(f, dict)]
    head = [
        f'<section class="rule st-{st}" id="{html_id(code)}" data-status="{st}">',
        f'<h3>{badge(st, st)} {esc(code, 40)} <span class="muted">{esc(r.get("name"), 100)}</span></h3>',
        f'<p class="meta">severity {esc(r.get("severity"), 20)} · {len(findings):,} finding'
        f"{'s' * (len(findings) != 1)}{' (' + _severity_counts(findings) + ')' if findings else ''}"
        f" · {plural(r.get('flagged_rows', 0), 'row')} flagged · {num(r.get('seconds', 0))} s</p>",
    ]
    if r.get("message"):
        head.append(f'<p><span class="text">{esc(r.get("message"), 2000)}</span></p>')
    used = sum(map(len, head))
    body = []
    shown = 0
    for i, f in enumerate(findings[:_MAX_FINDINGS]):
        html = _finding(f, code, split_index, full=i < _FULL_FINDINGS)
        if used + len(html) > budget and shown:
            break
        if used + len(html) > budget:  # even the first finding is too big: without examples
            html = _finding(f, code, split_index, full=False)
        if i == _FULL_FINDINGS:
            body.append('<p class="muted small">More findings, without their examples:</p>')
        body.append(html)
        used += len(html)
        shown += 1
    if shown < len(findings):
        body.append(
            f'<p class="muted">… {plural(len(findings) - shown, "more finding")} in the JSON report '
            "(the page shows the first ones, worst first, to stay small)</p>"
        )
    rest = [rule_chart(r, ctx), _collapsed(r)]
    for part in rest:
        if used + len(part) <= budget:
            body.append(part)
            used += len(part)
        elif part:
            body.append(
                '<p class="muted small">(charts and details left out to keep the page small; they are in the JSON report)</p>'
            )
            break
    return "".join(head + body) + "</section>"


def _dataset(data: dict[str, Any]) -> str:
    ds = data.get("dataset") or {}
    splits = ds.get("splits") or {}
    rows = []
    for name, info in list(splits.items())[:100]:
        info = info or {}
        cols = ", ".join(
            f"{c.get('name')}: {c.get('type')}"
            for c in (info.get("columns") or [])[:50]
            if isinstance(c, dict)
        )
        rows.append([name, info.get("kind"), info.get("rows"), cols, info.get("content_hash")])
    roles = ds.get("roles") or {}
    cfg = data.get("config") or {}
    cfg_rows = [
        [k, cfg.get(k)]
        for k in ("pack", "hash", "fail_on", "select", "extend_select", "ignore")
        if k in cfg
    ]
    tok = (data.get("resources") or {}).get("tokenizer")
    if isinstance(tok, dict):
        cfg_rows.append(["tokenizer", f"{tok.get('name')} (vocabulary {tok.get('vocab_size')})"])
    cfg_rows += [["schema", data.get("schema_version")], ["seconds", data.get("seconds")]]
    return (
        '<section id="dataset"><h2>Dataset and run</h2><details><summary>splits, columns, roles '
        "and configuration</summary>"
        + table(["split", "kind", "rows", "columns", "content hash"], rows)
        + table(["role", "column", "auto-detected"],
                [[r, (v or {}).get("column"), bool((v or {}).get("detected"))] for r, v in roles.items()])
        + table(["setting", "value"], cfg_rows)
        + "</details></section>"
    )  # fmt: skip


def render_html(data: dict[str, Any]) -> str:
    """The report dict (``Report.data``) as one self-contained HTML page."""
    results = _order([r for r in data.get("results") or [] if isinstance(r, dict)])
    ctx = Context.of(data)
    splits = list(ctx.splits)
    for r in results:  # splits a finding names that the dataset section does not list
        for f in r.get("findings") or []:
            if isinstance(f, dict) and f.get("split") is not None and str(f["split"]) not in splits:
                splits.append(str(f["split"]))
    splits = splits[:200]
    split_index = {s: i for i, s in enumerate(splits)}
    verdict = "PASSED" if data.get("passed") else "FAILED"
    body = [_header(data), _filters(data, splits), _attention(results)]
    body.append(signals_html(data, split_index))  # "" unless dataaudit.signals made the report
    errors = data.get("plugin_errors") or []
    if errors:
        items = "".join(f'<li><span class="text">{esc(e, 1000)}</span></li>' for e in errors[:20])
        body.append(f'<section><h2>Plugin errors</h2><ul class="reasons">{items}</ul></section>')
    tail = _dataset(data)
    used = sum(map(len, body)) + len(tail) + 40_000  # the page shell, CSS and script
    sections = []
    for i, r in enumerate(results):
        left = len(results) - i
        budget = min(_RULE_BUDGET, (MAX_BYTES - used) // left)
        html = _rule(r, ctx, split_index, max(budget, 0))
        if used + len(html) > MAX_BYTES:
            html = _stub(r)
        sections.append(html)
        used += len(html)
    body.append('<section id="rules"><h2>Rules</h2>' + "".join(sections) + "</section>")
    body.append(tail)
    return page(f"dataaudit report · gate {verdict}", "\n".join(body))


def _stub(r: dict[str, Any]) -> str:
    st = status_of(r)
    return (
        f'<section class="rule st-{st}" id="{html_id(r.get("code"))}" data-status="{st}">'
        f'<h3>{badge(st, st)} {esc(r.get("code"), 40)}</h3><p class="muted">Left out to keep '
        "the page small: see the JSON report.</p></section>"
    )

"""The diff page: what got worse first, then rule, finding and metric changes, the unchanged
ones collapsed. Its input is ``ReportDiff.to_dict()``, read defensively: a key the diff does
not carry is shown as "—", never an error."""

from __future__ import annotations

from typing import Any

from ._base import (
    badge,
    esc,
    fmt_metric,
    is_number,
    num,
    page,
    pct,
    plural,
    severity_of,
    value_text,
)

__all__ = ["render_diff_html"]

_MAX_ROWS = 400
#: change kinds, worst first: the filter's choices and the badges' colours (CSS classes s-*)
_KINDS = ("regressed", "new", "worse", "changed", "added", "removed", "improved", "resolved",
          "within", "persisting", "unchanged")  # fmt: skip
_QUIET = ("within", "persisting", "unchanged")


def _kind(value: Any) -> str:
    return value if value in _KINDS else "changed"


def _v(value: Any, name: Any = "") -> str:
    return "—" if value is None else fmt_metric(name, value)


def _table(headers: list[str], rows: list[tuple[str, str, str]], what: str) -> str:
    """``rows``: (kind, data-attributes, cells HTML); the quiet kinds go in a collapsed table."""
    loud = [r for r in rows if r[0] not in _QUIET]
    quiet = [r for r in rows if r[0] in _QUIET]
    head = "<tr>" + "".join(f"<th>{esc(h, 40)}</th>" for h in headers) + "</tr>"

    def body(items: list[tuple[str, str, str]]) -> str:
        out = [
            f'<tr data-status="{k}"{attrs}>{cells}</tr>' for k, attrs, cells in items[:_MAX_ROWS]
        ]
        if len(items) > _MAX_ROWS:
            out.append(f'<tr><td colspan="{len(headers)}" class="muted">… {len(items) - _MAX_ROWS:,} '
                       "more in the JSON diff</td></tr>")  # fmt: skip
        return f"<table><thead>{head}</thead><tbody>{''.join(out)}</tbody></table>"

    out = [body(loud) if loud else f'<p class="muted">No {esc(what)} changed.</p>']
    if quiet:
        out.append(
            f"<details><summary>{plural(len(quiet), what[:-1], what)} unchanged</summary>"
            f"{body(quiet)}</details>"
        )
    return "".join(out)


def _side(d: dict[str, Any]) -> str:
    passed = d.get("passed")
    verdict = "passed" if passed else "failed" if passed is not None else "—"
    return (
        f"{esc(d.get('created'), 40)} · dataaudit {esc(d.get('tool_version'), 40)} · config "
        f"#{esc(d.get('config_hash'), 40)} · gate {verdict}"
    )


def _judged(diff: dict[str, Any]) -> str:
    """What the verdict was judged by: fail_on for new findings, the metrics' tolerances."""
    parts = []
    if diff.get("fail_on"):
        parts.append(f"new findings count from severity {esc(diff['fail_on'], 20)}")
    tol = diff.get("tolerance") or {}
    if is_number(tol.get("relative")):
        parts.append(f"metrics may move {pct(tol['relative'])} of their value")
    if is_number(tol.get("noise_sigmas")):
        parts.append(f"or {num(tol['noise_sigmas'])} standard errors of their noise")
    return "<br>judged by: " + ", ".join(parts) if parts else ""


def render_diff_html(diff: dict[str, Any]) -> str:
    """``ReportDiff.to_dict()`` as one self-contained HTML page."""
    regressed = bool(diff.get("regressed"))
    old, new = diff.get("old") or {}, diff.get("new") or {}
    body = [
        "<header><h1>dataaudit diff</h1>",
        f'<div id="verdict"><span class="verdict {"failed" if regressed else "passed"}">'
        f"{'REGRESSED' if regressed else 'no regression'}</span>"
        f'<span class="muted">{"changes found" if diff.get("has_changes") else "no changes"}'
        "</span></div>",
        f'<p class="meta">old: {_side(old)}<br>new: {_side(new)}{_judged(diff)}</p>',
    ]
    reasons = [str(x) for x in diff.get("regressions") or []]
    if reasons:
        items = "".join(f'<li><span class="text">{esc(r, 500)}</span></li>' for r in reasons[:50])
        more = f"<li>… {len(reasons) - 50} more</li>" if len(reasons) > 50 else ""
        body.append(f'<ul class="reasons">{items}{more}</ul>')
    warnings = [str(x) for x in diff.get("warnings") or []]
    if warnings:
        items = "".join(f"<li>{esc(w, 500)}</li>" for w in warnings[:20])
        body.append(
            f'<p class="small"><b>Read with care:</b></p><ul class="reasons small">{items}</ul>'
        )
    body.append("</header>")
    body.append(
        '<div id="filters" hidden><span class="group"><b>show</b> '
        + "".join(
            f'<label><input type="checkbox" data-f="status" value="{k}"'
            f"{'' if k in _QUIET else ' checked'}> {k}</label>"
            for k in _KINDS
        )
        + "</span></div>"
    )
    body.append(_rules(diff))
    body.append(_findings(diff))
    body.append(_metrics(diff))
    body.append(_splits(diff))
    return page(
        f"dataaudit diff · {'REGRESSED' if regressed else 'no regression'}", "\n".join(body)
    )


def _rules(diff: dict[str, Any]) -> str:
    rows = []
    for r in diff.get("rules") or []:
        if not isinstance(r, dict):
            continue
        k = _kind(r.get("change"))
        old = badge(str(r["old"]), _status_class(r["old"])) if r.get("old") else "—"
        new = badge(str(r["new"]), _status_class(r["new"])) if r.get("new") else "—"
        rows.append((k, "", f"<td>{badge(k, k)}</td><td><b>{esc(r.get('code'), 40)}</b> "
                     f'<span class="muted">{esc(r.get("name"), 100)}</span></td>'
                     f"<td>{old} → {new}</td>"))  # fmt: skip
    return (
        "<section><h2>Rules</h2>"
        + _table(["change", "rule", "status"], rows, "rules")
        + "</section>"
    )


def _status_class(value: Any) -> str:
    return value if value in ("pass", "warn", "fail", "error", "skipped") else "error"


def _findings(diff: dict[str, Any]) -> str:
    rows = []
    for f in diff.get("findings") or []:
        if not isinstance(f, dict):
            continue
        k = _kind(f.get("state"))
        if k == "persisting" and f.get("count_delta"):
            k = "changed"
        sev = severity_of(f)
        old_c, new_c = f.get("old_count"), f.get("new_count")
        counts = (
            f"{num(old_c)} → {num(new_c)}" if k not in ("new", "resolved") else num(new_c or old_c)
        )
        sev_text = esc(sev)
        if f.get("suppressed"):
            sev_text += ' <span class="muted small">(suppressed by the baseline)</span>'
        if f.get("old_severity") and f.get("old_severity") != f.get("severity"):
            sev_text = f"{esc(f.get('old_severity'), 20)} → {sev_text}"
        rows.append((k, f' data-severity="{sev}"',
                     f"<td>{badge(k, k)}</td><td>{esc(f.get('code'), 40)}</td><td>{sev_text}</td>"
                     f"<td>{esc(f.get('split') or '—', 100)}</td>"
                     f'<td><span class="text">{esc(f.get("message"), 400)}</span><div class="muted small">'
                     f"{esc(f.get('fingerprint'), 60)}</div></td><td class=\"num\">{counts}</td>"))  # fmt: skip
    return (
        "<section><h2>Findings</h2>"
        + _table(["change", "rule", "severity", "split", "finding", "count"], rows, "findings")
        + "</section>"
    )


def _metrics(diff: dict[str, Any]) -> str:
    rows = []
    for m in diff.get("metrics") or []:
        if not isinstance(m, dict):
            continue
        k = _kind(m.get("verdict"))
        name = m.get("name")
        rel = m.get("relative")
        rel_text = (
            f"{rel:+.1%}" if isinstance(rel, (int, float)) and not isinstance(rel, bool) else "—"
        )
        delta = m.get("delta")
        delta_text = (
            "—"
            if delta is None
            else ("+" if isinstance(delta, (int, float)) and delta > 0 else "") + _v(delta, name)
        )
        rows.append((k, "",
                     f"<td>{badge(k, k)}</td><td>{esc(m.get('code'), 40)}</td>"
                     f"<td>{esc(name, 100)}</td><td>{esc(m.get('split') or '—', 100)}</td>"
                     f'<td class="num">{_v(m.get("old"), name)} → {_v(m.get("new"), name)}</td>'
                     f'<td class="num">{delta_text}</td><td class="num">{rel_text}</td>'
                     f'<td class="num">{_tolerance(m)}</td><td class="num">{_v(m.get("threshold"), name)}</td>'
                     f"<td>{esc(m.get('direction'), 20)} is better</td>"))  # fmt: skip
    headers = ["change", "rule", "metric", "split", "old → new", "delta", "relative", "tolerance",
               "threshold", "direction"]  # fmt: skip
    return "<section><h2>Metrics</h2>" + _table(headers, rows, "metrics") + "</section>"


def _tolerance(m: dict[str, Any]) -> str:
    """How far the metric could move and count as unchanged, and where that came from."""
    tol = m.get("tolerance")
    if tol is None:
        return "—"
    basis = f' <span class="muted">({esc(m.get("basis"), 20)})</span>' if m.get("basis") else ""
    return f"±{_v(tol, m.get('name'))}{basis}"


def _splits(diff: dict[str, Any]) -> str:
    ds = diff.get("dataset") or {}
    rows = []
    for s in ds.get("splits") or []:
        if not isinstance(s, dict):
            continue
        k = _kind(s.get("state"))
        cols = []
        if s.get("columns_added"):
            cols.append("added " + value_text(s["columns_added"]))
        if s.get("columns_removed"):
            cols.append("removed " + value_text(s["columns_removed"]))
        rows.append((k, "",
                     f"<td>{badge(k, k)}</td><td>{esc(s.get('split'), 100)}</td>"
                     f'<td class="num">{_v(s.get("old_rows"))} → {_v(s.get("new_rows"))}</td>'
                     f"<td>{esc(s.get('old_hash'), 40)} → {esc(s.get('new_hash'), 40)}</td>"
                     f"<td>{esc('; '.join(cols), 400) or '—'}</td>"))  # fmt: skip
    notes = []
    if ds.get("config_changed"):
        notes.append("the config changed")
    if ds.get("roles_changed"):
        notes.append("the column roles changed")
    note = f'<p class="small"><b>{esc(", ".join(notes))}</b></p>' if notes else ""
    return (
        "<section><h2>Dataset</h2>"
        + _table(["change", "split", "rows", "content hash", "columns"], rows, "splits")
        + note
        + "</section>"
    )

"""The notebook summary (``Report._repr_html_``): verdict, counts, the gate's reasons and the
failing, erroring and warning rules with their top findings. Inline styles only (a notebook page
must not inherit report CSS); every value escaped."""

from __future__ import annotations

from typing import Any

from ...rule import Status
from ._base import COLORS, SEVERITY_CLASS, esc, num, plural, status_of
from ._report import _order

__all__ = ["render_compact"]

_COMPACT_FINDINGS = 3  # findings shown per failing or warning rule
_SHOWN = (Status.ERROR, Status.FAIL, Status.WARN)  # the rules the notebook summary lists


def _pill(text: str, color: str) -> str:
    return (
        f'<span style="background:{color};color:#fff;border-radius:8px;padding:0 6px;'
        f'font-size:11px;font-weight:700;text-transform:uppercase">{esc(text, 40)}</span>'
    )


def render_compact(data: dict[str, Any]) -> str:
    """A short HTML summary of a report for notebooks."""
    passed = bool(data.get("passed"))
    s = data.get("summary", {}) or {}
    verdict = _pill(
        f"gate {'passed' if passed else 'failed'}", COLORS["pass" if passed else "fail"]
    )
    counts = " · ".join(
        f"{num(s.get(k, 0))} {k}" for k in (st.value for st in Status.worst_first())
    )
    splits = data.get("dataset", {}).get("splits", {}) or {}
    rows = ", ".join(
        f"{esc(name, 100)}: {num((info or {}).get('rows', 0))}" for name, info in splits.items()
    )
    out = [
        '<div style="font:13px/1.45 system-ui,sans-serif">',
        f"<div><b>dataaudit</b> {verdict} "
        f'<span style="color:#656d76">fail_on={esc(data.get("fail_on"), 20)} · {counts} · '
        f"{plural(s.get('flagged_rows', 0), 'row')} flagged · rows {rows}</span></div>",
    ]
    reasons = (data.get("gate") or {}).get("reasons") or []
    if reasons and not passed:
        items = "".join(f"<li>{esc(r, 300)}</li>" for r in reasons[:10])
        out.append(f'<ul style="margin:4px 0">{items}</ul>')
    shown = _order([r for r in data.get("results", []) or [] if r.get("status") in _SHOWN])
    if shown:
        cell = 'style="border:1px solid #d0d7de;padding:2px 6px;text-align:left;vertical-align:top"'
        out.append('<table style="border-collapse:collapse;margin-top:4px">')
        for r in shown:
            st = status_of(r)
            findings = (r.get("findings") or [])[:_COMPACT_FINDINGS]
            lines = "<br>".join(
                f"{_pill(str(f.get('severity')), COLORS[SEVERITY_CLASS.get(f.get('severity'), 'skipped')])} "
                f"{esc(f.get('message'), 300)}"
                for f in findings
            ) or esc(r.get("message"), 300)
            more = len(r.get("findings") or []) - len(findings)
            if more > 0:
                lines += f'<br><span style="color:#656d76">… {more:,} more</span>'
            out.append(
                f"<tr><td {cell}>{_pill(st, COLORS[st])}</td>"
                f"<td {cell}><b>{esc(r.get('code'), 40)}</b> {esc(r.get('name'), 100)}</td>"
                f"<td {cell}>{lines}</td></tr>"
            )
        out.append("</table>")
    out.append(
        '<div style="color:#656d76">report.to_html(path): the full report · '
        "report.flags(): the flagged rows · report.apply(data): drop them</div></div>"
    )
    return "".join(out)

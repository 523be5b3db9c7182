"""Markdown for CI: a report as a job summary (``--output-format markdown >>
$GITHUB_STEP_SUMMARY``) and a diff as a pull-request comment (``dataaudit diff --format
markdown``). Compact: the verdict, a table of the rules that fail or warn with their top finding,
the reasons; passing and skipped rules in one line each.

Text from the dataset is shown literally: GitHub renders HTML, links, images, @mentions and
#references in Markdown, so every value is made plain (control and bidi characters as escapes,
bounded) and then has the characters that would start any of those escaped.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..rule import Status
from ..wording import plural
from .escape import plain
from .text import partial_results

if TYPE_CHECKING:
    from .diff import ReportDiff

__all__ = ["md", "render_diff_markdown", "render_markdown"]

_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")  # code, emphasis, links and images, table cells
_PINGS = re.compile(r"[@#]")  # @mentions and #references: inert inside a code span
_ICON = {"error": "🟣", "fail": "🔴", "warn": "🟡", "pass": "🟢", "skipped": "⚪"}


def md(value: Any, limit: int = 200) -> str:
    """An untrusted value as inert Markdown text, safe in a table cell."""
    text = plain(value if value is not None else "—", limit)
    text = _SPECIAL.sub(r"\\\1", "".join(_ENTITIES.get(c, c) for c in text))
    return _PINGS.sub(lambda m: f"`{m.group()}`", text)


def _code(value: Any) -> str:
    """A rule code or fingerprint ([A-Z0-9-] by the schema) as inline code."""
    return f"`{re.sub(r'[^A-Za-z0-9_.-]', '', str(value))}`"


def render_markdown(data: dict[str, Any]) -> str:
    s = data["summary"]
    verdict = "✅ passed" if data["passed"] else "❌ FAILED"
    partial = partial_results(data)
    if partial and data["passed"]:  # "passed" means read everything and found nothing: say
        verdict += " on partial coverage"  # when it did not (a failure is its findings' doing)
    splits = data["dataset"]["splits"]
    lines = [
        f"### dataaudit: {verdict} (fail_on={md(data['fail_on'], 10)})",
        "",
        " · ".join(
            f"{md(name, 60)}: {plural(info['rows'], 'row')}" for name, info in splits.items()
        ),
        "",
    ]
    for r in partial:
        c = r["coverage"]
        lines.append(
            f"- {_code(r['code'])} examined {c['examined']:,} of {c['in_scope']:,} "
            f"{md(c.get('unit') or 'rows', 20)}: {md(c.get('reason'), 240)}"
        )
    if partial:
        lines.append("")
    order = Status.worst_first()
    results = sorted(data["results"], key=lambda r: (order.index(r["status"]), r["code"]))
    shown = [r for r in results if r["status"] in ("error", "fail", "warn")]
    if shown:
        lines += ["| | rule | findings | top finding |", "|---|---|---:|---|"]
        for r in shown:
            counted = [f for f in r["findings"] if not f.get("suppressed")]
            top = md(r["message"], 200) if r["status"] == "error" else ""
            if counted:
                top = f"[{md(counted[0]['severity'], 10)}] {md(counted[0]['message'], 200)}"
            lines.append(
                f"| {_ICON[r['status']]} {r['status']} | {_code(r['code'])} {md(r['name'], 60)} "
                f"| {len(counted)} | {top} |"
            )
        lines.append("")
    passed = [_code(r["code"]) for r in results if r["status"] == "pass"]
    skipped = [_code(r["code"]) for r in results if r["status"] == "skipped"]
    if passed:
        lines.append(f"{_ICON['pass']} {len(passed)} passed: {', '.join(passed)}  ")
    if skipped:
        lines.append(f"{_ICON['skipped']} {len(skipped)} skipped: {', '.join(skipped)}  ")
    lines.append(f"{plural(s['flagged_rows'], 'row')} flagged")
    lines += _signals(data.get("signals"))
    gate = data.get("gate") or {}
    baseline = gate.get("baseline")
    if baseline:
        lines += [
            "",
            f"{plural(baseline['suppressed'], 'finding')} suppressed by the baseline "
            f"{md(baseline['path'], 200)} ({baseline['accepted']} accepted, "
            f"{baseline['stale']} no longer found)",
        ]
    if not data["passed"]:
        lines += ["", "**Why the gate failed**", ""]
        lines += [f"- {md(reason, 300)}" for reason in gate.get("reasons", [])]
    return "\n".join(lines) + "\n"


_VERDICT_ORDER = ("regressed", "worse", "improved", "changed", "added", "removed")


def _signals(section: Any, limit: int = 10) -> list[str]:
    """A report of ``dataaudit signals``: its verdict and one line per finding (the step and
    the message, which names the batch's reasons)."""
    if not isinstance(section, dict):
        return []
    status = str(section.get("status", "pass"))
    findings = [f for f in section.get("findings") or [] if isinstance(f, dict)]
    lines = ["", f"**Training signals**: {_ICON.get(status, '')} {md(status, 10)}", ""]
    for f in findings[:limit]:
        lines.append(
            f"- {_code(f.get('code'))} [{md(f.get('severity'), 10)}] {md(f.get('message'), 400)}"
        )
    if len(findings) > limit:
        lines.append(f"- … {len(findings) - limit} more in the JSON report")
    if not findings:
        lines.append("- no findings in the training log")
    return lines


def render_diff_markdown(d: ReportDiff, *, max_items: int = 20) -> str:
    from .diff import format_value

    verdict = "❌ REGRESSED" if d.regressed else "✅ no regression"
    lines = [f"### dataaudit diff: {verdict}", ""]
    lines += ["| split | rows | content |", "|---|---:|---|"]
    for s in d.splits:
        rows = (
            f"{format_value(s.old_rows)} → {format_value(s.new_rows)}"
            if s.old_rows != s.new_rows
            else format_value(s.new_rows)
        )
        lines.append(f"| {md(s.split, 60)} | {rows} | {s.state} |")
    lines.append("")
    for w in d.warnings:
        lines.append(f"> ⚠️ {md(w, 400)}")
    if d.warnings:
        lines.append("")
    if d.regressions:
        lines += ["**Regressions**", ""]
        lines += [f"- {md(r, 300)}" for r in d.regressions[:max_items]]
        _more(lines, len(d.regressions), max_items)
        lines.append("")
    rules = [r for r in d.rules if r.change != "unchanged"]
    if rules:
        lines += ["| rule | status | change |", "|---|---|---|"]
        for r in rules[:max_items]:
            lines.append(
                f"| {_code(r.code)} {md(r.name, 60)} | {r.old or '—'} → {r.new or '—'} "
                f"| {r.change} |"
            )
        _more(lines, len(rules), max_items)
        lines.append("")
    moved = [m for m in d.metrics if m.verdict in _VERDICT_ORDER]
    moved.sort(key=lambda m: (_VERDICT_ORDER.index(m.verdict), m.code, m.name, m.split or ""))
    if moved:
        lines += ["| metric | old → new | tolerance | verdict |", "|---|---:|---:|---|"]
        for m in moved[:max_items]:
            split = f" \\[{md(m.split, 40)}\\]" if m.split else ""
            tol = f"±{format_value(m.tolerance)} {m.basis}" if m.tolerance is not None else ""
            lines.append(
                f"| {_code(m.code)} {md(m.name, 60)}{split} | {md(format_value(m.old))} → "
                f"{md(format_value(m.new))} | {md(tol)} | {m.verdict} |"
            )
        _more(lines, len(moved), max_items)
        lines.append("")
    c = d.counts()["findings"]
    lines.append(
        f"Findings: {c.get('new', 0)} new, {c.get('resolved', 0)} resolved, "
        f"{c.get('persisting', 0)} persisting"
    )
    changed = [f for f in d.findings if f.state != "persisting"]
    if changed:
        lines += ["", "| | rule | severity | finding |", "|---|---|---|---|"]
        for f in changed[:max_items]:
            mark = "➕ new" if f.state == "new" else "➖ resolved"
            accepted = " (suppressed)" if f.suppressed else ""
            if f.surfaced:
                accepted += " (was rolled up)"
            lines.append(
                f"| {mark}{accepted} | {_code(f.code)} | {md(f.severity, 10)} "
                f"| {md(f.message, 200)} |"
            )
        _more(lines, len(changed), max_items)
    return "\n".join(lines) + "\n"


def _more(lines: list[str], total: int, shown: int) -> None:
    if total > shown:
        lines.append(f"\n… {total - shown} more in the JSON diff (`--format json`)")

"""The terminal renderers: a report's summary and a diff's account. Report text is untrusted and
goes through :func:`escape.plain <dataaudit.report.escape.plain>`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..rule import Status
from ..wording import noun, plural
from .diff import format_value
from .escape import plain, shorten

if TYPE_CHECKING:
    from .diff import ReportDiff

_COLORS = {"error": "35", "fail": "31", "warn": "33", "pass": "32", "skipped": "2"}


_ROLE_REASON = re.compile(r"needs (?:the|a) ([\w, ]+?) column")


def short_reason(message: Any) -> str:
    """A few words for why a rule was skipped, so rules skipped for one cause group together."""
    text = " ".join(str(message or "skipped").split())
    m = _ROLE_REASON.search(text)
    if m:
        return f"no {m.group(1)} column"
    if "needs a train split" in text:
        return "no train and eval splits to compare"
    if "needs a tokenizer" in text:
        return "no tokenizer"
    text = re.sub(r"^\S+ vs \S+: ", "", text)  # "test vs train: no verdict (...)"
    text = re.split(r" \(|; |: ", text, maxsplit=1)[0]
    return shorten(text, 60)


def skipped_groups(results: list[dict[str, Any]]) -> str:
    """``LBL001, LBL002: no label column; LEN001: max_seq_len is not set`` (safe for a terminal)."""
    groups: dict[str, list[str]] = {}
    for r in results:
        if r["status"] == "skipped":
            groups.setdefault(short_reason(r.get("message")), []).append(plain(r["code"], 20))
    return "; ".join(f"{', '.join(codes)}: {plain(why, 80)}" for why, codes in groups.items())


def partial_results(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The results that gave a verdict on part of their scope (reports before schema 1.6 have
    no coverage: none)."""
    return [
        r
        for r in data["results"]
        if (r.get("coverage") or {}).get("complete") is False
        and r["status"] not in ("error", "skipped")
    ]


def coverage_line(r: dict[str, Any]) -> str:
    """``LBL004 examined 100 of 5,000 rows (2.0%): why`` (safe for a terminal)."""
    c = r["coverage"]
    share = c["examined"] / c["in_scope"] if c["in_scope"] else 0.0
    return (
        f"{plain(r['code'], 20)} examined {c['examined']:,} of {c['in_scope']:,} "
        f"{plain(c.get('unit') or 'rows', 20)} ({share:.1%}): {plain(c.get('reason'), 240)}"
    )


def engine_text(data: dict[str, Any]) -> str | None:
    """``ray 2.60.0 · 3 nodes · 64 CPUs`` or ``local · 16 CPUs``: what ran the audit (reports
    before schema 1.8 do not say: None). Plain text; callers escape for their medium."""
    engine = data.get("engine")
    if not isinstance(engine, dict) or not engine.get("name"):
        return None
    parts = [" ".join(str(x) for x in (engine["name"], engine.get("version")) if x)]
    nodes, cpus = engine.get("nodes"), engine.get("cpus")
    if isinstance(nodes, int) and engine["name"] != "local":
        parts.append(plural(nodes, "node"))
    if isinstance(cpus, int):
        parts.append(f"{cpus:,} {'CPU' if cpus == 1 else 'CPUs'}")
    return " · ".join(parts)


def render_summary(data: dict[str, Any], *, color: bool = False) -> str:
    def paint(status: str, text: str) -> str:
        return f"\x1b[{_COLORS[status]}m{text}\x1b[0m" if color else text

    splits = data["dataset"]["splits"]
    lines = [
        f"dataaudit {plain(data['tool']['version'], 40)} · "
        + ", ".join(
            f"{plain(name, 60)} ({plain(info['kind'], 20)}): {plural(info['rows'], 'row')}"
            for name, info in splits.items()
        )
    ]
    roles = data["dataset"].get("roles", {})
    if roles:
        lines.append(
            "columns: "
            + ", ".join(f"{plain(r, 20)}={plain(v['column'], 60)}" for r, v in roles.items())
        )
    engine = engine_text(data)
    if engine:
        lines.append(f"engine: {plain(engine, 120)}")
    lines.append("")
    order = Status.worst_first()
    results = sorted(data["results"], key=lambda r: (order.index(r["status"]), r["code"]))
    for r in results:
        status = r["status"].upper() if r["status"] != "skipped" else "SKIP"
        head = (
            f"{paint(r['status'], f'{status:<5}')} {plain(r['code'], 20):<8} {plain(r['name'], 60)}"
        )
        if r["status"] in ("error", "skipped"):
            lines.append(f"{head}: {plain(r['message'], 200)}")
            continue
        counted = [f for f in r["findings"] if not f.get("suppressed")]
        n, accepted = len(counted), len(r["findings"]) - len(counted)
        rows = r.get("flagged_rows", 0)
        extra = f" · {plural(n, 'finding')}" if n else ""
        extra += f" · {accepted} suppressed by the baseline" if accepted else ""
        extra += f" · {plural(rows, 'row')} flagged" if rows else ""
        cov = r.get("coverage")
        if cov and not cov["complete"]:
            extra += f" · partial coverage: {cov['examined']:,} of {cov['in_scope']:,}"
        lines.append(head + extra)
        for f in counted[:3]:
            lines.append(f"        [{plain(f['severity'], 10)}] {plain(f['message'], 140)}")
        if n > 3:
            lines.append(f"        … {n - 3} more in the JSON report")
    s = data["summary"]
    verdict = "PASSED" if data["passed"] else "FAILED"
    partial = partial_results(data)
    if partial and data["passed"]:  # "passed" means read everything and found nothing: say
        # when it did not (a failed gate failed on its findings: "FAILED on partial coverage"
        # read as if the coverage were the reason; the ~ lines below still list it)
        verdict += " on partial coverage"
    skipped = f" ({skipped_groups(results)})" if s["skipped"] else ""
    lines += [
        "",
        f"gate {verdict} (fail_on={plain(data['fail_on'], 10)}): {s['pass']} pass, "
        f"{s['warn']} warn, {s['fail']} fail, {s['error']} error, {s['skipped']} skipped"
        f"{skipped}; {plural(s['flagged_rows'], 'row')} flagged",
    ]
    lines += [f"  ~ {coverage_line(r)}" for r in partial]
    gate = data.get("gate") or {}
    baseline = gate.get("baseline")
    if baseline:
        stale = f", {baseline['stale']} no longer found" if baseline.get("stale") else ""
        lines.append(
            f"baseline {plain(baseline['path'], 200)}: {plural(baseline['suppressed'], 'finding')} "
            f"suppressed of {baseline['accepted']} accepted{stale}"
        )
    if not data["passed"]:
        lines += [f"  ✗ {plain(reason, 300)}" for reason in gate.get("reasons", [])]
    for err in data.get("plugin_errors", []):
        lines.append(f"plugin error: {plain(err, 300)}")
    return "\n".join(lines)


def render_diff(d: ReportDiff, *, max_items: int = 20) -> str:
    """A readable account of what changed between two reports, at most ``max_items`` a section."""
    o, n = d.old, d.new
    lines = [
        f"dataaudit diff: {plain(o.get('created'), 40)} (config #{plain(o.get('config', {}).get('hash'), 20)})"
        f" → {plain(n.get('created'), 40)} (config #{plain(n.get('config', {}).get('hash'), 20)})"
    ]
    lines.append("dataset:")
    for s in d.splits:
        if s.state == "added":
            lines.append(
                f"  + {plain(s.split, 60)}: new split, {format_value(s.new_rows)} "
                f"{noun(s.new_rows or 0, 'row')}"
            )
        elif s.state == "removed":
            lines.append(
                f"  - {plain(s.split, 60)}: split removed ({format_value(s.old_rows)} "
                f"{noun(s.old_rows or 0, 'row')})"
            )
        else:
            rows = (
                f"{format_value(s.old_rows)} → {format_value(s.new_rows)} "
                f"{noun(s.new_rows or 0, 'row')} "
                f"({_signed((s.new_rows or 0) - (s.old_rows or 0))})"
                if s.old_rows != s.new_rows
                else f"{format_value(s.new_rows)} {noun(s.new_rows or 0, 'row')}"
            )
            what = "content changed" if s.state == "changed" else "identical content"
            cols = ""
            if s.columns_added:
                cols += " · columns added: " + ", ".join(plain(c, 40) for c in s.columns_added)
            if s.columns_removed:
                cols += " · columns removed: " + ", ".join(plain(c, 40) for c in s.columns_removed)
            lines.append(f"    {plain(s.split, 60)}: {rows}, {what}{cols}")
    for w in d.warnings:
        lines.append(f"warning: {plain(w, 400)}")
    if d.slower:
        lines.append("slower (timings are information, never a regression):")
        for t in d.slower[:max_items]:
            lines.append(
                f"  {plain(t['part'], 60)}: {t['old']:.2f} s → {t['new']:.2f} s "
                f"({min(t['ratio'], 999):.1f}×)"
            )
        _more(lines, len(d.slower), max_items)

    changed_rules = [r for r in d.rules if r.change != "unchanged"]
    if changed_rules:
        lines.append("rules:")
        for r in changed_rules[:max_items]:
            lines.append(
                f"  {r.code:<8} {plain(r.name, 40)}: {r.old or '—'} → {r.new or '—'}  [{r.change}]"
            )
        _more(lines, len(changed_rules), max_items)

    moved = [m for m in d.metrics if m.verdict not in ("unchanged", "within")]
    within = sum(m.verdict == "within" for m in d.metrics)
    if moved or within:
        lines.append(
            f"metrics ({within} moved within their noise or tolerance, not listed):"
            if within
            else "metrics:"
        )
        moved.sort(key=lambda m: (METRIC_ORDER[m.verdict], m.code, m.name, m.split or ""))
        for m in moved[:max_items]:
            split = f" [{plain(m.split, 40)}]" if m.split else ""
            delta = f" ({_signed(m.delta)})" if m.delta is not None else ""
            why = [f"{m.direction} is better"] if m.direction != "none" else []
            if m.tolerance is not None:
                why.append(f"±{format_value(m.tolerance)} {m.basis}")
            if m.threshold is not None:
                why.append(f"threshold {format_value(m.threshold)}")
            lines.append(
                f"  {m.code:<8} {plain(m.name, 60)}{split}: {format_value(m.old)} → {format_value(m.new)}"
                f"{delta}  [{', '.join([m.verdict, *why])}]"
            )
        _more(lines, len(moved), max_items)

    c = d.counts()["findings"]
    count_changed = [f for f in d.findings if f.state == "persisting" and f.count_delta]
    suppressed = sum(f.suppressed for f in d.findings if f.state != "resolved")
    lines.append(
        f"findings: {c.get('new', 0)} new, {c.get('resolved', 0)} resolved, "
        f"{c.get('persisting', 0)} persisting ({len(count_changed)} with a changed count)"
        + (f"; {suppressed} suppressed by the baseline" if suppressed else "")
    )
    shown = [f for f in d.findings if f.state != "persisting"] + count_changed
    mark = {"new": "+", "resolved": "-", "persisting": "~"}
    for f in shown[:max_items]:
        count = (
            f" (count {format_value(f.old_count)} → {format_value(f.new_count)})"
            if f.state == "persisting"
            else ""
        )
        accepted = " (suppressed)" if f.suppressed else ""
        if f.surfaced:
            accepted += " (listed now; the old report's capped list had rolled it up)"
        lines.append(
            f"  {mark[f.state]} [{plain(f.severity, 10)}] {f.code} {plain(f.message, 140)}"
            f"{count}{accepted}"
        )
    _more(lines, len(shown), max_items)

    if d.regressed:
        lines.append("verdict: REGRESSED")
        lines += [f"  - {plain(r, 200)}" for r in d.regressions[:max_items]]
        _more(lines, len(d.regressions), max_items)
    else:
        lines.append("verdict: no regression" + ("" if d.has_changes else " (no changes)"))
    return "\n".join(lines)


METRIC_ORDER = {
    "regressed": 0,
    "worse": 1,
    "improved": 2,
    "changed": 3,
    "added": 4,
    "removed": 5,
    "within": 6,
    "unchanged": 7,
}


def _more(lines: list[str], total: int, shown: int) -> None:
    if total > shown:
        lines.append(f"  … {total - shown} more in the JSON diff")


def _signed(v: Any) -> str:
    if v is None:
        return "—"
    s = format_value(v)
    return s if s.startswith("-") else "+" + s

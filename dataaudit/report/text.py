"""The terminal summary. Dataset text is untrusted: control characters are escaped."""

from __future__ import annotations

import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_STATUS_ORDER = {"error": 0, "fail": 1, "warn": 2, "pass": 3, "skipped": 4}
_COLORS = {"error": "35", "fail": "31", "warn": "33", "pass": "32", "skipped": "2"}


def safe(text: Any, limit: int = 120) -> str:
    """One line of untrusted text, safe for a terminal: control chars escaped, length bounded."""
    s = str(text).replace("\n", "⏎").replace("\t", " ")
    s = _CONTROL.sub(
        lambda m: (
            f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}"
        ),
        s,
    )
    return s if len(s) <= limit else s[: limit - 1] + "…"


def render_summary(data: dict[str, Any], *, color: bool = False) -> str:
    def paint(status: str, text: str) -> str:
        return f"\x1b[{_COLORS[status]}m{text}\x1b[0m" if color else text

    splits = data["dataset"]["splits"]
    lines = [
        f"dataaudit {data['tool']['version']} · "
        + ", ".join(
            f"{name} ({info['kind']}): {info['rows']:,} rows" for name, info in splits.items()
        )
    ]
    roles = data["dataset"].get("roles", {})
    if roles:
        lines.append("columns: " + ", ".join(f"{r}={v['column']}" for r, v in roles.items()))
    lines.append("")
    results = sorted(data["results"], key=lambda r: (_STATUS_ORDER[r["status"]], r["code"]))
    for r in results:
        status = r["status"].upper() if r["status"] != "skipped" else "SKIP"
        head = f"{paint(r['status'], f'{status:<5}')} {r['code']:<8} {r['name']}"
        if r["status"] in ("error", "skipped"):
            lines.append(f"{head}: {safe(r['message'], 200)}")
            continue
        n = len(r["findings"])
        rows = r.get("flagged_rows", 0)
        extra = f" · {n} finding{'s' * (n != 1)}" if n else ""
        extra += f" · {rows:,} rows flagged" if rows else ""
        lines.append(head + extra)
        for f in r["findings"][:3]:
            lines.append(f"        [{f['severity']}] {safe(f['message'], 140)}")
        if n > 3:
            lines.append(f"        … {n - 3} more in the JSON report")
    s = data["summary"]
    verdict = "PASSED" if data["passed"] else "FAILED"
    lines += [
        "",
        f"gate {verdict} (fail_on={data['fail_on']}): {s['pass']} pass, {s['warn']} warn, "
        f"{s['fail']} fail, {s['error']} error, {s['skipped']} skipped; "
        f"{s['flagged_rows']:,} rows flagged",
    ]
    for err in data.get("plugin_errors", []):
        lines.append(f"plugin error: {safe(err, 300)}")
    return "\n".join(lines)

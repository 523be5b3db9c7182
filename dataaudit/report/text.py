"""The terminal summary. Dataset text is untrusted: control characters are escaped."""

from __future__ import annotations

import re
from typing import Any

# C0/C1 controls (ESC starts terminal escape sequences, \r rewrites a line), line separators,
# every bidirectional control (U+202E makes text read backwards), lone surrogates (they cannot be
# printed) and the two non-characters XML cannot carry
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    r"\ud800-\udfff\ufffe\uffff]"
)
_STATUS_ORDER = {"error": 0, "fail": 1, "warn": 2, "pass": 3, "skipped": 4}
_COLORS = {"error": "35", "fail": "31", "warn": "33", "pass": "32", "skipped": "2"}


def safe(text: Any, limit: int = 120, *, multiline: bool = False) -> str:
    """One line of untrusted text, safe for a terminal: control chars escaped, length bounded.

    ``multiline`` keeps line breaks (for error messages that span lines).
    """
    s = str(text).replace("\t", " ")
    if not multiline:
        s = s.replace("\n", "⏎")
    elif "\n" in s:
        return "\n".join(safe(line, limit) for line in s.split("\n"))
    s = _CONTROL.sub(
        lambda m: (
            f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}"
        ),
        s,
    )
    return s if len(s) <= limit else s[: limit - 1] + "…"


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
    return text if len(text) <= 60 else text[:59] + "…"


def skipped_groups(results: list[dict[str, Any]]) -> str:
    """``LBL001, LBL002: no label column; LEN001: max_seq_len is not set`` (safe for a terminal)."""
    groups: dict[str, list[str]] = {}
    for r in results:
        if r["status"] == "skipped":
            groups.setdefault(short_reason(r.get("message")), []).append(safe(r["code"], 20))
    return "; ".join(f"{', '.join(codes)}: {safe(why, 80)}" for why, codes in groups.items())


def render_summary(data: dict[str, Any], *, color: bool = False) -> str:
    def paint(status: str, text: str) -> str:
        return f"\x1b[{_COLORS[status]}m{text}\x1b[0m" if color else text

    splits = data["dataset"]["splits"]
    lines = [
        f"dataaudit {safe(data['tool']['version'], 40)} · "
        + ", ".join(
            f"{safe(name, 60)} ({safe(info['kind'], 20)}): {info['rows']:,} rows"
            for name, info in splits.items()
        )
    ]
    roles = data["dataset"].get("roles", {})
    if roles:
        lines.append(
            "columns: "
            + ", ".join(f"{safe(r, 20)}={safe(v['column'], 60)}" for r, v in roles.items())
        )
    lines.append("")
    results = sorted(data["results"], key=lambda r: (_STATUS_ORDER[r["status"]], r["code"]))
    for r in results:
        status = r["status"].upper() if r["status"] != "skipped" else "SKIP"
        head = (
            f"{paint(r['status'], f'{status:<5}')} {safe(r['code'], 20):<8} {safe(r['name'], 60)}"
        )
        if r["status"] in ("error", "skipped"):
            lines.append(f"{head}: {safe(r['message'], 200)}")
            continue
        n = len(r["findings"])
        rows = r.get("flagged_rows", 0)
        extra = f" · {n} finding{'s' * (n != 1)}" if n else ""
        extra += f" · {rows:,} rows flagged" if rows else ""
        lines.append(head + extra)
        for f in r["findings"][:3]:
            lines.append(f"        [{safe(f['severity'], 10)}] {safe(f['message'], 140)}")
        if n > 3:
            lines.append(f"        … {n - 3} more in the JSON report")
    s = data["summary"]
    verdict = "PASSED" if data["passed"] else "FAILED"
    skipped = f" ({skipped_groups(results)})" if s["skipped"] else ""
    lines += [
        "",
        f"gate {verdict} (fail_on={safe(data['fail_on'], 10)}): {s['pass']} pass, "
        f"{s['warn']} warn, {s['fail']} fail, {s['error']} error, {s['skipped']} skipped"
        f"{skipped}; {s['flagged_rows']:,} rows flagged",
    ]
    gate = data.get("gate") or {}
    if not data["passed"]:
        lines += [f"  ✗ {safe(reason, 300)}" for reason in gate.get("reasons", [])]
    for err in data.get("plugin_errors", []):
        lines.append(f"plugin error: {safe(err, 300)}")
    return "\n".join(lines)

"""The training-signals section read as rule results, one per SIG code, so the renderers that
list results (JUnit, SARIF, GitHub annotations) and ``diff`` treat a training log's findings
like a rule's instead of only through the gate's reasons."""

from __future__ import annotations

from typing import Any

from ..rule import Severity


def signal_results(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's signals findings grouped by code, each group shaped like ``results[]``."""
    from .model import _status

    section = data.get("signals") or {}
    fail_on = Severity.parse(data.get("fail_on") or "error")
    by_code: dict[str, list[dict[str, Any]]] = {}
    for f in section.get("findings") or []:
        by_code.setdefault(f["code"], []).append(f)
    out = []
    for code, found in sorted(by_code.items()):
        findings = [
            {
                "fingerprint": f["fingerprint"],
                "severity": f["severity"],
                "message": f["message"],
                "split": None,
                "count": max(1, len(f.get("steps") or [])),
                "examples": [ex for ex in f.get("examples") or [] if "split" in ex and "row" in ex],
                "data": {"step": f.get("step"), **(f.get("data") or {})},
                "suppressed": False,
            }
            for f in found
        ]
        worst = max((Severity(f["severity"]) for f in found), key=lambda s: s.rank)
        out.append(
            {
                "code": code,
                "name": found[0].get("name") or code,
                "status": _status([f["severity"] for f in found], fail_on),
                "severity": worst.value,
                "seconds": 0.0,
                "message": None,
                "options": {},
                "metrics": [],
                "thresholds": {},
                "details": {},
                "findings": findings,
                "flagged_rows": 0,
                "coverage": None,
            }
        )
    return out


def results_and_signals(data: dict[str, Any]) -> list[dict[str, Any]]:
    """``results`` followed by the signals section's results (none for an audit)."""
    return [*(data.get("results") or []), *signal_results(data)]

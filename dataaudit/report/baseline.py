"""A baseline of accepted findings, in the manner of ruff's ``--add-noqa``/baseline workflows.

``dataaudit baseline r.json > accepted.json`` lists every finding of a report by fingerprint;
``dataaudit audit ... --baseline accepted.json`` then reports those findings as
``suppressed: true`` — still listed, never hidden — and leaves them out of each rule's status
and the gate. A finding whose evidence changes gets a new fingerprint and counts again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from .load import read_json

__all__ = ["BASELINE_VERSION", "Baseline", "baseline_json", "load_baseline", "make_baseline"]

BASELINE_VERSION = 1
_FINGERPRINT = r"^[A-Z]{2,5}[0-9]{3}-[0-9a-f]{16}$"


@dataclass
class Baseline:
    """Accepted findings by fingerprint, and the file they came from (for the report)."""

    path: str
    findings: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __contains__(self, fingerprint: str) -> bool:
        return fingerprint in self.findings


def make_baseline(report: dict[str, Any]) -> dict[str, Any]:
    """Every finding of ``report`` (suppressed ones included: they stay accepted), sorted."""
    findings = [
        {
            "fingerprint": f["fingerprint"],
            "code": r["code"],
            "severity": f["severity"],
            "split": f.get("split"),
            "message": f["message"],
        }
        for r in report["results"]
        for f in r["findings"]
    ]
    findings.sort(key=lambda f: (f["code"], f["fingerprint"]))
    return {
        "dataaudit_baseline": BASELINE_VERSION,
        "report": {
            "created": report.get("created"),
            "tool_version": (report.get("tool") or {}).get("version"),
            "config_hash": (report.get("config") or {}).get("hash"),
        },
        "findings": findings,
    }


def baseline_json(report: dict[str, Any]) -> str:
    return json.dumps(make_baseline(report), indent=2, ensure_ascii=False) + "\n"


def load_baseline(path: str | Path) -> Baseline:
    """Read a baseline file; anything else is an InputError that says how to make one."""
    import re

    data = read_json(path, "a dataaudit baseline")
    make = "write one with `dataaudit baseline REPORT.json > accepted.json`"
    if isinstance(data, dict) and "schema_version" in data and "results" in data:
        raise InputError(
            f"{path}: this is an audit report, not a baseline of accepted findings; {make}."
        )
    if not isinstance(data, dict) or data.get("dataaudit_baseline") != BASELINE_VERSION:
        raise InputError(
            f"{path}: not a dataaudit baseline (version {BASELINE_VERSION} expected in "
            f"'dataaudit_baseline'); {make}."
        )
    items = data.get("findings")
    if not isinstance(items, list):
        raise InputError(f"{path}: 'findings' must be a list of accepted findings; {make}.")
    findings: dict[str, dict[str, Any]] = {}
    for i, item in enumerate(items):
        fp = item.get("fingerprint") if isinstance(item, dict) else None
        if not isinstance(fp, str) or not re.match(_FINGERPRINT, fp):
            raise InputError(
                f"{path}: findings[{i}] has no valid fingerprint (like DUP002-0123456789abcdef); "
                f"{make}."
            )
        findings[fp] = item
    return Baseline(str(path), findings)

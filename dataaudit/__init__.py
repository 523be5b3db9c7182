"""dataaudit: audit LLM and NLP training data before you spend GPU hours on it.

from dataaudit import audit
report = audit("data/train.jsonl")
report.raise_for_status()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "AuditConfig",
    "Category",
    "Coverage",
    "DataAuditError",
    "Direction",
    "Finding",
    "Flag",
    "Metric",
    "Report",
    "Rule",
    "RowCheckRule",
    "RuleResult",
    "Severity",
    "Status",
    "__version__",
    "audit",
    "diff",
    "signals",
]

if TYPE_CHECKING:
    from .api import audit
    from .config import AuditConfig
    from .errors import DataAuditError
    from .report import Report
    from .report.diff import diff
    from .rowcheck import Category, RowCheckRule
    from .rule import (
        Coverage,
        Direction,
        Finding,
        Flag,
        Metric,
        Rule,
        RuleResult,
        Severity,
        Status,
    )
    from .signals import signals

_LAZY = {
    "audit": ("api", "audit"),
    "AuditConfig": ("config", "AuditConfig"),
    "DataAuditError": ("errors", "DataAuditError"),
    "Report": ("report", "Report"),
    "diff": ("report.diff", "diff"),
    "signals": ("signals", "signals"),
    "Rule": ("rule", "Rule"),
    "RuleResult": ("rule", "RuleResult"),
    "Coverage": ("rule", "Coverage"),
    "Finding": ("rule", "Finding"),
    "Severity": ("rule", "Severity"),
    "Status": ("rule", "Status"),
    "Direction": ("rule", "Direction"),
    "Flag": ("rule", "Flag"),
    "Metric": ("rule", "Metric"),
    "RowCheckRule": ("rowcheck", "RowCheckRule"),
    "Category": ("rowcheck", "Category"),
}


def __getattr__(name: str) -> Any:
    # lazy: `import dataaudit` stays fast; pyarrow and friends load on first use
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dataaudit' has no attribute {name!r}")

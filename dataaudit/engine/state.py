"""A rule's run through one scan, and the scan's state: what every engine folds and merges."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from ..context import AuditContext
from ..identity import SplitIdentity
from ..rule import Rule, RuleOutcome, RuleResult, Severity

__all__ = ["RULE_FAILURES", "RuleRun", "ScanState", "error_message", "start", "start_run"]


@dataclass
class RuleRun:
    """A rule, its state and how its run went."""

    rule: Rule
    severity: Severity
    state: Any = None
    error: str | None = None
    skipped: str | None = None
    seconds: float = 0.0
    result: RuleResult | None = None

    @property
    def active(self) -> bool:
        return self.error is None and self.skipped is None

    def outcome(self) -> RuleOutcome:
        """What the report takes of this run (the state stays here)."""
        return RuleOutcome(
            self.rule, self.severity, self.result, self.error, self.skipped, self.seconds
        )


@dataclass
class ScanState:
    runs: list[RuleRun]
    identity: dict[str, SplitIdentity] = field(default_factory=dict)
    #: why the scan stopped before the end of the input (a worker died), or None
    stopped: str | None = None


#: what a rule's own code may raise without ending the audit: any exception, and sys.exit()
#: (a plugin must not end the audit or choose its exit code); Ctrl-C still stops everything
RULE_FAILURES = (Exception, SystemExit)


def error_message(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    if isinstance(exc, SystemExit):
        return f"the rule called sys.exit({exc.code!r}){where}"
    return f"{type(exc).__name__}: {exc}{where}"


def start_run(run: RuleRun, ctx: AuditContext) -> None:
    t0 = time.perf_counter()
    try:
        run.skipped = run.rule.skip_reason(ctx)
        if run.skipped is None:
            run.state = run.rule.start(ctx)
    except RULE_FAILURES as exc:
        run.skipped, run.error = None, error_message(exc)
    run.seconds += time.perf_counter() - t0


def start(rules: list[tuple[Rule, Severity]], ctx: AuditContext) -> ScanState:
    runs = []
    for rule, severity in rules:
        run = RuleRun(rule, severity)
        start_run(run, ctx)
        runs.append(run)
    return ScanState(runs, {name: SplitIdentity() for name in ctx.splits})

"""A rule's run through one scan, and the scan's state: what every engine folds and merges."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from ..context import AuditContext
from ..identity import SplitIdentity
from ..rule import Rule, RuleOutcome, RuleResult, Severity

__all__ = [
    "RULE_FAILURES",
    "RuleRun",
    "ScanState",
    "Timings",
    "error_message",
    "start",
    "start_run",
]


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
    phases: dict[str, float] = field(default_factory=dict)  # start, update, merge, finish

    @property
    def active(self) -> bool:
        return self.error is None and self.skipped is None

    def charge(self, phase: str, seconds: float) -> None:
        self.seconds += seconds
        self.phases[phase] = self.phases.get(phase, 0.0) + seconds

    def outcome(self) -> RuleOutcome:
        """What the report takes of this run (the state stays here)."""
        return RuleOutcome(
            self.rule,
            self.severity,
            self.result,
            self.error,
            self.skipped,
            self.seconds,
            {k: round(v, 6) for k, v in self.phases.items()},
        )


@dataclass
class ScanState:
    runs: list[RuleRun]
    identity: dict[str, SplitIdentity] = field(default_factory=dict)
    #: why the scan stopped before the end of the input (a worker died), or None
    stopped: str | None = None
    #: seconds outside the rules: reading batches, hashing splits' content, each feature
    timings: Timings = field(default_factory=lambda: Timings())
    #: where keyed rules' rows go (engine.keyed): on disk locally, per fold task on Ray
    spill: Any = None


@dataclass
class Timings:
    """Where a scan's time went, besides the rules' own phases (mergeable: workers add up)."""

    read: float = 0.0
    identity: float = 0.0
    features: dict[str, float] = field(default_factory=dict)

    def add_features(self, seconds: dict[str, float]) -> None:
        for name, value in seconds.items():
            self.features[name] = self.features.get(name, 0.0) + value

    def absorb(self, other: Timings) -> None:
        self.read += other.read
        self.identity += other.identity
        self.add_features(other.features)

    def to_dict(self) -> dict[str, Any]:
        return {
            "read": round(self.read, 6),
            "identity": round(self.identity, 6),
            "features": {k: round(v, 6) for k, v in sorted(self.features.items())},
        }


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
    run.charge("start", time.perf_counter() - t0)


def start(rules: list[tuple[Rule, Severity]], ctx: AuditContext) -> ScanState:
    runs = []
    for rule, severity in rules:
        run = RuleRun(rule, severity)
        start_run(run, ctx)
        runs.append(run)
    state = ScanState(runs, {name: SplitIdentity() for name in ctx.splits})
    if any(run.active and getattr(run.rule, "keyed", False) is True for run in runs):
        from .keyed import DiskSpill

        state.spill = DiskSpill()
    return state

"""The rule contract: what every audit rule is, takes and returns.

A rule is a small map-reduce over record batches: ``start`` makes an empty state, ``update``
folds in one batch, ``merge`` combines two states (associative, so shards combine exactly) and
``finish`` turns the state into a :class:`RuleResult`. The constructor only stores options, as in
scikit-learn, so a rule can be rebuilt from its resolved config.
"""

from __future__ import annotations

import enum
import inspect
import math
import numbers
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import xxhash

if TYPE_CHECKING:
    from .context import AuditContext
    from .features import Batch

__all__ = [
    "ACTIONS",
    "ROLE_NAMES",
    "TEXT_ROLES",
    "Coverage",
    "Direction",
    "Finding",
    "Flag",
    "Metric",
    "Rule",
    "RuleOutcome",
    "RuleResult",
    "Severity",
    "Status",
]

#: the column roles a rule can require (``Rule.requires``) and a user can name (``text=...``);
#: the input layer detects them, the CLI has a flag for each
ROLE_NAMES = ("text", "prompt", "input", "response", "messages", "label", "source", "id")
#: the roles whose column holds plain text (``messages`` holds a chat)
TEXT_ROLES = ("text", "prompt", "input", "response")
#: prefix of the companion columns that mark values a reader kept as JSON text because their type
#: differed from the rest of their column (``__dataaudit_type__text``: "int"); part of the batch
#: contract between readers and features
TYPE_MARKER_PREFIX = "__dataaudit_type__"


@dataclass
class Roles:
    """Which column plays which part. ``None`` means the dataset has no such column."""

    text: str | None = None
    prompt: str | None = None
    input: str | None = None
    response: str | None = None
    messages: str | None = None
    label: str | None = None
    source: str | None = None
    id: str | None = None
    detected: dict[str, bool] = field(default_factory=dict)  # role -> was it auto-detected

    def has(self, role: str) -> bool:
        if role == "text":  # a text view can be rendered from chat or prompt/response
            return bool(self.text or self.messages or self.prompt or self.response)
        if role == "input":  # what a label is predicted from
            return bool(self.text or self.messages or self.prompt)
        return getattr(self, role, None) is not None

    def columns(self) -> dict[str, str]:
        return {r: getattr(self, r) for r in ROLE_NAMES if getattr(self, r) is not None}

    def to_dict(self) -> dict[str, Any]:
        return {
            r: {"column": getattr(self, r), "detected": self.detected.get(r, False)}
            for r in ROLE_NAMES
            if getattr(self, r) is not None
        }


class Severity(str, enum.Enum):
    """How bad a finding is; the gate compares it with ``fail_on``."""

    INFO = "info"
    WARN = "warn"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _SEVERITY_RANK[self]

    @classmethod
    def fail_on_choices(cls) -> list[str]:
        """What ``fail_on`` accepts: warn or error (info would fail the gate on every note)."""
        return [s.value for s in cls if s.rank >= _SEVERITY_RANK[cls.WARN]]

    @classmethod
    def parse(cls, value: str | Severity, *, option: str = "severity") -> Severity:
        from .errors import ConfigError

        if isinstance(value, Severity):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            valid = ", ".join(s.value for s in cls)
            raise ConfigError(
                f"{option}={value!r} is not a severity; use one of: {valid}."
            ) from None


_SEVERITY_RANK = {Severity.INFO: 0, Severity.WARN: 1, Severity.ERROR: 2}


class Status(str, enum.Enum):
    """Outcome of one rule in one audit, in the order the report counts them."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"
    SKIPPED = "skipped"

    @property
    def rank(self) -> int | None:
        """How bad the verdict is (pass < warn < fail < error); None for skipped, which is no
        verdict at all (a diff calls a move to or from it a change of coverage)."""
        return None if self is Status.SKIPPED else _STATUS_RANK[self]

    @classmethod
    def worst_first(cls) -> tuple[Status, ...]:
        """The order renderers list rules and counts in: error, fail, warn, pass, skipped."""
        return _WORST_FIRST


_WORST_FIRST = (Status.ERROR, Status.FAIL, Status.WARN, Status.PASS, Status.SKIPPED)
_STATUS_RANK = {s: rank for rank, s in enumerate(reversed(_WORST_FIRST[:-1]))}


class Direction(str, enum.Enum):
    """Which way a metric improves, so a diff can tell a regression from an improvement."""

    LOWER = "lower"
    HIGHER = "higher"
    NONE = "none"


@dataclass
class Metric:
    name: str
    value: float | int | None
    direction: Direction = Direction.NONE
    split: str | None = None
    unit: str | None = None
    #: how far the value moves by sampling noise alone (a diff calls smaller moves unchanged)
    noise: float | None = None

    def to_dict(self) -> dict[str, Any]:
        value = self.value
        if isinstance(value, float) and value != value:  # NaN is not JSON
            value = None
        out = {
            "name": self.name,
            "split": self.split,
            "value": value,
            "direction": Direction(self.direction).value,
            "unit": self.unit,
        }
        if self.noise is not None and math.isfinite(self.noise):
            out["noise"] = self.noise
        return out


@dataclass
class Finding:
    """One problem a rule found; ``key`` identifies its evidence across dataset versions."""

    message: str
    key: str
    severity: Severity | None = None  # None: the rule's configured severity
    count: int = 1
    split: str | None = None
    examples: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    #: stands for the ``count`` findings a capped list left out ("12 more rows overlap train"):
    #: a diff cannot call a finding new while the old report's list was cut short of it
    rollup: bool = False

    def fingerprint(self, code: str) -> str:
        return f"{code}-{xxhash.xxh3_64_hexdigest(f'{code}|{self.key}'.encode())}"


ACTIONS = ("drop", "keep", "review")


@dataclass(frozen=True)
class Flag:
    """A row that a rule flags, and what the default remedy does with it.

    ``group`` is the cluster (duplicates, leaks) or conflict id shared by related rows; ``action``
    is ``drop`` (``report.apply`` / ``dataaudit clean`` remove the row), ``keep`` (the row the
    rule keeps, e.g. a duplicate cluster's representative or the eval side of a leak) or
    ``review`` (a person should look; never removed by default; also what None means);
    ``severity`` None is the rule's configured severity; ``score`` a similarity, confidence or
    length; ``id`` the row's id column value. The first four fields keep their positions, so
    plugins that build ``Flag(split, row, group, detail)`` still work.
    """

    split: str
    row: int
    group: str | None = None
    detail: str | None = None
    action: str | None = None
    severity: Severity | None = None
    score: float | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        if self.action is not None and self.action not in ACTIONS:
            raise ValueError(
                f"Flag action={self.action!r}: use one of {', '.join(ACTIONS)} (or None: review)"
            )
        if self.severity is not None and not isinstance(self.severity, Severity):
            object.__setattr__(self, "severity", Severity.parse(self.severity))
        score = self.score
        if score is not None and type(score) is not float:
            if isinstance(score, bool) or not isinstance(score, numbers.Real):
                raise ValueError(f"Flag score={score!r}: expected a number or None")
            object.__setattr__(self, "score", float(score))
        if self.score is not None and not math.isfinite(self.score):
            object.__setattr__(self, "score", None)  # JSON has no NaN/inf: no score
        if self.id is not None and not isinstance(self.id, str):
            object.__setattr__(self, "id", str(self.id))


@dataclass(frozen=True)
class Coverage:
    """How much of its scope a rule examined, when that can be less than all of it.

    "Passed means read everything and found nothing": a rule that reads or scores only part of
    the rows it is about (a cap, a sample) says so here, and the verdict says so too. ``examined``
    of ``in_scope`` (e.g. the labeled rows of every split; ``unit`` names what is counted) and,
    when they differ, ``reason``: why, and the option that lifts it. A rule that reads every row
    leaves ``RuleResult.coverage`` None.
    """

    examined: int
    in_scope: int
    reason: str | None = None
    unit: str = "rows"

    def __post_init__(self) -> None:
        for name in ("examined", "in_scope"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"Coverage {name}={value!r}: expected a count (int >= 0)")
            object.__setattr__(self, name, int(value))
        if self.examined > self.in_scope:
            raise ValueError(f"Coverage examined={self.examined} exceeds in_scope={self.in_scope}")
        if not self.complete and not self.reason:
            raise ValueError("a partial Coverage needs its reason (what capped it, how to lift it)")

    @property
    def complete(self) -> bool:
        return self.examined >= self.in_scope

    def to_dict(self) -> dict[str, Any]:
        return {
            "examined": self.examined,
            "in_scope": self.in_scope,
            "complete": self.complete,
            "unit": self.unit,
            "reason": None if self.complete else self.reason,
        }


@dataclass
class RuleResult:
    metrics: list[Metric] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    thresholds: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None  # reason, when the rule could not give a verdict
    #: what share of its scope the rule examined; None: every row in scope (the default)
    coverage: Coverage | None = None

    def metric(
        self,
        name: str,
        value: float | int | None,
        direction: Direction | str = Direction.NONE,
        *,
        split: str | None = None,
        unit: str | None = None,
        noise: float | None = None,
    ) -> None:
        self.metrics.append(Metric(name, value, Direction(direction), split, unit, noise))


_CODE_RE = re.compile(r"^[A-Z]{2,5}[0-9]{3}$")


class Rule:
    """Base class of every audit rule.

    Subclasses set ``code``, ``name``, ``groups``, ``severity`` and ``requires`` and write the
    docstring with the sections What it does / Why it matters / Example / Options, which
    ``dataaudit explain CODE`` prints.
    """

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    groups: ClassVar[tuple[str, ...]] = ("default",)
    severity: ClassVar[Severity] = Severity.WARN
    #: column roles the rule needs (of ROLE_NAMES); "eval_split" asks for a train split and at
    #: least one other split.
    requires: ClassVar[tuple[str, ...]] = ("text",)
    #: stable rules run in the default selection; preview rules only when selected by code.
    stable: ClassVar[bool] = True
    #: codes of rules whose results this rule reads in ``finish`` (``ctx.results[code]``: their
    #: findings and row flags); the engine finishes those first. Ordering only: a rule named
    #: here that was not selected (or failed) is simply absent from ``ctx.results``.
    after: ClassVar[tuple[str, ...]] = ()

    # -- the contract -------------------------------------------------------------------------
    def start(self, ctx: AuditContext) -> Any:
        raise NotImplementedError

    def update(self, state: Any, batch: Batch) -> Any:
        raise NotImplementedError

    def merge(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def finish(self, state: Any, ctx: AuditContext) -> RuleResult:
        raise NotImplementedError

    def skip_reason(self, ctx: AuditContext) -> str | None:
        """Why this rule cannot run on this corpus (missing roles or splits), or None."""
        missing = [r for r in self.requires if r != "eval_split" and not ctx.roles.has(r)]
        if missing:
            return (
                f"needs the {', '.join(missing)} column role(s), which this dataset does not have "
                f"(set them with {', '.join(f'{m}=COLUMN' for m in missing)})"
            )
        if "eval_split" in self.requires and not ctx.eval_splits():
            return "needs a train split and at least one validation/test split"
        return None

    # -- scikit-learn style parameters ----------------------------------------------------------
    @classmethod
    def option_specs(cls) -> dict[str, inspect.Parameter]:
        sig = inspect.signature(cls.__init__)
        return {
            n: p
            for n, p in sig.parameters.items()
            if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }

    def get_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.option_specs()}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    @classmethod
    def validate_class(cls) -> None:
        from .errors import PluginError

        if not _CODE_RE.match(cls.code or ""):
            raise PluginError(
                f"rule {cls.__module__}.{cls.__qualname__} has code {cls.code!r}; a code is 2-5 "
                "capital letters and 3 digits, e.g. DUP001"
            )
        if not cls.name:
            raise PluginError(f"rule {cls.code} has no name")


@dataclass(frozen=True)
class RuleOutcome:
    """How one rule's run ended, as any engine hands it to the report: its result, or why it
    has none (``error``: it raised; ``skipped``: it could not run), and the seconds it took."""

    rule: Rule
    severity: Severity  # the configured severity of the rule's findings and flags
    result: RuleResult | None = None
    error: str | None = None
    skipped: str | None = None
    seconds: float = 0.0
    #: seconds per phase of the contract (start, update, merge, finish); features the rule
    #: asked for first are counted as features, not in its update
    phases: dict[str, float] = field(default_factory=dict)

    def status(self, fail_on: Severity) -> Status:
        """The gate's verdict: error if the rule raised, skipped without a result, else fail,
        warn or pass by its worst finding (a finding at ``fail_on`` fails)."""
        if self.error is not None:
            return Status.ERROR
        if self.skipped is not None or self.result is None or self.result.skipped is not None:
            return Status.SKIPPED
        worst = max(
            (f.severity or self.severity for f in self.result.findings),
            key=lambda s: s.rank,
            default=None,
        )
        if worst is None:
            return Status.PASS
        if worst.rank >= fail_on.rank:
            return Status.FAIL
        if worst.rank >= Severity.WARN.rank:
            return Status.WARN
        return Status.PASS

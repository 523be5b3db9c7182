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
from collections.abc import Iterable, Iterator
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
    "Flags",
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


#: a Flag's fields, in the order of its constructor
FLAG_FIELDS = ("split", "row", "group", "detail", "action", "severity", "score", "id")


class FlagColumns:
    """One block of row flags stored column by column (see :class:`Flags`).

    ``row`` is an int64 array; ``score`` None or a float64 array (NaN: no score); every other
    field is one value for all rows of the block (a str, a Severity or None) or a list with one
    value per row. Built by :meth:`Flags.add`, which checks and converts what it is given.
    """

    __slots__ = ("action", "detail", "group", "id", "row", "score", "severity", "split")

    def __init__(self, split, row, group, detail, action, severity, score, id) -> None:
        self.split, self.row, self.group, self.detail = split, row, group, detail
        self.action, self.severity, self.score, self.id = action, severity, score, id

    def __len__(self) -> int:
        return len(self.row)

    def column(self, name: str) -> list[Any]:
        """One field as a list of one value per row (constants repeated)."""
        value = getattr(self, name)
        if name == "row":
            return value.tolist()
        if name == "score":
            if value is None:
                return [None] * len(self.row)
            return [None if v != v else v for v in value.tolist()]
        if isinstance(value, list):
            return value
        if hasattr(value, "to_pylist"):  # Arrow strings
            return value.to_pylist()
        if hasattr(value, "dtype"):  # integers given for a text field (cluster ids)
            return [str(v) for v in value.tolist()]
        return [value] * len(self.row)

    def objects(self) -> Iterator[Flag]:
        for values in zip(*(self.column(n) for n in FLAG_FIELDS)):
            yield Flag(*values)

    def compact(self) -> FlagColumns:
        """This block with a field that is one value for every row stored once, and lists of
        text as Arrow arrays (dictionary-encoded when few values repeat): what a flag costs
        while the report waits for the other rules, ~10-20 bytes instead of a Python object."""
        import pyarrow as pa

        from ._arrow import strings  # (pa.array of a list imports pandas)

        out = FlagColumns(*(getattr(self, n) for n in FLAG_FIELDS))
        for name in ("split", "group", "detail", "action", "severity", "id"):
            value = getattr(out, name)
            if not isinstance(value, list) or not value:
                continue
            first = value[0]
            if value.count(first) == len(value):  # one value for all rows
                setattr(out, name, first)
            elif name != "severity":
                array = strings(value, pa.string())
                if name in ("split", "detail", "action"):
                    array = array.dictionary_encode()
                setattr(out, name, array)
        return out

    @classmethod
    def of_objects(cls, flags: list[Flag]) -> FlagColumns:
        """Flag objects (already checked, see engine.reportable) as one block."""
        import numpy as np

        return cls(
            [f.split for f in flags],
            np.fromiter((int(f.row) for f in flags), np.int64, len(flags)),
            [f.group for f in flags],
            [f.detail for f in flags],
            [f.action for f in flags],
            [f.severity for f in flags],
            np.array([np.nan if f.score is None else f.score for f in flags], np.float64),
            [f.id for f in flags],
        )


def _per_row(name: str, value: Any, n: int, kinds: tuple[type, ...], cast: bool = False) -> Any:
    """A flag field given to Flags.add: one value for every row, or n values: Arrow strings (a
    numpy str array becomes one; ``cast``: integers too, as their decimal text) or a list."""
    if value is None or isinstance(value, kinds):
        return value
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        expected = " or ".join(k.__name__ for k in kinds)
        raise ValueError(f"Flags.add {name}={value!r:.80}: expected {expected}, None or a sequence")
    if len(value) != n:
        raise ValueError(f"Flags.add {name}: {len(value)} values for {n} rows")
    import numpy as np
    import pyarrow as pa

    if isinstance(value, np.ndarray):
        if cast and value.dtype.kind in "iu":
            return value.astype(np.int64, copy=False)  # written as text in the report
        if value.dtype.kind == "U":  # (pa.array of a numpy str array is slow, imports pandas)
            from ._arrow import strings

            array = strings(value.tolist(), pa.string())
            # a text field (np.where of labels) has few distinct values: a dictionary
            return array if cast else array.dictionary_encode()
        value = value.tolist()
    if isinstance(value, pa.ChunkedArray):
        from ._arrow import one_chunk

        value = one_chunk(value)
    if isinstance(value, pa.Array):
        if cast and pa.types.is_integer(value.type):
            value = value.cast(pa.string())
        kind = value.type.value_type if pa.types.is_dictionary(value.type) else value.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            return value
        value = value.to_pylist()
    elif not isinstance(value, list):
        value = list(value)
    if not {type(v) for v in value} <= {str, type(None)}:
        if cast:
            return [v if v is None or isinstance(v, str) else str(v) for v in value]
        if kinds == (str,):
            bad = next(v for v in value if not isinstance(v, (str, type(None))))
            raise ValueError(f"Flags.add {name}: {bad!r:.80} is not a str or None")
    return value


def _distinct(value: Any) -> list[Any]:
    """The distinct values of a field (a constant, Arrow array or list)."""
    if hasattr(value, "unique") and hasattr(value, "to_pylist"):  # an Arrow array
        from ._compute import call

        return call("unique", value).to_pylist()
    return list(set(value)) if isinstance(value, list) else [value]


class Flags:
    """The rows a rule flags, stored column by column (``RuleResult.flags``).

    A rule that flags many rows adds them in bulk, one call per block of rows that share what
    is constant::

        result.flags.add("train", rows, group=first_rows, detail="duplicate", action="drop")

    ``rows`` is a sequence of row positions; every other field is one value for all rows or a
    sequence with one value per row (as for :class:`Flag`). Flag objects still work:
    ``append(Flag(...))``, ``extend([...])``, ``+=`` and assigning a list of Flag to
    ``result.flags`` keep their meaning, and reading (iteration, ``len``, indexing) yields
    Flag objects in the order the flags were added. A million flags cost ~10 bytes each here,
    not the ~200 of a Flag object, and reach the report without a Python loop.
    """

    __slots__ = ("_parts",)

    def __init__(self, flags: Iterable[Flag] = ()) -> None:
        #: blocks in the order added: FlagColumns, or lists of Flag objects as given
        self._parts: list[FlagColumns | list[Any]] = []
        self.extend(flags)

    @classmethod
    def of(cls, flags: Flags | Iterable[Flag]) -> Flags:
        """``flags`` as Flags (a list a rule assigned to ``result.flags`` is converted)."""
        return flags if isinstance(flags, Flags) else cls(flags)

    def add(
        self,
        split: str | Iterable[str],
        rows: Iterable[int],
        *,
        group: str | Iterable[str | None] | None = None,
        detail: str | Iterable[str | None] | None = None,
        action: str | Iterable[str | None] | None = None,
        severity: Severity | str | Iterable[Severity | str | None] | None = None,
        score: float | Iterable[float | None] | None = None,
        id: str | Iterable[str | None] | None = None,
    ) -> None:
        """Flag ``rows`` of ``split`` (see the class docstring); raises ValueError naming the
        field a value does not fit."""
        import numpy as np

        row = np.asarray(rows)
        if row.ndim != 1 or (row.size and row.dtype.kind not in "iu"):
            raise ValueError(f"Flags.add rows: expected a sequence of ints, got {row.dtype}")
        n = len(row)
        if not n:
            return
        row = row.astype(np.int64, copy=False)
        if split is None:
            raise ValueError("Flags.add split: expected the split's name")
        split = _per_row("split", split, n, (str,))
        if not isinstance(split, str) and None in _distinct(split):
            raise ValueError("Flags.add split: a flag needs its split's name, not None")
        group = _per_row("group", group, n, (str,), cast=True)  # cluster ids: rows are fine
        detail = _per_row("detail", detail, n, (str,))
        action = _per_row("action", action, n, (str,))
        for value in _distinct(action):
            if value is not None and value not in ACTIONS:
                raise ValueError(
                    f"Flags.add action={value!r}: use one of {', '.join(ACTIONS)} (or None: review)"
                )
        severity = _per_row("severity", severity, n, (Severity, str))
        if not isinstance(severity, (str, type(None))):
            if not isinstance(severity, list):
                severity = severity.to_pylist()
            parsed = {v: None if v is None else Severity.parse(v) for v in set(severity)}
            severity = [parsed[v] for v in severity]
        elif severity is not None:
            severity = Severity.parse(severity)
        if score is not None:
            scores = np.asarray(score)
            if scores.dtype.kind == "O":
                scores = np.array([np.nan if v is None else v for v in scores.tolist()])
            if scores.dtype.kind not in "iuf":
                raise ValueError(f"Flags.add score: expected numbers or None, got {scores.dtype}")
            scores = np.broadcast_to(scores.astype(np.float64), (n,)).copy()
            scores[~np.isfinite(scores)] = np.nan  # JSON has no NaN/inf: no score
            score = scores
        id = _per_row("id", id, n, (str,), cast=True)
        self._parts.append(FlagColumns(split, row, group, detail, action, severity, score, id))

    # -- list of Flag objects, for plugins and readers -----------------------------------------
    def append(self, flag: Flag) -> None:
        if self._parts and isinstance(self._parts[-1], list):
            self._parts[-1].append(flag)
        else:
            self._parts.append([flag])

    def extend(self, flags: Iterable[Flag]) -> None:
        if isinstance(flags, Flags):
            self._parts.extend(p if isinstance(p, FlagColumns) else list(p) for p in flags._parts)
            return
        for flag in flags:
            self.append(flag)

    def __iadd__(self, flags: Iterable[Flag]) -> Flags:
        self.extend(flags)
        return self

    def __len__(self) -> int:
        return sum(len(p) for p in self._parts)

    def __bool__(self) -> bool:
        return any(len(p) for p in self._parts)

    def __iter__(self) -> Iterator[Flag]:
        for part in self._parts:
            yield from part.objects() if isinstance(part, FlagColumns) else part

    def __getitem__(self, index: int | slice) -> Any:
        return list(self)[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Flags, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"Flags({len(self)} flags)"

    def blocks(self) -> list[FlagColumns]:
        """Every flag, as column blocks in the order added (Flag objects converted)."""
        return [
            p if isinstance(p, FlagColumns) else FlagColumns.of_objects(p)
            for p in self._parts
            if len(p)
        ]

    def compact(self) -> Flags:
        """Every block as compact columns (Flag objects converted; see FlagColumns.compact),
        in place; the engine does it to each rule's flags once they are checked."""
        self._parts = [block.compact() for block in self.blocks()]
        return self

    def objects(self) -> list[tuple[int, list[Any]]]:
        """The blocks of Flag objects as given, each with the index of its first flag (what
        ``engine.reportable`` checks: columns are checked when added)."""
        out, at = [], 0
        for part in self._parts:
            if isinstance(part, list):
                out.append((at, part))
            at += len(part)
        return out

    def flagged_rows(self) -> int:
        """How many distinct (split, row) pairs are flagged."""
        import numpy as np

        by_split: dict[str, list[Any]] = {}
        for block in self.blocks():
            if isinstance(block.split, str):
                by_split.setdefault(block.split, []).append(block.row)
                continue
            splits = np.array(block.column("split"), dtype=object)
            for name in dict.fromkeys(splits.tolist()):
                by_split.setdefault(name, []).append(block.row[splits == name])
        count = 0
        for rows in by_split.values():
            ordered = np.sort(np.concatenate(rows))
            count += int(ordered.size > 0) + int(np.count_nonzero(ordered[1:] != ordered[:-1]))
        return count


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
    #: row flags (a list of Flag also works: it is read as Flags)
    flags: Flags = field(default_factory=Flags)
    thresholds: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None  # reason, when the rule could not give a verdict
    #: what share of its scope the rule examined; None: every row in scope (the default)
    coverage: Coverage | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.flags, Flags):
            self.flags = Flags(self.flags)

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

    Optional prepass (opt in by defining ``prepass_update``): ``prepass_splits(ctx)``,
    ``prepass_start(ctx)``, ``prepass_update(pre, batch)``, ``prepass_merge(a, b)`` and
    ``prepass_finish(pre, ctx)`` run over a few splits before the scan (the small eval side),
    and the scan sees the value as ``ctx.resources.prepared(code)``: see
    :mod:`dataaudit.engine.prepass`.
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

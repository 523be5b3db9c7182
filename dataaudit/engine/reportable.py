"""A rule's result must fit the report: JSON, finite, in the report's types.

One rule's unwritable value (an ``inf`` metric, a set in its details, a message that is not a
string) must not lose the whole report: that rule becomes an error naming the field, and the other
rules' results are written. Harmless numpy values are converted on the way.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..rule import Coverage, Direction, Finding, Flag, Flags, Metric, RuleResult, Severity
from .state import RuleRun

__all__ = ["check_result"]


_MAX_DEPTH = 100


class _NotReportable(Exception):
    """A value a rule returned that cannot be written to the JSON report; args[0] names it."""


def _plain(value: Any, path: str, depth: int = 0, seen: frozenset[int] = frozenset()) -> Any:
    """``value`` as plain JSON data: numpy scalars and arrays become Python numbers and lists,
    tuples lists, NaN null (as for metrics). Anything else that ``json.dumps(allow_nan=False)``
    would reject (±inf, sets, bytes, objects, cycles) raises _NotReportable naming its path."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if value != value:
            return None
        if value in (float("inf"), float("-inf")):
            raise _NotReportable(f"{path}: {value} is not a finite number")
        return float(value)
    if isinstance(value, np.generic):
        if isinstance(value, (np.bool_, np.integer, np.floating)):
            return _plain(value.item(), path, depth, seen)
        raise _NotReportable(f"{path}: numpy {value.dtype} is not JSON")
    if depth >= _MAX_DEPTH:
        raise _NotReportable(f"{path}: nested deeper than {_MAX_DEPTH} levels")
    if id(value) in seen:
        raise _NotReportable(f"{path}: contains itself (a circular reference)")
    inner = seen | {id(value)}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufUO":
            raise _NotReportable(f"{path}: numpy array of {value.dtype} is not JSON")
        return _plain(value.tolist(), path, depth, seen)
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{path}[{i}]", depth + 1, inner) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, np.generic):
                k = k.item()
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise _NotReportable(
                    f"{path}: key {k!r} is a {type(k).__name__}; JSON keys are strings"
                )
            out[k] = _plain(v, f"{path}[{k!r}]", depth + 1, inner)
        return out
    hint = " (use a sorted list)" if isinstance(value, (set, frozenset)) else ""
    raise _NotReportable(f"{path}: {type(value).__name__} is not JSON{hint}")


def _plain_fast(value: Any, path: str) -> Any:
    """Most results are plain already: one C-speed dump proves it; the walk finds the rest."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError, RecursionError):
        return _plain(value, path)


def _check_str(value: Any, path: str, *, optional: bool = True) -> None:
    if not (isinstance(value, str) or (optional and value is None)):
        kind = "a str or None" if optional else "a str"
        raise _NotReportable(f"{path}: {type(value).__name__} {value!r:.80}, expected {kind}")


def _check_count(value: Any, path: str) -> int:
    if isinstance(value, np.integer):
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _NotReportable(f"{path}: {value!r:.80} is not a count (a non-negative int)")
    return value


def _reportable(result: Any) -> None:
    """Check (and convert in place) everything the report takes from a RuleResult; raise
    _NotReportable naming the first field that cannot go into the JSON report."""
    if not isinstance(result, RuleResult):
        raise _NotReportable(f"finish() returned a {type(result).__name__}, not a RuleResult")
    _check_str(result.skipped, "skipped")
    if result.coverage is not None:
        if not isinstance(result.coverage, Coverage):
            kind = type(result.coverage).__name__
            raise _NotReportable(f"coverage: {kind} is not a Coverage")
        _check_str(result.coverage.reason, "coverage.reason")
        _check_str(result.coverage.unit, "coverage.unit", optional=False)
    for i, m in enumerate(result.metrics):
        where = f"metrics[{i}]"
        if not isinstance(m, Metric):
            raise _NotReportable(f"{where}: {type(m).__name__} is not a Metric")
        _check_str(m.name, f"{where}.name", optional=False)
        where = f"metrics[{i}] {m.name!r}" + (f" (split {m.split!r})" if m.split else "")
        _check_str(m.split, f"{where}.split")
        _check_str(m.unit, f"{where}.unit")
        try:
            m.direction = Direction(m.direction)
        except ValueError:
            raise _NotReportable(f"{where}.direction: {m.direction!r} is not a Direction") from None
        if not isinstance(m.value, (type(None), int, float, np.integer, np.floating, np.bool_)):
            raise _NotReportable(f"{where}.value: {type(m.value).__name__} is not a number")
        m.value = _plain(m.value, f"{where}.value")
        if isinstance(m.value, bool):  # the schema's metric value is a number
            m.value = int(m.value)
    for name in ("thresholds", "details"):
        value = getattr(result, name)
        if not isinstance(value, dict):
            raise _NotReportable(f"{name}: {type(value).__name__} is not a dict")
        setattr(result, name, _plain_fast(value, name))
    try:  # one C-speed dump for all findings' data and examples: most are plain already
        json.dumps([(f.data, f.examples) for f in result.findings], allow_nan=False)
        plain = True
    except (TypeError, ValueError, RecursionError, AttributeError):
        plain = False
    for i, f in enumerate(result.findings):
        where = f"findings[{i}]"
        if not isinstance(f, Finding):
            raise _NotReportable(f"{where}: {type(f).__name__} is not a Finding")
        _check_str(f.message, f"{where}.message", optional=False)
        _check_str(f.key, f"{where}.key", optional=False)
        _check_str(f.split, f"{where}.split")
        if f.severity is not None and not isinstance(f.severity, Severity):
            try:
                f.severity = Severity(f.severity)
            except ValueError:
                raise _NotReportable(
                    f"{where}.severity: {f.severity!r} is not a Severity"
                ) from None
        f.count = _check_count(f.count, f"{where}.count")
        if not isinstance(f.data, dict):
            raise _NotReportable(f"{where}.data: {type(f.data).__name__} is not a dict")
        if not isinstance(f.examples, (list, tuple)):
            raise _NotReportable(f"{where}.examples: {type(f.examples).__name__} is not a list")
        if not plain:
            f.data = _plain(f.data, f"{where}.data")
            f.examples = _plain(list(f.examples), f"{where}.examples")
        for j, ex in enumerate(f.examples):
            # the report's schema: an example says where its row is
            if not isinstance(ex, dict):
                raise _NotReportable(f"{where}.examples[{j}]: {type(ex).__name__} is not a dict")
            _check_str(ex.get("split"), f"{where}.examples[{j}]['split']", optional=False)
            ex["row"] = _check_count(ex.get("row"), f"{where}.examples[{j}]['row']")
            _check_str(ex.get("text"), f"{where}.examples[{j}]['text']")
    _check_flags(result.flags)
    # Flag objects cost ~200 bytes each until the report is built: columns, ~10-20
    result.flags = Flags.of(result.flags).compact()


def _flag_ok(kinds: tuple[type, ...]) -> bool:
    flag, split, row, group, detail = kinds
    return (
        flag is Flag
        and split is str
        and issubclass(row, (int, np.integer))
        and row is not bool
        and group in (str, type(None))
        and detail in (str, type(None))
    )


def _check_flags(flags: Flags | list[Flag]) -> None:
    """Flags can be millions: blocks added in bulk were checked by Flags.add; of the Flag
    objects, check the set of their field types, then find a bad one."""
    if not isinstance(flags, Flags):
        if not isinstance(flags, (list, tuple)):
            raise _NotReportable(f"flags: {type(flags).__name__} is not a list of Flag or Flags")
        flags = Flags(flags)
    for start, objects in flags.objects():
        _check_flag_objects(objects, start)


def _check_flag_objects(flags: list[Flag], start: int) -> None:
    try:
        kinds = {
            (type(f), type(f.split), type(f.row), type(f.group), type(f.detail)) for f in flags
        }
        if all(_flag_ok(k) for k in kinds):
            return
    except AttributeError:  # not a Flag at all
        pass
    for i, f in enumerate(flags, start):
        fields = (getattr(f, name, None) for name in ("split", "row", "group", "detail"))
        if not _flag_ok((type(f), *map(type, fields))):
            raise _NotReportable(
                f"flags[{i}]: {f!r:.120} is not a Flag(split: str, row: int, group: str | None, "
                "detail: str | None)"
            )


def check_result(run: RuleRun) -> None:
    """One rule's unwritable value must not lose the whole report: that rule becomes an error."""
    try:
        _reportable(run.result)
    except _NotReportable as exc:
        run.error = f"the rule's result cannot be written to the report: {exc.args[0]}"
        run.result = None

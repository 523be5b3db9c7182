"""check_rule: run every conformance check on a rule and say which ran, skipped or failed."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..rule import Rule
from ._case import Case, ConformanceSkip
from ._checks import CHECKS

__all__ = ["ConformanceReport", "ConformanceSkipWarning", "check_rule", "rule_checks"]


class ConformanceSkipWarning(UserWarning):
    """A conformance check that could not apply (the message names the check and why)."""


@dataclass
class ConformanceReport:
    """What :func:`check_rule` did: the checks that passed, those skipped (with the reason),
    the expected failures seen, and the findings of one pass over the data (None: no verdict)."""

    rule: str
    passed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    expected_failures: dict[str, str] = field(default_factory=dict)
    findings: int | None = None

    def __str__(self) -> str:
        lines = [f"{self.rule}: {len(self.passed)} checks passed: {', '.join(self.passed)}"]
        lines += [f"  skipped {name}: {reason}" for name, reason in self.skipped.items()]
        lines += [f"  failed as expected {n}: {msg}" for n, msg in self.expected_failures.items()]
        if self.findings is not None:
            lines.append(f"  one pass over the data: {self.findings} finding(s)")
        return "\n".join(lines)


def _case(cls: type[Rule], options: Mapping[str, Any] | None, resources: dict[str, Any]) -> Case:
    cls.validate_class()
    return Case(cls, options, **resources)


def rule_checks(
    cls: type[Rule], *, options: Mapping[str, Any] | None = None, **resources: Any
) -> Iterator[tuple[str, Callable[[], None]]]:
    """(name, run) of each check on one shared case, e.g. for ``pytest.mark.parametrize``;
    ``run()`` raises AssertionError or :class:`ConformanceSkip`."""
    case = _case(cls, options, resources)
    for name, fn in CHECKS.items():
        yield name, (lambda fn=fn: fn(case))


def check_rule(
    cls: type[Rule],
    *,
    options: Mapping[str, Any] | None = None,
    data: Any = None,
    kind: str | None = None,
    columns: Mapping[str, str] | None = None,
    tokenizer: Any = None,
    reference: Any = None,
    contamination_ref: Any = None,
    seed: int = 0,
    checks: Iterable[str] | None = None,
    expected_failures: Mapping[str, str] | None = None,
) -> ConformanceReport:
    """Run the conformance checks on ``cls(**options)``; raise AssertionError naming every
    broken contract, else return what ran and what was skipped (each skip also warns).

    ``data`` (anything ``audit()`` reads; default :func:`sample_data`), ``columns`` (roles),
    ``tokenizer``, ``reference`` and ``contamination_ref`` are what ``audit()`` would give the
    rule: pass what it needs, or its data checks are skipped with the reason.
    ``expected_failures`` maps check names to why they fail today; they must still fail.
    """
    case = _case(
        cls,
        options,
        dict(
            data=data,
            kind=kind,
            columns=columns,
            tokenizer=tokenizer,
            reference=reference,
            contamination_ref=contamination_ref,
            seed=seed,
        ),
    )
    names = list(CHECKS) if checks is None else list(checks)
    unknown = sorted(set(names) - set(CHECKS))
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}; the checks are {', '.join(CHECKS)}")
    expected = dict(expected_failures or {})
    report = ConformanceReport(cls.code)
    failures: list[str] = []
    first: BaseException | None = None
    for name in names:
        try:
            CHECKS[name](case)
        except ConformanceSkip as skip:
            report.skipped[name] = skip.reason
            warnings.warn(
                f"{cls.code}: conformance check {name} skipped: {skip.reason}",
                ConformanceSkipWarning,
                stacklevel=2,
            )
            continue
        except Exception as exc:  # a crash inside a check fails that check, with its name
            message = (
                str(exc) if isinstance(exc, AssertionError) else f"{type(exc).__name__}: {exc}"
            )
            if name in expected:
                report.expected_failures[name] = message
            else:
                failures.append(f"{name}: {message}")
                first = first or exc
            continue
        if name in expected:
            failures.append(f"{name}: expected to fail ({expected[name]}) but passed")
        else:
            report.passed.append(name)
    if failures:
        raise AssertionError(
            f"{cls.code} breaks the rule contract:\n" + "\n".join(failures)
        ) from first
    try:
        report.findings = len(case.verdict().findings)
    except ConformanceSkip:
        report.findings = None
    return report

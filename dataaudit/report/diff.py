"""Compare two audit reports of two versions of a dataset: what got better, what got worse.

``diff(old, new)`` matches

* rules by code → status transitions (pass → warn → fail → error is worse; to/from ``skipped`` is
  a change in coverage, not a verdict),
* metrics by ``(code, name, split)`` → delta, judged by the metric's ``direction`` (lower/higher is
  better) with a relative tolerance,
* findings by ``fingerprint`` (stable across versions) → new / resolved / persisting, with counts,
* the dataset per split → rows, columns, content hash; and the config hash: when both the data and
  the config changed, the comparison mixes two changes and says so (change one thing at a time).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._io import atomic_write_text
from ..errors import InputError
from ..rule import Severity, Status
from .escape import plain
from .load import check_report
from .model import Report

__all__ = ["DiffSchemaVersion", "FindingChange", "MetricDelta", "ReportDiff", "RuleChange", "diff"]

DiffSchemaVersion = "1.0"


@dataclass
class RuleChange:
    code: str
    name: str
    old: str | None  # status; None: the rule is not in that report
    new: str | None
    change: str  # regressed | improved | changed | unchanged | added | removed


@dataclass
class MetricDelta:
    code: str
    name: str
    split: str | None
    old: float | None
    new: float | None
    delta: float | None
    relative: float | None  # delta / |old|; None when old is 0 or missing
    direction: str  # lower | higher | none
    verdict: str  # regressed | improved | unchanged | changed | added | removed


@dataclass
class FindingChange:
    code: str
    fingerprint: str
    state: str  # new | resolved | persisting
    severity: str
    message: str
    split: str | None
    old_count: int
    new_count: int
    old_severity: str | None = None

    @property
    def count_delta(self) -> int:
        return self.new_count - self.old_count


@dataclass
class SplitChange:
    split: str
    state: str  # added | removed | changed | unchanged
    old_rows: int | None
    new_rows: int | None
    old_hash: str | None
    new_hash: str | None
    columns_added: list[str] = field(default_factory=list)
    columns_removed: list[str] = field(default_factory=list)


def _load(report: Any, which: str) -> dict[str, Any]:
    """The report's data, checked against the report schema so the comparison cannot trip on a
    missing key or a wrong type (InputError naming the file and what is wrong)."""
    if isinstance(report, Report):
        check_report(report.data, f"{which} report")
        return report.data
    if isinstance(report, dict):
        check_report(report, f"{which} report (dict)")
        return report
    if isinstance(report, (str, Path)):
        return Report.load(report).data
    raise InputError(
        f"{which}: diff() takes a Report, a report dict or the path of a report JSON, "
        f"not {type(report).__name__}."
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return value
    return None


def _judge(
    old: float | None, new: float | None, direction: str, rel_tol: float, abs_tol: float
) -> tuple[float | None, float | None, str]:
    if old is None or new is None:
        return None, None, "unchanged" if old == new else "changed"
    delta = new - old
    relative = delta / abs(old) if old else None
    if abs(delta) <= max(rel_tol * max(abs(old), abs(new)), abs_tol):
        return delta, relative, "unchanged"
    if direction == "lower":
        return delta, relative, "regressed" if delta > 0 else "improved"
    if direction == "higher":
        return delta, relative, "regressed" if delta < 0 else "improved"
    return delta, relative, "changed"


def _status_change(old: str | None, new: str | None) -> str:
    if old is None:
        return "added"
    if new is None:
        return "removed"
    if old == new:
        return "unchanged"
    old_rank, new_rank = _rank(Status, old), _rank(Status, new)
    if old_rank is None or new_rank is None:
        return "changed"  # to or from skipped: coverage changed, not the verdict
    return "regressed" if new_rank > old_rank else "improved"


def _rank(
    kind: type[Status] | type[Severity], value: Any, default: int | None = None
) -> int | None:
    """The rank of a status or severity as the report spells it; ``default`` for another value."""
    try:
        return kind(value).rank
    except ValueError:
        return default


class ReportDiff:
    """What changed between two reports. ``regressed`` is the gate for ``--fail-on-regression``."""

    def __init__(
        self,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        rel_tol: float = 0.01,
        abs_tol: float = 1e-12,
    ):
        self.old = old
        self.new = new
        self.rel_tol = rel_tol
        self.abs_tol = abs_tol
        self.rules: list[RuleChange] = []
        self.metrics: list[MetricDelta] = []
        self.findings: list[FindingChange] = []
        self.splits: list[SplitChange] = []
        self.warnings: list[str] = []
        self.config_changed = False
        self.roles_changed = False
        self._compare()

    # -- comparison ---------------------------------------------------------------------------
    def _compare(self) -> None:
        old, new = self.old, self.new
        self._compare_dataset()
        old_rules = {r["code"]: r for r in old.get("results", [])}
        new_rules = {r["code"]: r for r in new.get("results", [])}
        for code in sorted(set(old_rules) | set(new_rules)):
            a, b = old_rules.get(code), new_rules.get(code)
            name = (b or a or {}).get("name", "")
            sa, sb = (a or {}).get("status"), (b or {}).get("status")
            self.rules.append(RuleChange(code, name, sa, sb, _status_change(sa, sb)))
            self._compare_metrics(code, a, b)
            self._compare_findings(code, a, b)
        order = {"new": 0, "resolved": 1, "persisting": 2}
        self.findings.sort(key=lambda f: (order[f.state], f.code, f.split or "", f.fingerprint))

    def _compare_dataset(self) -> None:
        old_ds, new_ds = self.old.get("dataset", {}), self.new.get("dataset", {})
        old_splits, new_splits = old_ds.get("splits", {}), new_ds.get("splits", {})
        names = list(old_splits) + [n for n in new_splits if n not in old_splits]
        data_changed = False
        for name in names:
            a, b = old_splits.get(name), new_splits.get(name)
            cols_a = [c["name"] for c in (a or {}).get("columns", [])]
            cols_b = [c["name"] for c in (b or {}).get("columns", [])]
            if a is None:
                state = "added"
            elif b is None:
                state = "removed"
            elif a.get("content_hash") != b.get("content_hash") or a.get("rows") != b.get("rows"):
                state = "changed"
            else:
                state = "unchanged"
            data_changed |= state != "unchanged"
            self.splits.append(
                SplitChange(
                    name,
                    state,
                    (a or {}).get("rows"),
                    (b or {}).get("rows"),
                    (a or {}).get("content_hash"),
                    (b or {}).get("content_hash"),
                    [c for c in cols_b if c not in cols_a] if a and b else [],
                    [c for c in cols_a if c not in cols_b] if a and b else [],
                )
            )
        self.roles_changed = old_ds.get("roles") != new_ds.get("roles")
        old_cfg, new_cfg = self.old.get("config", {}), self.new.get("config", {})
        self.config_changed = old_cfg.get("hash") != new_cfg.get("hash")
        if self.config_changed:
            both = " and the data changed too" if data_changed else ""
            self.warnings.append(
                f"the config changed (hash {old_cfg.get('hash')} → {new_cfg.get('hash')}){both}: "
                "differences may come from the config, not the data. Change one thing at a time: "
                "re-audit the old data with the new config to separate the two."
            )
        if self.roles_changed:
            self.warnings.append(
                "the column roles differ between the reports: rules may have read different "
                "columns."
            )
        old_v = self.old.get("tool", {}).get("version")
        new_v = self.new.get("tool", {}).get("version")
        if old_v != new_v:
            self.warnings.append(
                f"the reports come from different dataaudit versions ({old_v} → {new_v}): "
                "rule behaviour may differ."
            )
        if (
            str(self.old.get("schema_version", "")).split(".")[0]
            != str(self.new.get("schema_version", "")).split(".")[0]
        ):
            self.warnings.append(
                f"report schema versions differ ({self.old.get('schema_version')} → "
                f"{self.new.get('schema_version')}): some fields may not be comparable."
            )

    def _compare_metrics(self, code: str, a: dict | None, b: dict | None) -> None:
        def keyed(r: dict | None) -> dict[tuple[str, str | None], dict[str, Any]]:
            out: dict[tuple[str, str | None], dict[str, Any]] = {}
            for m in (r or {}).get("metrics", []):
                out.setdefault((m["name"], m.get("split")), m)
            return out

        ma, mb = keyed(a), keyed(b)
        keys = list(ma) + [k for k in mb if k not in ma]
        keys.sort(key=lambda k: (k[0], k[1] or ""))
        for name, split in keys:
            x, y = ma.get((name, split)), mb.get((name, split))
            direction = (y or x or {}).get("direction") or "none"
            if x is None or y is None:
                verdict = "added" if x is None else "removed"
                self.metrics.append(
                    MetricDelta(
                        code,
                        name,
                        split,
                        _number((x or {}).get("value")),
                        _number((y or {}).get("value")),
                        None,
                        None,
                        direction,
                        verdict,
                    )
                )
                continue
            ov, nv = _number(x.get("value")), _number(y.get("value"))
            delta, rel, verdict = _judge(ov, nv, direction, self.rel_tol, self.abs_tol)
            self.metrics.append(
                MetricDelta(code, name, split, ov, nv, delta, rel, direction, verdict)
            )

    def _compare_findings(self, code: str, a: dict | None, b: dict | None) -> None:
        fa = {f["fingerprint"]: f for f in (a or {}).get("findings", [])}
        fb = {f["fingerprint"]: f for f in (b or {}).get("findings", [])}
        # a rule that errored or was skipped has no findings: that is not "resolved"
        a_ran = a is not None and a.get("status") not in (Status.ERROR, Status.SKIPPED)
        b_ran = b is not None and b.get("status") not in (Status.ERROR, Status.SKIPPED)
        for fp in list(fa) + [k for k in fb if k not in fa]:
            x, y = fa.get(fp), fb.get(fp)
            if x is not None and y is not None:
                state = "persisting"
            elif y is not None:
                if not a_ran and a is not None:
                    continue
                state = "new"
            else:
                if not b_ran and b is not None:
                    continue
                state = "resolved"
            f = y or x
            self.findings.append(
                FindingChange(
                    code,
                    fp,
                    state,
                    f.get("severity", "warn"),
                    f.get("message", ""),
                    f.get("split"),
                    int((x or {}).get("count", 0)),
                    int((y or {}).get("count", 0)),
                    (x or {}).get("severity") if x and y else None,
                )
            )

    # -- verdicts -------------------------------------------------------------------------------
    @property
    def regressions(self) -> list[str]:
        """Why the new version is worse, one line each (empty when it is not)."""
        warn = Severity.WARN.rank  # a finding whose severity is unknown counts as a warning
        out = [f"{r.code}: status {r.old} → {r.new}" for r in self.rules if r.change == "regressed"]
        out += [
            f"{r.code}: new rule is {r.new}"
            for r in self.rules
            if r.change == "added" and r.new in (Status.FAIL, Status.ERROR)
        ]
        out += [
            f"{m.code} {m.name}{f' [{m.split}]' if m.split else ''}: "
            f"{format_value(m.old)} → {format_value(m.new)} ({m.direction} is better)"
            for m in self.metrics
            if m.verdict == "regressed"
        ]
        out += [
            f"{f.code}: new {f.severity} finding {f.fingerprint}"
            for f in self.findings
            if f.state == "new" and _rank(Severity, f.severity, warn) >= warn
        ]
        out += [
            f"{f.code}: finding {f.fingerprint} severity {f.old_severity} → {f.severity}"
            for f in self.findings
            if f.state == "persisting"
            and f.old_severity is not None
            and _rank(Severity, f.severity, warn) > _rank(Severity, f.old_severity, warn)
        ]
        if self.old.get("passed") and not self.new.get("passed"):
            out.insert(0, "gate: passed → failed")
        return out

    @property
    def regressed(self) -> bool:
        """A rule got a worse status, a metric moved the wrong way beyond the tolerance, a new
        warn/error finding appeared, or the gate went from passed to failed."""
        return bool(self.regressions)

    @property
    def has_changes(self) -> bool:
        return (
            any(r.change != "unchanged" for r in self.rules)
            or any(m.verdict != "unchanged" for m in self.metrics)
            or any(f.state != "persisting" or f.count_delta for f in self.findings)
            or any(s.state != "unchanged" for s in self.splits)
            or self.config_changed
            or self.roles_changed
        )

    def counts(self) -> dict[str, dict[str, int]]:
        def tally(values: list[str]) -> dict[str, int]:
            out: dict[str, int] = {}
            for v in values:
                out[v] = out.get(v, 0) + 1
            return dict(sorted(out.items()))

        return {
            "rules": tally([r.change for r in self.rules]),
            "metrics": tally([m.verdict for m in self.metrics]),
            "findings": tally([f.state for f in self.findings]),
            "splits": tally([s.state for s in self.splits]),
        }

    # -- output -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        def side(d: dict[str, Any]) -> dict[str, Any]:
            return {
                "created": d.get("created"),
                "tool_version": d.get("tool", {}).get("version"),
                "config_hash": d.get("config", {}).get("hash"),
                "passed": d.get("passed"),
            }

        findings = []
        for f in self.findings:
            item = asdict(f)
            item["count_delta"] = f.count_delta
            findings.append(item)
        return {
            "diff_schema_version": DiffSchemaVersion,
            "old": side(self.old),
            "new": side(self.new),
            "regressed": self.regressed,
            "has_changes": self.has_changes,
            "regressions": self.regressions,
            "warnings": list(self.warnings),
            "tolerance": {"relative": self.rel_tol, "absolute": self.abs_tol},
            "counts": self.counts(),
            "dataset": {
                "splits": [asdict(s) for s in self.splits],
                "config_changed": self.config_changed,
                "roles_changed": self.roles_changed,
            },
            "rules": [asdict(r) for r in self.rules],
            "metrics": [asdict(m) for m in self.metrics],
            "findings": findings,
        }

    def to_json(self, path: str | Path | None = None, *, indent: int | None = 2) -> str:
        text = json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)
        if path is not None:
            atomic_write_text(path, text + "\n")
        return text

    def to_html(self, path: str | Path | None = None) -> str:
        """The diff as one self-contained HTML page, what got worse first."""
        from .html import render_diff_html

        text = render_diff_html(self.to_dict())
        if path is not None:
            atomic_write_text(path, text)
        return text

    def summary(self, *, max_items: int = 20) -> str:
        """A readable account of the changes (at most ``max_items`` per section)."""
        from .text import render_diff

        return render_diff(self, max_items=max_items)

    def __repr__(self) -> str:
        return f"<ReportDiff regressed={self.regressed} has_changes={self.has_changes} counts={self.counts()}>"


def format_value(v: Any) -> str:
    """A number as the diff shows it (thousands separated, 4 significant digits), "—" for none."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() and abs(v) < 1e15 else f"{v:.4g}"
    return plain(v, 60)


def diff(old: Any, new: Any, *, rel_tol: float = 0.01, abs_tol: float = 1e-12) -> ReportDiff:
    """Compare two audits (Report objects, report dicts, or paths to report JSON).

    ``rel_tol``: metric moves within this fraction of the larger value count as unchanged (1%
    by default); ``abs_tol``: and within this absolute amount.
    """
    if rel_tol < 0 or abs_tol < 0:
        raise ValueError("rel_tol and abs_tol must be >= 0")
    return ReportDiff(_load(old, "old"), _load(new, "new"), rel_tol=rel_tol, abs_tol=abs_tol)

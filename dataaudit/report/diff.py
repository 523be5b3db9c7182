"""Compare two audit reports of two versions of a dataset: what got better, what got worse.

``diff(old, new)`` matches

* rules by code → status transitions (pass → warn → fail → error is worse; to/from ``skipped`` is
  a change in coverage, not a verdict),
* metrics by ``(code, name, split)`` → delta, judged by the metric's ``direction`` (lower/higher
  is better) against its tolerance and its threshold (below),
* findings by ``fingerprint`` (the rule's code and a hash of the finding's evidence by content:
  a duplicate cluster by its members' normalized text, never by row numbers) → new / resolved /
  persisting, with counts,
* the dataset per split → rows, columns, content hash; and the config hash: when both the data and
  the config changed, the comparison mixes two changes and says so (change one thing at a time).

**What is a regression** (``regressed``, the gate of ``--fail-on-regression``): a rule whose
status got worse (or a new rule that fails); a new finding at or above the gate's severity
(``fail_on``: the new report's unless given; a finding the audit's baseline accepted does not
count); a persisting finding whose severity rose to it; or a metric that moved the wrong way by
more than its tolerance and did not stay inside its passing band.

**A metric's tolerance** — how far it may move before it counts as moved — is, first found:

1. the tolerance set for ``CODE.METRIC`` (``tolerances`` argument / ``--tolerance``, else the
   ``tolerances:`` of the new report's config, i.e. its pack): an amount in the metric's units
   or ``"N%"`` of its larger value. A metric with a set tolerance is judged by it alone;
2. its sampling noise as the rule reports it: the metric's ``noise``, or a sibling metric named
   ``NAME_noise`` (TOK001's ``js_noise``);
3. for a rate (a name ending in ``rate``, a share of a split's rows; all rows for a metric
   without a split): ``NOISE_SIGMAS`` standard errors of the difference of two binomial
   proportions, so a rate that moves only because rows were removed around it is not a change;
4. for a count (an integer): ``NOISE_SIGMAS`` Poisson standard errors, sqrt(old + new);
5. else ``rel_tol`` of its larger value (5%).

The data is read as a sample of the process that produces it; three standard errors keep the
chance that noise alone moves one metric past its tolerance near 0.1%, so a diff of a hundred
metrics rarely cries wolf. **A metric's threshold** is the rule option that decides its verdict
(the report's ``thresholds``: a key equal to the metric's name, or ``max_X``/``min_X`` where X is
the name or its last words, as ``max_cramers_v`` for ``label_cramers_v``). A metric that moved the
wrong way but is still on the passing side of its threshold is ``worse``, not ``regressed``: a
value far inside the band moving within it is not a regression; crossing it is. The rule's own
verdict (its status and findings) still speaks for what the metric alone cannot.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._io import atomic_write_text
from ..errors import ConfigError, InputError
from ..rule import Severity, Status
from .escape import plain
from .load import check_report
from .model import Report
from .signal_results import signal_results

__all__ = ["DiffSchemaVersion", "FindingChange", "MetricDelta", "ReportDiff", "RuleChange", "diff"]

# 1.1: metrics carry their tolerance, its basis and their threshold; the verdict "worse"; findings
# carry "suppressed"; the diff records the fail_on it judged new findings by
DiffSchemaVersion = "1.1"
NOISE_SIGMAS = 3.0  # standard errors of noise a metric may move by (see the module docstring)
DEFAULT_REL_TOL = 0.05
# max_X / min_X options that size a sample or cap a list: never a metric's threshold
_NOT_THRESHOLDS = frozenset({"rows", "count", "findings", "examples", "class_rows"})


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
    # regressed | worse | improved | changed (no direction) | within (its tolerance) | unchanged
    # | added | removed
    verdict: str
    tolerance: float | None = None  # moves within it are unchanged
    basis: str | None = (
        None  # where the tolerance came from: set | noise | binomial | poisson | relative
    )
    threshold: float | None = None  # the rule option that decides the metric's verdict


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
    suppressed: bool = False  # accepted in the baseline of the report it comes from
    #: new to the list, but the old report's list was capped and rolled up more of the same
    #: rule and split than the new one lists: it may well have been there (not a regression)
    surfaced: bool = False

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


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _failing(value: float, threshold: float, direction: str) -> bool:
    return value > threshold if direction == "lower" else value < threshold


def _thresholds(result: dict[str, Any] | None) -> dict[str, float]:
    """The rule's numeric options that name a metric: ``ks`` → ks, ``max_cramers_v`` →
    label_cramers_v (see the module docstring); matched against names by :func:`_threshold`."""
    out = {}
    for key, value in ((result or {}).get("thresholds") or {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(value):
            continue
        out[str(key)] = float(value)
    return out


def _threshold(name: str, options: dict[str, float]) -> float | None:
    if name in options:
        return options[name]
    for key, value in options.items():
        prefix, _, rest = key.partition("_")
        if prefix not in ("max", "min") or not rest or rest in _NOT_THRESHOLDS:
            continue
        if name == rest or name.endswith("_" + rest) or name.startswith(rest + "_"):
            return value
    return None


def _rows(report: dict[str, Any], split: str | None) -> int | None:
    """The rows a rate of ``split`` is a share of (all rows for a metric without a split)."""
    splits = (report.get("dataset") or {}).get("splits") or {}
    if split is None:
        rows = [s.get("rows") for s in splits.values()]
        return sum(rows) if rows and all(_is_count(r) for r in rows) else None
    rows = (splits.get(split) or {}).get("rows")
    return rows if _is_count(rows) else None


def _binomial_noise(p1: float, n1: int, p2: float, n2: int) -> float:
    pooled = (p1 * n1 + p2 * n2) / (n1 + n2)
    return NOISE_SIGMAS * math.sqrt(max(pooled * (1 - pooled), 0.0) * (1 / n1 + 1 / n2))


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
        rel_tol: float = DEFAULT_REL_TOL,
        abs_tol: float = 1e-12,
        tolerances: dict[str, float | str] | None = None,
        fail_on: str | None = None,
    ):
        self.old = old
        self.new = new
        self.rel_tol = rel_tol
        self.abs_tol = abs_tol
        # the candidate's pack sets tolerances (else the baseline's); arguments override it
        which = "new" if (new.get("config") or {}).get("tolerances") else "old"
        packed = ((new if which == "new" else old).get("config") or {}).get("tolerances")
        try:
            self.tolerances = _checked_tolerances(packed, f"the {which} report's tolerances")
        except ConfigError as exc:  # the report was edited: its data, not the command, is wrong
            raise InputError(str(exc)) from None
        self.tolerances.update(_checked_tolerances(tolerances, "tolerances"))
        self.fail_on = Severity.parse(fail_on or new.get("fail_on") or "error").value
        self.rules: list[RuleChange] = []
        self.metrics: list[MetricDelta] = []
        self.findings: list[FindingChange] = []
        self.splits: list[SplitChange] = []
        self.warnings: list[str] = []
        #: parts of the audit that took much longer (information: timings never gate)
        self.slower: list[dict[str, Any]] = []
        self.config_changed = False
        self.roles_changed = False
        self._compare()

    # -- comparison ---------------------------------------------------------------------------
    def _compare(self) -> None:
        old, new = self.old, self.new
        self._compare_dataset()
        old_rules = {r["code"]: r for r in old.get("results", [])}
        new_rules = {r["code"]: r for r in new.get("results", [])}
        # a training log's findings compare like a rule's when both reports read one
        if old.get("signals") and new.get("signals"):
            old_rules.update((r["code"], r) for r in signal_results(old))
            new_rules.update((r["code"], r) for r in signal_results(new))
        elif old.get("signals") or new.get("signals"):
            which = "old" if old.get("signals") else "new"
            self.warnings.append(
                f"only the {which} report has training signals (dataaudit signals): they are "
                "not compared; diff two signals reports to compare them."
            )
        for code in sorted(set(old_rules) | set(new_rules)):
            a, b = old_rules.get(code), new_rules.get(code)
            name = (b or a or {}).get("name", "")
            sa, sb = (a or {}).get("status"), (b or {}).get("status")
            self.rules.append(RuleChange(code, name, sa, sb, _status_change(sa, sb)))
            self._compare_metrics(code, a, b)
            self._compare_findings(code, a, b)
        self.slower = slower_parts(old.get("timings"), new.get("timings"))
        order = {"new": 0, "resolved": 1, "persisting": 2}
        self.findings.sort(key=lambda f: (order[f.state], f.code, f.split or "", f.fingerprint))
        named = {f"{m.code}.{m.name}" for m in self.metrics}
        for key in sorted(set(self.tolerances) - named):
            self.warnings.append(
                f"the tolerance {key} matches no metric in either report; metric names are "
                "listed in the report (results[].metrics[].name)."
            )

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
        options = _thresholds(b or a)
        keys = list(ma) + [k for k in mb if k not in ma]
        keys.sort(key=lambda k: (k[0], k[1] or ""))
        for name, split in keys:
            x, y = ma.get((name, split)), mb.get((name, split))
            direction = (y or x or {}).get("direction") or "none"
            threshold = _threshold(name, options) if direction in ("lower", "higher") else None
            ov, nv = _number((x or {}).get("value")), _number((y or {}).get("value"))
            if x is None or y is None:
                verdict = "added" if x is None else "removed"
                self.metrics.append(
                    MetricDelta(
                        code,
                        name,
                        split,
                        ov,
                        nv,
                        None,
                        None,
                        direction,
                        verdict,
                        threshold=threshold,
                    )  # fmt: skip
                )
                continue
            if ov is None or nv is None:
                verdict = "unchanged" if ov == nv else "changed"
                self.metrics.append(
                    MetricDelta(code, name, split, ov, nv, None, None, direction, verdict)
                )
                continue
            noise = [m.get("noise") for m in (x, y)]
            noise += [(side.get((f"{name}_noise", split)) or {}).get("value") for side in (ma, mb)]
            tol, basis = self._tolerance(code, name, split, ov, nv, noise)
            delta = nv - ov
            relative = delta / abs(ov) if ov else None
            if abs(delta) <= self.abs_tol:
                verdict = "unchanged"
            elif abs(delta) <= tol:
                verdict = "within"
            elif direction not in ("lower", "higher"):
                verdict = "changed"
            elif (delta > 0) == (direction == "higher"):
                verdict = "improved"
            elif (
                basis != "set" and threshold is not None and not _failing(nv, threshold, direction)
            ):
                verdict = "worse"  # still inside its passing band
            else:
                verdict = "regressed"
            self.metrics.append(
                MetricDelta(
                    code,
                    name,
                    split,
                    ov,
                    nv,
                    delta,
                    relative,
                    direction,
                    verdict,
                    tolerance=tol,
                    basis=basis,
                    threshold=threshold,
                )  # fmt: skip
            )

    def _tolerance(
        self, code: str, name: str, split: str | None, old: float, new: float, noise: list[Any]
    ) -> tuple[float, str]:
        """(how far the metric may move and count as unchanged, where that comes from)."""
        larger = max(abs(old), abs(new))
        tol = self.tolerances.get(f"{code}.{name}")
        if tol is not None:
            amount = larger * float(tol[:-1]) / 100 if isinstance(tol, str) else float(tol)
            return max(amount, self.abs_tol), "set"
        known = [float(v) for v in noise if _number(v) is not None and v >= 0]
        if known:
            return max(max(known), self.abs_tol), "noise"
        n_old, n_new = _rows(self.old, split), _rows(self.new, split)
        if name.endswith("rate") and 0 <= old <= 1 and 0 <= new <= 1 and n_old and n_new:
            return max(_binomial_noise(old, n_old, new, n_new), self.abs_tol), "binomial"
        if _is_count(old) and _is_count(new):
            return max(NOISE_SIGMAS * math.sqrt(old + new), self.abs_tol), "poisson"
        return max(self.rel_tol * larger, self.abs_tol), "relative"

    def _compare_findings(self, code: str, a: dict | None, b: dict | None) -> None:
        fa = {f["fingerprint"]: f for f in (a or {}).get("findings", [])}
        fb = {f["fingerprint"]: f for f in (b or {}).get("findings", [])}
        # a rule that errored or was skipped has no findings: that is not "resolved"
        a_ran = a is not None and a.get("status") not in (Status.ERROR, Status.SKIPPED)
        b_ran = b is not None and b.get("status") not in (Status.ERROR, Status.SKIPPED)
        surfaced = _surfaced(fa, fb)
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
                    bool(f.get("suppressed", False)),
                    fp in surfaced,
                )
            )

    # -- verdicts -------------------------------------------------------------------------------
    @property
    def regressions(self) -> list[str]:
        """Why the new version is worse, one line each (empty when it is not)."""
        warn = Severity.WARN.rank  # a finding whose severity is unknown counts as a warning
        gate = Severity(self.fail_on).rank
        out = [f"{r.code}: status {r.old} → {r.new}" for r in self.rules if r.change == "regressed"]
        out += [
            f"{r.code}: new rule is {r.new}"
            for r in self.rules
            if r.change == "added" and r.new in (Status.FAIL, Status.ERROR)
        ]
        out += [_metric_reason(m) for m in self.metrics if m.verdict == "regressed"]
        out += [
            f"{f.code}: new {f.severity} finding {f.fingerprint}"
            for f in self.findings
            if f.state == "new"
            and not f.suppressed
            and not f.surfaced
            and _rank(Severity, f.severity, warn) >= gate
        ]
        out += [
            f"{f.code}: finding {f.fingerprint} severity {f.old_severity} → {f.severity}"
            for f in self.findings
            if f.state == "persisting"
            and not f.suppressed
            and f.old_severity is not None
            and _rank(Severity, f.severity, warn) >= gate
            and _rank(Severity, f.severity, warn) > _rank(Severity, f.old_severity, warn)
        ]
        if self.old.get("passed") and not self.new.get("passed"):
            out.insert(0, "gate: passed → failed")
        return out

    @property
    def regressed(self) -> bool:
        """A rule got a worse status, a metric moved the wrong way beyond its tolerance and out
        of its passing band, a finding at the gate's severity appeared (or rose to it), or the
        gate went from passed to failed."""
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
            "slower": list(self.slower),
            "fail_on": self.fail_on,
            "tolerance": {
                "relative": self.rel_tol,
                "absolute": self.abs_tol,
                "noise_sigmas": NOISE_SIGMAS,
                "metrics": dict(sorted(self.tolerances.items())),
            },
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

    def to_markdown(self, *, max_items: int = 20) -> str:
        """The diff as Markdown, for a pull-request comment."""
        from .markdown import render_diff_markdown

        return render_diff_markdown(self, max_items=max_items)

    def summary(self, *, max_items: int = 20) -> str:
        """A readable account of the changes (at most ``max_items`` per section)."""
        from .text import render_diff

        return render_diff(self, max_items=max_items)

    def __repr__(self) -> str:
        return f"<ReportDiff regressed={self.regressed} has_changes={self.has_changes} counts={self.counts()}>"


#: a part is reported slower when it took this many times as long and this many seconds more
SLOWER_RATIO, SLOWER_SECONDS = 1.5, 0.5


def _timed_parts(timings: Any) -> dict[str, float]:
    """'stage scan', 'feature minhash', 'DUP002 finish'... -> seconds, from a report's timings."""
    if not isinstance(timings, dict):
        return {}
    out: dict[str, float] = {}

    def put(name: str, value: Any) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = float(value)

    for k, v in (timings.get("stages") or {}).items():
        put(f"stage {k}", v)
    scan = timings.get("scan") or {}
    for k in ("read", "identity"):
        put(k, scan.get(k))
    for k, v in (scan.get("features") or {}).items():
        put(f"feature {k}", v)
    for code, phases in (timings.get("rules") or {}).items():
        for k, v in (phases or {}).items():
            put(f"{code} {k}", v)
    return out


def slower_parts(old: Any, new: Any) -> list[dict[str, Any]]:
    """The parts of the audit that got much slower, slowest-growing first. Timings depend on
    the machine and its load, so they are reported, never judged as a regression."""
    a, b = _timed_parts(old), _timed_parts(new)
    out = []
    for name in sorted(set(a) & set(b)):
        was, now = a[name], b[name]
        if now - was >= SLOWER_SECONDS and now >= SLOWER_RATIO * max(was, 1e-9):
            out.append({"part": name, "old": was, "new": now, "ratio": now / max(was, 1e-9)})
    out.sort(key=lambda d: (-(d["new"] - d["old"]), d["part"]))
    return out


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


def _surfaced(fa: dict[str, dict], fb: dict[str, dict]) -> set[str]:
    """Fingerprints new to ``fb`` that the old report's capped list may have held in its rollup.

    A rule that lists at most N findings rolls the rest into one ("12 more rows overlap
    train"). When a version removes listed rows, rolled-up ones move into the list and look
    new, and removing duplicates was called a regression. Such a finding is not new while the
    old report rolled up findings of its split (a rollup without a split covers all) and the
    total count there, listed plus rolled up, did not grow.
    """
    out: set[str] = set()
    for split in {f.get("split") for f in fa.values() if f.get("rollup")}:

        def here(f: dict, split: str | None = split) -> bool:
            return split is None or f.get("split") == split

        old_total = sum(int(f.get("count", 0)) for f in fa.values() if here(f))
        new_total = sum(int(f.get("count", 0)) for f in fb.values() if here(f))
        if new_total <= old_total:
            out |= {fp for fp, f in fb.items() if fp not in fa and not f.get("rollup") and here(f)}
    return out


def _metric_reason(m: MetricDelta) -> str:
    split = f" [{m.split}]" if m.split else ""
    why = f"beyond its tolerance ±{format_value(m.tolerance)} ({m.basis})"
    if m.threshold is not None and m.basis != "set":
        crossed = m.old is not None and not _failing(m.old, m.threshold, m.direction)
        why += f", {'crossing' if crossed else 'past'} its threshold {format_value(m.threshold)}"
    return (
        f"{m.code} {m.name}{split}: {format_value(m.old)} → {format_value(m.new)} "
        f"({m.direction} is better; {why})"
    )


def _checked_tolerances(value: Any, where: str) -> dict[str, float | str]:
    from ..config import parse_tolerance

    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a mapping of CODE.METRIC to a tolerance.")
    return dict(parse_tolerance(k, v, where) for k, v in value.items())


def diff(
    old: Any,
    new: Any,
    *,
    rel_tol: float = DEFAULT_REL_TOL,
    abs_tol: float = 1e-12,
    tolerances: dict[str, float | str] | None = None,
    fail_on: str | None = None,
) -> ReportDiff:
    """Compare two audits (Report objects, report dicts, or paths to report JSON).

    ``tolerances``: ``{"CODE.METRIC": amount or "N%"}``, how far a metric may move and count as
    unchanged (over the new report's pack ``tolerances:``); ``rel_tol``: the fraction of a
    metric's larger value it may move when neither a tolerance nor its noise is known (5%);
    ``abs_tol``: moves within this amount are always unchanged. ``fail_on``: the severity from
    which a new finding is a regression (default: the new report's gate). How metrics are judged
    is in this module's docstring.
    """
    if rel_tol < 0 or abs_tol < 0:
        raise ValueError("rel_tol and abs_tol must be >= 0")
    return ReportDiff(
        _load(old, "old"),
        _load(new, "new"),
        rel_tol=rel_tol,
        abs_tol=abs_tol,
        tolerances=tolerances,
        fail_on=fail_on,
    )

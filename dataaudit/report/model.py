"""Report: versioned, JSON-schema'd audit results, the gate verdict and the row flags."""

from __future__ import annotations

import datetime as _dt
import itertools
import json
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import atomic_write_pieces, atomic_write_text
from ..errors import GateFailed, InputError
from ..rule import Flags, RuleOutcome, Severity, Status
from ..wording import plural
from .escape import shorten
from .flags import FLAG_COLUMNS, FlagTable, column_json, decode_flags, flag_table, flags_format
from .load import check_report, read_json
from .schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from collections.abc import Mapping

    import polars as pl

    from ..config import AuditConfig
    from ..context import AuditContext
    from ..identity import SplitIdentity
    from .baseline import Baseline


def _result_dict(
    outcome: RuleOutcome, fail_on: Severity, max_examples: int, accepted: Baseline | None
) -> dict[str, Any]:
    status = outcome.status(fail_on)
    rule, res = outcome.rule, outcome.result
    out: dict[str, Any] = {
        "code": rule.code,
        "name": rule.name,
        "status": status.value,
        "severity": outcome.severity.value,
        "message": outcome.error or outcome.skipped or (res.skipped if res else None),
        "options": {k: _json_safe(v) for k, v in rule.get_params().items()},
        "metrics": [],
        "thresholds": {},
        "findings": [],
        "details": {},
        "flagged_rows": 0,
        "seconds": round(outcome.seconds, 6),
        "coverage": None,
    }
    if res is None or outcome.error is not None:
        return out
    if res.coverage is not None and res.skipped is None:
        out["coverage"] = res.coverage.to_dict()
    out["metrics"] = [m.to_dict() for m in res.metrics]
    out["thresholds"] = res.thresholds
    out["details"] = res.details
    out["flagged_rows"] = Flags.of(res.flags).flagged_rows()
    findings = []
    for f in res.findings:
        fingerprint = f.fingerprint(rule.code)
        findings.append(
            {
                "fingerprint": fingerprint,
                "severity": (f.severity or outcome.severity).value,
                "message": f.message,
                "split": f.split,
                "count": int(f.count),
                "examples": f.examples[:max_examples],
                "data": f.data,
                "suppressed": accepted is not None and fingerprint in accepted,
                **({"rollup": True} if f.rollup else {}),
            }
        )
    if any(f["suppressed"] for f in findings) and status not in (Status.ERROR, Status.SKIPPED):
        out["status"] = _status([f["severity"] for f in findings if not f["suppressed"]], fail_on)
    findings.sort(
        key=lambda d: (
            -Severity(d["severity"]).rank,
            d["split"] or "",
            -d["count"],
            d["fingerprint"],
        )
    )
    out["findings"] = findings
    return out


def _status(severities: list[str], fail_on: Severity) -> str:
    """A rule's status from the severities of the findings that count (as RuleOutcome.status)."""
    worst = max((Severity(s) for s in severities), key=lambda s: s.rank, default=None)
    if worst is None or worst.rank < Severity.WARN.rank:
        return Status.PASS.value
    return (Status.FAIL if worst.rank >= fail_on.rank else Status.WARN).value


def _json_safe(value: Any) -> Any:
    """An option value as written in the report: itself when it is JSON, else its repr (a
    plugin's frozenset or inf default must not cost the whole report)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return repr(value)
    return value


def _short(text: Any, limit: int = 300) -> str:
    return shorten(" ".join(str(text or "").split()), limit)


def gate_reasons(results: list[dict[str, Any]], required: list[str], fail_on: str) -> list[str]:
    """Why the gate fails, one line each (empty: it passes).

    A rule fails it with a finding at ``fail_on`` or by raising; a required rule (``require_rules``)
    fails it as well when it was skipped, raised, or did not run at all.
    """
    by_code = {r["code"]: r for r in results}
    reasons = []
    for r in results:
        if r["status"] == "fail":
            counted = [f for f in r["findings"] if not f.get("suppressed")]
            worst = max((f["severity"] for f in counted), key=lambda v: Severity(v).rank)
            n = sum(f["severity"] == worst for f in counted)
            reasons.append(
                f"{r['code']} failed: {plural(n, worst + ' finding')} (fail_on={fail_on})"
            )
        elif r["status"] == "error" and r["code"] not in required:
            reasons.append(f"{r['code']} errored: {_short(r['message'])}")
    for code in required:
        r = by_code.get(code)
        if r is None:
            reasons.append(
                f"{code} required but not selected: add it to select or extend_select "
                "(or remove it from ignore)"
            )
        elif r["status"] in ("skipped", "error"):
            verb = "skipped" if r["status"] == "skipped" else "errored"
            reasons.append(f"{code} required but {verb}: {_short(r['message'])}")
    return reasons


def partial_coverage(results: list[dict[str, Any]]) -> list[str]:
    """The codes of the rules that gave a verdict on part of their scope only (a cap, a
    sample): a pass from them is not "read everything and found nothing"."""
    return [
        r["code"]
        for r in results
        if (r.get("coverage") or {}).get("complete") is False
        and r["status"] not in ("error", "skipped")
    ]


class Report:
    """What an audit found. ``passed`` is the gate; ``to_json()`` is the contract."""

    def __init__(self, data: dict[str, Any]):
        self.data = data

    # -- building -----------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        outcomes: list[RuleOutcome],
        identity: Mapping[str, SplitIdentity],
        ctx: AuditContext,
        config: AuditConfig,
        *,
        stopped: str | None = None,
        plugin_errors: list[str],
        seconds: float,
        resources: dict[str, Any] | None = None,
        files: Mapping[str, list[dict[str, Any]]] | None = None,
        baseline: Baseline | None = None,
        timings: Mapping[str, Any] | None = None,
        engine: Mapping[str, Any] | None = None,
    ) -> Report:
        """The report of one audit, from what any engine hands over: each rule's outcome and
        each split's identity (rows, columns, content hash) as read. ``stopped``: why the scan
        ended before the end of the input, if it did; ``resources``: what the audit resolved and
        used (the tokenizer: name, hash, vocabulary size and chat template), for provenance;
        ``files``: per split, the files its rows came from in order (``{path, format, rows}``),
        so CI annotations can point at a file's line; ``baseline``: accepted findings, reported
        as suppressed and left out of the statuses and the gate; ``timings``: where the time went
        (``stages``: load, scan, reference, finish, and report, added here; ``scan``: read,
        identity, features), beside each rule's phases, so a diff shows which part got slower;
        ``engine``: what ran the scan (``{name, version, nodes, cpus}``; default: the local
        engine on this machine)."""
        import os
        import time

        started = time.perf_counter()

        from .. import __version__

        fail_on = Severity.parse(config.fail_on)
        results = [_result_dict(o, fail_on, config.max_examples, baseline) for o in outcomes]
        results.sort(key=lambda r: r["code"])
        counts = {s.value: 0 for s in Status}
        for r in results:
            counts[r["status"]] += 1
        from ..registry import load_rules, required_codes

        required = required_codes(load_rules(), config.require_rules)
        reasons = gate_reasons(results, required, fail_on.value)
        if stopped:  # the rules that were running are errors; say why the data is partial
            reasons.insert(0, f"the scan stopped before the end of the input: {_short(stopped)}")
        passed = not reasons
        flags = flag_table(outcomes)
        splits = {
            name: {
                "kind": ctx.splits[name].kind,
                **identity[name].to_dict(),
                "files": list((files or {}).get(name, [])),
            }
            for name in ctx.splits
            if name in identity
        }
        found = {f["fingerprint"] for r in results for f in r["findings"]}
        suppressed = sum(f["suppressed"] for r in results for f in r["findings"])
        data = {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "dataaudit", "version": __version__},
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "dataset": {"splits": splits, "roles": ctx.roles.to_dict()},
            "config": {**config.to_dict(), "hash": config.hash()},
            "passed": passed,
            "fail_on": fail_on.value,
            "gate": {
                "passed": passed,
                "fail_on": fail_on.value,
                "required_rules": list(config.require_rules),
                "required_roles": list(config.require_roles),
                "reasons": reasons,
                "scan_stopped": stopped,
                "baseline": None
                if baseline is None
                else {
                    "path": baseline.path,
                    "accepted": len(baseline.findings),
                    "suppressed": suppressed,
                    # accepted findings this audit did not find: fixed, or their evidence changed
                    "stale": len(set(baseline.findings) - found),
                },
            },
            "summary": {
                "rules": len(results),
                **counts,
                "flagged_rows": flags.flagged_rows(),
                "suppressed": suppressed,
                "partial_coverage": partial_coverage(results),
            },
            "results": results,
            "resources": {"tokenizer": None, **(resources or {})},
            "plugin_errors": list(plugin_errors),
            "seconds": round(seconds, 6),
            "timings": {
                "stages": {},
                "scan": {"read": 0.0, "identity": 0.0, "features": {}},
                **(timings or {}),
                "rules": {
                    o.rule.code: dict(o.phases) for o in sorted(outcomes, key=lambda o: o.rule.code)
                },
            },
            "engine": dict(
                engine
                or {"name": "local", "version": None, "nodes": 1, "cpus": os.cpu_count() or 1}
            ),
            "flags": flags,
        }
        if timings is not None:  # building this (the flags table) is a stage too
            stages = data["timings"]["stages"] = dict(data["timings"]["stages"])
            stages["report"] = round(time.perf_counter() - started, 6)
        return cls(data)

    # -- reading ------------------------------------------------------------------------------
    @property
    def passed(self) -> bool:
        return bool(self.data["passed"])

    @property
    def results(self) -> list[dict[str, Any]]:
        return self.data["results"]

    def result(self, code: str) -> dict[str, Any]:
        for r in self.results:
            if r["code"] == code:
                return r
        raise KeyError(
            f"no result for rule {code}; rules in this report: {', '.join(r['code'] for r in self.results)}"
        )

    def status(self, code: str) -> str:
        return self.result(code)["status"]

    def metric(self, code: str, name: str, split: str | None = None) -> Any:
        for m in self.result(code)["metrics"]:
            if m["name"] == name and (split is None or m["split"] == split):
                return m["value"]
        raise KeyError(
            f"rule {code} has no metric {name!r}" + (f" for split {split!r}" if split else "")
        )

    def raise_for_status(self) -> Report:
        if not self.passed:
            reasons = (self.data.get("gate") or {}).get("reasons") or [
                f"{r['code']} {r['status']}"
                for r in self.results
                if r["status"] in ("fail", "error")
            ]
            raise GateFailed(
                f"data audit failed the gate (fail_on={self.data['fail_on']}): {'; '.join(reasons)}"
            )
        return self

    @property
    def signals(self) -> dict[str, Any] | None:
        """The training-signals section (``dataaudit.signals``), or None for an audit."""
        return self.data.get("signals")

    def add_signals(self, section: dict[str, Any]) -> Report:
        """Attach a training-signals section; its findings count in the gate like a rule's
        (a finding at ``fail_on`` fails it, one line per code in ``gate.reasons``)."""
        fail_on = Severity.parse(self.data["fail_on"])
        by_code: dict[str, list[str]] = {}
        for f in section["findings"]:
            by_code.setdefault(f["code"], []).append(f["severity"])
        reasons = []
        for code, severities in sorted(by_code.items()):
            worst = max(severities, key=lambda v: Severity(v).rank)
            if Severity(worst).rank >= fail_on.rank:
                n = severities.count(worst)
                reasons.append(
                    f"{code} failed: {n} {worst} finding{'s' * (n != 1)} (fail_on={fail_on.value})"
                )
        all_severities = [f["severity"] for f in section["findings"]]
        self.data["signals"] = {"status": _status(all_severities, fail_on), **section}
        gate = self.data["gate"]
        gate["reasons"] = [*gate["reasons"], *reasons]
        self.data["passed"] = gate["passed"] = not gate["reasons"]
        return self

    def flags(self) -> pl.DataFrame:
        """The rows the rules flagged, one per rule and row (a polars DataFrame).

        Columns: ``split``; ``row`` (0-based position in the split, in input order); ``id`` (the
        id column's value, when the data has one); ``code`` (the rule); ``severity`` (the
        flag's, else the rule's configured one); ``action``: ``drop`` (the default remedy
        removes the row: a duplicate that is not its cluster's kept row, the train copy of a
        leaked eval row, an empty or unreadable row), ``keep`` (the row a rule keeps: a
        cluster's representative, the eval side of a leak) or ``review`` (look before acting:
        label doubts, length outliers, truncation, encoding damage); ``cluster`` (rows flagged
        together: a duplicate cluster, both sides of a leak, a label conflict); ``score`` (a
        similarity, confidence or length, per rule; see ``dataaudit explain CODE``); ``detail``.
        ``apply()`` and ``dataaudit clean`` act on this table.
        """
        stored = self._stored_flags()
        if isinstance(stored, FlagTable) and stored.columnar:  # built here: from its columns
            return stored.frame()
        return decode_flags(stored)

    def apply(
        self,
        data: Any,
        *,
        drop: list[str] | str | None = None,
        severity: str = "info",
        action: list[str] | str = "drop",
        splits: list[str] | str | None = None,
    ) -> Any:
        """``data`` without the rows this report's flags say to drop, in ``data``'s own type.

        ``drop``: rule codes, prefixes, names or groups whose flags count (default: every
        rule); ``severity``: the least severity of a flag that counts; ``action``: the flag
        actions that remove a row (default ``drop``; add ``review`` to remove those too);
        ``splits``: only touch these splits. ``data`` must be what the report audited (same
        splits, rows and content; checked): a Hugging Face Dataset or DatasetDict, a polars or
        pandas DataFrame, a pyarrow Table, a list of dicts, or a dict of splits of those.
        A duplicate cluster's kept row is never dropped by its own rule, so dropping ``DUP``
        keeps one row per cluster.
        """
        from ..remediate import apply

        return apply(self, data, drop=drop, severity=severity, action=action, splits=splits)

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(self.data))

    def to_json(self, path: str | Path | None = None, *, indent: int | None = 2) -> str:
        """The report as JSON text, also written to ``path`` if given (``write_json`` writes
        a large report without holding its text)."""
        text = "".join(self._json_pieces(indent))
        if path is not None:
            atomic_write_pieces(path, [text, "\n"])
        return text

    def write_json(self, path: str | Path, *, indent: int = 2) -> Path:
        """``to_json(path)``, written piece by piece: a report's row flags can be millions
        (2.7M flags: 129 MB of JSON, and as one Python string 2-4 bytes a character once one
        character is not ASCII), and its text is never held whole."""
        return atomic_write_pieces(path, itertools.chain(self._json_pieces(indent), ["\n"]))

    def _json_pieces(self, indent: int | None) -> Iterator[str]:
        data = self.data
        flags = data.get("flags") if indent is not None else None
        if flags is not None:  # the flags table, one line per column, not one per value
            data = {k: v for k, v in data.items() if k != "flags"}
        if flags is None:
            yield json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False)
            return
        # the rest of the report piece by piece as well (a rule's details can be megabytes):
        # the same text as json.dumps, but its last "}", where the flags go
        encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, indent=indent)
        held: deque[str] = deque()
        for piece in encoder.iterencode(data):
            held.append(piece)
            if len(held) > 2:
                yield held.popleft()
        tail = "".join(held)
        yield tail[: tail.rindex("}")].rstrip()
        pad = " " * indent
        yield f',\n{pad}"flags": {{\n{pad}{pad}{json.dumps("count")}: {flags["count"]}'
        for name in FLAG_COLUMNS:  # a column at a time, in pieces: never one Python list
            yield f",\n{pad}{pad}{json.dumps(name)}: "
            yield from column_json(flags, name)
        yield f"\n{pad}}}\n}}"

    def write_flags(self, path: str | Path) -> Path:
        """Write the row flags as Parquet, CSV or JSONL, chosen by the file extension (stdout:
        CSV); the bytes ``Report.flags()``'s polars writers would, without importing polars."""
        from .flag_files import write_flag_file

        fmt = flags_format(path)
        return write_flag_file(self._stored_flags(), path, fmt)

    def _stored_flags(self) -> Mapping[str, Any]:
        """The report's flags table as stored (an error for a report from before it was)."""
        stored = self.data.get("flags")
        if stored is None:
            raise InputError(
                f"this report (schema {self.data.get('schema_version')}) does not store the row "
                f"flags (reports do from schema 1.2 on); audit the data again with this version "
                "of dataaudit."
            )
        return stored

    def to_html(self, path: str | Path | None = None) -> str:
        from .html import render_html

        text = render_html(self.data)
        if path is not None:
            atomic_write_text(path, text)
        return text

    def to_junit(self, path: str | Path | None = None) -> str:
        from .junit import render_junit

        text = render_junit(self.data)
        if path is not None:
            atomic_write_text(path, text)
        return text

    def to_sarif(self, path: str | Path | None = None) -> str:
        """SARIF 2.1.0 for code-scanning services: rule docs, fingerprints, file locations."""
        from .sarif import render_sarif, rule_metadata

        log = render_sarif(self.data, rule_metadata([r["code"] for r in self.results]))
        text = json.dumps(log, indent=2, ensure_ascii=False) + "\n"
        if path is not None:
            atomic_write_text(path, text)
        return text

    def to_github(self) -> str:
        """GitHub Actions annotations, one per flagged example, at its file and line."""
        from .github import render_github

        return render_github(self.data)

    def to_markdown(self) -> str:
        """A compact Markdown summary (a CI job summary)."""
        from .markdown import render_markdown

        return render_markdown(self.data)

    def summary(self, *, color: bool = False) -> str:
        from .text import render_summary

        return render_summary(self.data, color=color)

    @classmethod
    def load(cls, path: str | Path) -> Report:
        """Read a report JSON, checking it against the report schema (InputError if not)."""
        data = read_json(path, "a dataaudit report")
        check_report(data, str(path))
        return cls(data)

    def __repr__(self) -> str:
        s = self.data["summary"]
        verdict = "PASSED" if self.passed else "FAILED"
        return (
            f"<Report {verdict} rules={s['rules']} fail={s['fail']} error={s['error']} "
            f"warn={s['warn']} pass={s['pass']} skipped={s['skipped']} "
            f"flagged_rows={s.get('flagged_rows', 0)}>"
        )

    def _repr_html_(self) -> str:
        """Jupyter: the verdict, the counts and the failing/warning rules' top findings."""
        from .html import render_compact

        return render_compact(self.data)

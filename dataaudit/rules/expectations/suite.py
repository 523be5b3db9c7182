"""GX001: a Great Expectations suite run on the dataset's columns and per-row features."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ...context import AuditContext
from ...features import Batch
from ...resources.expectations import (
    GX_INSTALL,
    SEVERITY,
    describe,
    gx_available,
    load_suite,
    run_suite,
)
from ...rule import Direction, Finding, Flag, Rule, RuleResult, Severity
from ...sketches.minhash import EMPTY_HASH
from ...sketches.state import Additive, PerSplit
from .._origin import check_origin, state_origin

#: the derived columns, in table order (dataset columns follow under their own names)
DERIVED = (
    "split", "row", "char_length", "token_length", "label", "source", "duplicate_cluster",
    "near_duplicate_cluster", "flags",
)  # fmt: skip
#: the rules whose row flags the table's ``flags`` column lists (those that ran)
FLAGGING = ("TXT001", "TXT002", "TXT003", "FMT001", "FMT002", "FMT003", "FMT004", "DUP001",
            "DUP002", "LEAK001", "LEAK002", "LBL001", "LBL002", "LBL004", "LEN001", "LEN002",
            "TOK002", "TOK003")  # fmt: skip
_SCALAR = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer,
           pa.types.is_floating, pa.types.is_boolean)  # fmt: skip


@dataclasses.dataclass
class _Rows(Additive):
    row: list[int] = dataclasses.field(default_factory=list)
    char_length: list[int] = dataclasses.field(default_factory=list)
    token_length: list[int] = dataclasses.field(default_factory=list)
    label: list[Any] = dataclasses.field(default_factory=list)
    source: list[Any] = dataclasses.field(default_factory=list)
    hash: list[int] = dataclasses.field(default_factory=list)
    columns: dict[str, list[Any]] = dataclasses.field(default_factory=dict)


class ExpectationSuite(Rule):
    """A Great Expectations suite, run on the dataset's columns plus per-row features.

    What it does:
        Builds one table of every row of every split: ``split``, ``row``, ``char_length`` (of
        the text view), ``token_length`` (tokenizer tokens, or words without one; chats through
        the chat template when it has one, as LEN001 measures them), ``label``, ``source``,
        ``duplicate_cluster`` (the first row of the row's exact-duplicate group in its split,
        null for a row without duplicates), ``near_duplicate_cluster`` (the row's DUP002
        cluster id when DUP002 ran and flags it, else null), ``flags`` (the codes of the rules that flag the row,
        comma-separated, null for none; those rules finish first) and the dataset's scalar
        columns under their own names. Runs the ``suite`` (GX 1.x JSON, e.g. from ``dataaudit gx-suite report.json``)
        on it and folds each expectation that fails into a finding: the expectation, how many
        rows it did not expect, those rows as examples and flags (action review). Severity
        mapping: the expectation's GX ``severity`` (or ``meta.severity``): ``critical`` (GX's
        default) is an error, ``warning`` a warning, ``info`` a note; an expectation that
        cannot run (a column the table lacks, an exception) is an error. With ``export`` the
        table is written (Parquet, or CSV for ``.csv``) for your own GX checkpoints. Without
        Great Expectations installed the rule is skipped with the install command.

    Why it matters:
        Teams already keep their data contracts as GX suites; running them in the same pass,
        on the same derived features the audit computes, means one gate instead of two.

    Example:
        ``audit(ds, expectations="suite.json")`` or ``dataaudit audit data/ --expectations
        suite.json`` with ``{"type": "expect_column_values_to_be_between", "kwargs":
        {"column": "token_length", "max_value": 4096}}``.

    Options:
        suite: the suite: a JSON file path or the suite object (``expectations=`` sets it).
        export: write the feature table to this path (``.parquet`` or ``.csv``).
    """

    code = "GX001"
    name = "expectations.suite"
    groups = ("expectations",)
    severity = Severity.ERROR
    requires = ()
    after = FLAGGING

    def __init__(self, suite: dict[str, Any] | str | None = None, export: str | None = None):
        self.suite = suite
        self.export = export

    def check_options(self) -> None:
        if self.suite is not None:
            load_suite(self.suite)
        if self.export is not None and not str(self.export).endswith((".parquet", ".csv")):
            raise ValueError(f"export: a .parquet or .csv path, not {self.export!r}")

    def skip_reason(self, ctx: AuditContext) -> str | None:
        if self.suite is None and self.export is None:
            return "no suite given: audit(..., expectations='suite.json') or --expectations"
        return None

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        tok = ctx.resources.tokenizer
        roles = ctx.roles
        templated = tok.chat_template is not None and bool(roles.messages) and not roles.text
        return {
            "origin": state_origin(self, ctx, tokenizer=tok.key),
            "tok": tok.key,
            "unit": tok.unit,
            "view": "templated" if templated else "text",
            "template": tok.chat_template.source if templated else None,
            "limit": ctx.max_examples,
            "splits": PerSplit(_Rows),
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        rows: _Rows = state["splits"].at(batch.split)
        n = batch.num_rows
        rows.row.extend(range(batch.offset, batch.offset + n))
        text = batch.roles.has("text")
        rows.char_length.extend(batch.feature("char_length").tolist() if text else [-1] * n)
        if text:
            view = state["view"]
            params = (
                {"tokenizer": state["tok"]}
                if view == "text"
                else {"tokenizer": state["tok"], "view": view}
            )
            rows.token_length.extend(batch.feature("token_lengths", **params).tolist())
            rows.hash.extend(int(h) for h in batch.feature("normalized_hash"))
        else:
            rows.token_length.extend([-1] * n)
            rows.hash.extend([0] * n)
        for role, out in (("label", rows.label), ("source", rows.source)):
            col = batch.role(role)
            out.extend(_scalars(col) if col is not None else [None] * n)
        for name in batch.data.schema.names:
            if name.startswith("__dataaudit") or name in DERIVED:
                continue
            col = batch.column(name)
            if any(check(col.type) for check in _SCALAR):
                rows.columns.setdefault(name, []).extend(col.to_pylist())
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {**a, "splits": a["splits"].merge(b["splits"])}

    # -- finish -----------------------------------------------------------------------------------
    def table(
        self,
        state: dict[str, Any],
        flagged: dict[Any, set[str]] | None = None,
        near: dict[Any, str] | None = None,
    ) -> pa.Table:
        """The per-row feature table of all splits (split order, then row order); ``flagged``:
        (split, row) -> the codes of the rules that flag it; ``near``: (split, row) -> its
        DUP002 cluster."""
        flagged = flagged or {}
        near = near or {}
        parts = []
        for split, r in state["splits"].items():
            n = len(r.row)
            cols: dict[str, Any] = {
                "split": pa.array([split] * n, pa.string()),
                "row": pa.array(r.row, pa.int64()),
                "char_length": _nullable(r.char_length),
                "token_length": _nullable(r.token_length),
                "label": pa.array([None if v is None else str(v) for v in r.label], pa.string()),
                "source": pa.array([None if v is None else str(v) for v in r.source], pa.string()),
                "duplicate_cluster": _clusters(r.row, r.hash),
                "near_duplicate_cluster": pa.array(
                    [near.get((split, x)) for x in r.row], pa.string()
                ),
                "flags": pa.array(
                    [
                        ",".join(sorted(flagged[(split, x)])) if (split, x) in flagged else None
                        for x in r.row
                    ],
                    pa.string(),
                ),  # fmt: skip
            }
            for name, values in r.columns.items():
                if name not in cols and len(values) == n:
                    cols[name] = pa.array(values)
            parts.append(pa.table(cols))
        if not parts:
            return pa.table({c: pa.array([], pa.string()) for c in DERIVED})
        return pa.concat_tables(parts, promote_options="permissive")

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        result = RuleResult()
        flagged: dict[Any, set[str]] = {}
        near: dict[Any, str] = {}
        for code, done in (getattr(ctx, "results", None) or {}).items():
            for f in done.flags:
                flagged.setdefault((f.split, f.row), set()).add(code)
                if code == "DUP002" and f.group is not None:
                    near.setdefault((f.split, f.row), str(f.group))
        table = self.table(state, flagged, near)
        result.details["columns"] = table.column_names
        result.details["token_unit"] = state["unit"]
        if state["template"]:
            result.details["chat_template"] = state["template"]
        result.metric("table_rows", table.num_rows, Direction.NONE, unit="rows")
        if self.export is not None:
            _write(table, Path(self.export))
            result.details["export"] = str(self.export)
        if self.suite is None:
            return result
        suite, where = load_suite(self.suite)
        result.details["suite"] = {"name": suite["name"], "source": where}
        if not gx_available():
            result.skipped = (
                f"Great Expectations is not installed, so the suite {where!r} did not run; "
                f"install it with {GX_INSTALL}"
            )
            return result
        outcomes = run_suite(suite, table.to_pandas())
        splits = table.column("split").to_pylist()
        rows = table.column("row").to_pylist()
        failed = errored = 0
        for n, out in enumerate(outcomes):
            exp = out["expectation"]
            severity = Severity(SEVERITY[exp["severity"]])
            label = describe(exp)
            key = f"{exp['type']}|{json.dumps(exp['kwargs'], sort_keys=True, default=str)}"
            if out.get("error"):
                errored += 1
                result.findings.append(
                    Finding(
                        message=f"{label} could not run on the feature table: {out['error']} "
                        f"(suite {where})",
                        key=key,
                        severity=Severity.ERROR,
                        data={"expectation": n, "type": exp["type"]},
                    )
                )
                continue
            if out["success"]:
                continue
            failed += 1
            unexpected = out.get("unexpected_rows") or []
            if out.get("unexpected_count") is not None and out.get("element_count"):
                count, total = int(out["unexpected_count"]), int(out["element_count"])
                what = f"{count:,} of {total:,} rows unexpected ({count / total:.2%})"
            else:
                count = 1
                what = f"observed {json.dumps(out.get('observed'), default=str)[:200]}"
            detail = exp["type"] + (
                f":{exp['kwargs']['column']}" if "column" in exp["kwargs"] else ""
            )
            result.findings.append(
                Finding(
                    message=f"{label}: {what}",
                    key=key,
                    severity=severity,
                    count=count,
                    examples=[
                        ctx.example(splits[i], rows[i]) for i in unexpected[: state["limit"]]
                    ],
                    data={"expectation": n, "type": exp["type"], "observed": out.get("observed")},
                )
            )
            result.flags.extend(
                Flag(splits[i], rows[i], detail=detail, action="review", severity=severity)
                for i in unexpected
            )
        result.metric("expectations", len(outcomes), Direction.NONE)
        result.metric("expectations_failed", failed, Direction.LOWER)
        result.metric("expectations_not_run", errored, Direction.LOWER)
        return result


def _scalars(col: Any) -> list[Any]:
    values = col.to_pylist()
    return [
        v if v is None or isinstance(v, (str, int, float, bool)) else json.dumps(v, default=str)
        for v in values
    ]


def _nullable(values: list[int]) -> pa.Array:
    arr = np.asarray(values, dtype=np.int64)
    return pa.array(arr, pa.int64(), mask=arr < 0)


def _clusters(rows: list[int], hashes: list[int]) -> pa.Array:
    """For each row, the first row of its exact-duplicate group (null: no duplicate)."""
    first: dict[int, int] = {}
    size: dict[int, int] = {}
    for r, h in zip(rows, hashes):
        if h in (0, int(EMPTY_HASH)):
            continue
        first.setdefault(h, r)
        size[h] = size.get(h, 0) + 1
    return pa.array([first[h] if size.get(h, 0) > 1 else None for h in hashes], pa.int64())


def _write(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".csv":
        import pyarrow.csv as pacsv

        pacsv.write_csv(table, str(path))
    else:
        import pyarrow.parquet as pq

        pq.write_table(table, str(path))

"""Great Expectations suites: read and check a suite file, run it on the per-row feature table,
fold each expectation's result into findings, and write a suite from a report (``gx-suite``).

Reading and checking a suite needs no Great Expectations (a bad file is a config error before
the scan); running one imports it lazily (seconds), with its usage statistics and progress
bars off. Suites are GX 1.x JSON (``{"name", "expectations": [{"type", "kwargs", "severity",
"meta"}]}``); 0.x files (``expectation_suite_name``, ``expectation_type``) are read too.

Severity mapping (each expectation's GX ``severity``, or ``meta.severity``):
``critical`` (GX's default) -> error, ``warning`` -> warn, ``info`` -> info; an expectation that
cannot run (a column the table lacks, an exception) is an error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = [
    "GX_INSTALL",
    "SEVERITY",
    "check_suite",
    "gx_available",
    "load_suite",
    "run_suite",
    "suite_from_report",
]

GX_INSTALL = "pip install 'dataaudit[gx]'"
#: GX severity (or meta.severity) -> dataaudit severity value
SEVERITY = {
    "critical": "error",
    "warning": "warn",
    "info": "info",
    "error": "error",
    "warn": "warn",
}
#: the kwargs that name columns of the table
COLUMN_KWARGS = ("column", "column_A", "column_B")
COLUMN_LIST_KWARGS = ("column_list", "column_set")


def gx_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("great_expectations") is not None


def load_suite(value: Any) -> tuple[dict[str, Any], str]:
    """(the suite as GX 1.x JSON, where it came from); ValueError naming the file and fix."""
    if isinstance(value, dict):
        return check_suite(value, "the suite given inline"), "the suite given inline"
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"suite: the path of a suite JSON file, not {value!r}")
    path = Path(value)
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the expectation suite {where!r}: {exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"the expectation suite {where!r} is not valid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno}); write it with `dataaudit gx-suite` or GX's suite.to_json_dict()"
        ) from None
    return check_suite(doc, where), where


def check_suite(doc: Any, where: str) -> dict[str, Any]:
    """The suite normalized to GX 1.x keys; ValueError for anything that is not a suite."""
    if not isinstance(doc, dict) or not isinstance(doc.get("expectations"), list):
        raise ValueError(
            f"the expectation suite {where!r} is not a suite: expected an object with an "
            '"expectations" list (GX: suite.to_json_dict())'
        )
    name = doc.get("name") or doc.get("expectation_suite_name") or Path(where).stem
    out = []
    for n, exp in enumerate(doc["expectations"]):
        etype = exp.get("type", exp.get("expectation_type")) if isinstance(exp, dict) else None
        kwargs = exp.get("kwargs", {}) if isinstance(exp, dict) else None
        if not isinstance(etype, str) or not etype.startswith("expect_"):
            raise ValueError(
                f"the expectation suite {where!r}: expectation {n} has no type "
                '(e.g. "type": "expect_column_values_to_not_be_null")'
            )
        if not isinstance(kwargs, dict):
            raise ValueError(
                f"the expectation suite {where!r}: {etype} (#{n}): kwargs is not an object"
            )
        severity = exp.get("severity") or (exp.get("meta") or {}).get("severity") or "critical"
        if severity not in SEVERITY:
            raise ValueError(
                f"the expectation suite {where!r}: {etype} (#{n}): severity {severity!r}; use "
                "critical, warning or info"
            )
        out.append(
            {"type": etype, "kwargs": kwargs, "severity": severity, "meta": exp.get("meta") or {}}
        )
    return {"name": str(name), "expectations": out}


def columns_of(expectation: dict[str, Any]) -> list[str]:
    kw = expectation["kwargs"]
    cols = [kw[k] for k in COLUMN_KWARGS if isinstance(kw.get(k), str)]
    for k in COLUMN_LIST_KWARGS:
        if isinstance(kw.get(k), list):
            cols.extend(c for c in kw[k] if isinstance(c, str))
    return cols


def describe(expectation: dict[str, Any]) -> str:
    kw = {k: v for k, v in expectation["kwargs"].items() if k != "batch_id"}
    args = ", ".join(f"{k}={json.dumps(v, default=str)[:60]}" for k, v in kw.items())
    return f"{expectation['type']}({args})"


def run_suite(suite: dict[str, Any], frame: Any) -> list[dict[str, Any]]:
    """Run ``suite`` on a pandas DataFrame; one outcome per expectation, in suite order:
    {"expectation", "success", "severity", "error" (why it could not run), "unexpected_rows"
    (indices into the frame), "unexpected_count", "element_count", "observed"}.
    Expectations naming a column the frame lacks are not run (their error says so)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    outcomes: list[dict[str, Any]] = []
    runnable = []
    for exp in suite["expectations"]:
        missing = [c for c in columns_of(exp) if c not in frame.columns]
        base = {"expectation": exp, "severity": SEVERITY[exp["severity"]]}
        if missing:
            outcomes.append(
                {
                    **base,
                    "success": False,
                    "error": (
                        f"column {missing[0]!r} is not in the table; its columns: "
                        f"{', '.join(map(str, frame.columns))}"
                    ),
                }
            )
        else:
            outcomes.append(base)
            runnable.append(len(outcomes) - 1)
    if not runnable:
        return outcomes
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas("dataaudit")
    batch = (
        source.add_dataframe_asset("rows")
        .add_batch_definition_whole_dataframe("all")
        .get_batch(batch_parameters={"dataframe": frame})
    )
    for i in runnable:
        exp = outcomes[i]["expectation"]
        try:
            one = gx.ExpectationSuite(
                name=suite["name"],
                expectations=[{"type": exp["type"], "kwargs": exp["kwargs"], "meta": exp["meta"]}],
            )
            result = batch.validate(one, result_format={"result_format": "COMPLETE"})
            res = result.to_json_dict()["results"][0]
        except Exception as exc:  # GX raises many types for a bad expectation
            outcomes[i].update(success=False, error=f"{type(exc).__name__}: {str(exc)[:300]}")
            continue
        info = res.get("exception_info") or {}
        if info.get("raised_exception") or (info and "raised_exception" not in info):
            message = info.get("exception_message") or next(
                (v.get("exception_message") for v in info.values() if isinstance(v, dict)), None
            )
            outcomes[i].update(success=False, error=str(message or "the expectation raised")[:300])
            continue
        r = res.get("result") or {}
        outcomes[i].update(
            success=bool(res.get("success")),
            unexpected_rows=[int(x) for x in r.get("unexpected_index_list") or []],
            unexpected_count=r.get("unexpected_count"),
            element_count=r.get("element_count"),
            observed=r.get("observed_value"),
        )
    return outcomes


# -- a suite from a report -----------------------------------------------------------------------
def suite_from_report(report: dict[str, Any]) -> dict[str, Any]:
    """A GX suite that encodes a report's thresholds on the feature table's columns (what
    GX001 validates): length bounds (TXT003, LEN001), duplicate rate (DUP001), the source
    recipe (MIX001) and the train label set (LBL003)."""
    results = {r["code"]: r for r in report.get("results", [])}
    exps: list[dict[str, Any]] = []

    def add(etype: str, kwargs: dict[str, Any], why: str, severity: str = "critical") -> None:
        exps.append(
            {"type": etype, "kwargs": kwargs, "severity": severity, "meta": {"dataaudit": why}}
        )

    exps.append(
        {"type": "expect_table_row_count_to_be_between", "kwargs": {"min_value": 1},
         "severity": "critical", "meta": {"dataaudit": "the audit reads at least one row"}}
    )  # fmt: skip
    txt = results.get("TXT003", {}).get("options") or {}
    if txt.get("max_chars") or txt.get("min_chars"):
        add(
            "expect_column_values_to_be_between",
            {
                "column": "char_length",
                "min_value": txt.get("min_chars"),
                "max_value": txt.get("max_chars"),
            },
            "TXT003 min_chars/max_chars",
            "warning",
        )
    length = results.get("LEN001", {}).get("options") or {}
    if length.get("max_seq_len"):
        add(
            "expect_column_values_to_be_between",
            {"column": "token_length", "max_value": length["max_seq_len"],
             "mostly": round(1 - float(length.get("max_rate") or 0), 6)},
            "LEN001 max_seq_len and max_rate",
        )  # fmt: skip
    if "DUP001" in results:
        add(
            "expect_column_values_to_be_null",
            {"column": "duplicate_cluster"},
            "DUP001: no exact duplicates",
            "warning",
        )
    if "DUP002" in results:
        add(
            "expect_column_values_to_be_null",
            {"column": "near_duplicate_cluster"},
            "DUP002: no near duplicates",
            "warning",
        )
    mix = results.get("MIX001", {}).get("options") or {}
    if isinstance(mix.get("recipe"), dict) and mix["recipe"]:
        add(
            "expect_column_values_to_be_in_set",
            {"column": "source", "value_set": sorted(mix["recipe"])},
            "MIX001 recipe sources",
        )
    classes = (results.get("LBL003", {}).get("details") or {}).get("classes")
    if isinstance(classes, list):
        train = sorted(
            str(c["class"])
            for c in classes
            if isinstance(c, dict) and (c.get("rows_by_split") or {}).get("train")
        )
        if train:
            add(
                "expect_column_values_to_be_in_set",
                {"column": "label", "value_set": train},
                "LBL003: the classes train has",
                "warning",
            )
    for exp in exps:
        exp["kwargs"] = {k: v for k, v in exp["kwargs"].items() if v is not None}
    dataset = report.get("dataset") or {}
    return {
        "name": "dataaudit",
        "expectations": exps,
        "meta": {
            "dataaudit": {
                "from_report_created": report.get("created"),
                "config_hash": (report.get("config") or {}).get("hash"),
                "splits": sorted(dataset.get("splits", {})) if isinstance(dataset, dict) else None,
            }
        },
    }

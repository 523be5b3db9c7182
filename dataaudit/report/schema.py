"""The report's JSON Schema: the contract pipelines parse. ``dataaudit schema`` prints it.

The committed copy (report.schema.json beside this file) is checked against this in tests, so a
change to the report format is always a visible diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..rule import ACTIONS, Direction, Severity, Status

SCHEMA_PATH = Path(__file__).with_name("report.schema.json")
# 1.1: the top-level "gate" object; 1.2: the row "flags" table; 1.3: "resources" (tokenizer);
# 1.4: findings "suppressed" by a baseline (gate.baseline, summary.suppressed), the "files" of
# each split, and a metric's optional "noise"; 1.5: "timings" (stages, scan, each rule's phases);
# 1.6: each result's "coverage" (rows examined of the rows in scope) and summary.partial_coverage;
# 1.7: the optional "signals" section (a training log read against the data: dataaudit.signals);
# 1.8: the "engine" that ran the audit (local or ray, its version, the cluster's nodes and CPUs)
# 1.9: resources.predictions (a model's predictions the EVAL rules read: kind, source, key, rows)
# 1.10: a finding's optional "rollup" (it stands for the findings a capped list left out)
SCHEMA_VERSION = "1.10"

_STATUS = [s.value for s in Status]
_SEVERITY = [s.value for s in Severity]
_FAIL_ON = {"enum": Severity.fail_on_choices()}


def _obj(
    props: dict[str, Any],
    required: list[str] | None = None,
    extra: bool = False,
    optional: tuple[str, ...] = (),
) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": [k for k in (required if required is not None else props) if k not in optional],
        "additionalProperties": extra,
    }


def _flags_schema() -> dict[str, Any]:
    """The row flags table, stored one array per column (``Report.flags()`` decodes it)."""

    def strings(nullable: bool = True, enum: list[str] | None = None) -> dict[str, Any]:
        item = {"enum": enum} if enum else {"type": ["string", "null"] if nullable else "string"}
        return {"type": "array", "items": item}

    def dictionary(values: dict[str, Any], what: str) -> dict[str, Any]:
        return {
            **_obj(
                {
                    "values": values,
                    "index": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                }
            ),
            "description": f"{what}: the distinct values, and per flag the index of its value",
        }

    def column(schema: dict[str, Any], what: str) -> dict[str, Any]:
        return {**schema, "description": what}

    return {
        **_obj(
            {
                "count": {"type": "integer", "minimum": 0},
                "split": dictionary(strings(False), "the split"),
                "row": column(
                    {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    "0-based position of the row in its split, in input order",
                ),
                "id": column(strings(), "the row's id column value (null without an id column)"),
                "code": dictionary(strings(False), "the rule that flags the row"),
                "severity": dictionary(strings(enum=_SEVERITY), "the flag's severity"),
                "action": dictionary(
                    strings(enum=list(ACTIONS)),
                    "what the default remedy does with the row: drop, keep or review",
                ),
                "cluster": column(
                    strings(), "rows flagged together: a duplicate cluster, a leak, a conflict"
                ),
                "score": column(
                    {"type": "array", "items": {"type": ["number", "null"]}},
                    "a similarity, confidence or length, per rule",
                ),
                "detail": dictionary(strings(), "a short description"),
            }
        ),
        "description": "Row flags, one per rule and row, stored column by column; every "
        "column has `count` entries (a dictionary column in its index).",
    }


def report_schema() -> dict[str, Any]:
    number = {"type": ["number", "null"]}
    metric = _obj(
        {
            "name": {"type": "string"},
            "split": {"type": ["string", "null"]},
            "value": number,
            "direction": {"enum": [d.value for d in Direction]},
            "unit": {"type": ["string", "null"]},
            "noise": {
                "type": "number",
                "minimum": 0,
                "description": "how far the value moves by sampling noise alone (when the rule "
                "knows it): a diff calls smaller moves unchanged",
            },
        },
        required=["name", "split", "value", "direction", "unit"],
    )
    example = {
        "type": "object",
        "properties": {
            "split": {"type": "string"},
            "row": {"type": "integer", "minimum": 0},
            "text": {"type": ["string", "null"]},
        },
        "required": ["split", "row"],
        "additionalProperties": True,
    }
    finding = _obj(
        {
            "fingerprint": {"type": "string", "pattern": "^[A-Z]{2,5}[0-9]{3}-[0-9a-f]{16}$"},
            "severity": {"enum": _SEVERITY},
            "message": {"type": "string"},
            "split": {"type": ["string", "null"]},
            "count": {"type": "integer", "minimum": 0},
            "examples": {"type": "array", "items": example},
            "data": {"type": "object"},
            "suppressed": {
                "type": "boolean",
                "description": "accepted in the audit's baseline: listed, but left out of the "
                "rule's status and the gate",
            },
            "rollup": {
                "const": True,
                "description": "stands for the `count` findings a capped list left out (present "
                "only when true); a diff does not call a finding new while the old report's "
                "list of its rule and split was cut short and the total did not grow",
            },
        },
        optional=("rollup",),
    )
    result = _obj(
        {
            "code": {"type": "string", "pattern": "^[A-Z]{2,5}[0-9]{3}$"},
            "name": {"type": "string"},
            "status": {"enum": _STATUS},
            "severity": {"enum": _SEVERITY},
            "message": {"type": ["string", "null"]},
            "options": {"type": "object"},
            "metrics": {"type": "array", "items": metric},
            "thresholds": {"type": "object"},
            "findings": {"type": "array", "items": finding},
            "details": {"type": "object"},
            "flagged_rows": {"type": "integer", "minimum": 0},
            "seconds": {"type": "number", "minimum": 0},
            "coverage": _coverage_schema(),
        }
    )
    split = _obj(
        {
            "kind": {"enum": ["train", "validation", "test", "other"]},
            "rows": {"type": "integer", "minimum": 0},
            "columns": {
                "type": "array",
                "items": _obj({"name": {"type": "string"}, "type": {"type": "string"}}),
            },
            "content_hash": {"type": "string", "pattern": "^xxh3:[0-9a-f]{16}$"},
            "files": {
                "type": "array",
                "items": _obj(
                    {
                        "path": {"type": "string"},
                        "format": {"type": "string"},
                        "rows": {"type": "integer", "minimum": 0},
                    }
                ),
                "description": "the files the split's rows came from, in order, with their row "
                "counts (empty when the rows did not come from files in order)",
            },
        }
    )
    role = _obj({"column": {"type": "string"}, "detected": {"type": "boolean"}})
    counts = {s: {"type": "integer", "minimum": 0} for s in _STATUS}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://dataaudit.dev/schema/report-{SCHEMA_VERSION}.json",
        "title": "dataaudit report",
        **_obj(
            {
                "schema_version": {"const": SCHEMA_VERSION},
                "tool": _obj({"name": {"const": "dataaudit"}, "version": {"type": "string"}}),
                "created": {"type": "string"},
                "dataset": _obj(
                    {
                        "splits": {"type": "object", "additionalProperties": split},
                        "roles": {"type": "object", "additionalProperties": role},
                    }
                ),
                "config": {
                    "type": "object",
                    "required": ["select", "ignore", "fail_on", "rules", "hash"],
                    "properties": {
                        "hash": {"type": "string"},
                        "fail_on": _FAIL_ON,
                    },
                },
                "passed": {"type": "boolean"},
                "fail_on": _FAIL_ON,
                "gate": _obj(
                    {
                        "passed": {"type": "boolean"},
                        "fail_on": _FAIL_ON,
                        "required_rules": {"type": "array", "items": {"type": "string"}},
                        "required_roles": {"type": "array", "items": {"type": "string"}},
                        "reasons": {"type": "array", "items": {"type": "string"}},
                        "scan_stopped": {"type": ["string", "null"]},
                        "baseline": {
                            **_obj(
                                {
                                    "path": {"type": "string"},
                                    "accepted": {"type": "integer", "minimum": 0},
                                    "suppressed": {"type": "integer", "minimum": 0},
                                    "stale": {"type": "integer", "minimum": 0},
                                }
                            ),
                            "type": ["object", "null"],
                        },
                    }
                ),
                "summary": _obj(
                    {
                        "rules": {"type": "integer"},
                        **counts,
                        "flagged_rows": {"type": "integer"},
                        "suppressed": {"type": "integer", "minimum": 0},
                        "partial_coverage": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "codes of the rules that gave their verdict on part "
                            "of their scope (a cap or a sample; see each result's coverage)",
                        },
                    }
                ),
                "results": {"type": "array", "items": result},
                "resources": _obj(
                    {"tokenizer": _tokenizer_schema(), "predictions": _predictions_schema()},
                    optional=("predictions",),
                ),
                "plugin_errors": {"type": "array", "items": {"type": "string"}},
                "seconds": {"type": "number", "minimum": 0},
                "timings": _timings_schema(),
                "engine": _engine_schema(),
                "flags": _flags_schema(),
                "signals": _signals_schema(),
            },
            optional=("signals",),
        ),
    }


def _predictions_schema() -> dict[str, Any]:
    """The predictions the EVAL rules read (``predictions=``): what and where from, not the
    values (their digest tells two runs apart)."""
    return {
        **_obj(
            {
                "kind": {"enum": ["labels", "probabilities", "correct"]},
                "source": {"type": "string"},
                "key": {"enum": ["row", "id", "column"]},
                "rows": {"type": "object", "additionalProperties": {"type": "integer"}},
                "classes": {"type": "array", "items": {"type": "string"}},
                "digest": {"type": "string"},
            },
            optional=("rows", "classes", "digest"),
        ),
        "description": "a model's predictions joined to the rows for the EVAL rules",
    }


def _engine_schema() -> dict[str, Any]:
    """What ran the audit: a run detail like the timings, never part of the findings."""
    return {
        **_obj(
            {
                "name": {"enum": ["local", "ray"]},
                "version": {"type": ["string", "null"]},
                "nodes": {"type": "integer", "minimum": 1},
                "cpus": {"type": "integer", "minimum": 1},
            }
        ),
        "description": "the engine (local: this machine; ray: a Ray cluster), its version (Ray's; "
        "null for local) and the size of the machine or cluster it ran on",
    }


def _signals_schema() -> dict[str, Any]:
    """A training log read against the data (``dataaudit.signals``); absent from audits."""
    curve = _obj(
        {
            "step": {"type": "array", "items": {"type": "integer"}},
            "value": {"type": "array", "items": {"type": ["number", "null"]}},
        }
    )
    example = {
        "type": "object",
        "properties": {
            "split": {"type": "string"},
            "row": {"type": "integer", "minimum": 0},
            "id": {"type": ["string", "null"]},
            "text": {"type": ["string", "null"]},
            "why": {"type": "string"},
            "score": {"type": "number"},
        },
        "required": ["split", "row"],
        "additionalProperties": True,
    }
    batch = {
        **_obj(
            {
                "step": {"type": "integer"},
                "rows": {"type": "integer", "minimum": 0},
                "effects": {"type": "object"},
                "reasons": {
                    "type": "array",
                    "items": _obj(
                        {
                            "measure": {"type": "string"},
                            "z": {"type": "number"},
                            "text": {"type": "string"},
                        }
                    ),
                },
            }
        ),
        "type": ["object", "null"],
        "description": "the rows of the step compared with random batches of the corpus",
    }
    finding = _obj(
        {
            "code": {"type": "string", "pattern": "^SIG[0-9]{3}$"},
            "name": {"type": "string"},
            "fingerprint": {"type": "string", "pattern": "^SIG[0-9]{3}-[0-9a-f]{16}$"},
            "severity": {"enum": _SEVERITY},
            "message": {"type": "string"},
            "step": {"type": ["integer", "null"]},
            "steps": {"type": "array", "items": {"type": "integer"}},
            "data": {"type": "object"},
            "batch": batch,
            "examples": {"type": "array", "items": example},
        }
    )
    return {
        **_obj(
            {
                "status": {"enum": _STATUS},
                "log": {"type": "object"},
                "order": {"type": ["object", "null"]},
                "options": {"type": "object"},
                "metrics": {"type": "object"},
                "curves": {"type": "object", "additionalProperties": curve},
                "findings": {"type": "array", "items": finding},
            }
        ),
        "description": "Training signals: the log's spikes, non-finite values, clipping, "
        "schedule, divergence and plateaus, each spike's batch against the corpus. Its findings "
        "count in the gate like a rule's.",
    }


def _coverage_schema() -> dict[str, Any]:
    """What share of its scope a rule examined (null: every row in scope)."""
    count = {"type": "integer", "minimum": 0}
    return {
        **_obj(
            {
                "examined": count,
                "in_scope": count,
                "complete": {"type": "boolean"},
                "unit": {"type": "string"},
                "reason": {"type": ["string", "null"]},
            }
        ),
        "type": ["object", "null"],
        "description": "rows the rule examined of the rows in its scope, and why it examined "
        "fewer (a cap or a sample, and the option that lifts it); null: every row in scope",
    }


def _timings_schema() -> dict[str, Any]:
    """Seconds per part of the audit: noisy, so diffs show them but never gate on them."""
    seconds = {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}}
    return _obj(
        {
            "stages": seconds,  # load, scan, reference, finish, report (wall clock)
            "scan": _obj(  # summed over worker processes when there are several
                {
                    "read": {"type": "number", "minimum": 0},
                    "identity": {"type": "number", "minimum": 0},
                    "features": seconds,
                }
            ),
            "rules": {"type": "object", "additionalProperties": seconds},
        }
    )


def _tokenizer_schema() -> dict[str, Any]:
    """The tokenizer the audit used (null: none, lengths are whitespace words)."""
    template = {
        **_obj({"source": {"type": "string"}, "hash": {"type": "string"}}),
        "type": ["object", "null"],
    }
    return {
        **_obj(
            {
                "name": {"type": "string"},
                "hash": {"type": "string"},
                "vocab_size": {"type": "integer", "minimum": 0},
                "chat_template": template,
            }
        ),
        "type": ["object", "null"],
    }


def schema_json() -> str:
    return json.dumps(report_schema(), indent=2) + "\n"

"""The report's JSON Schema: the contract pipelines parse. ``dataaudit schema`` prints it.

The committed copy (report.schema.json beside this file) is checked against this in tests, so a
change to the report format is always a visible diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .model import SCHEMA_VERSION

SCHEMA_PATH = Path(__file__).with_name("report.schema.json")

_STATUS = ["pass", "warn", "fail", "error", "skipped"]
_SEVERITY = ["info", "warn", "error"]


def _obj(
    props: dict[str, Any], required: list[str] | None = None, extra: bool = False
) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required if required is not None else list(props),
        "additionalProperties": extra,
    }


def report_schema() -> dict[str, Any]:
    number = {"type": ["number", "null"]}
    metric = _obj(
        {
            "name": {"type": "string"},
            "split": {"type": ["string", "null"]},
            "value": number,
            "direction": {"enum": ["lower", "higher", "none"]},
            "unit": {"type": ["string", "null"]},
        }
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
        }
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
                        "fail_on": {"enum": ["warn", "error"]},
                    },
                },
                "passed": {"type": "boolean"},
                "fail_on": {"enum": ["warn", "error"]},
                "summary": _obj(
                    {"rules": {"type": "integer"}, **counts, "flagged_rows": {"type": "integer"}}
                ),
                "results": {"type": "array", "items": result},
                "plugin_errors": {"type": "array", "items": {"type": "string"}},
                "seconds": {"type": "number", "minimum": 0},
            }
        ),
    }


def schema_json() -> str:
    return json.dumps(report_schema(), indent=2) + "\n"

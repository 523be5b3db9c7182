"""The report's JSON Schema: the contract pipelines parse. ``dataaudit schema`` prints it.

The committed copy (report.schema.json beside this file) is checked against this in tests, so a
change to the report format is always a visible diff.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..rule import ACTIONS, Direction, Severity, Status
from .flags import DICT_COLUMNS, FLAG_COLUMNS
from .model import SCHEMA_VERSION

SCHEMA_PATH = Path(__file__).with_name("report.schema.json")

_STATUS = [s.value for s in Status]
_SEVERITY = [s.value for s in Severity]
_FAIL_ON = {"enum": [s.value for s in Severity if s.rank >= Severity.WARN.rank]}  # info: no gate


def _obj(
    props: dict[str, Any], required: list[str] | None = None, extra: bool = False
) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required if required is not None else list(props),
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
                    }
                ),
                "summary": _obj(
                    {"rules": {"type": "integer"}, **counts, "flagged_rows": {"type": "integer"}}
                ),
                "results": {"type": "array", "items": result},
                "resources": _obj({"tokenizer": _tokenizer_schema()}),
                "plugin_errors": {"type": "array", "items": {"type": "string"}},
                "seconds": {"type": "number", "minimum": 0},
                "flags": _flags_schema(),
            }
        ),
    }


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


# -- reading reports back (diff, Report.load) ------------------------------------------------------
# jsonschema is only a test dependency, so loading checks a report against the schema above with
# the few keywords it uses. Lenient where versions may differ: unknown keys are allowed (a newer
# minor version may add some) and a key is required only from the version that added it.
_ADDED_IN = {"gate": (1, 1), "flags": (1, 2), "resources": (1, 3)}
_JSON_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _JSON_TYPES[name](value):
            return name
    return type(value).__name__


def _check(
    value: Any,
    schema: dict[str, Any],
    path: str,
    errors: list[str],
    optional: frozenset[str] = frozenset(),
) -> None:
    if len(errors) >= 5:
        return
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_JSON_TYPES[t](value) for t in types):
            errors.append(f"{path}: expected {' or '.join(types)}, got {_json_type(value)}")
            return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v) for v in schema["enum"])
        errors.append(f"{path}: {json.dumps(value)[:60]} is not one of {allowed}")
        return
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: expected {json.dumps(schema['const'])}")
        return
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        errors.append(f"{path}: {value[:60]!r} does not match {schema['pattern']}")
    if _JSON_TYPES["number"](value) and value < schema.get("minimum", value):
        errors.append(f"{path}: {value} is below {schema['minimum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value and key not in optional:
                errors.append(f"{path}: missing key {key!r}")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in props:
                _check(item, props[key], f"{path}.{key}", errors, optional)
            elif isinstance(extra, dict):
                _check(item, extra, f"{path}.{key}", errors, optional)
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(item, schema["items"], f"{path}[{i}]", errors, optional)


_PY_TYPES = {"string": {str}, "null": {type(None)}, "integer": {int}, "number": {int, float}}


def _first_bad(values: list[Any], item: dict[str, Any]) -> int | None:
    """Index of the first value that ``item`` (a type or enum) rejects, without recursion: flags
    can be millions, so the common case (all valid) is decided by set operations first."""
    if "enum" in item:
        allowed = item["enum"]
        try:
            if set(values) <= set(allowed):
                return None
        except TypeError:  # a list or an object among the values
            pass
        return next(i for i, v in enumerate(values) if v not in allowed)
    types = item["type"] if isinstance(item["type"], list) else [item["type"]]
    low = item.get("minimum")
    py = set().union(*(_PY_TYPES[t] for t in types))
    if set(map(type, values)) <= py:
        numbers = [v for v in values if v is not None] if low is not None else []
        if not numbers or min(numbers) >= low:
            return None
    checks = [_JSON_TYPES[t] for t in types]
    return next(
        i
        for i, v in enumerate(values)
        if not any(c(v) for c in checks) or (low is not None and v is not None and v < low)
    )


def _check_flags(flags: Any, schema: dict[str, Any], errors: list[str]) -> None:
    """The flags table: every column an array of ``count`` valid entries."""
    if not isinstance(flags, dict) or not isinstance(flags.get("count"), int):
        errors.append("$.flags: expected an object with a count and one array per column")
        return
    n = flags["count"]
    for name in FLAG_COLUMNS:
        path, col, props = f"$.flags.{name}", flags.get(name), schema["properties"][name]
        if name in DICT_COLUMNS:
            if not isinstance(col, dict) or not all(
                isinstance(col.get(k), list) for k in ("values", "index")
            ):
                errors.append(f"{path}: expected {{values: [...], index: [...]}}")
                continue
            values, col = col["values"], col["index"]
            bad = _first_bad(values, props["properties"]["values"]["items"])
            if bad is not None:
                errors.append(f"{path}.values[{bad}]: {json.dumps(values[bad])[:60]} is not valid")
            item = {"type": "integer", "minimum": 0}
            bad = _first_bad(col, item)
            if bad is None:
                bad = next((i for i, v in enumerate(col) if v >= len(values)), None)
            path += ".index"
        else:
            if not isinstance(col, list):
                errors.append(f"{path}: expected an array")
                continue
            bad = _first_bad(col, props["items"])
        if bad is not None:
            errors.append(f"{path}[{bad}]: {json.dumps(col[bad])[:60]} is not valid")
        elif len(col) != n:
            errors.append(f"{path}: {len(col)} entries, but count is {n}")


def report_problems(data: Any) -> list[str]:
    """What makes ``data`` unreadable as a report of this schema (at most 5), or []."""
    if not isinstance(data, dict):
        return [f"the top level is a JSON {_json_type(data)}, not an object"]
    version = data.get("schema_version")
    if not isinstance(version, str) or not re.fullmatch(r"[0-9]+\.[0-9]+", version):
        return ["no schema_version: this is not a dataaudit report"]
    ours = int(SCHEMA_VERSION.split(".")[0])
    major = int(version.split(".")[0])
    if major > ours:
        return [
            f"it was written by a newer dataaudit (report schema {version}; this version reads "
            f"{ours}.x): upgrade dataaudit (pip install -U dataaudit)"
        ]
    if major < ours:
        return [f"its report schema {version} is older than {ours}.x and cannot be read"]
    schema = report_schema()
    schema["properties"]["schema_version"] = {"type": "string"}
    flags_schema = schema["properties"].pop("flags")  # checked column by column below
    schema["required"].remove("flags")
    minor = (major, int(version.split(".")[1]))
    optional = frozenset(k for k, added in _ADDED_IN.items() if minor < added)
    errors: list[str] = []
    _check({k: v for k, v in data.items() if k != "flags"}, schema, "$", errors, optional)
    if "flags" in data:
        _check_flags(data["flags"], flags_schema, errors)
    elif "flags" not in optional:
        errors.append("$: missing key 'flags'")
    return errors

"""Reading a report back (``Report.load``, ``diff``): its JSON parsed and checked against the
report schema, every way it can be unreadable an InputError that names the file and the fix."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import InputError
from .flags import DICT_COLUMNS, FLAG_COLUMNS, FlagTable
from .schema import SCHEMA_VERSION, report_schema


def read_json(path: str | Path, what: str) -> Any:
    """Parse a JSON file; every way it can be unreadable is an InputError naming the file."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read {what} ({exc.strerror or exc}).") from None
    if not raw.strip():
        raise InputError(f"{path}: the file is empty; expected {what} (JSON).")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not UTF-8 text (byte {exc.start}); expected {what} (JSON), as written by "
            "`dataaudit audit --json`."
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # "Unterminated string": the text ended inside a string, i.e. before its closing quote
        ended = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        cut = " (the file looks truncated)" if ended else ""
        raise InputError(
            f"{path}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}{cut}; "
            f"expected {what}."
        ) from None
    except RecursionError:
        raise InputError(f"{path}: the JSON is nested too deeply to be {what}.") from None


def check_report(data: Any, where: str) -> None:
    """InputError naming ``where`` and what is wrong when ``data`` is not a readable report."""
    problems = report_problems(data)
    if problems:
        raise InputError(
            f"{where}: not a readable dataaudit report: {'; '.join(problems)}. Pass a report "
            "written by `dataaudit audit --json` (complete, unedited)."
        )


# jsonschema is only a test dependency, so loading checks a report against report_schema() with
# the few keywords it uses. Lenient where versions may differ: unknown keys are allowed (a newer
# minor version may add some) and a key is required only from the version that added it.
_ADDED_IN = {
    "gate": (1, 1),
    "flags": (1, 2),
    "resources": (1, 3),
    "suppressed": (1, 4),
    "files": (1, 4),
    "baseline": (1, 4),
    "timings": (1, 5),
    "coverage": (1, 6),
    "partial_coverage": (1, 6),
    "engine": (1, 8),
}
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
    """The flags table: every column an array of ``count`` valid entries (a FlagTable is
    built by the report from checked flags: not turned into lists to be checked again)."""
    if isinstance(flags, FlagTable) and flags.columnar:
        return
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

"""JSON Schemas and tool declarations given as rule options (FMT003): inline or a JSON file.

A file is read once per process and path (its modification time is part of the cache key);
a schema is compiled once per distinct schema. ``jsonschema`` is imported on first use.
Everything the user can get wrong raises ``ValueError`` with the option, the file and the fix;
the config layer turns it into a ``ConfigError`` before the scan.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["SchemaError", "compiled", "first_error", "load_json_option", "tool_table"]


class SchemaError(ValueError):
    """A JSON Schema that is not valid (``check_schema`` fails)."""


def load_json_option(value: Any, option: str) -> Any:
    """An option given inline (a dict or list) or as the path of a JSON file."""
    if value is None or isinstance(value, (dict, list)):
        return value
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"{option}: an object, a list or the path of a JSON file, not {value!r}")
    path = Path(value)
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as exc:
        raise ValueError(f"{option}: cannot read {str(path)!r}: {exc.strerror or exc}") from None
    return _read(str(path), mtime, option)


@lru_cache(maxsize=32)
def _read(path: str, mtime: int, option: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{option}: cannot read {path!r}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{option}: {path!r} is not valid JSON ({exc.msg} at line {exc.lineno} column "
            f"{exc.colno}); fix the file"
        ) from None


def _canonical(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True, ensure_ascii=False, default=str)


def compiled(schema: Any) -> Any:
    """A jsonschema validator for ``schema`` (SchemaError when the schema is invalid)."""
    return _compile(_canonical(schema))


@lru_cache(maxsize=1024)
def _compile(text: str) -> Any:
    import jsonschema
    from jsonschema.exceptions import SchemaError as _JSError

    schema = json.loads(text)
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(f"a JSON Schema is an object, not {type(schema).__name__}")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except _JSError as exc:
        where = json_path(exc.absolute_path)
        raise SchemaError(f"not a valid JSON Schema at {where}: {exc.message}") from None
    return cls(schema)


def json_path(parts: Any) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def first_error(validator: Any, instance: Any) -> tuple[str, str] | None:
    """The first violation (by path) as (validator keyword, "at $.path: message"), or None."""
    errors = sorted(
        validator.iter_errors(instance), key=lambda e: (list(map(str, e.path)), e.message)
    )
    if not errors:
        return None
    err = errors[0]
    return err.validator, f"at {json_path(err.absolute_path)}: {err.message}"


def tool_table(tools: Any) -> dict[str, Any]:
    """Tool name -> parameter schema, from OpenAI ``tools`` ([{"type": "function",
    "function": {"name", "parameters"}}]), legacy ``functions`` ([{"name", "parameters"}]) or
    a mapping {name: parameters}. Raises ValueError for anything else."""
    if isinstance(tools, str):
        tools = json.loads(tools)
    if isinstance(tools, dict):
        return {str(k): strip_nulls(v) if v is not None else {} for k, v in tools.items()}
    if not isinstance(tools, list):
        raise ValueError(f"tools: a list of tool definitions, not {type(tools).__name__}")
    table = {}
    for tool in tools:
        fn = tool.get("function") if isinstance(tool, dict) else None
        fn = fn if isinstance(fn, dict) else tool
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ValueError(f"tools: {str(tool)[:80]!r} has no function name")
        params = fn.get("parameters")
        if isinstance(params, str):  # some datasets keep each schema as JSON text
            params = json.loads(params)
        table[fn["name"]] = strip_nulls(params) if params is not None else {}
    return table


def strip_nulls(value: Any) -> Any:
    """``value`` without null-valued object keys. Columnar readers give every object of a
    column the union of the keys seen in the column (absent ones null), so a tool's parameter
    schema read from Arrow carries the other tools' properties as nulls."""
    if isinstance(value, dict):
        return {k: strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_nulls(v) for v in value]
    return value


#: keywords :func:`quick_valid` decides alone (annotations it ignores, checks it makes)
_ANNOTATIONS = {"description", "title", "default", "examples", "$schema", "$id", "$comment"}
_CHECKS = {"type", "properties", "required", "enum", "const", "items", "additionalProperties",
           "minimum", "maximum", "minLength", "maxLength"}  # fmt: skip
_TYPES: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
}


def quick_valid(schema: Any, value: Any) -> bool | None:
    """Whether ``value`` fits ``schema``, for the small subset of JSON Schema that tool
    parameters use (type, properties, required, enum, const, items, additionalProperties,
    bounds); None when the schema uses anything else (ask jsonschema). Never True where
    jsonschema would find a violation: the fast path before :func:`first_error`."""
    if schema is True or schema == {}:
        return True
    if not isinstance(schema, dict):
        return None
    for key in schema:
        if key not in _CHECKS and key not in _ANNOTATIONS:
            return None
    t = schema.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        checks = [_TYPES.get(x) for x in types]
        if None in checks:
            return None
        if not any(c(value) for c in checks):
            return False
    if "enum" in schema and (not isinstance(schema["enum"], list) or value not in schema["enum"]):
        return False if isinstance(schema["enum"], list) else None
    if "const" in schema and value != schema["const"]:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            return False
    if isinstance(value, str):
        lo, hi = schema.get("minLength"), schema.get("maxLength")
        if (lo is not None and len(value) < lo) or (hi is not None and len(value) > hi):
            return None  # jsonschema counts code points like len(); leave edge cases to it
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        required = schema.get("required") or []
        if any(k not in value for k in required):
            return False
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            sub = props.get(k)
            if sub is None:
                if extra is False:
                    return False
                if extra is True:
                    continue
                sub = extra
            ok = quick_valid(sub, v)
            if ok is not True:
                return ok
    if isinstance(value, list) and "items" in schema:
        for v in value:
            ok = quick_valid(schema["items"], v)
            if ok is not True:
                return ok
    return True


_CHECKERS: dict[int, tuple[Any, Any]] = {}  # id(schema) -> (schema, checker): kept alive


def quick_checker(schema: Any) -> Any:
    """:func:`quick_valid` compiled for one schema object (a function of the value), cached
    by the schema's identity: rows that share a tools table share their checkers."""
    hit = _CHECKERS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    checker = _compile_quick(schema)
    if len(_CHECKERS) > 4096:
        _CHECKERS.clear()
    _CHECKERS[id(schema)] = (schema, checker)
    return checker


def _compile_quick(schema: Any) -> Any:
    if schema is True or schema == {}:
        return lambda v: True
    if not isinstance(schema, dict) or any(
        k not in _CHECKS and k not in _ANNOTATIONS for k in schema
    ):
        return lambda v: None
    if set(schema) - _ANNOTATIONS - {"type", "properties", "required", "enum"}:
        return lambda v: quick_valid(schema, v)  # rarer keywords: the interpreted check
    t = schema.get("type")
    types = None
    if t is not None:
        checks = [_TYPES.get(x) for x in (t if isinstance(t, list) else [t])]
        if None in checks:
            return lambda v: None
        types = checks
    enum = schema.get("enum")
    if enum is not None and not isinstance(enum, list):
        return lambda v: None
    props = {k: _compile_quick(v) for k, v in (schema.get("properties") or {}).items()}
    required = list(schema.get("required") or [])

    def check(v: Any) -> bool | None:
        if types is not None and not any(c(v) for c in types):
            return False
        if enum is not None and v not in enum:
            return False
        if v.__class__ is dict:
            for k in required:
                if k not in v:
                    return False
            for k, x in v.items():
                sub = props.get(k)
                if sub is not None:
                    ok = sub(x)
                    if ok is not True:
                        return ok
        return True

    return check

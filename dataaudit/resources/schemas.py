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

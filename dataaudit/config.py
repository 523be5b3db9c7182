"""AuditConfig: which rules run, with which options, and how strict the gate is.

A config comes from a rule pack (``rules/*.yaml``, shipped in the wheel, usable by name), a YAML or
TOML file, ``[tool.dataaudit]`` in pyproject.toml, a dict, or keyword arguments; a pack may
``extends:`` another. Every key, rule code, option and value is checked, and an error lists the
valid ones.
"""

from __future__ import annotations

import copy
import inspect
import json
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import xxhash

from .errors import ConfigError, close_matches
from .rule import Rule, Severity

__all__ = ["AuditConfig", "available_packs", "load_config", "pack_dir"]

DEFAULT_PACK = "default"


@dataclass
class AuditConfig:
    select: list[str] | None = None  # None: the "default" group
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    fail_on: str = "error"  # warn | error: the finding severity at which the gate fails
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)  # code -> options
    columns: dict[str, str] = field(default_factory=dict)  # role -> column
    split: str | None = None  # column that names the split
    batch_size: int = 8192
    max_examples: int = 5
    example_chars: int = 200
    seed: int = 0
    workers: int = 1  # processes for the scan; >1 folds chunks in parallel, same report
    tokenizer: str | None = None  # path to tokenizer.json or a hub name (LEN/TOK/MIX rules)
    contamination_ref: list[str] = field(default_factory=list)  # benchmark files for LEAK002
    reference: str | None = None  # a baseline dataset path or saved report for drift rules
    pack: str | None = None  # the pack or file this config came from (for the report)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def hash(self) -> str:
        body = {k: v for k, v in self.to_dict().items() if k != "pack"}
        blob = json.dumps(body, sort_keys=True, default=str).encode()
        return xxhash.xxh3_64_hexdigest(blob)

    def validate(self) -> None:
        Severity.parse(self.fail_on, option="fail_on")
        if Severity.parse(self.fail_on) is Severity.INFO:
            raise ConfigError("fail_on='info' would fail on every note; use 'warn' or 'error'.")
        self.fail_on = Severity.parse(self.fail_on).value
        for name in ("batch_size", "max_examples", "example_chars", "workers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name}={value!r}: expected a positive integer.")
        for name in ("select", "extend_select", "ignore"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
                setattr(self, name, value)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(
                    f"{name}={value!r}: expected a list of rule codes, prefixes or groups."
                )


_KEYS = {f.name for f in fields(AuditConfig)} | {"extends"}


def _pack_roots() -> list[Path]:
    here = Path(__file__).resolve().parent
    return [here / "packs", here.parent / "rules"]  # wheel, then source checkout


def pack_dir() -> Path:
    for root in _pack_roots():
        if (root / f"{DEFAULT_PACK}.yaml").is_file():
            return root
    raise ConfigError(
        "the built-in rule packs are missing from this installation; reinstall dataaudit."
    )


def available_packs() -> list[str]:
    return sorted(p.stem for p in pack_dir().glob("*.yaml"))


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config ({exc}).") from None
    if path.suffix.lower() == ".toml":
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover
            import tomli as tomllib
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML ({exc}).") from None
        if path.name == "pyproject.toml":
            data = data.get("tool", {}).get("dataaudit")
            if data is None:
                raise ConfigError(f"{path}: has no [tool.dataaudit] table.")
        return data
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML ({exc}).") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config must be a mapping of keys, got {type(data).__name__}.")
    return data


def _resolve_source(spec: str | Path) -> tuple[dict[str, Any], str]:
    text = str(spec)
    path = Path(text).expanduser()
    if path.suffix.lower() in (".yaml", ".yml", ".toml") or path.is_file():
        if not path.is_file():
            raise ConfigError(f"{path}: config file not found.")
        return _read_file(path), str(path)
    packs = available_packs()
    if text in packs:
        return _read_file(pack_dir() / f"{text}.yaml"), text
    raise ConfigError(
        f"config {text!r} is neither a file nor a rule pack."
        + close_matches(text, packs)
        + f" Packs: {', '.join(packs)}."
    )


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if key == "rules" and isinstance(value, dict):
            rules = out.setdefault("rules", {})
            for code, opts in value.items():
                rules[code] = {**rules.get(code, {}), **(opts or {})}
        elif key == "columns" and isinstance(value, dict):
            out["columns"] = {**out.get("columns", {}), **value}
        else:
            out[key] = copy.deepcopy(value)
    return out


def _expand(data: dict[str, Any], origin: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ConfigError(
            f"{origin}: unknown key {unknown[0]!r}."
            + close_matches(unknown[0], _KEYS)
            + f" Valid keys: {', '.join(sorted(_KEYS))}."
        )
    parent = data.get("extends")
    if parent is None:
        return {k: v for k, v in data.items() if k != "extends"}
    if parent in seen:
        raise ConfigError(f"{origin}: 'extends' makes a cycle ({' -> '.join((*seen, parent))}).")
    base_data, base_origin = _resolve_source(parent)
    base = _expand(base_data, base_origin, (*seen, str(parent)))
    return _merge(base, {k: v for k, v in data.items() if k != "extends"})


def load_config(spec: Any = None, **overrides: Any) -> AuditConfig:
    """Build an AuditConfig from a pack name, file, dict or AuditConfig, then apply overrides."""
    if isinstance(spec, AuditConfig):
        data, origin = spec.to_dict(), spec.pack or "AuditConfig"
    elif spec is None:
        data, origin = _resolve_source(DEFAULT_PACK)
    elif isinstance(spec, dict):
        data, origin = dict(spec), "config dict"
    elif isinstance(spec, (str, Path)):
        data, origin = _resolve_source(spec)
    else:
        raise ConfigError(
            f"config={type(spec).__name__}: pass a pack name, a path, a dict or an AuditConfig."
        )
    data = _expand(data, origin)
    over = {k: v for k, v in overrides.items() if v is not None}
    unknown = sorted(set(over) - _KEYS)
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r}." + close_matches(unknown[0], _KEYS))
    data = _merge(data, over)
    data.setdefault("pack", origin)
    for key in ("rules", "columns"):
        if data.get(key) is None:
            data[key] = {}
        if not isinstance(data[key], dict):
            raise ConfigError(
                f"{origin}: {key!r} must be a mapping, got {type(data[key]).__name__}."
            )
    config = AuditConfig(**data)
    config.validate()
    return config


def _type_ok(value: Any, default: Any, annotation: Any) -> bool:
    if value is None or default is None or default is inspect.Parameter.empty:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, str):
        return isinstance(value, str)
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple))
    if isinstance(default, dict):
        return isinstance(value, dict)
    return True


def build_rule(cls: type[Rule], options: dict[str, Any]) -> tuple[Rule, Severity]:
    """Instantiate a rule from its config options, checking names and types."""
    options = dict(options or {})
    severity = Severity.parse(options.pop("severity", cls.severity), option=f"{cls.code}.severity")
    specs = cls.option_specs()
    for name, value in options.items():
        if name not in specs:
            valid = ", ".join(["severity", *specs]) or "severity"
            raise ConfigError(
                f"rule {cls.code} ({cls.name}) has no option {name!r}."
                + close_matches(name, specs)
                + f" Its options: {valid}."
            )
        spec = specs[name]
        if not _type_ok(value, spec.default, spec.annotation):
            raise ConfigError(
                f"{cls.code}.{name}={value!r}: expected a value like its default "
                f"{spec.default!r} ({type(spec.default).__name__})."
            )
    try:
        rule = cls(**options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{cls.code}: invalid options {options}: {exc}") from None
    check = getattr(rule, "check_options", None)
    if check is not None:
        try:
            check()
        except ValueError as exc:
            raise ConfigError(f"{cls.code} ({cls.name}): {exc}") from None
    return rule, severity

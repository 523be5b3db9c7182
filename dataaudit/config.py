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
import math
import os
import re
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import xxhash

from .errors import ConfigError, InputError, close_matches
from .rule import ROLE_NAMES, Rule, Severity

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
    # selectors that must run, or the gate fails
    require_rules: list[str] = field(default_factory=list)
    require_roles: list[str] = field(default_factory=list)  # column roles the data must have
    # a record the readers cannot read: error (stop), or skip (INPUT001 lists each one)
    on_bad_lines: str = "error"
    # accepted findings (`dataaudit baseline`): reported as suppressed, left out of the verdict
    baseline: str | None = None
    # how far a metric may move before `dataaudit diff` calls it a change: "CODE.METRIC" ->
    # an amount in the metric's units, or "N%" of its larger value (see report/diff.py)
    tolerances: dict[str, float | str] = field(default_factory=dict)
    # a model's predictions for the EVAL rules: a file or a column name (arrays: audit() only)
    predictions: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def hash(self) -> str:
        """A hash of what decides the findings. ``workers`` and ``batch_size`` only decide how
        the scan runs (same report for any value), so they are hashed at their defaults: any
        value gives one hash, the hash that older reports (which hashed them) got by default."""
        # tolerances only tell a diff how to read two reports; the audit never looks at them
        body = {k: v for k, v in self.to_dict().items() if k not in ("pack", "tolerances")}
        body.update(workers=1, batch_size=8192)
        for key in _HASH_IF_SET:  # keys added later: unset, they keep older reports' hashes
            if not body.get(key):
                body.pop(key, None)
        if body.get("on_bad_lines") == "error":
            body.pop("on_bad_lines")
        blob = json.dumps(body, sort_keys=True, default=str).encode()
        return xxhash.xxh3_64_hexdigest(blob)

    def validate(self, origin: str = "AuditConfig") -> None:
        """Check every field's type and value; normalize comma strings into lists."""
        for key, value in _check(self.to_dict(), origin).items():
            setattr(self, key, value)


_KEYS = {f.name for f in fields(AuditConfig)} | {"extends"}
_HASH_IF_SET = ("require_rules", "require_roles", "baseline", "predictions")
_SELECTOR_LISTS = ("select", "extend_select", "ignore", "require_rules")
_POSITIVE_INTS = ("batch_size", "max_examples", "example_chars", "workers")
_OPTIONAL_STRINGS = ("split", "tokenizer", "reference", "pack", "baseline", "predictions")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_role(role: Any, where: str) -> None:
    if not isinstance(role, str) or role not in ROLE_NAMES:
        raise ConfigError(
            f"{where}: {_show(role)} is not a column role."
            + (close_matches(role, ROLE_NAMES) if isinstance(role, str) else "")
            + f" Roles: {', '.join(ROLE_NAMES)}."
        )


def _str_list(value: Any, where: str, what: str, *, commas: bool) -> list[str]:
    """A list of non-empty strings; a single string is one item (split on commas if asked)."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()] if commas else [value]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{where}={_show(value)}: expected a list of {what}.")
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(
                f"{where}: item {_show(item)} is not a {what[:-1]}; expected a list of {what}."
            )
    return [v.strip() for v in value]


def _check(data: dict[str, Any], origin: str) -> dict[str, Any]:
    """Check the type and value of every known key in one config source.

    ``origin`` (a file path, a pack name, "config dict", "audit() arguments") starts every
    message, so a wrong value is found where it was written. Returns normalized values.
    """
    out = dict(data)
    for key, value in data.items():
        where = f"{origin}: {key}"
        if key in _SELECTOR_LISTS:
            if value is None and key == "select":
                continue
            if value is None:
                out[key] = []
                continue
            out[key] = _str_list(value, where, "rule codes, prefixes, names or groups", commas=True)
        elif key == "require_roles":
            roles = _str_list(value or [], where, "column roles", commas=True)
            for role in roles:
                _check_role(role, where)
            out[key] = roles
        elif key == "contamination_ref":
            what = "benchmark file paths"
            out[key] = [] if value is None else _str_list(value, where, what, commas=False)
        elif key == "on_bad_lines":
            if value not in ("error", "skip"):
                raise ConfigError(
                    f"{where}={_show(value)}: use 'error' (stop at the first record that cannot "
                    "be read: the default for a gate) or 'skip' (skip it and list it in the report)."
                )
        elif key == "fail_on":
            severity = Severity.parse(value, option=where)
            if severity is Severity.INFO:
                raise ConfigError(
                    f"{where}='info' would fail on every note; use 'warn' or 'error'."
                )
            out[key] = severity.value
        elif key in _POSITIVE_INTS or key == "seed":
            low = 0 if key == "seed" else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                kind = "a non-negative integer" if low == 0 else "a positive integer"
                raise ConfigError(f"{where}={_show(value)}: expected {kind}.")
        elif key in _OPTIONAL_STRINGS:
            if isinstance(value, os.PathLike) and key != "split":
                out[key] = value = os.fspath(value)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(f"{where}={_show(value)}: expected a string or nothing (null).")
        elif key == "extends":
            if isinstance(value, os.PathLike):
                out[key] = value = os.fspath(value)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(
                    f"{where}={_show(value)}: expected one pack name or config file path."
                )
        elif key == "rules":
            out[key] = _check_rules(value, where)
        elif key == "columns":
            out[key] = _check_columns(value, where)
        elif key == "tolerances":
            out[key] = _check_tolerances(value, where)
    return out


_TOLERANCE_KEY = re.compile(r"^([A-Za-z]{2,5}[0-9]{3})\.(.+)$")


def parse_tolerance(key: Any, value: Any, where: str) -> tuple[str, float | str]:
    """One metric tolerance: ``("CODE.metric", amount)`` with the amount a number >= 0 in the
    metric's units or a string ``"N%"`` of the metric's larger value."""
    example = "e.g. TOK001.js=0.005 or LBL003.label_cramers_v=10%"
    m = _TOLERANCE_KEY.match(key.strip()) if isinstance(key, str) else None
    if m is None:
        raise ConfigError(
            f"{where}: {_show(key)} does not name a metric; expected CODE.METRIC ({example}; "
            "the metric names are in the report and in `dataaudit diff` output)."
        )
    name = f"{m.group(1).upper()}.{m.group(2).strip()}"
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if number and value >= 0 and math.isfinite(value):
        return name, value
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            share = float(value.strip()[:-1])
        except ValueError:
            share = -1.0
        if share >= 0 and math.isfinite(share):
            return name, f"{share:g}%"
    raise ConfigError(
        f"{where}: {name}={_show(value)}: expected an amount >= 0 in the metric's units or a "
        f"percentage of its value ({example})."
    )


def _check_tolerances(value: Any, where: str) -> dict[str, float | str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(
            f"{where}={_show(value)}: expected a mapping of CODE.METRIC to a tolerance, e.g. "
            "{TOK001.js: 0.005, LBL003.label_cramers_v: 10%}."
        )
    return dict(parse_tolerance(k, v, where) for k, v in value.items())


def _check_rules(value: Any, where: str) -> dict[str, dict[str, Any]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(
            f"{where}={_show(value)}: expected a mapping of rule code to options, "
            "e.g. {DUP002: {threshold: 0.85}}."
        )
    rules: dict[str, dict[str, Any]] = {}
    for code, opts in value.items():
        if not isinstance(code, str):
            raise ConfigError(f"{where}: {_show(code)} is not a rule code (expected a string).")
        if opts is None:
            opts = {}
        if not isinstance(opts, dict):
            raise ConfigError(
                f"{where}.{code}={_show(opts)}: expected a mapping of options, e.g. "
                f"{{{code}: {{severity: error}}}}; see `dataaudit explain {code}`."
            )
        for name in opts:
            if not isinstance(name, str):
                raise ConfigError(f"{where}.{code}: option name {_show(name)} is not a string.")
        rules[code] = dict(opts)
    return rules


def _check_columns(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(
            f"{where}={_show(value)}: expected a mapping of role to column, e.g. "
            "{text: content, label: y}."
        )
    for role, column in value.items():
        _check_role(role, where)
        if not isinstance(column, str) or not column:
            raise ConfigError(f"{where}.{role}={_show(column)}: expected a column name (a string).")
    return dict(value)


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


def _decode(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config ({exc}).") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {exc.start} is 0x{exc.object[exc.start]:02x}); "
            "save the config as UTF-8."
        ) from None


def _read_file(path: Path) -> dict[str, Any]:
    text = _decode(path)
    if path.suffix.lower() == ".toml":
        data = _read_toml(path, text)
        if path.name != "pyproject.toml":
            return data
        table = _tool_table(path, data)
        if table is None:
            raise ConfigError(f"{path}: has no [tool.dataaudit] table.")
        return table
    import yaml

    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError) as exc:
        raise ConfigError(f"{path}: invalid YAML ({exc}).") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config must be a mapping of keys, got {type(data).__name__}.")
    return data


def _read_pack(name: str) -> dict[str, Any]:
    """A built-in rule pack: parsed from its YAML once, then from a JSON copy kept with the
    package (keyed by the YAML's bytes) while the YAML is unchanged. The YAML parser's import
    alone was ~0.011 s of every audit's start-up; a pack that JSON cannot hold as it is (not
    string keys, NaN) is parsed each time."""
    from ._cache import cache_file, write_quietly

    path = pack_dir() / f"{name}.yaml"
    try:
        digest = xxhash.xxh3_128_hexdigest(path.read_bytes())
    except OSError:
        return _read_file(path)  # which says what is wrong with it
    kept = cache_file(Path(__file__).resolve().parent, f"pack-{name}.json")
    try:
        if kept is not None:
            copy_ = json.loads(kept.read_bytes())
            if copy_.get("yaml") == digest and isinstance(copy_.get("data"), dict):
                return copy_["data"]
    except (OSError, ValueError, AttributeError):
        pass
    data = _read_file(path)
    try:
        blob = json.dumps({"yaml": digest, "data": data}, allow_nan=False).encode()
        same = json.loads(blob)["data"] == data
    except (TypeError, ValueError):
        same = False
    if kept is not None and same:
        write_quietly(kept, lambda f: f.write(blob))
    return data


def _read_toml(path: Path, text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(f"{path}: invalid TOML ({exc}); fix the file.") from None


def _tool_table(path: Path, data: dict[str, Any]) -> dict[str, Any] | None:
    """pyproject's [tool.dataaudit] table, or None when there is none."""
    tool = data.get("tool", {})
    table = tool.get("dataaudit") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(
            f"{path}: tool.dataaudit must be a table ([tool.dataaudit]), "
            f"got {type(table).__name__}."
        )
    return table


def discover_pyproject(directory: str | Path = ".") -> str | None:
    """The pyproject.toml in ``directory`` if it configures dataaudit, else None.

    A pyproject.toml that cannot be read or parsed is an error when it mentions dataaudit (its
    settings, such as ``fail_on``, would otherwise be lost without a word); one that does not
    mention dataaudit at all is not ours and is ignored.
    """
    path = Path(directory) / "pyproject.toml"
    if not path.is_file():
        return None
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read it ({exc}), so its [tool.dataaudit] settings cannot be "
            "checked; fix its permissions or pass --config."
        ) from None
    if b"dataaudit" not in raw:
        return None
    if _tool_table(path, _read_toml(path, _decode(path))) is None:
        return None  # e.g. the project depends on dataaudit but does not configure it
    return str(path)


def _resolve_source(
    spec: str | Path, base: Path | None = None
) -> tuple[dict[str, Any], str, Path, str]:
    """(data, origin for messages, directory its own ``extends`` resolve against, identity).

    A relative path resolves against ``base``: the directory of the file that names it (or the
    working directory at the top level).
    """
    text = str(spec)
    path = Path(text).expanduser()
    if base is not None and not path.is_absolute():
        path = base / path
    if path.suffix.lower() in (".yaml", ".yml", ".toml") or path.is_file():
        if not path.is_file():
            where = (
                f" (relative to {base}, the directory of the file that extends it)" if base else ""
            )
            raise ConfigError(f"{path}: config file not found{where}.")
        return _read_file(path), str(path), path.resolve().parent, str(path.resolve())
    packs = available_packs()
    if text in packs:
        return _read_pack(text), text, pack_dir(), f"pack:{text}"
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
        elif key in ("columns", "tolerances") and isinstance(value, dict):
            out[key] = {**out.get(key, {}), **value}
        else:
            out[key] = copy.deepcopy(value)
    return out


def _expand(
    data: dict[str, Any], origin: str, base: Path | None, seen: tuple[str, ...] = ()
) -> dict[str, Any]:
    unknown = sorted(str(k) for k in data if k not in _KEYS)
    if unknown:
        raise ConfigError(
            f"{origin}: unknown key {unknown[0]!r}."
            + close_matches(unknown[0], _KEYS)
            + f" Valid keys: {', '.join(sorted(_KEYS))}."
        )
    data = _check(data, origin)
    if base is not None:
        _resolve_paths(data, base)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    base_data, base_origin, base_dir, ident = _resolve_source(parent, base)
    if ident in seen:
        chain = " -> ".join((*seen, ident))
        raise ConfigError(f"{origin}: 'extends' makes a cycle ({chain}).")
    return _merge(_expand(base_data, base_origin, base_dir, (*seen, ident)), data)


#: keys whose value may be a file a config names (else a column, a Hub name or a URL)
_FILE_KEYS = ("reference", "baseline", "predictions", "tokenizer")


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    """A relative file a config names is beside the config, as its ``extends`` is: kept as the
    path from the working directory (so the config hash does not depend on where the checkout
    is), when the file exists there; else the value stays as written (a column name, a Hub
    name, a path from the working directory as before)."""
    import os

    for key in _FILE_KEYS:
        value = data.get(key)
        if not isinstance(value, str) or "://" in value or Path(value).expanduser().is_absolute():
            continue
        beside = base / value
        if beside.exists() and base.resolve() != Path.cwd().resolve():
            data[key] = os.path.relpath(beside)


def load_config(spec: Any = None, **overrides: Any) -> AuditConfig:
    """Build an AuditConfig from a pack name, file, dict or AuditConfig, then apply overrides."""
    base: Path | None = None
    seen: tuple[str, ...] = ()
    if isinstance(spec, AuditConfig):
        data, origin = spec.to_dict(), "AuditConfig"
    elif spec is None:
        data, origin, base, ident = _resolve_source(DEFAULT_PACK)
        seen = (ident,)
    elif isinstance(spec, dict):
        data, origin = dict(spec), "config dict"
    elif isinstance(spec, (str, Path)):
        data, origin, base, ident = _resolve_source(spec)
        seen = (ident,)
    else:
        raise ConfigError(
            f"config={type(spec).__name__}: pass a pack name, a path, a dict or an AuditConfig."
        )
    data = _expand(data, origin, base, seen)
    over = {k: v for k, v in overrides.items() if v is not None}
    unknown = sorted(set(over) - _KEYS)
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r}." + close_matches(unknown[0], _KEYS))
    data = _merge(data, _check(over, "audit() arguments"))
    data.setdefault("pack", origin)
    data.setdefault("rules", {})
    data.setdefault("columns", {})
    config = AuditConfig(**data)
    config.validate(origin)
    return config


def check_required_roles(config: AuditConfig, corpus: Any) -> None:
    """Fail before the scan when the data lacks a column role that ``require_roles`` names."""
    missing = [role for role in config.require_roles if not corpus.roles.has(role)]
    if not missing:
        return
    columns: list[str] = []
    for split in corpus.splits.values():
        schema = getattr(split, "schema", None)
        columns += [n for n in (schema.names if schema is not None else []) if n not in columns]
    shown = ", ".join(repr(c) for c in columns[:30]) + (" ..." if len(columns) > 30 else "")
    roles = ", ".join(missing)
    raise InputError(
        f"require_roles: no {roles} column was found in the data (its columns: "
        f"{shown or 'none known'}). Name the column with "
        + " ".join(f"--{r} COLUMN" for r in missing)
        + f" (audit({', '.join(f'{r}=COLUMN' for r in missing)})), or remove {roles} from "
        "require_roles."
    )


def _type_ok(value: Any, default: Any, annotation: Any) -> bool:
    if default is None or default is inspect.Parameter.empty:
        return True
    if value is None:  # null only where the option's annotation allows it
        return "None" in str(annotation) or "Optional" in str(annotation)
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
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

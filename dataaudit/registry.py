"""Which rules exist (built in and from plugins) and which ones a configuration selects.

Selection follows ruff: ``select`` and ``extend_select`` add rules, ``ignore`` removes them; a
selector is ``ALL``, a group (``default``), a code prefix (``DUP``), a name or a code
(``DUP002`` / ``duplicates.near``). When two selectors match a rule, the more specific one wins;
``ignore`` wins ties. Preview (``stable = False``) rules run only when selected by code or name.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import re
import sys
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, PluginError, close_matches
from .rule import Rule

if TYPE_CHECKING:
    from importlib import metadata

ENTRY_POINT_GROUP = "dataaudit.rules"
_PREFIX_RE = re.compile(r"^([A-Z]+)")


@dataclass(frozen=True)
class Builtin:
    """What selection needs of a built-in rule, without importing its module.

    ``load_rules`` imported every rule module to read these four attributes (~0.05 CPU-s of
    each process's start-up); now an audit imports only the modules of the rules it runs
    (``--select DUP002``: resolving the rules 0.060 -> 0.039 CPU-s, bytecode cached). The
    table below is checked against the classes by tests/test_registry.py.
    """

    code: str
    module: str  # under dataaudit.rules
    qualname: str
    name: str
    groups: tuple[str, ...]
    stable: bool = True

    def load(self) -> type[Rule]:
        cls = getattr(importlib.import_module(f"dataaudit.rules.{self.module}"), self.qualname)
        cls.validate_class()
        return cls


_D = "default"
BUILTIN = (
    Builtin("DUP001", "duplicates.exact", "ExactDuplicates", "duplicates.exact", (_D, "duplicates")),
    Builtin("DUP002", "duplicates.near", "NearDuplicates", "duplicates.near", (_D, "duplicates")),
    Builtin("EVAL001", "eval.per_class", "PerClassFailures", "eval.per-class-failures",
            ("predictions", "eval")),
    Builtin("EVAL002", "eval.slices", "FailureSlices", "eval.failure-slices",
            ("predictions", "eval")),
    Builtin("EVAL003", "eval.error_types", "ErrorTypes", "eval.error-types",
            ("predictions", "eval")),
    Builtin("FMT001", "format.role_values", "RoleValues", "format.role-values", (_D, "format")),
    Builtin("FMT002", "format.structure", "ConversationStructure",
            "format.conversation-structure", ("sft", "format")),
    Builtin("FMT003", "format.structured_targets", "StructuredTargets",
            "format.structured-targets", ("sft", "format")),
    Builtin("FMT004", "format.loss_masks", "LossMasks", "format.loss-masks", ("sft", "format")),
    Builtin("GX001", "expectations.suite", "ExpectationSuite", "expectations.suite",
            ("expectations",)),
    Builtin("INPUT001", "input.integrity", "InputIntegrity", "input.integrity", (_D, "input")),
    Builtin("LBL001", "labels.conflicting_labels", "ConflictingLabels", "labels.conflicting",
            (_D, "labels")),
    Builtin("LBL002", "labels.likely_mislabels", "LikelyMislabels", "labels.likely-mislabeled",
            (_D, "labels")),
    Builtin("LBL003", "labels.class_balance", "ClassBalance", "labels.class-balance",
            (_D, "labels")),
    Builtin("LBL004", "labels.memorization", "Memorization", "labels.memorization",
            (_D, "labels")),
    Builtin("LEAK001", "leakage.overlap", "TrainEvalOverlap", "leakage.train-eval-overlap",
            (_D, "leakage")),
    Builtin("LEAK002", "leakage.contamination", "NgramContamination",
            "leakage.ngram-contamination", (_D, "leakage")),
    Builtin("LEN001", "length.truncation", "Truncation", "length.truncation", (_D, "length")),
    Builtin("LEN002", "length.outliers", "LengthOutliers", "length.outliers", (_D, "length")),
    Builtin("LEN003", "length.drift", "LengthDrift", "length.drift", (_D, "length", "drift")),
    Builtin("MIX001", "mixture.proportions", "MixtureProportions", "mixture.proportions",
            (_D, "mixture", "drift")),
    Builtin("SHIFT001", "shift.domain_classifier", "DomainShift", "shift.domain-classifier",
            (_D, "shift", "drift")),
    Builtin("TOK001", "tokens.drift", "TokenDrift", "tokens.drift", (_D, "tokens", "drift")),
    Builtin("TOK002", "tokens.unknown", "UnknownTokens", "tokens.unknown", (_D, "tokens")),
    Builtin("TOK003", "tokens.round_trip", "TokenizerRoundTrip", "tokens.round-trip",
            ("sft", "tokens")),
    Builtin("TXT001", "content.empty_text", "EmptyText", "content.empty-text", (_D, "content")),
    Builtin("TXT002", "content.encoding", "EncodingDamage", "content.encoding-damage",
            (_D, "content")),
    Builtin("TXT003", "content.extreme_length", "ExtremeLength", "content.extreme-length",
            (_D, "content")),
)  # fmt: skip

#: a rule as selection sees it: its class, or a built-in's table row until its class is needed
RuleInfo = Any


class Rules(MutableMapping):  # type: ignore[type-arg]
    """code -> rule class; a built-in's module is imported when its class is first asked for
    (``rules[code]``, ``.get``, ``.values()``), not when it is listed or selected."""

    def __init__(self, entries: dict[str, RuleInfo] | None = None):
        self._entries: dict[str, RuleInfo] = dict(entries or {})

    def __getitem__(self, code: str) -> type[Rule]:
        entry = self._entries[code]
        if isinstance(entry, Builtin):
            entry = self._entries[code] = entry.load()
        return entry

    def __setitem__(self, code: str, cls: RuleInfo) -> None:
        self._entries[code] = cls

    def __delitem__(self, code: str) -> None:
        del self._entries[code]

    def __contains__(self, code: object) -> bool:
        return code in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def info(self, code: str) -> RuleInfo:
        """The class if loaded, else the built-in's row: code, name, groups, stable either way."""
        return self._entries[code]

    def infos(self) -> list[RuleInfo]:
        return list(self._entries.values())

    def copy(self) -> Rules:
        return Rules(self._entries)


@dataclass
class RuleSet:
    rules: Rules = field(default_factory=Rules)  # code -> class
    origin: dict[str, str] = field(default_factory=dict)  # code -> "dataaudit" or distribution
    plugin_errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.rules, Rules):  # RuleSet({code: cls}, ...)
            self.rules = Rules(self.rules)

    @property
    def groups(self) -> set[str]:
        return {g for info in self.rules.infos() for g in info.groups}

    def names(self) -> dict[str, str]:
        """rule name -> code, without importing any rule module."""
        return {info.name: info.code for info in self.rules.infos()}

    def get(self, code_or_name: str) -> type[Rule]:
        code = code_or_name.upper()
        if code not in self.rules:
            code = self.names().get(code_or_name, "")
        cls = self.rules.get(code)
        if cls is None:
            known = list(self.rules) + list(self.names())
            raise ConfigError(
                f"unknown rule {code_or_name!r}."
                + close_matches(code_or_name, known)
                + " Run `dataaudit rules` to list them."
            )
        return cls


def prefix_of(code: str) -> str:
    m = _PREFIX_RE.match(code)
    return m.group(1) if m else code


def _rules_in_module(module: ModuleType) -> list[type[Rule]]:
    return [
        obj
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if issubclass(obj, Rule)
        and obj is not Rule
        and obj.__module__ == module.__name__
        and obj.code
    ]


def _walk_builtin() -> list[type[Rule]]:
    """Every rule class in dataaudit.rules (imports them all): what BUILTIN must list."""
    from . import rules as rules_pkg

    found: list[type[Rule]] = []
    for info in pkgutil.walk_packages(rules_pkg.__path__, rules_pkg.__name__ + "."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        found.extend(_rules_in_module(importlib.import_module(info.name)))
    return found


def _add(ruleset: RuleSet, cls: type[Rule], origin: str) -> None:
    cls.validate_class()
    if cls.code in ruleset.rules and ruleset.rules.info(cls.code) is not cls:
        raise PluginError(
            f"rule code {cls.code} from {origin} is already used by {ruleset.origin[cls.code]}"
        )
    ruleset.rules[cls.code] = cls
    ruleset.origin[cls.code] = origin


def _load_plugin_entry(ep: metadata.EntryPoint) -> list[type[Rule]]:
    obj = ep.load()
    if inspect.isclass(obj) and issubclass(obj, Rule):
        return [obj]
    if isinstance(obj, ModuleType):
        return _rules_in_module(obj)
    if isinstance(obj, (list, tuple)) and all(
        inspect.isclass(o) and issubclass(o, Rule) for o in obj
    ):
        return list(obj)
    raise PluginError(f"entry point {ep.name} = {ep.value} is not a Rule subclass, list or module")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return (
            f"it called sys.exit({exc.code!r}) while loading; the plugin was skipped "
            "(a plugin must not exit the process)"
        )
    if isinstance(exc, (PluginError, ImportError)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _path_stamp() -> list[list[Any]]:
    """Each import path entry with its modification time: installing or removing a package
    adds or deletes a folder (its ``.dist-info``) in its entry, which changes that time. The
    program's own folder that Python puts first (the working directory with ``-m`` and
    ``-c``) changes whenever a report is written there: it counts by the package metadata
    folders it holds (a plugin's ``.egg-info`` beside its source), not by its time."""
    stamp: list[list[Any]] = []
    own = 0 if getattr(sys.flags, "safe_path", False) else 1
    if own:
        try:
            names = os.listdir(sys.path[0] or ".")
        except (OSError, IndexError, ValueError):
            names = []
        meta = sorted(n for n in names if n.endswith((".dist-info", ".egg-info")))
        stamp.append([sys.path[0] if sys.path else None, meta])
    for entry in sys.path[own:]:
        try:
            stamp.append([entry, os.stat(entry or ".").st_mtime_ns])
        except (OSError, ValueError):
            stamp.append([entry, None])
    return stamp


def _no_plugins_file() -> Path | None:
    from ._cache import cache_file

    return cache_file(Path(__file__).resolve().parent, "no-plugins.json")


def _no_plugins_known() -> bool:
    """Whether the last look at the installed packages' entry points found none of ours, and
    no import path entry changed since. Looking takes importlib.metadata's import and a read
    of every package's metadata (~0.025 s of each process's start-up, with ~100 packages)."""
    path = _no_plugins_file()
    try:
        return path is not None and json.loads(path.read_bytes()) == _path_stamp()
    except (OSError, ValueError):
        return False


def _remember_no_plugins() -> None:
    from ._cache import write_quietly

    path = _no_plugins_file()
    if path is not None:
        blob = json.dumps(_path_stamp()).encode()
        write_quietly(path, lambda f: f.write(blob))


def _plugin_entry_points() -> list[metadata.EntryPoint]:
    """The installed entry points of :data:`ENTRY_POINT_GROUP`, by name."""
    if _no_plugins_known():
        return []
    from importlib import metadata

    found = sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
    if not found:
        _remember_no_plugins()
    return found


@lru_cache(maxsize=1)
def load_rules() -> RuleSet:
    ruleset = RuleSet()
    for row in BUILTIN:
        ruleset.rules[row.code] = row
        ruleset.origin[row.code] = "dataaudit"
    builtin_prefixes = {prefix_of(c) for c in ruleset.rules}
    owners: dict[str, str] = {p: "dataaudit" for p in builtin_prefixes}
    for ep in _plugin_entry_points():
        dist = ep.dist.name if getattr(ep, "dist", None) else ep.name
        try:
            classes = _load_plugin_entry(ep)
            for cls in classes:
                cls.validate_class()
                owner = owners.get(prefix_of(cls.code))
                if owner is not None and owner != dist:
                    raise PluginError(
                        f"rule {cls.code} uses the code prefix {prefix_of(cls.code)}, which belongs "
                        f"to {owner}; a plugin must own its prefix"
                    )
            for cls in classes:
                owners[prefix_of(cls.code)] = dist
                _add(ruleset, cls, dist)
        except KeyboardInterrupt:  # Ctrl-C (and SIGTERM, see cli.Terminated) still stop the run
            raise
        except BaseException as exc:  # noqa: BLE001 - a plugin's sys.exit() must not end the audit
            ruleset.plugin_errors.append(
                f"plugin {dist} ({ep.name} = {ep.value}): {_describe(exc)}"
            )
    return ruleset


def with_extra_rules(ruleset: RuleSet, classes: list[type[Rule]] | None) -> RuleSet:
    """``ruleset`` plus rule classes passed to one audit (``audit(..., extra_rules=[...])``): a
    rule runs without packaging an entry point. Checked as plugins are (a code of 2-5 capital
    letters and 3 digits, not a built-in's or a plugin's prefix); the shared ruleset is not
    changed."""
    if not classes:
        return ruleset
    out = RuleSet(ruleset.rules.copy(), dict(ruleset.origin), list(ruleset.plugin_errors))
    owners = {prefix_of(code): origin for code, origin in ruleset.origin.items()}
    for cls in classes:
        if not (inspect.isclass(cls) and issubclass(cls, Rule)):
            raise ConfigError(
                f"extra_rules: {cls!r} is not a Rule subclass; pass the classes themselves, "
                "e.g. extra_rules=[MyRule]."
            )
        try:
            cls.validate_class()
        except PluginError as exc:
            raise ConfigError(f"extra_rules: {exc}") from None
        if cls.code in ruleset.rules and ruleset.rules.info(cls.code) is cls:
            continue  # already registered (a plugin installed while it is developed)
        if cls.code in out.rules and out.rules.info(cls.code) is not cls:
            raise ConfigError(
                f"extra_rules: {cls.code} is already the code of "
                f"{out.rules[cls.code].__qualname__} ({out.origin[cls.code]}); choose another code."
            )
        owner = owners.get(prefix_of(cls.code))
        if owner is not None and owner != "extra_rules":
            raise ConfigError(
                f"extra_rules: {cls.code} uses the code prefix {prefix_of(cls.code)}, which belongs "
                f"to {owner}; give your rules a prefix of their own (2-5 capital letters)."
            )
        owners[prefix_of(cls.code)] = "extra_rules"
        out.rules[cls.code] = cls
        out.origin[cls.code] = "extra_rules"
    return out


def _specificity(selector: str, cls: RuleInfo) -> int | None:
    """How specifically ``selector`` names ``cls`` (a class or a :class:`Builtin` row; higher
    wins), or None if it does not."""
    if selector == "ALL":
        return 0
    if selector in (cls.code, cls.name):
        return 1000
    if selector in cls.groups:
        return 1
    if selector.isupper() and cls.code.startswith(selector):
        return 10 + len(selector)
    if cls.name.startswith(selector + "."):
        return 10 + selector.count(".") + 1
    return None


def _check_selectors(selectors: list[str], ruleset: RuleSet, option: str) -> None:
    for sel in selectors:
        if any(_specificity(sel, info) is not None for info in ruleset.rules.infos()):
            continue
        valid = sorted(ruleset.groups | {prefix_of(c) for c in ruleset.rules}) + ["ALL"]
        known = valid + list(ruleset.rules) + list(ruleset.names())
        raise ConfigError(
            f"{option}: {sel!r} matches no rule."
            + close_matches(sel, known)
            + f" Use a code (e.g. {next(iter(ruleset.rules), 'TXT001')}), a prefix or a group: "
            + ", ".join(valid)
            + "."
        )


def select_rules(
    ruleset: RuleSet,
    select: list[str] | None,
    extend_select: list[str] | None = None,
    ignore: list[str] | None = None,
) -> list[type[Rule]]:
    select = list(select) if select is not None else ["default"]
    extend_select = list(extend_select or [])
    ignore = list(ignore or [])
    for option, sels in (("select", select), ("extend_select", extend_select), ("ignore", ignore)):
        _check_selectors(sels, ruleset, option)
    chosen = []
    for code in sorted(ruleset.rules):
        cls = ruleset.rules.info(code)
        best_in = max(
            (s for s in (_specificity(x, cls) for x in select + extend_select) if s is not None),
            default=None,
        )
        best_out = max(
            (s for s in (_specificity(x, cls) for x in ignore) if s is not None), default=None
        )
        if best_in is None or (best_out is not None and best_out >= best_in):
            continue
        if not cls.stable and best_in < 1000:
            continue
        chosen.append(ruleset.rules[code])  # the only rule modules an audit imports
    return chosen


def required_codes(ruleset: RuleSet, selectors: list[str] | None) -> list[str]:
    """The codes that ``require_rules`` selectors name, matched as ``select`` matches them.

    A selector that names no rule is a ConfigError before the scan (a typo there would make
    the requirement vacuous); the message mentions plugins that failed to load.
    """
    selectors = list(selectors or [])
    try:
        _check_selectors(selectors, ruleset, "require_rules")
    except ConfigError as exc:
        if not ruleset.plugin_errors:
            raise
        raise ConfigError(
            f"{exc} Plugins that failed to load: {'; '.join(ruleset.plugin_errors)}"
        ) from None
    return [cls.code for cls in select_rules(ruleset, selectors)] if selectors else []

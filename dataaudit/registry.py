"""Which rules exist (built in and from plugins) and which ones a configuration selects.

Selection follows ruff: ``select`` and ``extend_select`` add rules, ``ignore`` removes them; a
selector is ``ALL``, a group (``default``), a code prefix (``DUP``), a name or a code
(``DUP002`` / ``duplicates.near``). When two selectors match a rule, the more specific one wins;
``ignore`` wins ties. Preview (``stable = False``) rules run only when selected by code or name.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from types import ModuleType

from .errors import ConfigError, PluginError, close_matches
from .rule import Rule

ENTRY_POINT_GROUP = "dataaudit.rules"
_PREFIX_RE = re.compile(r"^([A-Z]+)")


@dataclass
class RuleSet:
    rules: dict[str, type[Rule]] = field(default_factory=dict)  # code -> class
    origin: dict[str, str] = field(default_factory=dict)  # code -> "dataaudit" or distribution
    plugin_errors: list[str] = field(default_factory=list)

    @property
    def groups(self) -> set[str]:
        return {g for cls in self.rules.values() for g in cls.groups}

    def by_name(self) -> dict[str, type[Rule]]:
        return {cls.name: cls for cls in self.rules.values()}

    def get(self, code_or_name: str) -> type[Rule]:
        cls = self.rules.get(code_or_name.upper()) or self.by_name().get(code_or_name)
        if cls is None:
            known = list(self.rules) + list(self.by_name())
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
    from . import rules as rules_pkg

    found: list[type[Rule]] = []
    for info in pkgutil.walk_packages(rules_pkg.__path__, rules_pkg.__name__ + "."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        found.extend(_rules_in_module(importlib.import_module(info.name)))
    return found


def _add(ruleset: RuleSet, cls: type[Rule], origin: str) -> None:
    cls.validate_class()
    if cls.code in ruleset.rules and ruleset.rules[cls.code] is not cls:
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


@lru_cache(maxsize=1)
def load_rules() -> RuleSet:
    ruleset = RuleSet()
    for cls in sorted(_walk_builtin(), key=lambda c: c.code):
        _add(ruleset, cls, "dataaudit")
    builtin_prefixes = {prefix_of(c) for c in ruleset.rules}
    owners: dict[str, str] = {p: "dataaudit" for p in builtin_prefixes}
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
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
    out = RuleSet(dict(ruleset.rules), dict(ruleset.origin), list(ruleset.plugin_errors))
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
        if ruleset.rules.get(cls.code) is cls:
            continue  # already registered (a plugin installed while it is developed)
        if out.rules.get(cls.code, cls) is not cls:
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


def _specificity(selector: str, cls: type[Rule]) -> int | None:
    """How specifically ``selector`` names ``cls`` (higher wins), or None if it does not."""
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
        if any(_specificity(sel, cls) is not None for cls in ruleset.rules.values()):
            continue
        valid = sorted(ruleset.groups | {prefix_of(c) for c in ruleset.rules}) + ["ALL"]
        known = valid + list(ruleset.rules) + list(ruleset.by_name())
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
        cls = ruleset.rules[code]
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
        chosen.append(cls)
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

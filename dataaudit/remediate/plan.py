"""Which rows go, and whether the data is the data the report audited.

Which rows go: the flags of the selected rules (``drop``: codes, prefixes, names or groups, as
``select``) whose action is selected (``drop`` by default) and whose severity reaches
``severity``. A row goes if any selected flag says so; a rule's ``keep`` flag (a duplicate
cluster's representative, the eval side of a leak) never removes it. Flags name rows by position,
so the splits, their row counts and their content hashes are checked first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError, InputError
from ..rule import ACTIONS, Severity

if TYPE_CHECKING:
    import polars as pl

    from ..corpus import Corpus
    from ..report import Report

__all__ = ["BATCH_ROWS", "Plan", "check_same_data", "keep_masks", "load_audited", "plan"]

BATCH_ROWS = 8192


@dataclass
class Plan:
    """The rows to remove: per split, sorted positions; and the flags that remove them."""

    codes: list[str]  # the rules whose flags count
    drop: dict[str, np.ndarray]
    flags: pl.DataFrame  # the selected flags (split, row, id, code, ..., detail)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def removed(self) -> int:
        return sum(len(v) for v in self.drop.values())


def _as_list(value: list[str] | str | None, option: str) -> list[str] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str) else list(value)
    out = [s.strip() for item in items for s in str(item).split(",") if s.strip()]
    if not out:
        raise ConfigError(f"{option}: empty; give at least one value, or leave it out.")
    return out


def _selected_codes(report: Report, selectors: list[str] | None) -> list[str]:
    """The report's rules that ``selectors`` name (matched as ``select`` matches them)."""
    from ..registry import _check_selectors, _specificity, load_rules

    ran = [r["code"] for r in report.results]
    if selectors is None:
        return ran
    ruleset = load_rules()

    def matches(sel: str, code: str) -> bool:
        cls = ruleset.rules.get(code)
        if cls is not None:
            return _specificity(sel, cls) is not None
        # a plugin rule that is not installed here: match its code and prefix
        return sel in ("ALL", code) or (sel.isupper() and code.startswith(sel))

    chosen: set[str] = set()
    for sel in selectors:
        hit = [code for code in ran if matches(sel, code)]
        if not hit:
            _check_selectors([sel], ruleset, "drop")  # a typo: close matches and the fix
            raise ConfigError(
                f"drop: {sel!r} selects no rule of this report (it ran "
                f"{', '.join(ran) or 'no rules'}); audit with that rule selected first."
            )
        chosen.update(hit)
    return [code for code in ran if code in chosen]


def plan(
    report: Report,
    *,
    drop: list[str] | str | None = None,
    severity: str | Severity = "info",
    action: list[str] | str = "drop",
    splits: list[str] | str | None = None,
) -> Plan:
    """Which rows of which splits the selected flags remove (see the module docstring)."""
    import polars as pl

    selectors = _as_list(drop, "drop")
    least = Severity.parse(severity, option="severity")
    actions = _as_list(action, "action") or []
    for a in actions:
        if a not in ACTIONS or a == "keep":
            raise ConfigError(
                f"action: {a!r} cannot remove rows; use drop and/or review (keep marks the rows "
                "a rule keeps)."
            )
    known = list(report.data["dataset"]["splits"])
    only = _as_list(splits, "splits")
    for name in only or []:
        if name not in known:
            raise ConfigError(
                f"splits: no split {name!r} in this report; it has {', '.join(known)}."
            )
    flags = report.flags()
    codes = _selected_codes(report, selectors)
    ranks = {s.value: s.rank for s in Severity}
    selected = flags.filter(
        pl.col("code").is_in(codes)
        & pl.col("action").is_in(actions)
        & pl.col("severity").replace_strict(ranks, return_dtype=pl.Int64).ge(least.rank)
        & (pl.col("split").is_in(only) if only else pl.lit(True))
    )
    drop_rows: dict[str, np.ndarray] = {}
    for name in known:
        rows = selected.filter(pl.col("split") == name)["row"].unique().sort().to_numpy()
        drop_rows[name] = np.asarray(rows, np.int64)
    settings = {
        "drop": selectors,
        "codes": codes,
        "severity": least.value,
        "action": actions,
        "splits": only,
    }
    return Plan(codes, drop_rows, selected, settings)


def load_audited(report: Report, data: Any) -> Corpus:
    """``data`` read as the audit read it: the report's split column, roles and bad-line policy."""
    from ..corpus import load_corpus

    cfg = report.data.get("config", {})
    return load_corpus(
        data,
        split=cfg.get("split"),
        roles=cfg.get("columns") or None,
        on_bad_lines=cfg.get("on_bad_lines") or "error",
    )


def keep_mask(rows: int, drop: np.ndarray) -> np.ndarray:
    keep = np.ones(rows, bool)
    keep[drop[drop < rows]] = False
    return keep


def check_same_data(
    report: Report, corpus: Corpus, drop: dict[str, np.ndarray] | None = None
) -> dict[str, tuple[int, int]]:
    """InputError unless ``corpus`` has the report's splits, row counts and content hashes.

    Returns, per split, the (rows, sum of row hashes) of the rows that ``drop`` keeps, which a
    cleaned copy must read back as.
    """
    from ..identity import SplitIdentity, row_hashes

    expected = report.data["dataset"]["splits"]
    seen: dict[str, SplitIdentity] = {}
    kept: dict[str, list[int]] = {}
    for name, rb in corpus.stream(BATCH_ROWS):
        ident = seen.setdefault(name, SplitIdentity())
        start = ident.rows
        ident.update(rb)
        if drop is not None and rb.num_rows:
            keep = np.ones(rb.num_rows, bool)
            gone = drop.get(name, np.empty(0, np.int64))
            gone = gone[(gone >= start) & (gone < start + rb.num_rows)] - start
            keep[gone] = False
            acc = kept.setdefault(name, [0, 0])
            acc[0] += int(keep.sum())
            acc[1] = (acc[1] + int(row_hashes(rb)[keep].sum(dtype=np.uint64))) & ((1 << 64) - 1)
    hint = "Pass the data this report was made from, or audit this data again."
    if set(seen) != set(expected):
        raise InputError(
            f"the data has the splits {', '.join(seen) or '(none)'}, but the report audited "
            f"{', '.join(expected)}. {hint}"
        )
    for name, ident in seen.items():
        want = expected[name]
        if ident.rows != want["rows"]:
            raise InputError(
                f"split {name!r} has {ident.rows:,} rows, but the report audited {want['rows']:,}: "
                f"the flags name rows by position, so they cannot be applied. {hint}"
            )
        if ident.content_hash() != want["content_hash"]:
            raise InputError(
                f"split {name!r} has the report's {ident.rows:,} rows, but not their content "
                f"(content hash {ident.content_hash()}, the report's {want['content_hash']}). {hint}"
            )
    return {name: (v[0], v[1]) for name, v in kept.items()}


def keep_masks(report: Report, p: Plan) -> dict[str, np.ndarray]:
    """Per split, True for the rows the plan keeps (over the report's rows)."""
    rows = {name: s["rows"] for name, s in report.data["dataset"]["splits"].items()}
    return {name: keep_mask(rows[name], p.drop[name]) for name in rows}

"""Reference comparison: ``audit(new, reference=old)`` runs the drift rules between versions.

The plumbing is small and the same for every drift rule:

1. A drift rule sets ``reference_aware = True`` and implements ``sketch(state) -> dict``: a
   JSON-able summary of its mergeable state per split (histograms, token counts, source counts,
   samples). Rules whose sketch is safe and small to publish also put it in
   ``RuleResult.details["sketch"]``, so a *saved report* can serve as the reference later.
2. :func:`build_reference` (called by :func:`dataaudit.api.audit` once the main scan is set up)
   turns ``reference`` into ``{code: sketch}``: a dataset is scanned once with the same
   reference-aware rules, options and tokenizer (one pass, shared features, no ``finish``); a saved
   report (a ``Report`` or the path of its JSON) yields the sketches stored in its details.
3. At ``finish`` a drift rule reads :func:`reference_sketch` and compares every split with the
   reference split of the same name (or, failing that, of the same kind: train/validation/test).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InputError

if TYPE_CHECKING:
    from .config import AuditConfig
    from .context import AuditContext
    from .rule import Rule

__all__ = ["build_reference", "is_saved_report", "match_reference_split", "reference_sketch"]

_KEY = "_reference"


def is_saved_report(reference: Any) -> dict[str, Any] | None:
    """The report dict when ``reference`` is a Report or a path to a saved report JSON."""
    from .report import Report

    if isinstance(reference, Report):
        return reference.data
    if isinstance(reference, dict) and "schema_version" in reference and "results" in reference:
        return reference
    if isinstance(reference, (str, Path)):
        path = Path(reference)
        if path.suffix.lower() == ".json" and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError, UnicodeDecodeError):
                return None
            if isinstance(data, dict) and "schema_version" in data and "results" in data:
                return data
    return None


def build_reference(
    reference: Any,
    rules: list[Rule],
    config: AuditConfig,
    ctx: AuditContext,
    *,
    progress: bool = False,
) -> dict[str, Any]:
    """``{code: sketch}`` of the reference for the reference-aware rules among ``rules``.

    A rule whose sketch is missing (an older saved report, a rule that does not publish its
    sketch) gets ``{"unavailable": reason}``, which the rule reports as a skipped comparison.
    """
    aware = [r for r in rules if getattr(r, "reference_aware", False)]
    if not aware:
        return {}
    report = is_saved_report(reference)
    if report is not None:
        out: dict[str, Any] = {}
        by_code = {r.get("code"): r for r in report.get("results", [])}
        for rule in aware:
            res = by_code.get(rule.code)
            sketch = (res or {}).get("details", {}).get("sketch")
            out[rule.code] = (
                {**sketch, "source": "report"}
                if isinstance(sketch, dict)
                else {
                    "unavailable": f"the reference report has no {rule.code} sketch "
                    f"({'rule not run' if res is None else 'this rule needs the reference dataset'})"
                }
            )
        return out
    return _scan_reference(reference, aware, config, ctx, progress)


def _scan_reference(
    reference: Any, rules: list[Rule], config: AuditConfig, ctx: AuditContext, progress: bool
) -> dict[str, Any]:
    from . import engine
    from .context import AuditContext
    from .corpus import load_corpus
    from .errors import DataAuditError

    try:
        # a named column the reference lacks (an older version without `source`, say) drops that
        # role there, so the rules that need it skip the comparison with a reason; the columns
        # that carry the text must exist, or the reference cannot be compared at all
        on_bad_lines = ctx.options.get("on_bad_lines", "error")
        available = set(_reference_columns(reference, config, on_bad_lines))
        roles = {
            role: column
            for role, column in config.columns.items()
            if column in available or role in ("text", "prompt", "response", "messages")
        }
        corpus = load_corpus(reference, split=config.split, roles=roles, on_bad_lines=on_bad_lines)
    except DataAuditError as exc:
        raise InputError(f"reference: {exc}") from None
    options = {k: v for k, v in ctx.options.items() if k != _KEY}
    # the reference has no reference of its own; the marker only tells the drift rules'
    # skip_reason that this scan exists to be compared against
    options["reference"] = "<the reference itself>"
    rctx = AuditContext.from_corpus(
        corpus,
        max_examples=ctx.max_examples,
        example_chars=ctx.example_chars,
        seed=ctx.seed,
        options=options,
    )
    state = engine.start([(r, r.severity) for r in rules], rctx)
    known = [s.num_rows for s in corpus.splits.values()]
    total = sum(known) if None not in known and corpus.split_column is None else None
    engine.scan(
        state,
        corpus.stream(config.batch_size),
        rctx,
        progress=progress,
        total_rows=total,
        desc="scanning the reference",
    )
    if ctx.input_log is not None:  # what could not be read in the reference is reported too
        ctx.input_log.absorb(corpus.log, split_prefix="reference ")
    out: dict[str, Any] = {}
    for run in state.runs:
        code = run.rule.code
        if not run.active:
            out[code] = {"unavailable": f"on the reference: {run.error or run.skipped}"}
            continue
        sketch = run.rule.sketch(run.state)
        out[code] = {**sketch, "source": "dataset"}
    return out


def _reference_columns(reference: Any, config: AuditConfig, on_bad_lines: str) -> list[str]:
    from .corpus import load_corpus

    corpus = load_corpus(reference, split=config.split, on_bad_lines=on_bad_lines)
    schema = corpus.schema
    return list(schema.names) if schema is not None else []


def reference_sketch(ctx: AuditContext, code: str) -> dict[str, Any] | None:
    """The reference sketch of rule ``code`` for this audit, or None without a reference."""
    ref = ctx.options.get(_KEY)
    if not ref:
        return None
    return ref.get(code)


def match_reference_split(
    ctx: AuditContext, split: str, ref_splits: dict[str, Any], ref_kinds: dict[str, str]
) -> str | None:
    """The reference split compared with ``split``: same name, else the same kind."""
    if split in ref_splits:
        return split
    info = ctx.splits.get(split)
    kind = info.kind if info else "other"
    for name in sorted(ref_splits):
        if ref_kinds.get(name) == kind:
            return name
    return None


def comparison_plan(
    ctx: AuditContext, code: str, present: dict[str, str], unit_key: str | None = None
) -> tuple[list[tuple[str, str, str]], dict[str, Any] | None, list[str]]:
    """What a drift rule compares: ``[(origin, base_split, split)]``, the reference sketch, notes.

    ``origin`` is ``"train"`` (an eval split against this dataset's train split) or
    ``"reference"`` (a split against the matching reference split). ``present`` maps the splits
    the rule saw to their kind. ``unit_key`` (the tokenizer key) must match the reference's.
    """
    pairs: list[tuple[str, str, str]] = []
    notes: list[str] = []
    train = ctx.train_split()
    if train is not None and train in present:
        pairs.extend(("train", train, s) for s in ctx.eval_splits() if s in present)
    ref = reference_sketch(ctx, code)
    if ref is not None:
        if "unavailable" in ref:
            notes.append(f"reference comparison skipped: {ref['unavailable']}")
            ref = None
        elif unit_key is not None and ref.get("tokenizer") not in (None, unit_key):
            notes.append(
                "reference comparison skipped: the reference was measured with another "
                f"tokenizer ({ref.get('tokenizer')} vs {unit_key}); pass the same tokenizer"
            )
            ref = None
    if ref is not None:
        ref_splits = ref.get("splits", {})
        kinds = ref.get("kinds", {})
        for split in sorted(present, key=lambda s: (s != train, s)):
            base = match_reference_split(ctx, split, ref_splits, kinds)
            if base is None:
                notes.append(f"reference comparison: no reference split matches {split!r}")
            else:
                pairs.append(("reference", base, split))
    return pairs, ref, notes


def pair_label(origin: str, base: str, split: str) -> str:
    return f"{split} vs {base}" if origin == "train" else f"{split} vs reference {base}"


def close_comparisons(result: Any, notes: list[str], judged: int) -> None:
    """Record a drift rule's notes; with no pair judged, the rule is skipped with the reasons."""
    result.details["notes"] = notes
    if not judged:
        result.skipped = "; ".join(notes) or (
            "nothing to compare: needs a train split and a validation/test split, or a "
            "reference (reference=)"
        )


def rounded(v: Any) -> Any:
    """Floats rounded for the report (6 decimals); anything else as it is."""
    return round(v, 6) if isinstance(v, float) else v

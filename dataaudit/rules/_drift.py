"""The comparison protocol of the drift rules (LEN003, TOK001, MIX001, SHIFT001, LBL003).

A drift rule compares each validation/test split with train, and, in ``audit(new,
reference=old)``, each split with the matching split of the reference:

1. It subclasses :class:`DriftRule` and implements ``sketch(state)``: a JSON-able summary of its
   mergeable state per split (histograms, token counts, source counts, samples), with the
   splits' kinds. Rules whose sketch is safe and small to publish also put it in
   ``RuleResult.details["sketch"]``, so a saved report can serve as the reference later.
2. ``audit()`` scans the reference with the same rules, options and tokenizer
   (``dataaudit.resources.reference``) and hands the sketches over as ``ctx.resources.reference``.
3. At ``finish`` the rule asks :func:`comparison_plan` what to compare (LBL003, which compares
   with train its own way, asks :func:`reference_matches` for the reference side), names each
   pair with :func:`pair_label` and, when it skips without a verdict, says why with
   :func:`close_comparisons`.
4. It grades each comparison on the common scale of :func:`grade` (no finding within noise;
   info beyond noise but below the warn effect; warn; error from the error effect, which fails
   the default gate) with documented, overridable thresholds, and records the band as
   ``details.comparisons[...]["severity"]``.

This module depends only on the rule contract and the context: never on the scan that builds
the sketches.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from ..rule import Rule, Severity

if TYPE_CHECKING:
    from ..context import AuditContext

__all__ = [
    "DriftRule",
    "close_comparisons",
    "compares_versions",
    "comparison_plan",
    "band_severity",
    "grade",
    "pair_label",
    "reference_matches",
    "reference_sketch",
    "rounded",
    "unmatched_note",
]

#: (origin, base split, split): origin is "train" (an eval split against this dataset's train
#: split) or "reference" (a split against the matching reference split)
Pair = tuple[str, str, str]


class DriftRule(Rule):
    """A rule that compares splits with train and with a reference (see the module docstring)."""

    #: the audit scans ``reference=`` with this rule and hands it the sketches
    reference_aware: ClassVar[bool] = True

    def sketch(self, state: Any) -> dict[str, Any]:
        """A JSON-able per-split summary of ``state`` (``splits`` and their ``kinds``)."""
        raise NotImplementedError


def compares_versions(ctx: AuditContext) -> bool:
    """The audit compares with another version (``reference=``), or is that version's scan."""
    return ctx.resources.reference is not None


def reference_sketch(ctx: AuditContext, code: str) -> dict[str, Any] | None:
    """The reference sketch of rule ``code`` for this audit, or None without a reference."""
    ref = ctx.resources.reference
    return None if ref is None else ref.sketch(code)


def reference_matches(
    ctx: AuditContext, ref: dict[str, Any], present: Iterable[str]
) -> list[tuple[str, str | None]]:
    """For each split of ``present`` (train first), the reference split it is compared with:
    the same name, else the same kind; None when no reference split matches."""
    ref_splits = ref.get("splits", {})
    kinds = ref.get("kinds") if isinstance(ref.get("kinds"), dict) else {}
    train = ctx.train_split()
    out: list[tuple[str, str | None]] = []
    for split in sorted(present, key=lambda s: (s != train, s)):
        if split in ref_splits:
            out.append((split, split))
            continue
        info = ctx.splits.get(split)
        kind = info.kind if info else "other"
        out.append((split, next((n for n in sorted(ref_splits) if kinds.get(n) == kind), None)))
    return out


def unmatched_note(split: str) -> str:
    return f"reference comparison: no reference split matches {split!r}"


def comparison_plan(
    ctx: AuditContext, code: str, present: dict[str, str], unit_key: str | None = None
) -> tuple[list[Pair], dict[str, Any] | None, list[str]]:
    """What a drift rule compares: ``[(origin, base_split, split)]``, the reference sketch, notes.

    ``present`` maps the splits the rule saw to their kind. ``unit_key`` (the tokenizer key)
    must match the reference's.
    """
    pairs: list[Pair] = []
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
        for split, base in reference_matches(ctx, ref, present):
            if base is None:
                notes.append(unmatched_note(split))
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


def grade(significant: bool, warn: bool, error: bool) -> str | None:
    """The band of a drift by its effect size, the drift rules' common scale: None (no finding)
    when the difference is within sampling noise (``significant`` false); ``"info"`` when it is
    beyond noise but its effect is below the warn threshold (real, and small); ``"warn"`` when
    the effect reaches the warn threshold; ``"error"`` when it reaches the error threshold (a
    drift that fails the default gate, ``fail_on: error``)."""
    if not significant:
        return None
    if error:
        return "error"
    return "warn" if warn else "info"


def band_severity(band: str) -> Severity | None:
    """A band's finding severity: the warn band is the rule's configured severity (None), so
    ``severity:`` in a pack still re-grades it; info and error are fixed."""
    return None if band == "warn" else Severity(band)


def rounded(v: Any) -> Any:
    """Floats rounded for the report (6 decimals); anything else as it is."""
    return round(v, 6) if isinstance(v, float) else v

"""The reference of ``audit(new, reference=old)``: per drift rule, a sketch of the old version.

A drift rule (:class:`dataaudit.rules._drift.DriftRule`) summarizes its mergeable state per split
in ``sketch(state)``. :func:`build_reference`, called by ``audit()`` between the scan and
``finish``, turns ``reference`` into :class:`ReferenceSketches`: a dataset is scanned once with
the same drift rules, options and tokenizer (one pass, shared features, no ``finish``); a saved
report (a ``Report`` or the path of its JSON) yields the sketches stored in its details. The rules
read it as ``ctx.resources.reference`` at ``finish`` (see ``rules/_drift.py``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..config import AuditConfig
    from ..context import AuditContext
    from ..rule import Rule

__all__ = ["ReferenceSketches", "build_reference", "is_saved_report"]

TEXT_CARRYING = ("text", "prompt", "response", "messages")  # a reference must have these


@dataclass(frozen=True)
class ReferenceSketches:
    """The other version an audit compares with: ``{rule code: sketch}``.

    A sketch is ``{"unavailable": reason}`` when the reference could not give one (an older
    saved report, a rule that errored on the reference). Before the reference is scanned (during
    the main scan) and in the reference's own scan there are no sketches yet; the object is there
    so that rules know a comparison with another version is what they run for.
    """

    sketches: Mapping[str, dict[str, Any]] = field(default_factory=dict)

    def sketch(self, code: str) -> dict[str, Any] | None:
        """The reference sketch of rule ``code``, or None when there is none."""
        return self.sketches.get(code)


def is_saved_report(reference: Any) -> dict[str, Any] | None:
    """The report dict when ``reference`` is a Report or a path to a saved report JSON."""
    from ..report import Report

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
) -> ReferenceSketches:
    """The sketches of ``reference`` for the reference-aware rules among ``rules``.

    A rule whose sketch is missing (an older saved report, a rule that does not publish its
    sketch) gets ``{"unavailable": reason}``, which the rule reports as a skipped comparison.
    """
    aware = [r for r in rules if getattr(r, "reference_aware", False)]
    if not aware:
        return ReferenceSketches()
    report = is_saved_report(reference)
    if report is None:
        return ReferenceSketches(_scan_reference(reference, aware, config, ctx, progress))
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
    return ReferenceSketches(out)


def _scan_reference(
    reference: Any, rules: list[Rule], config: AuditConfig, ctx: AuditContext, progress: bool
) -> dict[str, Any]:
    from .. import engine
    from ..context import AuditContext
    from ..corpus import load_corpus
    from ..errors import DataAuditError

    try:
        # a named column the reference lacks (an older version without `source`, say) drops that
        # role there, so the rules that need it skip the comparison with a reason; the columns
        # that carry the text must exist, or the reference cannot be compared at all
        corpus = load_corpus(
            reference,
            split=config.split,
            roles=config.columns,
            on_bad_lines=config.on_bad_lines,
            optional_roles=[r for r in config.columns if r not in TEXT_CARRYING],
        )
    except DataAuditError as exc:
        raise InputError(f"reference: {exc}") from None
    rctx = AuditContext.from_corpus(
        corpus,
        max_examples=ctx.max_examples,
        example_chars=ctx.example_chars,
        seed=ctx.seed,
        # the same tokenizer; the reference is compared with the audited data, which has no
        # sketches to give it (and needs none: the reference's scan has no finish)
        resources=dataclasses.replace(ctx.resources, reference=ReferenceSketches()),
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

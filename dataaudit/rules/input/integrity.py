"""INPUT001: what the readers could not take as given, so the gate never passes on unread data."""

from __future__ import annotations

from typing import Any

from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, Rule, RuleResult, Severity

_METRICS = {  # note kind -> metric name (counts of records, values or columns)
    "skipped_line": "skipped_records",
    "surrogates": "replaced_surrogates",
    "late_column": "late_columns",
    "missing_column": "rows_missing_a_role_column",
}


class InputIntegrity(Rule):
    """Records, columns and values the audit could not read as the input gave them.

    What it does:
        Reports what the readers and the corpus stream noted instead of dropping or changing
        it quietly: records skipped with ``on_bad_lines="skip"`` (each with its file and line),
        lone surrogates replaced by U+FFFD, a column that first appears after the column roles
        were chosen (an error when it would have been a role such as the label: the rules that
        need it did not audit it), a role column absent from some files (its rows read as
        nulls) and a named role column that no record has.

    Why it matters:
        A gate is only worth running if "passed" means "read everything and found nothing".
        A ``label`` key that starts on line 200,000 of a JSON Lines file, or a shard without
        it, would otherwise silently turn the label rules off or half off.

    Example:
        ``{"text": "a"}`` on line 1 and ``{"text": "b", "label": "x"}`` from line 300,000 on
        (past the first block the roles are chosen from): error, "column 'label' first appears
        at 'train' row 299,999 (data.jsonl) ... not audited as the label".

    Options:
        none: this rule runs in every audit (even with ``select``) unless ignored by code.
    """

    code = "INPUT001"
    name = "input.integrity"
    groups = ("default", "input")
    severity = Severity.ERROR
    requires = ()

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        return {}

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        return state  # the stream notes what it sees in the parent process (ctx.input_log)

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        return a

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        result = RuleResult()
        totals = dict.fromkeys(_METRICS.values(), 0)
        notes = ctx.input_log.notes if ctx.input_log is not None else []
        for note in notes:
            metric = _METRICS.get(note.kind)
            if metric is not None:
                totals[metric] += note.count if note.kind != "late_column" else 1
            where = f"{note.split}: " if note.split else ""
            places = note.places
            shown = "; ".join(places[:3]) + (
                f"; … {len(places) - 3} more" if len(places) > 3 else ""
            )
            result.findings.append(
                Finding(
                    message=f"{where}{note.text()}" + (f" [{shown}]" if shown else ""),
                    key=f"{note.kind}|{note.split}|{note.column}",
                    severity=note.severity,
                    count=max(note.count, 1),
                    split=note.split,
                    examples=[{"split": note.split, "row": note.first_row, "place": places[0]}]
                    if note.split is not None and note.first_row is not None and places
                    else [],
                    data=note.to_dict(),
                )
            )
        for name, value in totals.items():
            result.metric(name, value, Direction.LOWER, unit="count")
        return result

"""What the readers could not take as given: the input's own findings (reported by INPUT001).

Readers and the corpus stream never drop or change data quietly. When they must (a line skipped
on request, a lone surrogate replaced, a column that turns up after the roles were chosen, a role
column missing from some rows), they add a note here; INPUT001 turns the notes into findings, so
the report says what happened and, for the serious ones, the gate fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..rule import Severity

__all__ = ["InputLog", "InputNote"]

MAX_PLACES = 5  # file:line places kept per note (the count is exact)


@dataclass
class InputNote:
    kind: str  # skipped_line | surrogates | late_column | missing_column | ...
    severity: Severity
    message: str  # what happened and the fix; "{count}" stands for the count
    split: str | None = None
    column: str | None = None
    count: int = 0  # rows, lines or values affected
    first_row: int | None = None  # first affected row of the split, when known
    places: list[str] = field(default_factory=list)  # "file:line" or "file (rows a-b)"

    def text(self) -> str:
        return self.message.replace("{count}", f"{self.count:,}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "severity": self.severity.value,
            "split": self.split,
            "column": self.column,
            "count": self.count,
            "first_row": self.first_row,
            "places": list(self.places),
        }


class InputLog:
    """Notes keyed by (kind, split, column): counts add up, places stay bounded."""

    def __init__(self) -> None:
        self._notes: dict[tuple[str, str | None, str | None], InputNote] = {}
        #: the split being streamed; readers know files and lines, the stream knows splits
        self.current_split: str | None = None
        #: set while the corpus peeks at the first rows (they are read again by the stream)
        self.muted = False

    def add(
        self,
        kind: str,
        severity: Severity,
        message: str,
        *,
        split: str | None = None,
        column: str | None = None,
        count: int = 1,
        row: int | None = None,
        place: str | None = None,
    ) -> InputNote | None:
        if self.muted:
            return None
        split = split if split is not None else self.current_split
        key = (kind, split, column)
        note = self._notes.get(key)
        if note is None:
            note = self._notes[key] = InputNote(kind, severity, message, split, column)
        note.count += count
        if row is not None and (note.first_row is None or row < note.first_row):
            note.first_row = row
        if place is not None and len(note.places) < MAX_PLACES and place not in note.places:
            note.places.append(place)
        return note

    def absorb(self, other: InputLog, *, split_prefix: str) -> None:
        """Take another read's notes (the reference dataset's), their splits prefixed."""
        for note in other.notes:
            split = (
                f"{split_prefix}{note.split}" if note.split is not None else split_prefix.strip()
            )
            key = (note.kind, split, note.column)
            if key not in self._notes:
                self._notes[key] = InputNote(
                    note.kind, note.severity, note.message, split, note.column
                )
            mine = self._notes[key]
            mine.count += note.count
            mine.first_row = note.first_row if mine.first_row is None else mine.first_row
            mine.places.extend(p for p in note.places if p not in mine.places)
            del mine.places[MAX_PLACES:]

    @property
    def notes(self) -> list[InputNote]:
        return list(self._notes.values())

    def __len__(self) -> int:
        return len(self._notes)

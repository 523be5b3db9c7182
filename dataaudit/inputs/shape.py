"""The corpus stream's shape: every batch holds every column of the corpus schema, and what the
input does that the schema did not foresee is noted for INPUT001 (a column that turns up after
the roles were chosen, a role column missing from a file, a named column no row has)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from .._arrow import validity
from ..rule import TYPE_MARKER_PREFIX, Severity
from .arrow import check_names, plain_batch
from .roles import detect_roles

if TYPE_CHECKING:
    from ..corpus import Corpus

__all__ = ["Shape", "first_valid", "with_nulls"]


def first_valid(rb: pa.RecordBatch) -> Callable[[str], int]:
    """A column's first non-null position in ``rb`` (-1: none), computed when asked."""

    def first(name: str) -> int:
        col = rb.column(rb.schema.get_field_index(name))
        valid = validity(col)  # not pc.index(..., True): its Python scalar imports pandas
        if valid is None:
            return 0 if len(col) else -1
        hits = np.flatnonzero(valid)
        return int(hits[0]) if hits.size else -1

    return first


def with_nulls(rb: pa.RecordBatch, fields: list[pa.Field]) -> pa.RecordBatch:
    """``rb`` with the columns ``fields`` added as nulls (its own columns are not copied)."""
    if not fields:
        return rb
    arrays = [*rb.columns, *(pa.nulls(rb.num_rows, f.type) for f in fields)]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema([*rb.schema, *fields]))


class Shape:
    """Holds every streamed batch to the corpus schema and notes where the input departs from it."""

    def __init__(self, corpus: Corpus):
        self.corpus = corpus
        schema = corpus.schema or pa.schema([])
        self.types = {f.name: f.type for f in schema}
        for column in corpus.given_roles.values():  # named, expected in later records
            self.types.setdefault(column, pa.null())
        self.role_columns = {c: r for r, c in corpus.roles.columns().items()}
        self.seen: set[str] = set()

    def conform(
        self, rb: pa.RecordBatch, split: str | None, row: int | None, origin: str
    ) -> pa.RecordBatch:
        rb = plain_batch(rb)
        return with_nulls(
            rb, self.missing(rb.schema, rb.num_rows, first_valid(rb), split, row, origin)
        )

    def missing(
        self,
        schema: pa.Schema,
        num_rows: int,
        first: Callable[[str], int],
        split: str | None,
        row: int | None,
        origin: str,
    ) -> list[pa.Field]:
        """The columns a batch of ``schema`` lacks (to add as nulls), noting what the input
        does that the corpus schema did not foresee: :meth:`conform` without the batch's data
        (``first``: a column's first non-null position in it, -1 for none), so an engine whose
        workers read the rows decides their shape where the stream's order is known."""
        names = schema.names
        if len(set(names)) != len(names):
            check_names(schema, origin)
        self.seen.update(names)
        for name in names:
            if name not in self.types:
                at = None if row is None else row + max(first(name), 0)
                self._late(name, schema.field(name).type, split, at, origin)
            elif pa.types.is_null(self.types[name]) and not pa.types.is_null(
                schema.field(name).type
            ):
                self.types[name] = schema.field(name).type
        missing = [n for n in self.types if n not in set(names)]
        fields = []
        for name in missing:
            t = self.types[name]
            fields.append(pa.field(name, t))
            role = self.role_columns.get(name)
            if role is not None:  # a file (or block) without the column: its rows read as nulls
                self.corpus.log.add(
                    "missing_column",
                    Severity.WARN,
                    f"{{count}} rows: the {role} column {name!r} is absent from whole files or "
                    "blocks, so these rows are read as nulls (FMT001 counts them). Check that those files belong "
                    "to this dataset",
                    column=name,
                    count=num_rows,
                    row=row,
                    place=origin,
                )
        return fields

    def known(self) -> set[str]:
        """The columns that are no late column: what a reader need not locate in its rows."""
        return set(self.types)

    def _late(
        self, name: str, t: pa.DataType, split: str | None, row: int | None, origin: str
    ) -> None:
        """A column that was not in the schema the roles were chosen from."""
        self.types[name] = t
        if name.startswith(TYPE_MARKER_PREFIX):
            return
        where = f"{split!r} row {row:,}" if split is not None and row is not None else "a row"
        union = pa.schema([pa.field(n, ty) for n, ty in self.types.items()])
        would = detect_roles(union, self.corpus.given_roles, deferred=True)
        role = next((r for r, c in would.columns().items() if c == name), None)
        taken = role is not None and getattr(self.corpus.roles, role) != name
        if taken:
            self.corpus.log.add(
                "late_column",
                Severity.ERROR,
                f"column {name!r} first appears at {where} ({origin}), after the column roles "
                f"were chosen from the first records, so it was not audited as the {role}. Put "
                f'the key in the first record (null is fine: "{name}": null) or name it: '
                f"{role}={name!r} (CLI: --{role} {name})",
                column=name,
                row=row,
                place=origin,
            )
        else:
            self.corpus.log.add(
                "late_column",
                Severity.INFO,
                f"column {name!r} first appears at {where} ({origin}); no rule reads it",
                column=name,
                row=row,
                place=origin,
            )

    def close(self) -> None:
        """Role columns the user named that no row had."""
        for role, column in self.corpus.given_roles.items():
            if column not in self.seen and column in self.role_columns:
                self.corpus.log.add(
                    "missing_column",
                    Severity.ERROR,
                    f"the {role} column {column!r} was named but no record has it, so nothing "
                    f"was audited as the {role}. Check the name",
                    column=column,
                    count=0,
                )

"""Benchmark files of ``contamination_ref``: read once by ``audit()``, hashed once per n-gram size.

The engine calls a rule's ``start`` once per chunk and worker, so LEAK002 must not read them
itself: :func:`read_benchmarks` reads every file when the audit resolves its resources, and
each :class:`Benchmark` reaches the rule as ``ctx.resources.benchmarks`` (and
``batch.resources.benchmarks`` while it folds batches). The n-gram index of a benchmark is
computed on first use and kept in the object, which pickles with it: workers get it computed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..errors import InputError

__all__ = ["Benchmark", "read_benchmarks"]


@dataclass
class Benchmark:
    """One benchmark file: its name and its items' text, one item per row."""

    name: str
    text: pa.Array  # large_string
    #: n -> (sorted hashes, item of each): computed on first use, pickled with the benchmark
    _ngrams: dict[int, tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def rows(self) -> int:
        return len(self.text)

    def ngrams(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The items' ``n``-word contamination n-gram hashes, sorted, and the item of each."""
        if n not in self._ngrams:
            from ..features.minhash import ngram_hashes
            from ..features.normalize import normalize_array

            sh = ngram_hashes(normalize_array(self.text), n)
            order = np.argsort(sh.hashes, kind="stable")
            self._ngrams[n] = (sh.hashes[order], sh.row[order])
        return self._ngrams[n]


def read_benchmarks(paths: Iterable[str | os.PathLike[str]]) -> tuple[Benchmark, ...]:
    """Each file's text column (``text``, else its first string column); InputError naming the
    file when it cannot be read or has no text."""
    from ..inputs.files import file_batches

    out = []
    for p in paths:
        path = Path(p)
        try:
            parts = [_text(rb, path) for rb in file_batches(path)(4096)]
        except InputError as exc:
            raise InputError(f"contamination_ref: {exc}") from None
        text = (
            pa.chunked_array(parts, pa.large_string()).combine_chunks()
            if parts
            else pa.array([], pa.large_string())
        )
        out.append(Benchmark(path.name, text))
    return tuple(out)


def _text(rb: pa.RecordBatch, path: Path) -> pa.Array:
    names = rb.schema.names
    if "text" in names:
        col = rb.column("text")
    else:
        strings = [
            n
            for n, t in zip(names, rb.schema.types)
            if pa.types.is_string(t) or pa.types.is_large_string(t)
        ]
        if not strings:
            raise InputError(
                f"{path}: no text column; a contamination reference needs a 'text' column "
                "(or any string column) with one benchmark item per row."
            )
        col = rb.column(strings[0])
    return col.cast(pa.large_string())

"""What ``audit()`` resolves once and hands to every rule as ``ctx.resources``.

- ``tokenizer``: a :class:`TokenizerHandle` (the word fallback when none was given);
- ``reference``: :class:`ReferenceSketches` of ``reference=`` (None without one), built between
  the scan and ``finish``;
- ``benchmarks``: the ``contamination_ref`` files, read once (:class:`Benchmark`);
- ``predictions``: a model's :class:`Predictions` (None without them), for the EVAL rules;
- ``prepasses``: each prepass rule's broadcast value (``Rule.prepass_finish``), by rule code,
  set by the engine after the prepass (:mod:`dataaudit.engine.prepass`); read it with
  :meth:`Resources.prepared`.

They are typed attributes, never private keys of a dict, and they pickle: the parallel engine
sends them to each worker process once (as a Ray engine will), and a worker never reads a
tokenizer or a benchmark file again. Rules read them; the modules that build them (the reference
scan, the benchmark reader) sit above the rules and the engine.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .contamination import Benchmark
from .predictions import Predictions
from .reference import ReferenceSketches
from .tokenizer import WORDS_KEY, TokenizerHandle

__all__ = [
    "Benchmark",
    "Predictions",
    "ReferenceSketches",
    "Resources",
    "TokenizerHandle",
    "resolve_resources",
]


@dataclass(frozen=True)
class Resources:
    """The audit's resolved resources (see the module docstring)."""

    tokenizer: TokenizerHandle = field(default_factory=TokenizerHandle.words)
    reference: ReferenceSketches | None = None
    benchmarks: tuple[Benchmark, ...] = ()
    predictions: Predictions | None = None
    #: rule code -> its prepass's value; the engines ship it once per worker, apart from the
    #: rest of the context (engine.prepass.detached), so it is not in the comparison or repr
    prepasses: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def prepared(self, code: str) -> Any:
        """The value rule ``code``'s prepass broadcast (``prepass_finish``); None when no
        prepass ran for it (no prepass splits, or an engine without prepasses)."""
        return self.prepasses.get(code)

    def tokenizer_named(self, key: str) -> TokenizerHandle:
        """The tokenizer a rule names by its key (states keep the key, not the tokenizer)."""
        if key == self.tokenizer.key:
            return self.tokenizer
        if key == WORDS_KEY:
            return TokenizerHandle.words()
        raise LookupError(
            f"tokenizer {key!r} is not this audit's tokenizer ({self.tokenizer.key}); a rule "
            "must take its tokenizer from ctx.resources.tokenizer"
        )

    def describe(self) -> dict[str, Any]:
        """Provenance for the report: the tokenizer (name, hash, vocabulary, chat template)."""
        out: dict[str, Any] = {"tokenizer": self.tokenizer.describe()}
        if self.predictions is not None:
            out["predictions"] = self.predictions.describe()
        return out


def resolve_resources(
    *,
    tokenizer: Any = None,
    reference: bool = False,
    contamination_ref: Iterable[str | os.PathLike[str]] = (),
) -> Resources:
    """Load the tokenizer and read the benchmark files once (a bad one is a usage error before
    the scan, not an error of every rule). ``reference``: whether the audit compares with a
    reference, whose sketches :func:`dataaudit.resources.reference.build_reference` adds later."""
    from .contamination import read_benchmarks
    from .tokenizer import resolve_tokenizer

    return Resources(
        tokenizer=resolve_tokenizer(tokenizer),
        reference=ReferenceSketches() if reference else None,
        benchmarks=read_benchmarks(contamination_ref),
    )

"""A rule class with its options, and the data and resources the checks run it on.

The data is read once; every check folds the same batches (re-cut to the batch size it needs)
into fresh contexts, so what the readers note (INPUT001) and what a reference adds are the same
for every run. Resources are what ``audit()`` would hand the rule, resolved once: a tokenizer, a
reference (its sketches, built once), contamination files (read once).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from ..context import AuditContext
from ..corpus import Corpus, load_corpus
from ..resources import Resources, TokenizerHandle, resolve_resources
from ..rule import Rule, RuleResult
from ._data import sample_data

__all__ = ["Case", "ConformanceSkip"]

Batches = list[tuple[str, int, pa.RecordBatch]]


class ConformanceSkip(Exception):
    """A check that cannot apply to this rule or data; the message says why (never silent)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Case:
    """What :func:`check_rule` checks: ``cls(**options)`` on ``data`` with the resources."""

    def __init__(
        self,
        cls: type[Rule],
        options: Mapping[str, Any] | None = None,
        *,
        data: Any = None,
        kind: str | None = None,
        columns: Mapping[str, str] | None = None,
        tokenizer: Any = None,
        reference: Any = None,
        contamination_ref: Sequence[str | os.PathLike[str]] | str | None = None,
        predictions: Any = None,
        seed: int = 0,
    ):
        self.cls = cls
        self.options = dict(options or {})
        self.data, self.kind, self.columns = data, kind, dict(columns or {})
        self.tokenizer, self.reference, self.seed = tokenizer, reference, seed
        if isinstance(contamination_ref, (str, os.PathLike)):
            contamination_ref = [contamination_ref]
        self.contamination_ref = [os.fspath(p) for p in contamination_ref or []]
        self.predictions = predictions  # as audit(predictions=...) takes them
        self._loaded: tuple[Corpus, dict[str, pa.Table], Any] | None = None
        self._resources: Resources | None = None
        self._contexts: dict[tuple[int, bool], AuditContext] = {}
        self._prepared: dict[tuple[Any, ...], Any] = {}
        self._one_pass: dict[int, RuleResult] = {}

    @property
    def code(self) -> str:
        return self.cls.code

    def rule(self, **overrides: Any) -> Rule:
        return self.cls(**{**self.options, **overrides})

    # -- data -----------------------------------------------------------------------------------
    def _load(self) -> tuple[Corpus, dict[str, pa.Table], Any]:
        if self._loaded is None:
            if self.data is not None:
                candidates = [load_corpus(self.data, roles=self.columns or None)]
            else:
                kinds = [self.kind] if self.kind else ["classification", "chat"]
                candidates = [load_corpus(sample_data(k, self.seed)) for k in kinds]
            corpus = candidates[0]
            for candidate in candidates:  # the first sample the rule can run on
                if self.rule().skip_reason(self._bare_context(candidate)) is None:
                    corpus = candidate
                    break
            tables: dict[str, list[pa.RecordBatch]] = {}
            for split, rb in corpus.stream(64):  # read once: the input log is noted once
                tables.setdefault(split, []).append(rb)
            self._loaded = (
                corpus,
                {s: pa.Table.from_batches(b).combine_chunks() for s, b in tables.items()},
                corpus.log,
            )
        return self._loaded

    def batches(self, size: int) -> Batches:
        """(split, offset, batch) of every split in input order, ``size`` rows per batch."""
        out: Batches = []
        for split, table in self._load()[1].items():
            offset = 0
            for rb in table.to_batches(max_chunksize=size):
                out.append((split, offset, rb))
                offset += rb.num_rows
        return out

    @staticmethod
    def counts(batches: Batches) -> dict[str, int]:
        out: dict[str, int] = {}
        for split, _, rb in batches:
            out[split] = out.get(split, 0) + rb.num_rows
        return out

    # -- contexts ---------------------------------------------------------------------------------
    def resources(self, tokenizer: bool = True) -> Resources:
        """The resources as ``audit()`` resolves them (once per case); ``tokenizer=False``: the
        word fallback instead of the case's tokenizer."""
        if self._resources is None:
            self._resources = resolve_resources(
                tokenizer=self.tokenizer,
                reference=self.reference is not None,
                contamination_ref=self.contamination_ref,
            )
        if tokenizer:
            return self._resources
        return dataclasses.replace(self._resources, tokenizer=TokenizerHandle.words())

    def _bare_context(self, corpus: Corpus, seed: int | None = None, tokenizer: bool = True):
        resources = self.resources(tokenizer)
        if self.predictions is not None:
            from ..resources.predictions import resolve_predictions

            joined = resolve_predictions(self.predictions, corpus)
            resources = dataclasses.replace(resources, predictions=joined)
        return AuditContext.from_corpus(
            corpus, seed=self.seed if seed is None else seed, resources=resources
        )

    def context(
        self,
        *,
        seed: int | None = None,
        tokenizer: bool = True,
        rule: Rule | None = None,
        grouping: str | None = None,
    ) -> AuditContext:
        """A fresh context, as ``audit()`` builds it: tokenizer resolved, reference sketched
        (only for the case's own seed and tokenizer; the variations only fold), and the
        prepass value of ``rule`` (default: the case's rule) if it has a prepass, as the
        engines broadcast it (``grouping``: see :meth:`prepare`)."""
        seed = self.seed if seed is None else seed
        key = (seed, tokenizer)
        if key not in self._contexts:
            corpus, _, log = self._load()
            ctx = self._bare_context(corpus, seed, tokenizer)
            ctx.input_log = copy.deepcopy(log)
            base = key == (self.seed, True)
            if base and self.reference is not None and getattr(self.cls, "reference_aware", False):
                from ..config import AuditConfig
                from ..resources.reference import build_reference

                rule = self.rule()
                if rule.skip_reason(ctx) is None:
                    sketches = build_reference(
                        self.reference, [rule], AuditConfig(columns=self.columns), ctx
                    )
                    ctx.resources = dataclasses.replace(ctx.resources, reference=sketches)
            self._contexts[key] = ctx
        ctx = self._contexts[key]
        fresh = dataclasses.replace(
            ctx,
            splits={n: dataclasses.replace(s) for n, s in ctx.splits.items()},
            input_log=copy.deepcopy(ctx.input_log),
        )
        return self.prepare(self.rule() if rule is None else rule, fresh, key, grouping)

    def prepare(
        self, rule: Rule, ctx: AuditContext, key: Any = None, grouping: str | None = None
    ) -> AuditContext:
        """``ctx`` with ``rule``'s prepass value (``ctx.resources.prepared(code)``), folded
        from its prepass splits in one pass, or (``grouping`` "(a+b)+c" / "a+(b+c)") in three
        shards merged that way, as workers and Ray merge them, or ("empty") from no rows. A rule
        without a prepass, or whose prepass reads no split here, gets ``ctx`` as it is (None, as
        the engines give)."""
        from ..engine import prepass

        if not prepass.has_prepass(rule):
            return ctx
        splits = set(rule.prepass_splits(ctx))
        if not splits:
            return ctx
        memo = (key, rule.code, repr(sorted(rule.get_params().items())), grouping)
        if memo not in self._prepared:
            batches = [b for b in self.batches(16) if b[0] in splits]

            def fold(part: Batches) -> Any:
                pre = rule.prepass_start(ctx)
                for split, offset, rb in part:
                    pre = rule.prepass_update(pre, ctx.batch(split, rb, offset))
                return pre

            if grouping is None:
                pre = fold(batches)
            elif grouping == "empty":  # the prepass of an audit whose splits have no rows
                pre = fold([])
            else:
                pre = merge_grouped(rule.prepass_merge, *map(fold, thirds(batches)), grouping)
            self._prepared[memo] = rule.prepass_finish(pre, ctx)
        prepass.attach(ctx, {**ctx.resources.prepasses, rule.code: self._prepared[memo]})
        return ctx

    # -- running the rule -------------------------------------------------------------------------
    def runnable(self, **overrides: Any) -> tuple[Rule, AuditContext]:
        """The rule and a context, or ConformanceSkip naming why the rule skips this data."""
        rule = self.rule(**overrides)
        ctx = self.context(rule=rule)
        reason = rule.skip_reason(ctx)
        if reason is not None:
            raise ConformanceSkip(
                f"the rule skips the data it was given ({reason}); pass check_rule the data, "
                "options or resources (tokenizer=, reference=, contamination_ref=, predictions=) "
                "it needs"
            )
        return rule, ctx

    @staticmethod
    def fold(rule: Rule, ctx: AuditContext, batches: Batches, state: Any = None) -> Any:
        state = rule.start(ctx) if state is None else state
        for split, offset, rb in batches:
            state = rule.update(state, ctx.batch(split, rb, offset))
        return state

    @staticmethod
    def finish(
        rule: Rule,
        state: Any,
        ctx: AuditContext,
        counts: Mapping[str, int],
        batches: Batches = (),
        *,
        partitions: int | None = None,
    ) -> RuleResult:
        """The rule's result from ``state``; a keyed rule (``Rule.keyed``) also emits the rows of
        ``batches`` (those the state folded) through the engine's keyed stage, in ``partitions``
        (default: the rule's own)."""
        for name, info in ctx.splits.items():
            info.num_rows = counts.get(name, 0)
        if getattr(rule, "keyed", False) is True:
            result = Case._finish_keyed(rule, state, ctx, batches, partitions)
        else:
            result = rule.finish(state, ctx)
        assert isinstance(result, RuleResult), (
            f"{rule.code}: finish() returned {type(result).__name__}, not a RuleResult"
        )
        return result

    @staticmethod
    def _finish_keyed(
        rule: Rule, state: Any, ctx: AuditContext, batches: Batches, partitions: int | None
    ) -> RuleResult:
        from ..engine import keyed
        from ..engine.state import RuleRun

        if partitions is not None:  # a copy of the rule, with the partitions asked for
            rule = copy.copy(rule)
            rule.partitions = partitions
        spill, run = keyed.MemorySpill(), RuleRun(rule, rule.severity, state)
        for split, offset, rb in batches:
            keyed.spill(spill, 0, run, ctx.batch(split, rb, offset))
            assert run.error is None, f"{rule.code}: emit() failed: {run.error}"
        clusters = keyed.run_local(rule, spill, 0, list(ctx.splits))
        return rule.finish_keyed(state, clusters, ctx)

    def one_pass(self, batch_size: int = 16) -> RuleResult:
        """The rule's result over all the data in one pass (computed once per batch size)."""
        if batch_size not in self._one_pass:
            rule, ctx = self.runnable()
            batches = self.batches(batch_size)
            state = self.fold(rule, ctx, batches)
            self._one_pass[batch_size] = self.finish(
                rule, state, ctx, self.counts(batches), batches
            )
        return self._one_pass[batch_size]

    def verdict(self) -> RuleResult:
        """:meth:`one_pass`, or ConformanceSkip when the rule gave no verdict on the data."""
        result = self.one_pass()
        if result.skipped:
            raise ConformanceSkip(
                f"finish() gave no verdict on this data ({result.skipped}); pass check_rule the "
                "data, options or resources it needs"
            )
        return result


def thirds(batches: Batches) -> tuple[Batches, Batches, Batches]:
    """``batches`` cut into three shards (the merge checks' workers)."""
    third = len(batches) // 3
    return batches[:third], batches[third : 2 * third], batches[2 * third :]


def merge_grouped(merge: Callable[[Any, Any], Any], a: Any, b: Any, c: Any, grouping: str) -> Any:
    """Three shards' states merged in ``grouping``: "(a+b)+c", else "a+(b+c)"."""
    return merge(merge(a, b), c) if grouping == "(a+b)+c" else merge(a, merge(b, c))


def canonical(result: RuleResult) -> Any:
    """The result as the report would hold it (JSON types), to compare two results."""
    return json.loads(json.dumps(dataclasses.asdict(result), sort_keys=True, default=str))

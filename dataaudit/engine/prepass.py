"""The prepass: a first pass over a few splits whose merged value every worker sees in the scan.

Why: some checks index the small side of a comparison and stream the large side against it
(LEAK002 indexes the eval splits' n-grams and streams train through them, as datatrove's
``NGramsDecontIndexer`` -> ``NGramsDecontFilter``). Their memory then follows the small side,
not the corpus. A rule opts in by defining ``prepass_update``:

- ``prepass_splits(ctx) -> list[str]``: the splits to read first (empty: no prepass);
- ``prepass_start(ctx)``, ``prepass_update(pre, batch)`` (the same Batch, with the same shared
  features, as ``update``), ``prepass_merge(a, b)`` (chunks merge in input order),
  ``prepass_finish(pre, ctx)``: the value to broadcast. It must pickle and stay bounded by the
  prepass splits' size: every worker process holds a copy, and so does the driver on Ray.

The engine reads the union of the rules' prepass splits once (each batch goes to each rule that
asked for its split), then the scan, the rules' ``start`` and ``finish`` see the value as
``ctx.resources.prepared(code)`` / ``batch.resources.prepared(code)`` (None when no prepass ran
for the rule). Locally it is one pass before the scan; with workers, chunks fold in the worker
processes and merge in the parent; on Ray, the splits are read as the scan reads them (files
on the workers), chunks fold in tasks and merge and finish on the driver. A corpus partitioned
by a column (``split=``) is read whole to find those splits' rows. The value travels once per worker process, apart from the context's other resources
(:func:`detached`): a file the workers load once (workers=N), one object in Ray's store that
each worker process gets once. A prepass that raises is its rule's error; the other rules run.
Rows read here are read again by the scan, which alone counts them (row counts, fingerprints).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..context import AuditContext
from .progress import Progress
from .state import RULE_FAILURES, RuleRun, ScanState, error_message, start_run

if TYPE_CHECKING:
    from ..corpus import Corpus

__all__ = [
    "Plan",
    "absorb",
    "attach",
    "detached",
    "finish",
    "fold",
    "has_prepass",
    "pickled",
    "plan",
    "run_local",
    "stream",
    "view",
]


def has_prepass(rule: Any) -> bool:
    return callable(getattr(rule, "prepass_update", None))


@dataclass
class Plan:
    """Which splits each rule's prepass reads (run index -> split names), and what the
    prepass read, as the engines fill it."""

    wants: dict[int, frozenset[str]]
    #: split names in the corpus' order: the one read of their union
    splits: list[str]
    rows: int | None = None
    seconds: float = 0.0

    def __bool__(self) -> bool:
        return bool(self.wants)


def plan(state: ScanState, ctx: AuditContext) -> Plan:
    """The prepass splits of each active rule that has a prepass (a rule whose
    ``prepass_splits`` raises, or names a split the audit does not have, is its error)."""
    wants: dict[int, frozenset[str]] = {}
    for i, run in enumerate(state.runs):
        if not run.active or not has_prepass(run.rule):
            continue
        try:
            names = list(run.rule.prepass_splits(ctx))
        except RULE_FAILURES as exc:
            run.error, run.state = error_message(exc), None
            continue
        unknown = [n for n in names if n not in ctx.splits]
        if unknown:
            run.error, run.state = (
                f"prepass_splits() named {', '.join(map(repr, unknown))}, which this audit does "
                f"not have (its splits: {', '.join(ctx.splits)})",
                None,
            )
        elif names:
            wants[i] = frozenset(names)
    union = set().union(*wants.values()) if wants else set()
    known = [ctx.splits[n].num_rows for n in union]
    rows = sum(known) if all(k is not None for k in known) else None  # type: ignore[misc]
    return Plan(wants, [n for n in ctx.splits if n in union], rows)


def view(corpus: Corpus, splits: list[str]) -> Corpus:
    """``corpus`` restricted to ``splits``, with an input log and files list of its own: the
    prepass reads these rows, the scan reads them again and alone records what it saw (its
    notes, files and row counts). A corpus partitioned by a column keeps its one source."""
    from ..inputs.notes import InputLog

    wanted = set(splits)
    subset = (
        {n: s for n, s in corpus.splits.items() if n in wanted}
        if corpus.split_column is None
        else dict(corpus.splits)
    )
    return dataclasses.replace(corpus, splits=subset, log=InputLog(), files={})


def stream(
    corpus: Corpus, splits: list[str], batch_size: int
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The batches of ``splits`` only, as the corpus streams them (see :func:`view`). A corpus
    partitioned by a column is read whole and its other splits' batches dropped."""
    wanted = set(splits)
    for name, rb in view(corpus, splits).stream(batch_size):
        if name in wanted:
            yield name, rb


# -- folding ------------------------------------------------------------------------------------
def start(runs: list[RuleRun], wants: dict[int, frozenset[str]], ctx: AuditContext) -> dict:
    """Each wanting rule's empty prepass state (a rule whose prepass_start raises: its error)."""
    pres: dict[int, Any] = {}
    for i in wants:
        run = runs[i]
        if not run.active:
            continue
        t0 = time.perf_counter()
        try:
            pres[i] = run.rule.prepass_start(ctx)
        except RULE_FAILURES as exc:
            run.error, run.state = error_message(exc), None
        run.charge("prepass", time.perf_counter() - t0)
    return pres


def fold(
    runs: list[RuleRun],
    wants: dict[int, frozenset[str]],
    pres: dict[int, Any],
    batches: Iterable[tuple[str, int, pa.RecordBatch]],
    ctx: AuditContext,
    on_batch: Any = None,
) -> None:
    """Fold (split, first row, batch) triples into the prepass states of the rules that want
    each batch's split; the features a batch computes are shared by those rules."""
    clock = time.perf_counter
    for split, offset, rb in batches:
        batch = ctx.batch(split, rb, offset)
        for i, splits in wants.items():
            run = runs[i]
            if split not in splits or not run.active or i not in pres:
                continue
            t0 = clock()
            try:
                pres[i] = run.rule.prepass_update(pres[i], batch)
            except RULE_FAILURES as exc:
                run.error, run.state = error_message(exc), None
                del pres[i]
            run.charge("prepass", clock() - t0)
        if on_batch is not None:
            on_batch(rb.num_rows)


def absorb(runs: list[RuleRun], pres: dict[int, Any], part: dict[int, Any]) -> None:
    """Merge a later part's prepass states into ``pres`` (input order: ``pres`` first)."""
    for i, other in part.items():
        run = runs[i]
        if not run.active or i not in pres:
            continue
        t0 = time.perf_counter()
        try:
            pres[i] = run.rule.prepass_merge(pres[i], other)
        except RULE_FAILURES as exc:
            run.error, run.state = error_message(exc), None
            del pres[i]
        run.charge("prepass", time.perf_counter() - t0)


def finish(state: ScanState, pres: dict[int, Any], ctx: AuditContext) -> None:
    """Each rule's broadcast value into ``ctx.resources``; the rules that got one start again,
    so the state the scan merges into sees it too."""
    values: dict[str, Any] = dict(ctx.resources.prepasses)
    got = []
    for i, pre in sorted(pres.items()):
        run = state.runs[i]
        if not run.active:
            continue
        t0 = time.perf_counter()
        try:
            values[run.rule.code] = run.rule.prepass_finish(pre, ctx)
            got.append(run)
        except RULE_FAILURES as exc:
            run.error, run.state = error_message(exc), None
        run.charge("prepass", time.perf_counter() - t0)
    pres.clear()
    attach(ctx, values)
    for run in got:
        start_run(run, ctx)


def attach(ctx: AuditContext, values: dict[str, Any]) -> None:
    """Put the prepass values into ``ctx.resources`` (Resources is frozen: a new one)."""
    ctx.resources = dataclasses.replace(ctx.resources, prepasses=values)


def pickled(state: ScanState, ctx: AuditContext, what: Any) -> bytes:
    """``pickle.dumps(what())``, where ``what`` holds the prepass values: a value that cannot
    be pickled is its rule's error and leaves ``ctx.resources`` (then ``what`` is pickled
    again without it); the other rules go on."""
    import pickle

    try:
        return pickle.dumps(what(), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        values = dict(ctx.resources.prepasses)
        for run in state.runs:
            if run.rule.code not in values:
                continue
            try:
                pickle.dumps(values[run.rule.code], protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:
                run.error, run.state = (
                    "the rule's prepass value cannot be sent to the workers "
                    f"({type(exc).__name__}: {exc}); make prepass_finish return plain data "
                    "(numpy arrays, dicts, lists), or run with workers=1",
                    None,
                )
                del values[run.rule.code]
        attach(ctx, values)
    return pickle.dumps(what(), protocol=pickle.HIGHEST_PROTOCOL)


def detached(ctx: AuditContext) -> AuditContext:
    """A shallow copy of ``ctx`` without the prepass values, to pickle: the engines send them
    once per worker, on their own, not with every context they ship."""
    if not ctx.resources.prepasses:
        return ctx
    out = copy.copy(ctx)
    out.resources = dataclasses.replace(ctx.resources, prepasses={})
    return out


@dataclass
class Chunks:
    """The prepass's batches as (split, first row, batch), with row ids per split."""

    source: Iterable[tuple[str, pa.RecordBatch]]
    offsets: dict[str, int] = field(default_factory=dict)

    def __iter__(self) -> Iterator[tuple[str, int, pa.RecordBatch]]:
        for split, rb in self.source:
            offset = self.offsets.get(split, 0)
            self.offsets[split] = offset + rb.num_rows
            yield split, offset, rb


def run_local(
    state: ScanState,
    prepass: Plan,
    batches: Iterable[tuple[str, pa.RecordBatch]],
    ctx: AuditContext,
    *,
    progress: bool = False,
) -> None:
    """The prepass in this process: one read of the plan's splits, then each value into
    ``ctx.resources``."""
    t0 = time.perf_counter()
    pres = start(state.runs, prepass.wants, ctx)
    bar = Progress(progress, prepass.rows, "prepass")
    try:
        fold(state.runs, prepass.wants, pres, Chunks(batches), ctx, bar.update)
    finally:
        bar.close()
    finish(state, pres, ctx)
    prepass.seconds += time.perf_counter() - t0

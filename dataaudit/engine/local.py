"""The one-process scan: every batch folds into every active rule, then each rule finishes."""

from __future__ import annotations

import time
from collections.abc import Iterable

import pyarrow as pa

from .._process import resume_collection
from ..context import AuditContext
from ..identity import SplitIdentity
from ..rule import RuleResult
from . import keyed
from .progress import Progress
from .reportable import check_result
from .state import RULE_FAILURES, RuleRun, ScanState, error_message

__all__ = ["finish", "scan"]


def scan(
    state: ScanState,
    batches: Iterable[tuple[str, pa.RecordBatch]],
    ctx: AuditContext,
    *,
    offsets: dict[str, int] | None = None,
    progress: bool = False,
    total_rows: int | None = None,
    desc: str = "scanning",
) -> ScanState:
    """Fold (split, batch) pairs into every active rule. ``offsets`` start row ids per split;
    ``desc`` names the stage on the progress bar.

    Batches are read here, not on a thread one batch ahead: tried (issue 13, DUP002 on 40k
    documents, 12-25 alternating pairs, load ~1) it gained no wall time on JSON Lines, whose
    reader already parses the next block on a thread (wall x0.97-1.06, CPU-s up to +7%); on
    Parquet of long texts best-of wall fell 8-12% but median CPU-s rose up to 13-18%; small
    batches (short texts) lose to the hand-offs (1M rows, Parquet: +4% wall and CPU-s)."""
    offsets = dict(offsets or {})
    bar = Progress(progress, total_rows, desc)
    timings = state.timings
    clock = time.perf_counter
    names = list(ctx.splits)  # keyed rows spill their split as its rank in these
    try:
        source = iter(batches)
        while True:
            t0 = clock()
            item = next(source, None)
            timings.read += clock() - t0
            if item is None:
                break
            split, rb = item
            batch = ctx.batch(split, rb, offsets.get(split, 0))
            offsets[split] = offsets.get(split, 0) + rb.num_rows
            for index, run in enumerate(state.runs):
                if not run.active:
                    continue
                t0, f0 = clock(), batch.features_total
                try:
                    run.state = run.rule.update(run.state, batch)
                except RULE_FAILURES as exc:
                    run.error = error_message(exc)
                    run.state = None
                if state.spill is not None and run.active and keyed.is_keyed(run.rule):
                    keyed.spill(state.spill, index, run, batch, names)
                # features this rule asked for first are the features' time, not the rule's
                run.charge("update", clock() - t0 - (batch.features_total - f0))
            timings.add_features(batch.feature_seconds)
            t0 = clock()  # after the rules: their compiled kernels, once loaded, hash it too
            if split not in state.identity:
                state.identity[split] = SplitIdentity()
            state.identity[split].update(rb)
            timings.identity += clock() - t0
            bar.update(rb.num_rows)
            resume_collection()  # start-up ends with the first batch (its kernels loaded)
    finally:
        bar.close()
    return state


def _finish_order(runs: list[RuleRun]) -> list[RuleRun]:
    """The runs in their order, except that a rule finishes after the rules it names in
    ``Rule.after`` (a stable topological order; a cycle keeps the given order)."""
    by_code = {run.rule.code: run for run in runs}
    out: list[RuleRun] = []
    placed: set[int] = set()
    visiting: set[int] = set()

    def place(run: RuleRun) -> None:
        if id(run) in placed or id(run) in visiting:
            return
        visiting.add(id(run))
        for code in getattr(run.rule, "after", ()):
            dep = by_code.get(code)
            if dep is not None:
                place(dep)
        visiting.discard(id(run))
        placed.add(id(run))
        out.append(run)

    for run in runs:
        place(run)
    return out


def finish(state: ScanState, ctx: AuditContext, *, progress: bool = False) -> ScanState:
    """Each active rule's result from its state. Clustering, probes and classifiers run here,
    often longer than the scan: the progress bar counts the rules and names the running one."""
    for name, ident in state.identity.items():
        if name in ctx.splits:
            ctx.splits[name].num_rows = ident.rows
    active = _finish_order([run for run in state.runs if run.active])
    bar = Progress(progress, len(active), "finishing", unit="rules")
    done: dict[str, RuleResult] = {}
    try:
        for run in active:
            bar.describe(f"finishing {run.rule.code} ({run.rule.name})")
            t0 = time.perf_counter()
            ctx.results = {c: done[c] for c in getattr(run.rule, "after", ()) if c in done}
            try:
                if state.spill is not None and keyed.is_keyed(run.rule):
                    run.result = _finish_keyed(state, run, ctx)
                else:
                    run.result = run.rule.finish(run.state, ctx)
            except RULE_FAILURES as exc:
                run.error = error_message(exc)
            else:
                check_result(run)
            finally:
                ctx.results = {}
            if run.result is not None:
                done[run.rule.code] = run.result
            run.charge("finish", time.perf_counter() - t0)
            run.state = None  # free memory: the result is all the report needs
            bar.update(1)
    finally:
        bar.close()
        if state.spill is not None:
            state.spill.remove()
            state.spill = None
    return state


def _finish_keyed(state: ScanState, run: RuleRun, ctx: AuditContext) -> RuleResult:
    """A keyed rule's partitions, one at a time, into edges (verified in a second hop on disk
    if the rule verifies); their components into its result."""
    index = state.runs.index(run)
    state.spill.close(wait=False)  # the payload's last writes go on while the partitions are read
    # the verification hop's pieces share the spill's memory budget (partitions are dropped
    # once read for the last time: run_local)
    scratch = keyed.DiskSpill(state.spill.root / f"hop-{index}", shared=state.spill)
    clusters = keyed.run_local(run.rule, state.spill, index, list(ctx.splits), scratch)
    return run.rule.finish_keyed(run.state, clusters, ctx)

"""One streaming pass over the corpus feeds every selected rule.

Per batch, shared features are computed lazily once (see features/), then each rule folds the batch
into its state. A rule that raises is marked ``error`` with its message and dropped from the rest of
the pass; the other rules finish. States are mergeable, so :func:`scan` can run on shards and
:func:`merge_scans` combines them exactly.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from .context import AuditContext
from .features import Batch
from .identity import SplitIdentity
from .rule import Rule, RuleResult, Severity


@dataclass
class RuleRun:
    """A rule, its state and how its run went."""

    rule: Rule
    severity: Severity
    state: Any = None
    error: str | None = None
    skipped: str | None = None
    seconds: float = 0.0
    result: RuleResult | None = None

    @property
    def active(self) -> bool:
        return self.error is None and self.skipped is None


@dataclass
class ScanState:
    runs: list[RuleRun]
    identity: dict[str, SplitIdentity] = field(default_factory=dict)


def _error_message(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


def start(rules: list[tuple[Rule, Severity]], ctx: AuditContext) -> ScanState:
    runs = []
    for rule, severity in rules:
        run = RuleRun(rule, severity)
        run.skipped = rule.skip_reason(ctx)
        if run.skipped is None:
            t0 = time.perf_counter()
            try:
                run.state = rule.start(ctx)
            except Exception as exc:
                run.error = _error_message(exc)
            run.seconds += time.perf_counter() - t0
        runs.append(run)
    return ScanState(runs, {name: SplitIdentity() for name in ctx.splits})


class _Progress:
    def __init__(self, enabled: bool, total: int | None):
        self.bar = None
        if enabled and sys.stderr.isatty():
            try:
                from tqdm import tqdm

                self.bar = tqdm(
                    total=total, unit="rows", file=sys.stderr, desc="auditing", leave=False
                )
            except ImportError:  # pragma: no cover
                self.bar = None

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def scan(
    state: ScanState,
    batches: Iterable[tuple[str, pa.RecordBatch]],
    ctx: AuditContext,
    *,
    offsets: dict[str, int] | None = None,
    progress: bool = False,
    total_rows: int | None = None,
) -> ScanState:
    """Fold (split, batch) pairs into every active rule. ``offsets`` start row ids per split."""
    offsets = dict(offsets or {})
    bar = _Progress(progress, total_rows)
    try:
        for split, rb in batches:
            if split not in state.identity:
                state.identity[split] = SplitIdentity()
            state.identity[split].update(rb)
            info = ctx.splits.get(split)
            batch = Batch(
                split, rb, offsets.get(split, 0), ctx.roles, info.kind if info else "other"
            )
            offsets[split] = offsets.get(split, 0) + rb.num_rows
            for run in state.runs:
                if not run.active:
                    continue
                t0 = time.perf_counter()
                try:
                    run.state = run.rule.update(run.state, batch)
                except Exception as exc:
                    run.error = _error_message(exc)
                    run.state = None
                run.seconds += time.perf_counter() - t0
            bar.update(rb.num_rows)
    finally:
        bar.close()
    return state


# -- parallel scan: contiguous chunks of batches fold in worker processes, merge in order --------

_WORKER: dict[str, Any] = {}


def _init_worker(rules: list[tuple[Rule, Severity]], ctx: AuditContext) -> None:
    _WORKER["rules"] = rules
    _WORKER["ctx"] = ctx


def _fold_chunk(chunk: list[tuple[str, int, pa.RecordBatch]], active: list[bool]) -> ScanState:
    ctx: AuditContext = _WORKER["ctx"]
    state = start(_WORKER["rules"], ctx)
    for run, on in zip(state.runs, active):
        if not on and run.error is None and run.skipped is None:
            run.skipped = "inactive"
    for split, offset, rb in chunk:
        scan(state, [(split, rb)], ctx, offsets={split: offset})
    for run in state.runs:
        run.rule = None  # type: ignore[assignment]  # the parent has the rule; don't pickle it back
    return state


def _absorb(state: ScanState, part: ScanState) -> None:
    for run, other in zip(state.runs, part.runs):
        run.seconds += other.seconds
        if not run.active:
            continue
        if other.error is not None:
            run.error, run.state = other.error, None
            continue
        t0 = time.perf_counter()
        try:
            run.state = run.rule.merge(run.state, other.state)
        except Exception as exc:
            run.error, run.state = _error_message(exc), None
        run.seconds += time.perf_counter() - t0
    for name, ident in part.identity.items():
        state.identity[name] = (
            state.identity[name].merge(ident) if name in state.identity else ident
        )


_THREAD_VARS = ("POLARS_MAX_THREADS", "RAYON_NUM_THREADS", "OMP_NUM_THREADS")


def _spawn_pool(workers: int, rules: list[tuple[Rule, Severity]], ctx: AuditContext) -> Any:
    """A spawn-context pool whose workers do not re-run the user's script.

    Spawn, not fork: polars, pyarrow and tokenizers keep thread pools that fork can deadlock.
    Spawned children normally import ``__main__`` again, which in a plain script (no
    ``if __name__ == "__main__":`` guard) would call audit() recursively; hiding the main
    module's path while the workers start avoids that. Rules defined in ``__main__`` itself
    therefore cannot run with workers > 1.
    """
    import multiprocessing as mp

    main = sys.modules.get("__main__")
    hidden = {k: getattr(main, k) for k in ("__file__", "__spec__") if hasattr(main, k)}
    # one process per core: the libraries' own thread pools would only oversubscribe the cores
    threads = str(max(1, (os.cpu_count() or 1) // workers))
    env = {k: threads for k in _THREAD_VARS if k not in os.environ}
    os.environ.update(env)
    try:
        if "__file__" in hidden:
            del main.__file__
        if "__spec__" in hidden:
            main.__spec__ = None
        return mp.get_context("spawn").Pool(
            workers, initializer=_init_worker, initargs=(rules, ctx)
        )
    finally:
        for key, value in hidden.items():
            setattr(main, key, value)
        for key in env:
            os.environ.pop(key, None)


def scan_parallel(
    state: ScanState,
    batches: Iterable[tuple[str, pa.RecordBatch]],
    ctx: AuditContext,
    *,
    workers: int,
    chunk_rows: int | None = None,
    progress: bool = False,
    total_rows: int | None = None,
) -> ScanState:
    """Like :func:`scan`, with features and rule updates in ``workers`` processes.

    The parent reads batches and cuts them into contiguous chunks; each chunk folds into fresh
    rule states in a worker; the parent merges chunk states in input order, so the result is the
    same as one pass (the conformance suite checks split-and-merge for every rule). At most
    2 x workers chunks are in flight, so memory stays bounded by the chunk size.
    """
    from collections import deque

    rules = [(run.rule, run.severity) for run in state.runs]
    offsets: dict[str, int] = {}
    bar = _Progress(progress, total_rows)

    if chunk_rows is None:
        # about 4 chunks per worker when the size is known, so the last chunks even out the
        # load (7 chunks on 2 workers is 4 + 3), but never tiny or huge
        per = -(-total_rows // (4 * workers)) if total_rows else 16384
        chunk_rows = min(16384, max(2048, per))

    def chunks() -> Iterable[list[tuple[str, int, pa.RecordBatch]]]:
        """Exactly ``chunk_rows`` rows each (batches are sliced, zero-copy), but the last."""
        chunk: list[tuple[str, int, pa.RecordBatch]] = []
        rows = 0
        for split, rb in batches:
            while rb.num_rows:
                take = rb.slice(0, chunk_rows - rows)
                rb = rb.slice(take.num_rows)
                chunk.append((split, offsets.get(split, 0), take))
                offsets[split] = offsets.get(split, 0) + take.num_rows
                rows += take.num_rows
                if rows >= chunk_rows:
                    yield chunk
                    chunk, rows = [], 0
        if chunk:
            yield chunk

    try:
        with _spawn_pool(workers, rules, ctx) as pool:
            pending: deque = deque()
            for chunk in chunks():
                active = [run.active for run in state.runs]
                pending.append(
                    (
                        pool.apply_async(_fold_chunk, (chunk, active)),
                        sum(rb.num_rows for _, _, rb in chunk),
                    )
                )
                while len(pending) >= 2 * workers:
                    result, n = pending.popleft()
                    _absorb(state, result.get())
                    bar.update(n)
            while pending:
                result, n = pending.popleft()
                _absorb(state, result.get())
                bar.update(n)
    finally:
        bar.close()
    return state


def merge_scans(a: ScanState, b: ScanState) -> ScanState:
    """Combine two shards' scans of the same rules (b's rows come after a's)."""
    runs = []
    for ra, rb in zip(a.runs, b.runs):
        run = RuleRun(ra.rule, ra.severity, skipped=ra.skipped, seconds=ra.seconds + rb.seconds)
        run.error = ra.error or rb.error
        if run.active:
            try:
                run.state = ra.rule.merge(ra.state, rb.state)
            except Exception as exc:
                run.error = _error_message(exc)
        runs.append(run)
    identity = dict(a.identity)
    for name, ident in b.identity.items():
        identity[name] = identity[name].merge(ident) if name in identity else ident
    return ScanState(runs, identity)


def finish(state: ScanState, ctx: AuditContext) -> ScanState:
    for name, ident in state.identity.items():
        if name in ctx.splits:
            ctx.splits[name].num_rows = ident.rows
    for run in state.runs:
        if not run.active:
            continue
        t0 = time.perf_counter()
        try:
            run.result = run.rule.finish(run.state, ctx)
        except Exception as exc:
            run.error = _error_message(exc)
        run.seconds += time.perf_counter() - t0
        run.state = None  # free memory: the result is all the report needs
    return state

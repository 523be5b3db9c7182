"""The parallel scan: contiguous chunks of batches fold in worker processes, merged in order.

The parent reads and cuts the input; workers (spawned, one per core) fold chunks into fresh rule
states and send them back pickled; the parent merges them in input order, so the result equals one
pass. A rule or state that cannot travel between processes is that rule's error; a worker that
dies stops the scan with a reason instead of hanging.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from ..context import AuditContext
from ..identity import SplitIdentity
from ..rule import Severity
from . import prepass
from .local import scan
from .progress import Progress
from .state import RULE_FAILURES, RuleRun, ScanState, Timings, error_message, start_run

__all__ = ["MAX_CHUNK_ROWS", "MIN_CHUNK_ROWS", "scan_parallel"]

_WORKER: dict[str, Any] = {}


def _not_sendable(what: str, exc: BaseException) -> str:
    """Why a rule or its state cannot travel to or from a worker process, and the fixes."""
    if what == "rule":
        return (
            f"the rule cannot be sent between worker processes: {type(exc).__name__}: {exc}; "
            "run with workers=1, or define the rule class in an importable module (not in the "
            "script that calls audit()) and keep locks, open files and lambdas out of it"
        )
    return (
        f"the rule's state cannot be sent between worker processes: {type(exc).__name__}: "
        f"{exc}; run with workers=1 or make the state picklable (no lambdas, locks, open files "
        "or generators in it)"
    )


def _init_worker(rules: list[tuple[bytes | None, Severity]], ctx: bytes) -> None:
    """Load the rules one by one: a rule that cannot be loaded here is an error of that rule
    only (a worker whose initializer raised would break the whole pool)."""
    from .._process import arrow_in_jemalloc, reuse_freed_memory

    reuse_freed_memory()
    arrow_in_jemalloc()
    _WORKER.clear()
    _WORKER["rules"], _WORKER["errors"] = [], {}
    try:
        _WORKER["ctx"] = pickle.loads(ctx)
    except Exception as exc:
        _WORKER["fatal"] = f"the audit context cannot be loaded in a worker process: {exc!r}"
    for i, (blob, severity) in enumerate(rules):
        rule = None
        if blob is not None:
            try:
                rule = pickle.loads(blob)
            except Exception as exc:
                _WORKER["errors"][i] = _not_sendable("rule", exc)
        _WORKER["rules"].append((rule, severity))


def _use_prepared(path: str | None) -> None:
    """The prepass values of this scan (a file the parent wrote once), loaded into the
    worker's context once per process, not shipped with every chunk."""
    if path is None or _WORKER.get("prepared") == path:
        return
    with open(path, "rb") as f:
        prepass.attach(_WORKER["ctx"], pickle.load(f))
    _WORKER["prepared"] = path


def _fold_chunk(
    chunk: list[tuple[str, int, pa.RecordBatch]],
    active: list[bool],
    spill: str | None = None,
    prepared: str | None = None,
) -> ScanState:
    """Fold a chunk into fresh states of the active rules; states travel back pickled, one by
    one, so a state that cannot be pickled is an error of its rule, not of the chunk. Keyed
    rules' rows go to ``spill``: a folder (the parent's on-disk partitions), or "memory" (kept
    in ``state.spill`` for the caller: the Ray engine returns them to the object store).
    ``prepared``: the file of the prepass values (see :func:`_use_prepared`)."""
    if "fatal" in _WORKER:
        raise RuntimeError(_WORKER["fatal"])
    _use_prepared(prepared)
    ctx: AuditContext = _WORKER["ctx"]
    runs = []
    for i, ((rule, severity), on) in enumerate(zip(_WORKER["rules"], active)):
        run = RuleRun(rule, severity)
        if not on or rule is None:
            run.skipped = "inactive"
            run.error = _WORKER["errors"].get(i) if on else None
        else:
            start_run(run, ctx)
        runs.append(run)
    state = ScanState(runs, {name: SplitIdentity() for name in ctx.splits})
    if spill is not None:
        from .keyed import DiskSpill, MemorySpill

        # a worker's pieces go to disk, where its parent reads them (budget 0)
        state.spill = MemorySpill() if spill == "memory" else DiskSpill(spill, budget=0)
    for split, offset, rb in chunk:
        scan(state, [(split, rb)], ctx, offsets={split: offset})
    if spill is not None and spill != "memory":
        state.spill.close()
        state.spill = None
    for run in state.runs:
        if run.active:
            try:
                run.state = pickle.dumps(run.state, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:
                run.state = None
                run.error = _not_sendable("state", exc)
        run.rule = None  # type: ignore[assignment]  # the parent has the rule; don't pickle it back
    return state


def _prepass_chunk(
    chunk: list[tuple[str, int, pa.RecordBatch]], wants: dict[int, frozenset[str]]
) -> tuple[dict[int, bytes], dict[int, str], dict[int, float]]:
    """Fold a chunk of the prepass splits into fresh prepass states of the rules in ``wants``:
    their states pickled, their errors, their seconds (rule index -> each)."""
    if "fatal" in _WORKER:
        raise RuntimeError(_WORKER["fatal"])
    ctx: AuditContext = _WORKER["ctx"]
    runs = [RuleRun(rule, severity) for rule, severity in _WORKER["rules"]]
    errors: dict[int, str] = {}
    for i in wants:
        if runs[i].rule is None:
            errors[i] = _WORKER["errors"].get(i) or _not_sendable("rule", ValueError("not sent"))
            runs[i].error = errors[i]
    pres = prepass.start(runs, wants, ctx)
    prepass.fold(runs, wants, pres, chunk, ctx)
    blobs: dict[int, bytes] = {}
    for i, pre in pres.items():
        try:
            blobs[i] = pickle.dumps(pre, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            runs[i].error = _not_sendable("state", exc).replace("state", "prepass state", 1)
    for i in wants:
        if runs[i].error is not None:
            errors[i] = runs[i].error
            blobs.pop(i, None)
    return blobs, errors, {i: runs[i].phases.get("prepass", 0.0) for i in wants}


def _absorb_prepass(
    state: ScanState,
    pres: dict[int, Any],
    part: tuple[dict[int, bytes], dict[int, str], dict[int, float]],
) -> None:
    """A worker's prepass part merged into ``pres`` (parts come in input order)."""
    blobs, errors, seconds = part
    for i, sec in seconds.items():
        state.runs[i].charge("prepass", sec)
    for i, message in errors.items():
        if state.runs[i].active:
            state.runs[i].error, state.runs[i].state = message, None
        pres.pop(i, None)
    loaded = {}
    for i, blob in blobs.items():
        if i not in pres or not state.runs[i].active:
            continue
        try:
            loaded[i] = pickle.loads(blob)
        except Exception as exc:
            state.runs[i].error = (
                f"the rule's prepass state from a worker process cannot be loaded: "
                f"{error_message(exc)}"
            )
            state.runs[i].state = None
            pres.pop(i)
    prepass.absorb(state.runs, pres, loaded)


def _prepass_in_pool(
    pool: Any,
    state: ScanState,
    plan: prepass.Plan,
    batches: Iterable[tuple[str, pa.RecordBatch]],
    ctx: AuditContext,
    workers: int,
    chunk_rows: int,
    progress: bool,
) -> None:
    """The prepass in the pool's workers: chunks of the plan's splits fold there, merge here
    in input order, and finish here (the values go into ``ctx.resources``)."""
    from collections import deque
    from concurrent.futures.process import BrokenProcessPool

    t0 = time.perf_counter()
    pres = prepass.start(state.runs, plan.wants, ctx)
    bar = Progress(progress, plan.rows, "prepass")
    pending: deque = deque()

    def absorb_oldest() -> None:
        future, done = pending.popleft()
        try:
            part = future.result()
        except Exception as exc:
            died = isinstance(exc, BrokenProcessPool)
            raise _PrepassFailed(
                ("a worker process died" if died else f"a worker failed ({error_message(exc)})")
                + f" during the prepass ({_rows_text([done])}, read first for the rules' "
                "prepasses); the scan did not start, so this rule has no verdict. Use fewer "
                "workers (--workers), or run with workers=1 to see which rule fails."
            ) from None
        _absorb_prepass(state, pres, part)
        bar.update(sum(rb.num_rows for _, _, rb in done))

    try:
        for chunk in cut_chunks(batches, chunk_rows, {}, Timings()):
            wants = {i: s for i, s in plan.wants.items() if i in pres}
            if not wants:
                break
            pending.append((pool.submit(_prepass_chunk, chunk, wants), chunk))
            while len(pending) >= 2 * workers:
                absorb_oldest()
        while pending:
            absorb_oldest()
    finally:
        bar.close()
    prepass.finish(state, pres, ctx)
    plan.seconds += time.perf_counter() - t0


def _absorb(state: ScanState, part: ScanState) -> None:
    state.timings.absorb(part.timings)
    for run, other in zip(state.runs, part.runs):
        for phase, seconds in other.phases.items():  # the worker's start and update
            run.charge(phase, seconds)
        if not run.active:
            continue
        if other.error is not None:
            run.error, run.state = other.error, None
            continue
        if other.skipped is not None:  # not run in the worker; its error was reported above
            continue
        t0 = time.perf_counter()
        try:
            other_state = pickle.loads(other.state)
        except Exception as exc:
            run.error, run.state = (
                f"the rule's state from a worker process cannot be loaded: {error_message(exc)}",
                None,
            )
            continue
        try:
            run.state = run.rule.merge(run.state, other_state)
        except RULE_FAILURES as exc:
            run.error, run.state = error_message(exc), None
        run.charge("merge", time.perf_counter() - t0)
    _absorb_identity(state, part.identity)


def _absorb_identity(state: ScanState, identity: dict[str, SplitIdentity]) -> None:
    for name, ident in identity.items():
        state.identity[name] = (
            state.identity[name].merge(ident) if name in state.identity else ident
        )


_THREAD_VARS = ("POLARS_MAX_THREADS", "RAYON_NUM_THREADS", "OMP_NUM_THREADS")
#: bounds of the default chunk size of :func:`scan_parallel` (rows per task sent to a worker)
MIN_CHUNK_ROWS, MAX_CHUNK_ROWS = 2048, 16384


@contextmanager
def _spawn_pool(workers: int, initargs: tuple) -> Iterator[Any]:
    """A spawn-context process pool whose workers do not re-run the user's script.

    Spawn, not fork: polars, pyarrow and tokenizers keep thread pools that fork can deadlock.
    Spawned children normally import ``__main__`` again, which in a plain script (no
    ``if __name__ == "__main__":`` guard) would call audit() recursively; the main module's path
    stays hidden while the pool lives, because the pool starts its workers on demand. Rules
    defined in ``__main__`` itself therefore cannot run with workers > 1 (they are reported as
    errors). A ProcessPoolExecutor, not a multiprocessing.Pool: a worker that dies (killed for
    memory) breaks the pool with an exception instead of losing its task forever.
    """
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    main = sys.modules.get("__main__")
    hidden = {k: getattr(main, k) for k in ("__file__", "__spec__") if hasattr(main, k)}
    # one process per core: the libraries' own thread pools would only oversubscribe the cores
    threads = str(max(1, (os.cpu_count() or 1) // workers))
    env = {k: threads for k in _THREAD_VARS if k not in os.environ}
    os.environ.update(env)
    pool = None
    try:
        if "__file__" in hidden:
            del main.__file__
        if "__spec__" in hidden:
            main.__spec__ = None
        pool = ProcessPoolExecutor(
            workers,
            mp_context=mp.get_context("spawn"),
            initializer=_init_worker,
            initargs=initargs,
        )
        yield pool
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        for key, value in hidden.items():
            setattr(main, key, value)
        for key in env:
            os.environ.pop(key, None)


def _sendable_rules(state: ScanState) -> list[tuple[bytes | None, Severity]]:
    """Each active rule pickled on its own; one that cannot be becomes an error of that rule."""
    out: list[tuple[bytes | None, Severity]] = []
    for run in state.runs:
        blob = None
        if run.active:
            try:
                blob = pickle.dumps(run.rule, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:
                run.error = _not_sendable("rule", exc)
        out.append((blob, run.severity))
    return out


def _rows_text(chunks: Iterable[list[tuple[str, int, pa.RecordBatch]]]) -> str:
    """'train rows 0-16383, test rows 0-99': the rows of the chunks, per split."""
    spans: dict[str, list[int]] = {}
    for chunk in chunks:
        for split, offset, rb in chunk:
            lo, hi = spans.setdefault(split, [offset, offset + rb.num_rows])
            spans[split] = [min(lo, offset), max(hi, offset + rb.num_rows)]
    return ", ".join(f"{s} rows {lo}-{hi - 1}" for s, (lo, hi) in spans.items()) or "no rows"


class _ChunkFailed(Exception):
    """A worker could not fold a chunk at all (not one rule's error)."""


class _PrepassFailed(Exception):
    """The prepass could not run in the workers (a worker died, a chunk failed): why."""


def _stop_scan(
    state: ScanState, reason: str, lost: list[list[tuple[str, int, pa.RecordBatch]]]
) -> None:
    """The scan cannot go on: every rule still running gets ``reason``. The rows in flight still
    count in the splits' identity (they were read); splits the scan never reached are left out
    of it rather than reported as empty."""
    state.stopped = reason
    for run in state.runs:
        if run.active:
            run.error, run.state = reason, None
    for chunk in lost:
        for split, _, rb in chunk:
            state.identity.setdefault(split, SplitIdentity()).update(rb)
    for name in [n for n, ident in state.identity.items() if ident.rows == 0]:
        del state.identity[name]


def default_chunk_rows(total_rows: int | None, workers: int) -> int:
    """About 4 chunks per worker when the size is known, so the last chunks even out the load
    (7 chunks on 2 workers is 4 + 3), but never tiny or huge."""
    per = -(-total_rows // (4 * workers)) if total_rows else MAX_CHUNK_ROWS
    return min(MAX_CHUNK_ROWS, max(MIN_CHUNK_ROWS, per))


def cut_chunks(
    batches: Iterable[tuple[str, pa.RecordBatch]],
    chunk_rows: int,
    offsets: dict[str, int],
    timings: Timings,
) -> Iterator[list[tuple[str, int, pa.RecordBatch]]]:
    """(split, first row, batch) chunks of exactly ``chunk_rows`` rows each (batches are
    sliced, zero-copy), but the last; ``offsets`` advance per split, reading time goes to
    ``timings`` (the parent reads; workers fold)."""
    chunk: list[tuple[str, int, pa.RecordBatch]] = []
    rows = 0
    source = iter(batches)
    while True:
        t0 = time.perf_counter()
        item = next(source, None)
        timings.read += time.perf_counter() - t0
        if item is None:
            break
        split, rb = item
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


def scan_parallel(
    state: ScanState,
    batches: Iterable[tuple[str, pa.RecordBatch]],
    ctx: AuditContext,
    *,
    workers: int,
    chunk_rows: int | None = None,
    progress: bool = False,
    total_rows: int | None = None,
    prepass_input: tuple[prepass.Plan, Iterable[tuple[str, pa.RecordBatch]]] | None = None,
) -> ScanState:
    """Like :func:`scan`, with features and rule updates in ``workers`` processes.

    The parent reads batches and cuts them into contiguous chunks; each chunk folds into fresh
    rule states in a worker; the parent merges chunk states in input order, so the result is the
    same as one pass (the conformance suite checks split-and-merge for every rule). At most
    2 x workers chunks are in flight, so memory stays bounded by the chunk size. A worker that
    dies stops the scan: every rule still running becomes an error that says which rows were
    being folded, and the report is still built (the gate fails).

    ``prepass_input``: the prepass plan and its splits' batches, folded in the same workers
    first (:mod:`.prepass`); its values reach each worker once, in a file it loads.
    """
    from collections import deque
    from concurrent.futures.process import BrokenProcessPool

    from ..errors import ConfigError

    try:
        ctx_blob = pickle.dumps(prepass.detached(ctx), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise ConfigError(
            f"workers={workers}: the audit's context or resources (tokenizer, benchmark files) "
            f"cannot be sent to worker processes ({type(exc).__name__}: {exc}); run with "
            "workers=1."
        ) from None
    rules = _sendable_rules(state)
    offsets: dict[str, int] = {}
    bar = Progress(progress, total_rows)

    if chunk_rows is None:
        chunk_rows = default_chunk_rows(total_rows, workers)
    spill = str(state.spill.root) if state.spill is not None else None

    def chunks() -> Iterator[list[tuple[str, int, pa.RecordBatch]]]:
        return cut_chunks(batches, chunk_rows, offsets, state.timings)

    pending: deque = deque()  # (future, chunk), in input order
    unsent: list = []  # the chunk being submitted

    def absorb_oldest() -> None:
        future, chunk = pending[0]
        try:
            part = future.result()
        except BrokenProcessPool:
            raise
        except Exception as exc:
            raise _ChunkFailed(error_message(exc)) from exc
        pending.popleft()
        _absorb(state, part)
        bar.update(sum(rb.num_rows for _, _, rb in chunk))

    prepared = None
    try:
        with _spawn_pool(workers, (rules, ctx_blob)) as pool:
            # errors reading the input (InputError...) are not caught here: they end the audit
            try:
                if prepass_input is not None and prepass_input[0]:
                    plan, source = prepass_input
                    _prepass_in_pool(pool, state, plan, source, ctx, workers, chunk_rows, progress)
                prepared = _write_prepared(state, ctx)
                for chunk in chunks():
                    active = [run.active for run in state.runs]
                    unsent = [chunk]
                    pending.append(
                        (pool.submit(_fold_chunk, chunk, active, spill, prepared), chunk)
                    )
                    unsent = []
                    while len(pending) >= 2 * workers:
                        absorb_oldest()
                while pending:
                    absorb_oldest()
            except BrokenProcessPool:
                lost = [chunk for _, chunk in pending] + unsent
                _stop_scan(
                    state,
                    "a worker process died (most likely killed by the system for lack of "
                    "memory, or a rule ended the process) while "
                    f"{_rows_text(lost)} were being folded; the scan stopped there, so this "
                    "rule has no verdict. Use fewer workers (--workers) or a smaller batch size "
                    "(--batch-size), or run with workers=1 to see which rule fails.",
                    lost,
                )
            except _ChunkFailed as exc:
                lost = [chunk for _, chunk in pending]
                _stop_scan(
                    state,
                    f"the parallel scan failed while {_rows_text(lost)} were being folded "
                    f"({exc}); the scan stopped there, so this rule has no verdict. Run with "
                    "workers=1.",
                    lost,
                )
            except _PrepassFailed as exc:
                _stop_scan(state, str(exc), [])
    finally:
        bar.close()
        if prepared is not None:
            os.unlink(prepared)
    return state


def _write_prepared(state: ScanState, ctx: AuditContext) -> str | None:
    """The prepass values pickled once into a file each worker process loads once (a file
    rather than the chunks' arguments: a 100 MB value would travel with every chunk). A value
    that cannot be pickled is its rule's error."""
    import tempfile

    if not ctx.resources.prepasses:
        return None
    blob = prepass.pickled(state, ctx, lambda: dict(ctx.resources.prepasses))
    fd, path = tempfile.mkstemp(prefix="dataaudit-prepass-", suffix=".pickle")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
    except BaseException:
        os.unlink(path)
        raise
    return path

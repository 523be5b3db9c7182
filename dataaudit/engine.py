"""One streaming pass over the corpus feeds every selected rule.

Per batch, shared features are computed lazily once (see features/), then each rule folds the batch
into its state. A rule that raises is marked ``error`` with its message and dropped from the rest of
the pass; the other rules finish. States are mergeable, so :func:`scan_parallel` folds chunks in
worker processes and merges them exactly.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from .context import AuditContext
from .identity import SplitIdentity
from .rule import Direction, Finding, Flag, Metric, Rule, RuleOutcome, RuleResult, Severity


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

    def outcome(self) -> RuleOutcome:
        """What the report takes of this run (the state stays here)."""
        return RuleOutcome(
            self.rule, self.severity, self.result, self.error, self.skipped, self.seconds
        )


@dataclass
class ScanState:
    runs: list[RuleRun]
    identity: dict[str, SplitIdentity] = field(default_factory=dict)
    #: why the scan stopped before the end of the input (a worker died), or None
    stopped: str | None = None


#: what a rule's own code may raise without ending the audit: any exception, and sys.exit()
#: (a plugin must not end the audit or choose its exit code); Ctrl-C still stops everything
RULE_FAILURES = (Exception, SystemExit)


def _error_message(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    if isinstance(exc, SystemExit):
        return f"the rule called sys.exit({exc.code!r}){where}"
    return f"{type(exc).__name__}: {exc}{where}"


def _start_run(run: RuleRun, ctx: AuditContext) -> None:
    t0 = time.perf_counter()
    try:
        run.skipped = run.rule.skip_reason(ctx)
        if run.skipped is None:
            run.state = run.rule.start(ctx)
    except RULE_FAILURES as exc:
        run.skipped, run.error = None, _error_message(exc)
    run.seconds += time.perf_counter() - t0


def start(rules: list[tuple[Rule, Severity]], ctx: AuditContext) -> ScanState:
    runs = []
    for rule, severity in rules:
        run = RuleRun(rule, severity)
        _start_run(run, ctx)
        runs.append(run)
    return ScanState(runs, {name: SplitIdentity() for name in ctx.splits})


class _Progress:
    """A ``tqdm.auto`` bar when ``enabled``: a widget in Jupyter, text on stderr elsewhere.
    Whoever asks decides whether it shows (the CLI asks only when stderr is a terminal)."""

    def __init__(
        self, enabled: bool, total: int | None, desc: str = "scanning", unit: str = "rows"
    ):
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, unit=unit, desc=desc, leave=False, dynamic_ncols=True)

    def describe(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_description_str(text)

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
    desc: str = "scanning",
) -> ScanState:
    """Fold (split, batch) pairs into every active rule. ``offsets`` start row ids per split;
    ``desc`` names the stage on the progress bar."""
    offsets = dict(offsets or {})
    bar = _Progress(progress, total_rows, desc)
    try:
        for split, rb in batches:
            if split not in state.identity:
                state.identity[split] = SplitIdentity()
            state.identity[split].update(rb)
            batch = ctx.batch(split, rb, offsets.get(split, 0))
            offsets[split] = offsets.get(split, 0) + rb.num_rows
            for run in state.runs:
                if not run.active:
                    continue
                t0 = time.perf_counter()
                try:
                    run.state = run.rule.update(run.state, batch)
                except RULE_FAILURES as exc:
                    run.error = _error_message(exc)
                    run.state = None
                run.seconds += time.perf_counter() - t0
            bar.update(rb.num_rows)
    finally:
        bar.close()
    return state


# -- parallel scan: contiguous chunks of batches fold in worker processes, merge in order --------

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


def _fold_chunk(chunk: list[tuple[str, int, pa.RecordBatch]], active: list[bool]) -> ScanState:
    """Fold a chunk into fresh states of the active rules; states travel back pickled, one by
    one, so a state that cannot be pickled is an error of its rule, not of the chunk."""
    if "fatal" in _WORKER:
        raise RuntimeError(_WORKER["fatal"])
    ctx: AuditContext = _WORKER["ctx"]
    runs = []
    for i, ((rule, severity), on) in enumerate(zip(_WORKER["rules"], active)):
        run = RuleRun(rule, severity)
        if not on or rule is None:
            run.skipped = "inactive"
            run.error = _WORKER["errors"].get(i) if on else None
        else:
            _start_run(run, ctx)
        runs.append(run)
    state = ScanState(runs, {name: SplitIdentity() for name in ctx.splits})
    for split, offset, rb in chunk:
        scan(state, [(split, rb)], ctx, offsets={split: offset})
    for run in state.runs:
        if run.active:
            try:
                run.state = pickle.dumps(run.state, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:
                run.state = None
                run.error = _not_sendable("state", exc)
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
        if other.skipped is not None:  # not run in the worker; its error was reported above
            continue
        t0 = time.perf_counter()
        try:
            other_state = pickle.loads(other.state)
        except Exception as exc:
            run.error, run.state = (
                f"the rule's state from a worker process cannot be loaded: {_error_message(exc)}",
                None,
            )
            continue
        try:
            run.state = run.rule.merge(run.state, other_state)
        except RULE_FAILURES as exc:
            run.error, run.state = _error_message(exc), None
        run.seconds += time.perf_counter() - t0
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
    2 x workers chunks are in flight, so memory stays bounded by the chunk size. A worker that
    dies stops the scan: every rule still running becomes an error that says which rows were
    being folded, and the report is still built (the gate fails).
    """
    from collections import deque
    from concurrent.futures.process import BrokenProcessPool

    from .errors import ConfigError

    try:
        ctx_blob = pickle.dumps(ctx, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise ConfigError(
            f"workers={workers}: the audit's context or resources (tokenizer, benchmark files) "
            f"cannot be sent to worker processes ({type(exc).__name__}: {exc}); run with "
            "workers=1."
        ) from None
    rules = _sendable_rules(state)
    offsets: dict[str, int] = {}
    bar = _Progress(progress, total_rows)

    if chunk_rows is None:
        # about 4 chunks per worker when the size is known, so the last chunks even out the
        # load (7 chunks on 2 workers is 4 + 3), but never tiny or huge
        per = -(-total_rows // (4 * workers)) if total_rows else MAX_CHUNK_ROWS
        chunk_rows = min(MAX_CHUNK_ROWS, max(MIN_CHUNK_ROWS, per))

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

    pending: deque = deque()  # (future, chunk), in input order
    unsent: list = []  # the chunk being submitted

    def absorb_oldest() -> None:
        future, chunk = pending[0]
        try:
            part = future.result()
        except BrokenProcessPool:
            raise
        except Exception as exc:
            raise _ChunkFailed(_error_message(exc)) from exc
        pending.popleft()
        _absorb(state, part)
        bar.update(sum(rb.num_rows for _, _, rb in chunk))

    try:
        with _spawn_pool(workers, (rules, ctx_blob)) as pool:
            # errors reading the input (InputError...) are not caught here: they end the audit
            try:
                for chunk in chunks():
                    active = [run.active for run in state.runs]
                    unsent = [chunk]
                    pending.append((pool.submit(_fold_chunk, chunk, active), chunk))
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
    finally:
        bar.close()
    return state


# -- results must go into the report: JSON, finite, in the report's types ------------------------

_MAX_DEPTH = 100


class _NotReportable(Exception):
    """A value a rule returned that cannot be written to the JSON report; args[0] names it."""


def _plain(value: Any, path: str, depth: int = 0, seen: frozenset[int] = frozenset()) -> Any:
    """``value`` as plain JSON data: numpy scalars and arrays become Python numbers and lists,
    tuples lists, NaN null (as for metrics). Anything else that ``json.dumps(allow_nan=False)``
    would reject (±inf, sets, bytes, objects, cycles) raises _NotReportable naming its path."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if value != value:
            return None
        if value in (float("inf"), float("-inf")):
            raise _NotReportable(f"{path}: {value} is not a finite number")
        return float(value)
    if isinstance(value, np.generic):
        if isinstance(value, (np.bool_, np.integer, np.floating)):
            return _plain(value.item(), path, depth, seen)
        raise _NotReportable(f"{path}: numpy {value.dtype} is not JSON")
    if depth >= _MAX_DEPTH:
        raise _NotReportable(f"{path}: nested deeper than {_MAX_DEPTH} levels")
    if id(value) in seen:
        raise _NotReportable(f"{path}: contains itself (a circular reference)")
    inner = seen | {id(value)}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufUO":
            raise _NotReportable(f"{path}: numpy array of {value.dtype} is not JSON")
        return _plain(value.tolist(), path, depth, seen)
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{path}[{i}]", depth + 1, inner) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, np.generic):
                k = k.item()
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise _NotReportable(
                    f"{path}: key {k!r} is a {type(k).__name__}; JSON keys are strings"
                )
            out[k] = _plain(v, f"{path}[{k!r}]", depth + 1, inner)
        return out
    hint = " (use a sorted list)" if isinstance(value, (set, frozenset)) else ""
    raise _NotReportable(f"{path}: {type(value).__name__} is not JSON{hint}")


def _plain_fast(value: Any, path: str) -> Any:
    """Most results are plain already: one C-speed dump proves it; the walk finds the rest."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError, RecursionError):
        return _plain(value, path)


def _check_str(value: Any, path: str, *, optional: bool = True) -> None:
    if not (isinstance(value, str) or (optional and value is None)):
        kind = "a str or None" if optional else "a str"
        raise _NotReportable(f"{path}: {type(value).__name__} {value!r:.80}, expected {kind}")


def _check_count(value: Any, path: str) -> int:
    if isinstance(value, np.integer):
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _NotReportable(f"{path}: {value!r:.80} is not a count (a non-negative int)")
    return value


def _reportable(result: Any) -> None:
    """Check (and convert in place) everything the report takes from a RuleResult; raise
    _NotReportable naming the first field that cannot go into the JSON report."""
    if not isinstance(result, RuleResult):
        raise _NotReportable(f"finish() returned a {type(result).__name__}, not a RuleResult")
    _check_str(result.skipped, "skipped")
    for i, m in enumerate(result.metrics):
        where = f"metrics[{i}]"
        if not isinstance(m, Metric):
            raise _NotReportable(f"{where}: {type(m).__name__} is not a Metric")
        _check_str(m.name, f"{where}.name", optional=False)
        where = f"metrics[{i}] {m.name!r}" + (f" (split {m.split!r})" if m.split else "")
        _check_str(m.split, f"{where}.split")
        _check_str(m.unit, f"{where}.unit")
        try:
            m.direction = Direction(m.direction)
        except ValueError:
            raise _NotReportable(f"{where}.direction: {m.direction!r} is not a Direction") from None
        if not isinstance(m.value, (type(None), int, float, np.integer, np.floating, np.bool_)):
            raise _NotReportable(f"{where}.value: {type(m.value).__name__} is not a number")
        m.value = _plain(m.value, f"{where}.value")
        if isinstance(m.value, bool):  # the schema's metric value is a number
            m.value = int(m.value)
    for name in ("thresholds", "details"):
        value = getattr(result, name)
        if not isinstance(value, dict):
            raise _NotReportable(f"{name}: {type(value).__name__} is not a dict")
        setattr(result, name, _plain_fast(value, name))
    try:  # one C-speed dump for all findings' data and examples: most are plain already
        json.dumps([(f.data, f.examples) for f in result.findings], allow_nan=False)
        plain = True
    except (TypeError, ValueError, RecursionError, AttributeError):
        plain = False
    for i, f in enumerate(result.findings):
        where = f"findings[{i}]"
        if not isinstance(f, Finding):
            raise _NotReportable(f"{where}: {type(f).__name__} is not a Finding")
        _check_str(f.message, f"{where}.message", optional=False)
        _check_str(f.key, f"{where}.key", optional=False)
        _check_str(f.split, f"{where}.split")
        if f.severity is not None and not isinstance(f.severity, Severity):
            try:
                f.severity = Severity(f.severity)
            except ValueError:
                raise _NotReportable(
                    f"{where}.severity: {f.severity!r} is not a Severity"
                ) from None
        f.count = _check_count(f.count, f"{where}.count")
        if not isinstance(f.data, dict):
            raise _NotReportable(f"{where}.data: {type(f.data).__name__} is not a dict")
        if not isinstance(f.examples, (list, tuple)):
            raise _NotReportable(f"{where}.examples: {type(f.examples).__name__} is not a list")
        if not plain:
            f.data = _plain(f.data, f"{where}.data")
            f.examples = _plain(list(f.examples), f"{where}.examples")
        for j, ex in enumerate(f.examples):
            # the report's schema: an example says where its row is
            if not isinstance(ex, dict):
                raise _NotReportable(f"{where}.examples[{j}]: {type(ex).__name__} is not a dict")
            _check_str(ex.get("split"), f"{where}.examples[{j}]['split']", optional=False)
            ex["row"] = _check_count(ex.get("row"), f"{where}.examples[{j}]['row']")
            _check_str(ex.get("text"), f"{where}.examples[{j}]['text']")
    _check_flags(result.flags)


def _flag_ok(kinds: tuple[type, ...]) -> bool:
    flag, split, row, group, detail = kinds
    return (
        flag is Flag
        and split is str
        and issubclass(row, (int, np.integer))
        and row is not bool
        and group in (str, type(None))
        and detail in (str, type(None))
    )


def _check_flags(flags: list[Flag]) -> None:
    """Flags can be millions: check the set of their field types, then find a bad one."""
    try:
        kinds = {
            (type(f), type(f.split), type(f.row), type(f.group), type(f.detail)) for f in flags
        }
        if all(_flag_ok(k) for k in kinds):
            return
    except AttributeError:  # not a Flag at all
        pass
    for i, f in enumerate(flags):
        fields = (getattr(f, name, None) for name in ("split", "row", "group", "detail"))
        if not _flag_ok((type(f), *map(type, fields))):
            raise _NotReportable(
                f"flags[{i}]: {f!r:.120} is not a Flag(split: str, row: int, group: str | None, "
                "detail: str | None)"
            )


def _sanitize(run: RuleRun) -> None:
    """One rule's unwritable value must not lose the whole report: that rule becomes an error."""
    try:
        _reportable(run.result)
    except _NotReportable as exc:
        run.error = f"the rule's result cannot be written to the report: {exc.args[0]}"
        run.result = None


def finish(state: ScanState, ctx: AuditContext, *, progress: bool = False) -> ScanState:
    """Each active rule's result from its state. Clustering, probes and classifiers run here,
    often longer than the scan: the progress bar counts the rules and names the running one."""
    for name, ident in state.identity.items():
        if name in ctx.splits:
            ctx.splits[name].num_rows = ident.rows
    active = [run for run in state.runs if run.active]
    bar = _Progress(progress, len(active), "finishing", unit="rules")
    try:
        for run in active:
            bar.describe(f"finishing {run.rule.code} ({run.rule.name})")
            t0 = time.perf_counter()
            try:
                run.result = run.rule.finish(run.state, ctx)
            except RULE_FAILURES as exc:
                run.error = _error_message(exc)
            else:
                _sanitize(run)
            run.seconds += time.perf_counter() - t0
            run.state = None  # free memory: the result is all the report needs
            bar.update(1)
    finally:
        bar.close()
    return state

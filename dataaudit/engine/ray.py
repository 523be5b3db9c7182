"""The Ray scan: the same rules fold on a Ray cluster, their states merge in a tree on the
workers, and only each rule's result comes back to the driver.

The plan (the driver holds object references and row counts, never rows or rule states):

- read: Parquet splits are read on the workers, row group by row group, with the local
  engine's reader settings (the driver plans the row groups from the files' footers); any other
  input (JSON Lines, CSV, in-memory tables, Hugging Face datasets) is streamed by the corpus on
  the driver exactly as the local engine streams it (same readers, same bad-line policy, same
  input notes) and put into the object store chunk by chunk. Not Ray Data's ``read_parquet``:
  its output blocks do not keep the files' row order (measured with Ray 2.60 and
  ``preserve_order``: 1M rows in 8 files came back as blocks mixing the files' tails), and
  row ids are positions.
- fold: one task per chunk of blocks folds it into fresh rule states with the local engine's
  own code (:func:`.parallel._fold_chunk`: shared features, ``rule.update``, a rule that raises
  is that rule's error); rules and context are unpickled once per worker process.
- merge: adjacent partial states merge pairwise in input order on the workers (``rule.merge``
  is associative), a balanced tree built while the folds are submitted.
- finish: the root is cut into one object per rule's state; one task per rule loads only its
  own and returns that rule's RuleResult.

Row ids are each row group's offset in its split (from the footers, in input order), so
findings, flags and cluster ids equal the local engine's whatever the partitioning. A worker
that dies is retried by Ray (tasks are pure functions of their inputs), so the report does not
change; a task that still fails stops the scan like a dead worker process in the local engine.
"""

from __future__ import annotations

import hashlib
import pickle
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..errors import ConfigError, DataAuditError, InputError
from ..identity import SplitIdentity
from . import keyed, parallel
from .progress import Progress
from .reportable import check_result
from .state import RULE_FAILURES, RuleRun, ScanState, error_message

if TYPE_CHECKING:
    from ..context import AuditContext
    from ..corpus import Corpus

__all__ = ["INSTALL_HINT", "RayScan", "connect", "describe", "require_ray", "scan_ray"]

INSTALL_HINT = "pip install 'dataaudit[ray]'"
#: task retries when a worker process or node dies (the task is re-run from its inputs)
MAX_RETRIES = 3
#: rows a fold task reads itself at most (Parquet): about 4 tasks per CPU up to this
MAX_READ_ROWS = 262_144
#: the libraries' own thread pools in a worker that runs one task per core
_THREAD_VARS = {"POLARS_MAX_THREADS": "1", "RAYON_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def require_ray() -> Any:
    """The ``ray`` module, or a ConfigError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            f"engine='ray' needs Ray, which is not installed here. Install it with {INSTALL_HINT} "
            "(or pip install ray), or run with the local engine (--workers N)."
        ) from None
    return ray


#: the address connect() connected with, and the GCS address it led to (a ``ray://`` client
#: address is not the GCS's)
_CONNECTED: dict[str, str | None] = {}


def _host_port(address: str) -> tuple[str, str] | None:
    """(IP, port) of ``host:port`` (a name resolved), or None when it is not one."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    try:
        return socket.gethostbyname(host.strip("[]")), port
    except OSError:
        return host, port


def _gcs_address(ray: Any) -> str | None:
    try:
        return str(ray.get_runtime_context().gcs_address)
    except Exception:  # a Ray client connection has no GCS address here
        return None


def _same_cluster(ray: Any, address: str) -> tuple[bool, str]:
    """Whether the cluster this process is connected to is the one at ``address`` ("auto":
    whichever is running), and the connected one's address for a message."""
    current = _gcs_address(ray) or _CONNECTED.get("address") or "(unknown)"
    if address == "auto":
        return True, current
    if address == _CONNECTED.get("address") and _gcs_address(ray) == _CONNECTED.get("gcs"):
        return True, current  # the connection connect() made (a ray:// client address too)
    mine, theirs = _host_port(address.removeprefix("ray://")), _host_port(current)
    return mine is not None and mine == theirs, current


def connect(address: str | None = None) -> Any:
    """The Ray runtime: the one this process is connected to, else the cluster at ``address``
    (``auto``, ``ray://host:10001``, or None: a local one on this machine's cores).

    A process connected to one cluster cannot run on another: an ``address`` that is not the
    connected cluster's (nor ``auto``) is a ConfigError naming both, not silently ignored."""
    ray = require_ray()
    if ray.is_initialized():
        if address is not None:
            same, current = _same_cluster(ray, address)
            if not same:
                raise ConfigError(
                    f"ray_address={address!r}: this process is already connected to the Ray "
                    f"cluster at {current}, and Ray connects a process to one cluster only. "
                    "Drop --ray-address (ray_address=) to run on the connected cluster, or call "
                    "ray.shutdown() before audit() to connect to the other one."
                )
        return ray
    options: dict[str, Any] = {"address": address, "log_to_driver": False}
    if address is None:  # our own local cluster: one task per core, no nested thread pools
        options.update(
            include_dashboard=False,
            runtime_env={"env_vars": {k: v for k, v in _THREAD_VARS.items()}},
        )
    try:
        ray.init(**options)
        _CONNECTED.update(address=address, gcs=_gcs_address(ray))
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(
            f"ray_address={address!r}: cannot connect to a Ray cluster ({exc}). Start one with "
            "`ray start --head` and pass its address (or 'auto'), or drop --ray-address to "
            "start a local one."
        ) from None
    return ray


def describe(ray: Any) -> dict[str, Any]:
    """The engine as the report records it: Ray's version and the cluster's size."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    return {
        "name": "ray",
        "version": ray.__version__,
        "nodes": len(nodes),
        "cpus": int(ray.cluster_resources().get("CPU", 0)),
    }


# -- worker side --------------------------------------------------------------------------------
def _load(key: str, rules: list, ctx_blob: bytes) -> None:
    """The rules and context of this audit in this worker process, loaded once per process."""
    if parallel._WORKER.get("key") != key:
        parallel._init_worker(rules, ctx_blob)
        parallel._WORKER["key"] = key


def _read_units(
    units: list[tuple[str, int, Any, list[int]]], batch_size: int
) -> list[tuple[str, int, pa.RecordBatch]]:
    """Row groups of Parquet files, read here with the local engine's reader settings, as the
    (split, first row, batch) chunk the fold takes; a file that cannot be read is an InputError
    that ends the audit, as locally."""
    import pyarrow.parquet as pq

    from ..inputs.arrow import plain_batch
    from ..inputs.location import pyarrow_source

    chunk = []
    for split, offset, path, groups in units:
        try:
            pf = pq.ParquetFile(pyarrow_source(path))
            for group in groups:  # one row group at a time, as readers.iter_parquet
                for rb in pf.iter_batches(batch_size=batch_size, row_groups=[group]):
                    if rb.num_rows:
                        chunk.append((split, offset, plain_batch(rb)))
                        offset += rb.num_rows
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(
                f"{path}: cannot read as Parquet ({exc}). The file may be truncated or not Parquet."
            ) from None
    return chunk


def _fold(
    rules: list,
    ctx_blob: bytes,
    key: str,
    active: list[bool],
    units: list[tuple[str, int, Any, list[int]]] | None,
    batch_size: int,
    shuffle: list[tuple[int, int]],
    *chunk: Any,
) -> Any:
    """Fold one chunk into fresh rule states (pickled one by one, as the local engine's).
    With keyed rules (``shuffle``: their index and partitions), their rows of this chunk come
    back too, one return value per rule and partition: the shuffle's map side."""
    _load(key, rules, ctx_blob)
    batches = chunk[0] if units is None else _read_units(units, batch_size)
    part = parallel._fold_chunk(batches, active, "memory" if shuffle else None)
    if not shuffle:
        return part
    spill, part.spill = part.spill, None
    return (part, *[spill.table(i, p) for i, parts in shuffle for p in range(parts)])


def _edges(
    rules: list, ctx_blob: bytes, key: str, index: int, splits: list[str], *pieces: Any
) -> tuple[Any, str | None]:
    """One partition of a keyed rule (its pieces from every fold task) into verified edges:
    the shuffle's reduce side, on the worker that holds the pieces."""
    _load(key, rules, ctx_blob)
    rule = parallel._WORKER["rules"][index][0]
    tables = [t for t in pieces if t is not None]
    try:
        part = pa.concat_tables(tables) if tables else None
        return keyed.edges_of(rule, part, splits), None
    except RULE_FAILURES as exc:
        return None, error_message(exc)


def _live(part: ScanState) -> ScanState:
    """A partial state with its rules back and its states unpickled (an unloadable state is
    its rule's error)."""
    for run, (rule, _) in zip(part.runs, parallel._WORKER["rules"]):
        run.rule = rule
        if run.active:
            try:
                run.state = pickle.loads(run.state)
            except Exception as exc:
                run.error = f"the rule's state cannot be loaded: {error_message(exc)}"
                run.state = None
    return part


def _packed(part: ScanState) -> ScanState:
    for run in part.runs:
        if run.active:
            try:
                run.state = pickle.dumps(run.state, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:
                run.error, run.state = parallel._not_sendable("state", exc), None
        run.rule = None  # type: ignore[assignment]
    return part


def _merge(rules: list, ctx_blob: bytes, key: str, first: ScanState, *rest: ScanState) -> ScanState:
    """The parts in order: the local engine's merge of a worker's part, here on a worker."""
    _load(key, rules, ctx_blob)
    state = _live(first)
    for part in rest:
        parallel._absorb(state, part)
    return _packed(state)


def _summary(root: ScanState) -> tuple[Any, ...]:
    """The root cut in two: its summary (errors, phases, identity, timings) for the driver, and
    each rule's pickled state as an object of its own, so a rule's finish loads only its own."""
    blobs = [run.state for run in root.runs]
    for run in root.runs:
        run.state = None
    return (root, *blobs)


def _finish_rule(
    rules: list,
    ctx_blob: bytes,
    key: str,
    ctx_final: bytes,
    identity: dict[str, SplitIdentity],
    blob: bytes,
    index: int,
    after: dict[str, Any],
    *edges: tuple[Any, str | None],
) -> RuleRun:
    """One rule's finish on its merged state, where the state is; its result travels back.
    ``after``: the results of the rules it finishes after (``Rule.after``), as ``ctx.results``."""
    _load(key, rules, ctx_blob)
    ctx = pickle.loads(ctx_final)
    for name, ident in identity.items():
        if name in ctx.splits:
            ctx.splits[name].num_rows = ident.rows
    rule, severity = parallel._WORKER["rules"][index]
    run = RuleRun(rule, severity)
    t0 = time.perf_counter()
    try:
        state = pickle.loads(blob)
    except Exception as exc:
        run.error = f"the rule's state cannot be loaded: {error_message(exc)}"
    else:
        ctx.results = after
        failed = next((error for _, error in edges if error is not None), None)
        try:
            if failed is not None:
                run.error = failed
            elif keyed.is_keyed(rule):
                clusters = keyed.clusters_of([t for t, _ in edges], list(ctx.splits))
                run.result = rule.finish_keyed(state, clusters, ctx)
            else:
                run.result = rule.finish(state, ctx)
        except RULE_FAILURES as exc:
            run.error = error_message(exc)
        else:
            if run.error is None:
                check_result(run)
    run.charge("finish", time.perf_counter() - t0)
    run.rule = None  # type: ignore[assignment]
    return run


# -- driver side --------------------------------------------------------------------------------
@dataclass
class _Tasks:
    fold: Any
    merge: Any
    summary: Any
    finish: Any
    edges: Any


def _tasks(ray: Any) -> _Tasks:
    opts = {"max_retries": MAX_RETRIES, "num_cpus": 1}
    return _Tasks(
        ray.remote(**opts)(_fold),
        ray.remote(**opts)(_merge),
        ray.remote(**opts)(_summary),
        ray.remote(**opts)(_finish_rule),
        ray.remote(**opts)(_edges),
    )


class _Tree:
    """Merges partial states in input order as they are submitted: a counter of (level, ref)
    in base ``FANOUT``, so the tree stays balanced, no merge waits for the whole scan, and a
    large state (DUP002's signatures) is unpickled and pickled again once per level only."""

    FANOUT = 4

    def __init__(self, merge: Any):
        self.merge = merge
        self.stack: list[tuple[int, Any]] = []

    def push(self, ref: Any) -> None:
        self.stack.append((0, ref))
        while (
            len(self.stack) >= self.FANOUT
            and len({lv for lv, _ in self.stack[-self.FANOUT :]}) == 1
        ):
            level = self.stack[-1][0]
            group = [r for _, r in self.stack[-self.FANOUT :]]
            del self.stack[-self.FANOUT :]
            self.stack.append((level + 1, self.merge(*group)))

    def root(self) -> Any:
        refs = [ref for _, ref in self.stack]
        return refs[0] if len(refs) == 1 else self.merge(*refs)


@dataclass
class RayScan:
    """A scan on Ray: the rule states stay on the cluster until each rule finishes there."""

    ray: Any
    tasks: _Tasks
    rules_ref: Any
    ctx_ref: Any
    key: str
    #: each rule's merged state, an object on the cluster
    states: list[Any] = field(default_factory=list)
    engine: dict[str, Any] = field(default_factory=dict)
    #: keyed rules: (rule index, partition) -> the fold tasks' pieces of that partition
    pieces: dict[tuple[int, int], list[Any]] = field(default_factory=dict)

    def finish(self, state: ScanState, ctx: AuditContext, *, progress: bool = False) -> None:
        """Each active rule's finish in its own task (they run side by side on the cluster)."""
        ray = self.ray
        for name, ident in state.identity.items():
            if name in ctx.splits:
                ctx.splits[name].num_rows = ident.rows
        active = [i for i, run in enumerate(state.runs) if run.active]
        if not active:
            return
        # the context as it is now: the input notes of the whole stream, the reference sketches
        try:
            final = ray.put(pickle.dumps(ctx, protocol=pickle.HIGHEST_PROTOCOL))
        except Exception as exc:
            raise ConfigError(
                f"engine='ray': the audit's context cannot be sent to the cluster ({exc})"
            ) from None
        splits = list(ctx.splits)

        def edges(i: int) -> list[Any]:
            """A keyed rule's partitions, each reduced to edges where its pieces are."""
            parts = sorted(p for j, p in self.pieces if j == i)
            return [
                self.tasks.edges.remote(
                    self.rules_ref, self.ctx_ref, self.key, i, splits, *self.pieces[(i, p)]
                )
                for p in parts
            ]

        # a rule finishes after the rules named in its ``after``, with their results
        needs = {
            i: {c for c in getattr(state.runs[i].rule, "after", ()) if c != state.runs[i].rule.code}
            for i in active
        }
        running = {state.runs[i].rule.code for i in active}
        done: dict[str, Any] = {}
        waiting = list(active)
        pending: dict[Any, int] = {}

        def submit_ready() -> None:
            ready = [i for i in waiting if not needs[i] & running]
            if not ready and waiting and not pending:  # a cycle: the given order decides
                ready = waiting[:1]
            for i in ready:
                waiting.remove(i)
                after = {c: done[c] for c in needs[i] if c in done}
                ref = self.tasks.finish.remote(
                    self.rules_ref,
                    self.ctx_ref,
                    self.key,
                    final,
                    state.identity,
                    self.states[i],
                    i,
                    after,
                    *edges(i),
                )
                pending[ref] = i

        bar = Progress(progress, len(active), "finishing on ray", unit="rules")
        try:
            submit_ready()
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    run = state.runs[pending.pop(ref)]
                    try:
                        back: RuleRun = ray.get(ref)
                    except Exception as exc:
                        run.error = (
                            "the task finishing this rule failed on the cluster "
                            f"({_ray_error(exc)}), after {MAX_RETRIES} retries"
                        )
                        run.state = None
                    else:
                        for phase, seconds in back.phases.items():
                            run.charge(phase, seconds)
                        run.result, run.error, run.state = back.result, back.error, None
                    running.discard(run.rule.code)
                    if run.result is not None:
                        done[run.rule.code] = run.result
                    bar.update(1)
                submit_ready()
        finally:
            bar.close()
        self.states, self.pieces = [], {}  # the cluster frees the states and partitions


def _ray_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}"[:500]


def _parquet_plan(corpus: Corpus) -> dict[str, list[Any]] | None:
    """Per split, its Parquet files, when the workers can read every split: Parquet files only,
    each with exactly the corpus' columns (else the corpus stream adds the missing ones as
    nulls and notes them, which only the driver's in-order stream can do)."""
    from ..inputs.arrow import plain_schema
    from ..inputs.files import file_format, file_schema

    if corpus.split_column is not None or corpus.schema is None:
        return None
    plan = {}
    for name, split in corpus.splits.items():
        if not split.paths or len(split.paths) != len(split.iter_parts()):
            return None
        if any(file_format(p) != "parquet" for p in split.paths):
            return None
        for path in split.paths:
            schema, whole = file_schema(path)
            if schema is None or not whole or not plain_schema(schema).equals(corpus.schema):
                return None
        plan[name] = list(split.paths)
    return plan


def _parquet_units(
    corpus: Corpus, plan: dict[str, list[Any]], state: ScanState
) -> Iterator[tuple[str, int, Any, list[int], int]]:
    """(split, first row, file, [row group], rows) per row group, in input order, from the
    files' footers (metadata only): each row's id is its position, whatever reads it."""
    import pyarrow.parquet as pq

    from ..inputs.location import pyarrow_source

    for name, paths in plan.items():
        files = corpus.files[name] = []
        row = 0
        for path in paths:
            t0 = time.perf_counter()
            try:
                meta = pq.ParquetFile(pyarrow_source(path)).metadata
            except (pa.ArrowInvalid, OSError) as exc:
                raise InputError(
                    f"{path}: cannot read as Parquet ({exc}). The file may be truncated or not "
                    "Parquet."
                ) from None
            state.timings.read += time.perf_counter() - t0
            files.append({"path": str(path), "format": "parquet", "rows": meta.num_rows})
            for group in range(meta.num_row_groups):
                rows = meta.row_group(group).num_rows
                if rows:
                    yield name, row, path, [group], rows
                    row += rows


def _grouped(
    units: Iterable[tuple[str, int, Any, list[int], int]], chunk_rows: int
) -> Iterator[tuple[list[tuple[str, int, Any, list[int]]], int]]:
    """Consecutive row groups up to about ``chunk_rows`` rows per fold task."""
    out: list[tuple[str, int, Any, list[int]]] = []
    rows = 0
    for split, offset, path, groups, n in units:
        last = out[-1] if out else None
        if last is not None and last[0] == split and last[2] == path:
            out[-1] = (split, last[1], path, [*last[3], *groups])  # the same file: one open
        else:
            out.append((split, offset, path, groups))
        rows += n
        if rows >= chunk_rows:
            yield out, rows
            out, rows = [], 0
    if out:
        yield out, rows


def scan_ray(
    state: ScanState,
    corpus: Corpus,
    ctx: AuditContext,
    *,
    batches: Iterable[tuple[str, pa.RecordBatch]] | None = None,
    batch_size: int,
    address: str | None = None,
    chunk_rows: int | None = None,
    progress: bool = False,
    total_rows: int | None = None,
) -> RayScan:
    """Fold the corpus into every active rule on Ray; the rule states stay on the cluster.

    ``state`` gets each rule's errors and phases, the splits' identity and the timings; call
    :meth:`RayScan.finish` for the results. ``batches``: the driver's stream to fold instead of
    reading the files on the cluster (when the driver must see every row, e.g. to check
    predictions against them).
    """
    ray = connect(address)
    if state.spill is not None:  # keyed rows shuffle through the object store, not this disk
        state.spill.remove()
        state.spill = None
    try:
        ctx_blob = pickle.dumps(ctx, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise ConfigError(
            f"engine='ray': the audit's context or resources (tokenizer, benchmark files) "
            f"cannot be sent to the cluster ({type(exc).__name__}: {exc}); run with the local "
            "engine."
        ) from None
    rules = parallel._sendable_rules(state)
    key = hashlib.sha256(ctx_blob + pickle.dumps(rules)).hexdigest()
    tasks = _tasks(ray)
    scan = RayScan(ray, tasks, ray.put(rules), ray.put(ctx_blob), key, engine=describe(ray))
    cpus = max(1, scan.engine["cpus"])
    plan = _parquet_plan(corpus) if batches is None else None
    if chunk_rows is None:
        chunk_rows = parallel.default_chunk_rows(total_rows, cpus)
        if plan is not None and total_rows:  # workers read their rows: fewer, larger chunks
            chunk_rows = max(chunk_rows, min(MAX_READ_ROWS, -(-total_rows // (4 * cpus))))
    tree = _Tree(lambda *parts: tasks.merge.remote(scan.rules_ref, scan.ctx_ref, key, *parts))
    pending: dict[Any, int] = {}  # fold ref -> rows, for progress and backpressure
    bar = Progress(progress, total_rows, "folding on ray")

    shuffle = [
        (i, keyed.partitions_of(run.rule))
        for i, run in enumerate(state.runs)
        if run.active and keyed.is_keyed(run.rule)
    ]
    fold = tasks.fold.options(num_returns=1 + sum(n for _, n in shuffle))

    def submit(units: list | None, chunk: list[Any], rows: int) -> None:
        active = [run.active for run in state.runs]
        ref = fold.remote(
            scan.rules_ref, scan.ctx_ref, key, active, units, batch_size, shuffle, *chunk
        )
        if shuffle:
            ref, pieces = ref[0], iter(ref[1:])
            for i, parts in shuffle:
                for p in range(parts):
                    scan.pieces.setdefault((i, p), []).append(next(pieces))
        pending[ref] = rows
        tree.push(ref)
        while len(pending) >= 2 * cpus:  # bounded work in flight: memory stays bounded
            wait(1)

    def wait(n: int) -> None:
        done, _ = ray.wait(list(pending), num_returns=min(n, len(pending)))
        for ref in done:
            bar.update(pending.pop(ref))

    try:
        if plan is not None:  # the workers read the files' row groups
            for units, rows in _grouped(_parquet_units(corpus, plan, state), chunk_rows):
                submit(units, [], rows)
        else:  # the driver streams, as the local engine; chunks go to the object store
            offsets: dict[str, int] = {}
            if batches is None:
                batches = corpus.stream(batch_size)
            for chunk in parallel.cut_chunks(batches, chunk_rows, offsets, state.timings):
                rows = sum(rb.num_rows for _, _, rb in chunk)
                submit(None, [ray.put(chunk)], rows)
        while pending:
            wait(len(pending))
        bar.describe("merging on ray")
        if not tree.stack:
            return scan
        root = tree.root()
        try:
            refs = tasks.summary.options(num_returns=1 + len(state.runs)).remote(root)
            summary_ref, *scan.states = refs if isinstance(refs, list) else [refs]
            summary: ScanState = ray.get(summary_ref)
        except Exception as exc:
            scan.states = []
            cause = getattr(exc, "cause", None)
            if isinstance(cause, DataAuditError):  # a file the workers could not read, as locally
                raise cause from None
            parallel._stop_scan(
                state,
                f"a task of the Ray scan failed after {MAX_RETRIES} retries ({_ray_error(exc)}); "
                "the scan stopped, so this rule has no verdict. Check the cluster's logs (a "
                "node lost, or out of memory), or run with the local engine.",
                [],
            )
            return scan
        del root  # the summary holds the states now, one object per rule
    finally:
        bar.close()
    _absorb_summary(state, summary)
    return scan


def _absorb_summary(state: ScanState, part: ScanState) -> None:
    state.timings.absorb(part.timings)
    for run, other in zip(state.runs, part.runs):
        for phase, seconds in other.phases.items():
            run.charge(phase, seconds)
        if run.active and other.error is not None:
            run.error, run.state = other.error, None
    for name, ident in part.identity.items():
        mine = state.identity.get(name, SplitIdentity())
        state.identity[name] = mine.merge(ident)

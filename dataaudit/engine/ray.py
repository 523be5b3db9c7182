"""The Ray scan: the same rules fold on a Ray cluster, their states merge in a tree on the
workers, and only each rule's result comes back to the driver.

The plan (the driver holds object references and row counts, never rows or rule states):

- read: files are read on the workers. Parquet splits whose files all have the corpus'
  columns are read row group by row group inside the fold tasks (the driver plans the row
  groups from the footers). Other files are read by read tasks with the local engine's readers:
  a large JSON Lines file in byte ranges of the reader's own blocks (``inputs.ranges``: a range
  reads exactly as the whole file), other files whole, small ones grouped. The driver takes each
  read's batch shapes, row counts and input notes in input order (:class:`_StreamOrder`: row
  ids, late and missing columns, bad-line notes, as the corpus stream gives them) and folds the
  read's batches from the object store. In-memory tables and Hugging Face datasets are streamed
  by the driver and put into the object store chunk by chunk. Not Ray Data's
  ``read_parquet``: its output blocks do not keep the files' row order (measured with Ray 2.60
  and ``preserve_order``: 1M rows in 8 files came back as blocks mixing the files' tails), and
  row ids are positions.
- prepass (rules with ``prepass_update``, :mod:`.prepass`): their splits are read and folded
  in tasks first, as below; the parts merge and finish on the driver, which holds the values
  (bounded by those splits) and puts them into the object store once, with the context that
  each worker process then fetches once (tasks get it as ``[ref]``, not resolved per task).
- fold: one task per chunk of blocks folds it into fresh rule states with the local engine's
  own code (:func:`.parallel._fold_chunk`: shared features, ``rule.update``, a rule that raises
  is that rule's error); rules and context are unpickled once per worker process.
- merge: adjacent partial states merge pairwise in input order on the workers (``rule.merge``
  is associative), a balanced tree built while the folds are submitted.
- finish: the root is cut into one object per rule's state; one task per rule loads only its
  own and returns that rule's RuleResult.

Row ids are each batch's offset in its split (from the footers, or the reads' row counts, in
input order), so findings, flags and cluster ids equal the local engine's whatever the
partitioning. A worker that dies is retried by Ray (tasks are pure functions of their inputs),
so the report does not change; a task that still fails stops the scan like a dead worker
process in the local engine.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..errors import ConfigError, DataAuditError, InputError
from ..identity import SplitIdentity
from ..inputs.notes import InputLog, InputNote
from . import keyed, parallel, prepass
from .progress import Progress
from .reportable import check_result
from .state import RULE_FAILURES, RuleRun, ScanState, Timings, error_message

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
def _load(key: str, rules: list, ctx_blob: bytes | list) -> None:
    """The rules and context of this audit in this worker process, loaded once per process.
    ``ctx_blob``: the pickled context, or ``[ref]`` of it in the object store (a reference
    nested in a list is not fetched for every task: the context, with the prepass values,
    is fetched here once per process and key)."""
    if parallel._WORKER.get("key") != key:
        if isinstance(ctx_blob, list):
            import ray

            ctx_blob = ray.get(ctx_blob[0])
        parallel._init_worker(rules, ctx_blob)
        parallel._WORKER["key"] = key


def _prepass(
    rules: list,
    ctx_blob: list,
    key: str,
    wants: dict[int, frozenset[str]],
    units: Any,
    batch_size: int,
    *chunk: Any,
) -> Any:
    """One chunk of the prepass splits into the rules' prepass states (as with workers=N);
    ``units`` and ``chunk`` as :func:`_fold`'s."""
    _load(key, rules, ctx_blob)
    return parallel._prepass_chunk(_chunk_batches(units, batch_size, chunk), wants)


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


class _SegmentLog(InputLog):
    """A worker's input log, emptied at each batch, so the driver replays each note where the
    stream would have made it: before that batch's shape is decided."""

    def take(self) -> list[InputNote]:
        notes = self.notes
        self._notes = {}
        return notes


class _NeedsLines(Exception):
    """A range read whose first line number is not known yet made a note (it names lines)."""


class _StrictLog(_SegmentLog):
    def add(self, *args: Any, **kwargs: Any) -> Any:
        raise _NeedsLines


@dataclass
class _Piece:
    """What a read task reads of one file: all of it with its format's reader, or (``ends``)
    a run of the JSON Lines reader's blocks, from ``ends[0]`` to ``ends[-1]``."""

    split: str
    path: Any
    ends: list[int] | None = None
    #: lines of the file before the range; None: not known yet (read, and read again with it
    #: if a note or an error must name a line)
    first_line: int | None = 0
    #: the file's columns as pyarrow typed them before the range; ``_FROM_FIRST``: those the
    #: read of the file's first block returned (the task's argument after the pieces)
    schema: Any = None


_FROM_FIRST = "from the file's first block"


@dataclass
class _ReadMeta:
    """What the driver needs of a worker's read (the rows stay in the object store): per
    batch (piece, rows, schema, first non-null row of each column the corpus schema lacks),
    the notes made before batch i as (i, notes), per range piece its lines and the schema
    after it, and the seconds spent. ``retry``: read it again with its first line and schema
    (a note had to name a line, or the file's first block typed no columns)."""

    batches: list[tuple[int, int, pa.Schema, dict[str, int]]] = field(default_factory=list)
    notes: list[tuple[int, list[InputNote]]] = field(default_factory=list)
    lines: dict[int, int] = field(default_factory=dict)
    schemas: dict[int, pa.Schema | None] = field(default_factory=dict)
    seconds: float = 0.0
    retry: bool = False


def _read_files(
    pieces: list[_Piece], batch_size: int, on_bad_lines: str, known: set[str], *first: _ReadMeta
) -> tuple[_ReadMeta, list[pa.RecordBatch]]:
    """Files, or ranges of a JSON Lines file, read here with the local engine's readers (same
    batches, same bad-line policy, same messages with their line numbers): their batches for
    the object store, and their shapes and notes for the driver, which knows the stream's order
    (row ids, late columns). ``first``: the read of the file's first block, for its schema."""
    from ..inputs.arrow import plain_batch
    from ..inputs.shape import first_valid

    t0 = time.perf_counter()
    log = _SegmentLog()
    meta, out = _ReadMeta(), []
    for index, piece in enumerate(pieces):
        log.current_split = piece.split
        try:
            source = _piece_batches(piece, index, batch_size, on_bad_lines, log, meta, first)
            for rb in source:
                if not rb.num_rows:
                    continue
                notes = log.take()
                if notes:
                    meta.notes.append((len(out), notes))
                rb = plain_batch(rb)
                found = first_valid(rb)
                late = {name: found(name) for name in rb.schema.names if name not in known}
                meta.batches.append((index, rb.num_rows, rb.schema, late))
                out.append(rb)
        except _NeedsLines:
            return _ReadMeta(retry=True), []
        notes = log.take()
        if notes:
            meta.notes.append((len(out), notes))
    meta.seconds = time.perf_counter() - t0
    return meta, out


def _piece_batches(
    piece: _Piece,
    index: int,
    batch_size: int,
    on_bad_lines: str,
    log: _SegmentLog,
    meta: _ReadMeta,
    first: tuple[_ReadMeta, ...],
) -> Iterator[pa.RecordBatch]:
    from ..inputs.files import file_batches
    from ..inputs.source import Reading

    if piece.ends is None:
        yield from file_batches(piece.path, Reading(log, on_bad_lines))(batch_size)
        return
    from ..inputs.jsonl import iter_jsonl
    from ..inputs.ranges import RangePath

    schema = piece.schema
    if isinstance(schema, str):  # _FROM_FIRST (a copy: the piece was pickled)
        schema = first[0].schemas.get(0) if first else None
        if schema is None:  # the first block typed nothing: the blocks before decide
            raise _NeedsLines
    strict = piece.first_line is None
    where = RangePath(piece.path, piece.ends)
    reader = iter_jsonl(
        where,
        batch_size,
        on_bad_lines=on_bad_lines,
        log=_StrictLog() if strict else log,
        first_line=piece.first_line or 0,
        schema=schema,
    )
    try:
        meta.schemas[index] = yield from reader
    except InputError:
        if strict:  # its message names a line: read again knowing the first one
            raise _NeedsLines from None
        raise
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{piece.path}: not UTF-8 text ({exc.reason} at byte {exc.start}); re-encode it "
            "as UTF-8."
        ) from None
    except OSError as exc:
        raise InputError(f"{piece.path}: cannot read the file ({exc.strerror or exc}).") from None
    meta.lines[index] = where.newlines


@dataclass
class _Layout:
    """Where a worker's read batches go in the stream: (split, first row, columns to add as
    nulls) per batch, decided by the driver in input order."""

    batches: list[tuple[str, int, list[pa.Field]]]
    #: the first of the read's batches these are (a large read folds in several tasks)
    start: int = 0


def _chunk_batches(
    units: list[tuple[str, int, Any, list[int]]] | _Layout | None, batch_size: int, chunk: Any
) -> list[tuple[str, int, pa.RecordBatch]]:
    """A fold task's (split, first row, batch) triples: ``chunk[0]`` itself (the driver
    streamed it), a worker's read shaped as the driver decided (``_Layout``), or Parquet row
    groups read here."""
    if units is None:
        return chunk[0]
    if isinstance(units, _Layout):
        from ..inputs.shape import with_nulls

        return [
            (split, row, with_nulls(rb, fields))
            for (split, row, fields), rb in zip(
                units.batches,
                chunk[0][units.start : units.start + len(units.batches)],
                strict=True,
            )
        ]
    return _read_units(units, batch_size)


def _fold(
    rules: list,
    ctx_blob: bytes,
    key: str,
    active: list[bool],
    units: list[tuple[str, int, Any, list[int]]] | _Layout | None,
    batch_size: int,
    shuffle: list[tuple[int, int]],
    *chunk: Any,
) -> Any:
    """Fold one chunk into fresh rule states (pickled one by one, as the local engine's).
    With keyed rules (``shuffle``: their index and partitions), their rows of this chunk come
    back too, one return value per rule and partition: the shuffle's map side."""
    _load(key, rules, ctx_blob)
    batches = _chunk_batches(units, batch_size, chunk)
    part = parallel._fold_chunk(batches, active, "memory" if shuffle else None)
    if not shuffle:
        return part
    spill, part.spill = part.spill, None
    return (part, *[spill.table(i, p) for i, parts in shuffle for p in range(parts)])


def _edges(
    rules: list, ctx_blob: bytes, key: str, index: int, splits: list[str], *pieces: Any
) -> tuple[Any, Any, str | None]:
    """One partition of a keyed rule (its pieces from every fold task) into verified edges:
    the shuffle's reduce side, on the worker that holds the pieces."""
    _load(key, rules, ctx_blob)
    rule = parallel._WORKER["rules"][index][0]
    tables = [t for t in pieces if t is not None]
    try:
        part = pa.concat_tables(tables) if tables else None
        return keyed.edges_of(rule, part, splits), None, None
    except RULE_FAILURES as exc:
        return None, None, error_message(exc)


# The verification hop of a keyed rule that verifies (keyed.candidates_of, join_first,
# verify_part), each step on the worker that holds its pieces. A rule's error travels on as a
# string in place of a piece, and the rule's finish reports it.
def _concat(pieces: tuple[Any, ...]) -> pa.Table | None:
    tables = [t for t in pieces if t is not None and t.num_rows]
    return pa.concat_tables(tables, promote_options="default") if tables else None


def _failed(pieces: tuple[Any, ...]) -> str | None:
    return next((p for p in pieces if isinstance(p, str)), None)


def _candidates(
    rules: list, ctx_blob: bytes, key: str, index: int, splits: list[str], parts: int, *pieces: Any
) -> Any:
    """Hop 1: one keyed partition's candidate pairs, cut by the partition of their first end."""
    _load(key, rules, ctx_blob)
    rule = parallel._WORKER["rules"][index][0]
    try:
        out: list[Any] = keyed.candidates_of(rule, _concat(pieces), splits, parts)
    except RULE_FAILURES as exc:
        out = [error_message(exc)] * parts
    return out if parts > 1 else out[0]


def _join(splits: list[str], parts: int, n: int, *pieces: Any) -> list[Any]:
    """Hop 2a: the pairs of one partition of first ends (``n`` pieces), then its payload rows."""
    failed = _failed(pieces)
    if failed is not None:
        return [failed] * (2 * parts)
    try:
        return keyed.join_first(_concat(pieces[:n]), _concat(pieces[n:]), splits, parts)
    except Exception as exc:
        return [error_message(exc)] * (2 * parts)


def _verify(
    rules: list,
    ctx_blob: bytes,
    key: str,
    index: int,
    splits: list[str],
    n: int,
    *pieces: Any,
) -> tuple[Any, Any, str | None]:
    """Hop 2b: the pairs (``n`` pieces) and first ends (``n``) sent to one partition of second
    ends, then its payload rows: the rule's accepted edges and their ends' payload."""
    failed = _failed(pieces)
    if failed is not None:
        return None, None, failed
    _load(key, rules, ctx_blob)
    rule = parallel._WORKER["rules"][index][0]
    try:
        edges, members = keyed.verify_part(
            rule, list(pieces[:n]), list(pieces[n : 2 * n]), _concat(pieces[2 * n :]), splits
        )
    except RULE_FAILURES as exc:
        return None, None, error_message(exc)
    return edges, members, None


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
    *edges: tuple[Any, Any, str | None],
) -> RuleRun:
    """One rule's finish on its merged state, where the state is; its result travels back.
    ``after``: the results of the rules it finishes after (``Rule.after``), as ``ctx.results``."""
    _load(key, rules, ctx_blob)
    ctx = pickle.loads(ctx_final)
    # the prepass values came once to this process, with its context, not with ctx_final
    loaded = parallel._WORKER.get("ctx")
    if loaded is not None and loaded.resources.prepasses:
        prepass.attach(ctx, dict(loaded.resources.prepasses))
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
        failed = next((error for *_, error in edges if error is not None), None)
        try:
            if failed is not None:
                run.error = failed
            elif keyed.is_keyed(rule):
                members = [m for _, m, _ in edges] if keyed.verifies(rule) else None
                clusters = keyed.clusters_of([t for t, _, _ in edges], list(ctx.splits), members)
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
    read: Any = None
    candidates: Any = None  # the verification hop of keyed rules that verify
    join: Any = None
    verify: Any = None
    prepass: Any = None


def _tasks(ray: Any) -> _Tasks:
    opts = {"max_retries": MAX_RETRIES, "num_cpus": 1}
    return _Tasks(
        ray.remote(**opts)(_fold),
        ray.remote(**opts)(_merge),
        ray.remote(**opts)(_summary),
        ray.remote(**opts)(_finish_rule),
        ray.remote(**opts)(_edges),
        ray.remote(num_returns=2, **opts)(_read_files),
        candidates=ray.remote(**opts)(_candidates),
        join=ray.remote(**opts)(_join),
        verify=ray.remote(**opts)(_verify),
        prepass=ray.remote(**opts)(_prepass),
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
            detached = prepass.detached(ctx)  # the workers have the prepass values
            final = ray.put(pickle.dumps(detached, protocol=pickle.HIGHEST_PROTOCOL))
        except Exception as exc:
            raise ConfigError(
                f"engine='ray': the audit's context cannot be sent to the cluster ({exc})"
            ) from None
        splits = list(ctx.splits)

        def edges(i: int) -> list[Any]:
            """A keyed rule's partitions, each reduced to edges where its pieces are (through
            the verification hop if the rule verifies: candidates, join, verify)."""
            rule = state.runs[i].rule
            if not keyed.verifies(rule):
                parts = sorted(p for j, p in self.pieces if j == i)
                return [
                    self.tasks.edges.remote(
                        self.rules_ref, self.ctx_ref, self.key, i, splits, *self.pieces[(i, p)]
                    )
                    for p in parts
                ]
            n, rows = keyed.partitions_of(rule), keyed.rows_index(i)
            tasks, common = self.tasks, (self.rules_ref, self.ctx_ref, self.key, i, splits)
            cand = []
            for p in range(n):
                refs = tasks.candidates.options(num_returns=n).remote(
                    *common, n, *self.pieces.get((i, p), [])
                )
                cand.append(refs if n > 1 else [refs])
            joined = [
                tasks.join.options(num_returns=2 * n).remote(
                    splits, n, n, *[cand[x][p] for x in range(n)], *self.pieces.get((rows, p), [])
                )
                for p in range(n)
            ]
            return [
                tasks.verify.remote(
                    *common,
                    n,
                    *[joined[p][q] for p in range(n)],
                    *[joined[p][n + q] for p in range(n)],
                    *self.pieces.get((rows, q), []),
                )
                for q in range(n)
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


def _files_plan(corpus: Corpus) -> dict[str, list[Any]] | None:
    """Per split, its files (any format), when every split is files (not an in-memory table,
    a Hugging Face dataset or a column's partition): the workers read them."""
    if corpus.split_column is not None:
        return None
    plan = {}
    for name, split in corpus.splits.items():
        if not split.paths or len(split.paths) != len(split.iter_parts()):
            return None
        plan[name] = list(split.paths)
    return plan


def _read_plan(plan: dict[str, list[Any]], target: int) -> Iterator[list[_Piece]]:
    """The read tasks' pieces in input order: consecutive files up to about ``target`` bytes a
    task; a larger JSON Lines file in ranges of whole reader blocks of about ``target`` bytes,
    its first block alone first (its columns type the other ranges, as locally)."""
    from ..inputs.files import file_format
    from ..inputs.jsonl import BLOCK_BYTES
    from ..inputs.location import size_of
    from ..inputs.ranges import block_ends, splittable

    group: list[_Piece] = []
    size = 0
    for split, paths in plan.items():
        for path in paths:
            n = size_of(path) or 0
            if n > target and file_format(path) == "jsonl" and splittable(path):
                if group:
                    yield group
                    group, size = [], 0
                ends = block_ends(path, n, BLOCK_BYTES)
                yield [_Piece(split, path, [0, ends[0]])]
                run = [ends[0]]
                for end in ends[1:]:
                    run.append(end)
                    if end - run[0] >= target or end == ends[-1]:
                        yield [_Piece(split, path, run, None, _FROM_FIRST)]
                        run = [end]
                continue
            group.append(_Piece(split, path))
            size += n or target
            if size >= target:
                yield group
                group, size = [], 0
    if group:
        yield group


class _StreamOrder:
    """The driver's side of the workers' reads: their batches get row ids, shapes and notes in
    input order, as the corpus stream gives them (same late and missing columns, same notes in
    the same order, same files list), though no row passes through the driver."""

    def __init__(self, corpus: Corpus, plan: dict[str, list[Any]]):
        from ..inputs.shape import Shape

        self.corpus = corpus
        self.shape = Shape(corpus)
        self.known = self.shape.known()
        self.offsets: dict[str, int] = {}
        #: per (split, file) read in ranges: its lines and pyarrow's schema so far
        self.lines: dict[tuple[str, str], int] = {}
        self.schemas: dict[tuple[str, str], pa.Schema | None] = {}
        for name in plan:
            corpus.files[name] = []

    def place(self, pieces: list[_Piece], meta: _ReadMeta) -> list[tuple[str, int, list[pa.Field]]]:
        """The read's batches placed in the stream: (split, first row, columns to add) each."""
        from ..inputs.files import file_format

        log = self.corpus.log
        notes = dict(meta.notes)
        piece_rows = [0] * len(pieces)
        layout = []
        for i, (piece, rows, schema, late) in enumerate(meta.batches):
            _replay(log, notes.pop(i, []))
            split, path = pieces[piece].split, pieces[piece].path
            log.current_split = split  # the shape's notes name the split, as in the stream
            row = self.offsets.get(split, 0)
            fields = self.shape.missing(schema, rows, _first(late), split, row, str(path))
            layout.append((split, row, fields))
            self.offsets[split] = row + rows
            piece_rows[piece] += rows
        _replay(log, notes.pop(len(meta.batches), []))
        for index, (piece, rows) in enumerate(zip(pieces, piece_rows)):
            files = self.corpus.files[piece.split]
            if piece.ends is not None:  # a range: the file's reader state after it
                where = (piece.split, str(piece.path))
                self.lines[where] = self.lines.get(where, 0) + meta.lines[index]
                self.schemas[where] = meta.schemas[index]
                if piece.ends[0] > 0:  # not its first: the file's rows grow
                    files[-1]["rows"] += rows
                    continue
            files.append({"path": str(piece.path), "format": file_format(piece.path), "rows": rows})
        return layout

    def resume(self, piece: _Piece) -> _Piece:
        """A range to read again, with its first line and schema from the ranges before it."""
        if piece.ends is None:
            return piece
        where = (piece.split, str(piece.path))
        return dataclasses.replace(
            piece, first_line=self.lines.get(where, 0), schema=self.schemas.get(where)
        )

    def close(self) -> None:
        self.corpus.log.current_split = None
        self.shape.close()


def _first(late: dict[str, int]) -> Any:
    return lambda name: late.get(name, -1)


def _replay(log: InputLog, notes: list[InputNote]) -> None:
    """A worker's notes into the driver's log, as if made here: counts add up, the first row
    is the least, places keep their order up to the log's bound."""
    for note in notes:
        places = note.places or [None]
        for k, place in enumerate(places):
            log.add(
                note.kind,
                note.severity,
                note.message,
                split=note.split,
                column=note.column,
                count=note.count if k == 0 else 0,
                row=note.first_row if k == 0 else None,
                place=place,
            )


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
    prepass_input: tuple[prepass.Plan, Iterable[tuple[str, pa.RecordBatch]]] | None = None,
) -> RayScan:
    """Fold the corpus into every active rule on Ray; the rule states stay on the cluster.

    ``state`` gets each rule's errors and phases, the splits' identity and the timings; call
    :meth:`RayScan.finish` for the results. ``batches``: the driver's stream to fold instead of
    reading the files on the cluster (when the driver must see every row, e.g. to check
    predictions against them). ``prepass_input``: the prepass plan and its splits' stream
    (used only when the scan would stream too), read and folded in tasks, merged and finished
    on the driver, which then holds the values (bounded by those splits: the eval side), and
    put into the object store once with the context.
    """
    ray = connect(address)
    if state.spill is not None:  # keyed rows shuffle through the object store, not this disk
        state.spill.remove()
        state.spill = None
    try:
        ctx_blob = pickle.dumps(prepass.detached(ctx), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise ConfigError(
            f"engine='ray': the audit's context or resources (tokenizer, benchmark files) "
            f"cannot be sent to the cluster ({type(exc).__name__}: {exc}); run with the local "
            "engine."
        ) from None
    rules = parallel._sendable_rules(state)
    key = hashlib.sha256(ctx_blob + pickle.dumps(rules)).hexdigest()
    tasks = _tasks(ray)
    scan = RayScan(ray, tasks, ray.put(rules), [ray.put(ctx_blob)], key, engine=describe(ray))
    cpus = max(1, scan.engine["cpus"])
    if prepass_input is not None and prepass_input[0]:
        on_workers = batches is None
        first, source = prepass_input
        args = (ctx, cpus, progress, corpus, batch_size, on_workers)
        if not _prepass_on_ray(scan, state, first, source, *args):
            return scan
    if ctx.resources.prepasses:  # one object: the context with the values, once per worker
        ctx_blob = prepass.pickled(state, ctx, lambda: ctx)
        scan.key = key = hashlib.sha256(ctx_blob + pickle.dumps(rules)).hexdigest()
        scan.ctx_ref = [ray.put(ctx_blob)]
        del ctx_blob
    plan = _parquet_plan(corpus) if batches is None else None
    files = _files_plan(corpus) if batches is None and plan is None else None
    if chunk_rows is None:
        chunk_rows = parallel.default_chunk_rows(total_rows, cpus)
        if plan is not None and total_rows:  # workers read their rows: fewer, larger chunks
            chunk_rows = max(chunk_rows, min(MAX_READ_ROWS, -(-total_rows // (4 * cpus))))
    tree = _Tree(lambda *parts: tasks.merge.remote(scan.rules_ref, scan.ctx_ref, key, *parts))
    pending: dict[Any, int] = {}  # fold ref -> rows, for progress and backpressure
    bar = Progress(progress, total_rows, "folding on ray")

    shuffle = [  # a verifying rule's payload rows shuffle beside its keyed rows
        (store, keyed.partitions_of(run.rule))
        for i, run in enumerate(state.runs)
        if run.active and keyed.is_keyed(run.rule)
        for store in keyed.stores_of(i, run.rule)
    ]
    fold = tasks.fold.options(num_returns=1 + sum(n for _, n in shuffle))

    def submit(units: list | _Layout | None, chunk: list[Any], rows: int) -> None:
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
        elif files is not None:  # the workers read the files; the driver orders their batches
            _read_on_workers(scan, corpus, files, state, batch_size, cpus, submit)
            if state.stopped is not None:
                return scan
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


def _prepass_on_ray(
    scan: RayScan,
    state: ScanState,
    plan: prepass.Plan,
    batches: Iterable[tuple[str, pa.RecordBatch]],
    ctx: AuditContext,
    cpus: int,
    progress: bool,
    corpus: Corpus,
    batch_size: int,
    on_workers: bool,
) -> bool:
    """The prepass: its splits are read as the scan reads them (``on_workers``: Parquet row
    groups or files read in tasks; else ``batches``, streamed by the driver), fold in tasks,
    merge here in input order and finish here, into ``ctx.resources``. The reads go to a view
    of the corpus with its own input log and files list: the scan records those. False when a
    task failed after Ray's retries (the scan is stopped)."""
    ray = scan.ray
    t0 = time.perf_counter()
    pres = prepass.start(state.runs, plan.wants, ctx)
    chunk_rows = parallel.default_chunk_rows(plan.rows, cpus)
    pending: deque[tuple[Any, int]] = deque()
    bar = Progress(progress, plan.rows, "prepass on ray")

    def absorb_oldest() -> None:
        ref, rows = pending.popleft()
        try:
            part = ray.get(ref)
        except Exception as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, DataAuditError):  # a file the workers could not read
                raise cause from None
            raise _ReadFailed(
                f"a prepass task failed on the cluster after {MAX_RETRIES} retries "
                f"({_ray_error(exc)}); the scan did not start, so this rule has no verdict. "
                "Check the cluster's logs, or run with the local engine."
            ) from None
        parallel._absorb_prepass(state, pres, part)
        bar.update(rows)

    def submit(units: Any, chunk: list[Any], rows: int) -> None:
        wants = {i: s for i, s in plan.wants.items() if i in pres}
        if wants:
            ref = scan.tasks.prepass.remote(
                scan.rules_ref, scan.ctx_ref, scan.key, wants, units, batch_size, *chunk
            )
            pending.append((ref, rows))
        while len(pending) >= 2 * cpus:
            absorb_oldest()

    view = prepass.view(corpus, plan.splits)
    parquet = _parquet_plan(view) if on_workers else None
    files = _files_plan(view) if on_workers and parquet is None else None
    try:
        if parquet is not None:
            for units, rows in _grouped(_parquet_units(view, parquet, state), chunk_rows):
                submit(units, [], rows)
        elif files is not None:
            _read_on_workers(scan, view, files, state, batch_size, cpus, submit)
            if state.stopped is not None:
                return False
        else:
            for chunk in parallel.cut_chunks(batches, chunk_rows, {}, Timings()):
                submit(None, [ray.put(chunk)], sum(rb.num_rows for _, _, rb in chunk))
        while pending:
            absorb_oldest()
    except _ReadFailed as exc:
        parallel._stop_scan(state, str(exc), [])
        return False
    finally:
        bar.close()
    prepass.finish(state, pres, ctx)
    plan.seconds += time.perf_counter() - t0
    return True


#: bytes of files a read task reads: about 4 tasks per CPU within these bounds (whole files:
#: a larger file is read alone)
MIN_READ_BYTES, MAX_READ_BYTES = 1 << 20, 64 << 20


def _read_on_workers(
    scan: RayScan,
    corpus: Corpus,
    plan: dict[str, list[Any]],
    state: ScanState,
    batch_size: int,
    cpus: int,
    submit: Any,
) -> None:
    """Read tasks read groups of files on the workers; the driver takes their results in input
    order (a few in flight), places their batches in the stream and submits one fold task per
    read, on the read's batches in the object store. A file that cannot be read is the
    InputError the local engine raises; a read task lost after Ray's retries stops the scan."""
    from ..inputs.location import size_of

    ray = scan.ray
    total = sum(size_of(p) or 0 for paths in plan.values() for p in paths)
    target = max(MIN_READ_BYTES, min(MAX_READ_BYTES, total // (4 * cpus)))
    order = _StreamOrder(corpus, plan)
    reads: deque[tuple[list[_Piece], Any, Any]] = deque()
    firsts: dict[tuple[str, str], Any] = {}  # a file read in ranges -> its first block's read

    def read(pieces: list[_Piece], *first: Any) -> tuple[Any, Any]:
        return scan.tasks.read.remote(pieces, batch_size, corpus.on_bad_lines, order.known, *first)

    def get(ref: Any) -> _ReadMeta:
        try:
            return ray.get(ref)
        except Exception as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, DataAuditError):
                raise cause from None
            raise _ReadFailed(_ray_error(exc)) from None

    def place_oldest() -> None:
        pieces, meta_ref, data_ref = reads.popleft()
        meta = get(meta_ref)
        if meta.retry:  # a range that must know its first line (or schema): read it again
            pieces = [order.resume(p) for p in pieces]
            meta_ref, data_ref = read(pieces)
            meta = get(meta_ref)
        state.timings.read += meta.seconds
        layout = order.place(pieces, meta)
        start, rows = 0, 0
        for i, (_, n, _, _) in enumerate(meta.batches):  # folds of about MAX_READ_ROWS rows
            rows += n
            if rows >= MAX_READ_ROWS or i == len(meta.batches) - 1:
                submit(_Layout(layout[start : i + 1], start), [data_ref], rows)
                start, rows = i + 1, 0

    try:
        for pieces in _read_plan(plan, target):
            head = pieces[0]
            where = (head.split, str(head.path))
            first = [firsts[where]] if isinstance(head.schema, str) else []
            meta_ref, data_ref = read(pieces, *first)
            if head.ends is not None and head.ends[0] == 0:
                firsts[where] = meta_ref
            reads.append((pieces, meta_ref, data_ref))
            while len(reads) >= cpus:
                place_oldest()
        while reads:
            place_oldest()
    except _ReadFailed as exc:
        parallel._stop_scan(
            state,
            f"a task reading the input failed on the cluster after {MAX_RETRIES} retries "
            f"({exc}); the scan stopped, so this rule has no verdict. Check the cluster's logs "
            "(a node lost, or out of memory), or run with the local engine.",
            [],
        )
        return
    order.close()


class _ReadFailed(Exception):
    """A read task failed for another reason than the input (a node lost after retries)."""


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

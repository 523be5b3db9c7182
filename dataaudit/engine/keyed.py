"""The keyed stage: for rules whose answer needs all rows at once, rows emit keys, rows that share
a key meet in one partition, each partition yields verified candidate edges, and connected
components of the edges are the clusters the rule finishes with. No process holds every row.

A rule opts in with ``keyed = True`` and three methods (DUP001 is the first built-in one):

- ``emit(state, batch) -> pa.Table | None``: per row, zero or more keys (column ``key``, uint64,
  already a hash) with the row id (column ``row``, int64) and a small payload (any other
  columns). Runs on the workers, right after ``update`` (the state is there for the settings
  ``start`` put in it, e.g. the report's example length; emit must not change it).
- ``edges(part) -> pa.Table | None``: the emitted rows of one partition (keys with
  ``key % partitions == p``) that share their key with another row (a row alone with its key
  meets no one), the engine's ``split`` column added, sorted by (key, split, row) so the order
  never depends on how the input was cut. Returns candidate pairs the rule verified,
  columns ``split_a, row_a, split_b, row_b``. Runs where the partition is.
- ``finish_keyed(state, clusters, ctx) -> RuleResult``: instead of ``finish``; ``clusters`` are
  the connected components of all edges, each a sorted list of (split, row), ordered by first
  member (splits in the audit's order), singletons left out. Each is a :class:`Cluster`: its
  ``rows`` table holds the members' emitted rows (``split``, ``row``, ``key`` and the payload, one
  per member in member order; a member that emitted several keys shows the first of its
  partition), so only the rows of clusters, not every row, travel to the finish.
- ``verify_columns`` (optional, a tuple of names): payload columns only ``edges`` reads (LBL001's
  MinHash signatures, to verify a pair where it meets): they stay in the partition, and the
  clusters do not carry them.

The shuffle is ``key % partitions``: on disk in the local engine (:class:`DiskSpill`, one Arrow
stream per rule and partition and writer, memory bounded by a batch), through the object store
on Ray (:class:`MemorySpill` per fold task, one return value per rule and partition).

Verification where the data is (a second hop). A rule whose candidates need more of each row
than its keys carry (DUP002: signatures and shingle sets, ~2 KB a row, must not travel once per
LSH band) adds two methods:

- ``emit_rows(state, batch) -> pa.Table | None``: per row its verification payload (column
  ``row`` and any others), stored once, partitioned by row (:func:`node_keys`), not by key.
- ``verify_pairs(pairs, rows) -> pa.Table``: ``edges(part)`` then returns *candidate* pairs (any extra
  columns ride along); the engine routes them to the partition of their first end, keeps each
  distinct pair once, sends each first end's payload once to every partition that holds
  second ends of its pairs, and calls ``verify`` there with ``rows`` (the distinct emitted rows
  of both ends: split, row, payload) and ``pairs`` (with ``at_a``, ``at_b``: their ends'
  positions in ``rows``). It returns the accepted edges (``EDGE_COLUMNS``, and ``score`` if
  the rule has one: each cluster member's ``score`` is then its best edge's). The members'
  payload comes from the verified rows (the rule's ``member_columns``, default all).

So the payload crosses the network once per (row, partition of a partner), never once per key
or per pair, and no process holds more than one partition's rows.

Locally the payload is not partitioned, and only the candidates' rows are read: the spill
writes it once, as it comes, on a thread of its own (:meth:`DiskSpill.add_rows`: one Arrow
stream per writer, each batch one split's rows in row order, with an index of the batches'
byte ranges and rows); the first hop's candidate pairs, cut by the partition of their first
end, are verified a few partitions at a time (up to :data:`VERIFY_PAIRS` pairs) with both
ends' payload taken from those files (:class:`PayloadRows`, :func:`verify_rows`), one batch's
bytes mapped at a time. Most rows never become candidates, so most of the payload (DUP002:
~1.5-2 KB a row) is written and never read again; the partitioned form read each partition
whole twice and wrote the first ends' payload a second time. Measured against it (``audit(select=["DUP002"],
workers=2)``, 1M recombined Python-docs documents): parent CPU 17.4 -> 12.7-14.1 s, parent
peak 1,263 -> 704-831 MB; LBL001 on 1M labelled rows: 55 -> 43 CPU-s, 1,785 -> 1,051 MB; the
5M-document run of ``bench/bench_scale.py --spill``: parent peak 4,004 -> 2,460 MB. The payload
is indexed in ~8-16 MB entries (:data:`ROWS_BATCH_BYTES`; each the pieces as they came, one
Arrow batch a piece, not joined): a lookup pays ~0.5 ms per entry.
A rule's ``fetch_columns`` (DUP002's snippets and shingle sets, LBL001's snippets) are what
its finish reads for a few members only (the findings' examples): the finish reads them from
those files (:meth:`Clusters.fetch`) instead of every member carrying them; where the finish
is not beside the files (Ray) the members carry them and ``fetch`` takes from the members.
Not kept in memory instead, even for small corpora: writing costs a copy into the page cache,
and pieces held in memory grew the peak without saving CPU (see :data:`SPILL_BUDGET`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .._arrays import sorted_unique
from .._arrow import fixed, indices, mask_array, numeric_array, strings
from .._compute import call, cast, is_in_positions, take
from .state import RULE_FAILURES, RuleRun, error_message

__all__ = [
    "PARTITIONS",
    "Cluster",
    "Clusters",
    "DiskSpill",
    "MemorySpill",
    "clusters_of",
    "edges_of",
    "emit",
    "is_keyed",
    "node_keys",
    "run_local",
    "spill",
    "verifies",
]

#: partitions of the keyed shuffle (a rule may set ``partitions``)
PARTITIONS = 16
EDGE_COLUMNS = ("split_a", "row_a", "split_b", "row_b")


def is_keyed(rule: Any) -> bool:
    return getattr(rule, "keyed", False) is True


def partitions_of(rule: Any) -> int:
    return int(getattr(rule, "partitions", PARTITIONS))


def verifies(rule: Any) -> bool:
    """Does the rule verify its candidates in a second hop (``emit_rows`` and ``verify_pairs``)?"""
    return callable(getattr(rule, "emit_rows", None)) and callable(
        getattr(rule, "verify_pairs", None)
    )


def rows_index(index: int) -> str:
    """Where a verifying rule's per-row payload is spilled, beside its keyed rows."""
    return f"{index}.rows"


def stores_of(index: int, rule: Any) -> list[Any]:
    """The spill indexes of a keyed rule: its keyed rows, and its rows' payload if it verifies."""
    return [index, rows_index(index)] if verifies(rule) else [index]


def _by_part(keys: np.ndarray, parts: int) -> tuple[np.ndarray, np.ndarray]:
    """The keys' positions grouped by partition (``key % parts``; stable: in their order
    within one) and the ``parts + 1`` bounds of the groups. The partitions are sorted in the
    smallest unsigned type that holds them: numpy's stable sort of 8- or 16-bit values is a
    radix sort (20x faster than on int64 for a batch's 150k band keys)."""
    dtype = np.uint8 if parts <= 256 else np.uint16 if parts <= 65536 else np.int64
    which = (np.asarray(keys, np.uint64) % np.uint64(parts)).astype(dtype)
    bounds = np.concatenate([[0], np.cumsum(np.bincount(which, minlength=parts))])
    return np.argsort(which, kind="stable"), bounds


def _cut(table: pa.Table, parts: int) -> list[pa.Table | None]:
    """The rows of ``table`` per partition (``key % parts``)."""
    order, bounds = _by_part(fixed(table.column("key")), parts)
    ordered = take(table, order)  # one take, then zero-copy slices
    out: list[pa.Table | None] = []
    for p in range(parts):
        lo, hi = int(bounds[p]), int(bounds[p + 1])
        out.append(ordered.slice(lo, hi - lo) if hi > lo else None)
    return out


def _split_column(batch: Any, n: int, splits: list[str] | None) -> pa.Array:
    """``batch``'s split for ``n`` spilled rows: its rank in the audit's ``splits`` (int16: the
    partitions' takes and sorts never touch strings; rules see names, :func:`_named`), or its
    name when the splits are not known (a rule's conformance check)."""
    if splits is None:
        return pa.repeat(strings([batch.split], pa.string())[0], n)
    if batch.split not in splits:
        raise ValueError(f"a keyed row names a split the audit does not have: {batch.split!r}")
    return numeric_array(np.full(n, splits.index(batch.split), np.int16))


def emit(run: RuleRun, batch: Any, splits: list[str] | None = None) -> pa.Table | None:
    """The rule's keyed rows of ``batch`` with their split, or None; a rule that raises or emits
    the wrong shape gets the error (like a failing ``update``)."""
    try:
        table = run.rule.emit(run.state, batch)
        if table is None or table.num_rows == 0:
            return None
        if not isinstance(table, pa.Table):
            table = pa.Table.from_batches([table]) if isinstance(table, pa.RecordBatch) else None
        if table is None or "key" not in table.column_names or "row" not in table.column_names:
            raise TypeError("emit() must return a pyarrow Table with 'key' and 'row' columns")
        table = table.set_column(
            table.column_names.index("key"), "key", cast(table.column("key"), pa.uint64())
        ).set_column(table.column_names.index("row"), "row", cast(table.column("row"), pa.int64()))
        return table.append_column("split", _split_column(batch, len(table), splits))
    except RULE_FAILURES as exc:
        run.error, run.state = error_message(exc), None
        return None


def emit_rows(
    run: RuleRun, batch: Any, splits: list[str] | None = None, keys: bool = True
) -> pa.Table | None:
    """The verifying rule's per-row payload of ``batch``, in row order (each row once), with its
    split; ``keys``: with the partition keys of its rows (:func:`node_keys`), for a store that
    partitions the payload (the object store on Ray; the local spill keeps it by row)."""
    try:
        table = run.rule.emit_rows(run.state, batch)
        if table is None or table.num_rows == 0:
            return None
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        if not isinstance(table, pa.Table) or "row" not in table.column_names:
            raise TypeError("emit_rows() must return a pyarrow Table with a 'row' column")
        rows = cast(table.column("row"), pa.int64())
        table = table.set_column(table.column_names.index("row"), "row", rows)
        values = np.asarray(fixed(rows), np.int64)
        if len(values) > 1 and not (values[1:] > values[:-1]).all():
            order = np.argsort(values, kind="stable")
            if (values[order][1:] == values[order][:-1]).any():
                raise TypeError("emit_rows() must return each row once")
            table = take(table, order)
        table = table.append_column("split", _split_column(batch, table.num_rows, splits))
        if not keys:
            return table
        name = pa.repeat(strings([batch.split], pa.string())[0], table.num_rows)
        return table.append_column("key", numeric_array(node_keys(name, table.column("row"))))
    except RULE_FAILURES as exc:
        run.error, run.state = error_message(exc), None
        return None


def spill(
    store: Any, index: int, run: RuleRun, batch: Any, splits: list[str] | None = None
) -> None:
    """A keyed rule's rows of ``batch`` (and its payload rows, if it verifies) into ``store``;
    ``splits``: the audit's, to spill each row's split as its rank (see :func:`_split_column`)."""
    parts = partitions_of(run.rule)
    rows = emit(run, batch, splits)
    if rows is not None:
        store.add(index, parts, rows)
    if run.active and verifies(run.rule):
        by_row = callable(getattr(store, "add_rows", None))
        payload = emit_rows(run, batch, splits, keys=not by_row)
        if payload is not None and by_row:
            store.add_rows(index, payload)
        elif payload is not None:
            store.add(rows_index(index), parts, payload)


def node_keys(split: Any, row: Any) -> np.ndarray:
    """A 64-bit hash of each (split name, row): where a row's payload lives (``% partitions``),
    the same on every worker whatever the audit's splits."""
    import xxhash

    from ..sketches.hashing import mix64

    if isinstance(split, pa.ChunkedArray):
        split = split.combine_chunks()
    codes = call("dictionary_encode", split)
    names = codes.dictionary.to_pylist()
    salt = np.array([xxhash.xxh3_64_intdigest(str(n).encode()) for n in names], np.uint64)
    idx = np.asarray(fixed(codes.indices), np.int64)
    rows = np.asarray(fixed(row) if isinstance(row, (pa.Array, pa.ChunkedArray)) else row, np.int64)
    return mix64(rows.astype(np.uint64) ^ salt[idx])


class MemorySpill:
    """One fold task's keyed rows, cut by partition, kept until the task returns them."""

    def __init__(self) -> None:
        self.parts: dict[tuple[int, int], list[pa.Table]] = {}

    def add(self, index: int, parts: int, table: pa.Table) -> None:
        for p, piece in enumerate(_cut(table, parts)):
            if piece is not None:
                self.parts.setdefault((index, p), []).append(piece)

    def put(self, index: Any, p: int, table: pa.Table) -> None:
        """A piece already cut for partition ``p``."""
        self.parts.setdefault((index, p), []).append(table)

    def table(self, index: Any, p: int) -> pa.Table | None:
        pieces = self.parts.get((index, p))
        return pa.concat_tables(pieces) if pieces else None

    def close(self) -> None:
        pass

    def drop(self, index: Any, p: int) -> None:
        """Forget the pieces of ``index`` and partition ``p`` (read for the last time)."""
        self.parts.pop((index, p), None)

    def remove(self) -> None:
        self.parts = {}


#: bytes of pieces a :class:`DiskSpill` keeps in memory before it writes pieces to disk. 0: held
#: pieces cost more than the disk saves; measured side by side (DUP002+LBL001, 200k rows,
#: bench/data/scale_200000_8): 256 MB made CPU 5-20% worse and peak RSS ~0.25 GB higher than
#: writing every piece (the page cache keeps them anyway); at 1M rows CPU was unchanged. Why:
#: a piece is a zero-copy slice of its batch's cut (:func:`_cut`), so holding one partition's
#: piece keeps the whole batch alive (measured: a 218 KB piece of a 150k-key batch held
#: 3.5 MB), 16x what the budget counted. Held pieces are copies now, and the by-row payload
#: is held too (:meth:`DiskSpill.add_rows`); measured again (DUP002, bench_dedup's 40k
#: shared-passage documents, workers=1, three runs each, load ~8): 256 MB held saved
#: 0.1-0.3 of ~3.3 CPU-s (the writes; within the run-to-run spread) for a peak ~110 MB higher
#: (370 -> 480 MB), so the default stays 0. Measured a third time without pandas in the
#: process and with a cut's pieces held as slices of it (one copy fewer): 40k documents
#: 2.97 -> 2.80 CPU-s median of 6 for a peak 363 -> 459 MB; 200k documents (DUP001+DUP002,
#: scale_200000_8) 5.2 -> 5.5-6.0 CPU-s, peak 376 -> 655 MB (load ~3). Held memory is not
#: reused by the next batch as written-and-freed memory is: its page faults cost about what
#: the writes did
SPILL_BUDGET = 0


#: bytes a partition's stream of keyed pieces gathers before it writes them to its file
PIECE_BUFFER = 256 << 10

#: bytes of payload rows a :class:`DiskSpill` gathers into one batch (8-16 MB: a piece of half
#: of it or more is written as it is, not copied into a larger batch)
ROWS_BATCH_BYTES = 16 << 20


class _SlicedWrites:
    """A file written in 1 MB ``write`` calls: the payload's buffers are tens of MB, and on
    this kind of machine one large write costs 20-25% more CPU than the same bytes in 1 MB
    writes (measured: 381 MB of Arrow batches, 1.3-2.2 vs 1.0-1.7 CPU-s).

    Written through the page cache. ``O_DIRECT`` writes (staged in an aligned 1 MB buffer) were
    built and measured for issue 13 and not kept: the copy into page-cache pages is the
    largest kernel cost of a DUP002 scan, and going past it saved 0.1-0.2 CPU-s of 1.1-1.6 at
    40k documents and 0.5 of 4.4 at 200k, but DUP002's lookups then read the candidates' rows
    from the disk (they are spread over every payload batch): the finish went 0.34 -> 0.60 s
    at 200k (page faults of an mmap, and ``posix_fadvise(WILLNEED)`` or a read-ahead thread
    did not hide them), whole-process wall 3.01 -> 3.09 s."""

    def __init__(self, path: Path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        self.pos, self.closed = 0, False

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        at = 0
        while at < len(view):  # a short write goes on where it stopped
            at += os.write(self.fd, view[at : at + (1 << 20)])
        self.pos += len(view)
        return len(view)

    def tell(self) -> int:
        return self.pos

    def flush(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
            self.closed = True


#: payload batches a :class:`DiskSpill` lets wait for its writer thread (each up to
#: :data:`ROWS_BATCH_BYTES`): the scan goes on while one is written and one waits, then blocks
WRITE_BEHIND = 1


class _WriteBehind:
    """A thread that runs the payload writes in the order they came, while the scan folds the
    next batches (``os.write`` releases the GIL; the Arrow stream writer too). At most
    ``depth`` writes wait (:meth:`submit` blocks beyond: memory stays bounded); what a write
    raises is raised on the caller's thread by the next :meth:`submit` or :meth:`wait`, and
    the writes after it are skipped."""

    def __init__(self, depth: int):
        import queue
        import threading

        self.queue: Any = queue.Queue(max(depth, 1))
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="dataaudit-spill", daemon=True)
        self.thread.start()

    def submit(self, fn: Any, *args: Any) -> None:
        self._raise()
        self.queue.put((fn, args))

    def wait(self) -> None:
        """Every submitted write done (and the thread ended); raise what one raised."""
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()
        self._raise()

    def _raise(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            if self.error is None:
                fn, args = item
                try:
                    fn(*args)
                except BaseException as exc:  # the caller's thread raises it
                    self.error = exc


def _row_span(batch: pa.RecordBatch) -> tuple[int, int]:
    """The node ids (:func:`_node_ids`) of a payload batch's first and last rows."""
    ends = indices(np.array([0, batch.num_rows - 1]))
    split = take(batch.column("split"), ends)
    if not pa.types.is_integer(split.type):
        raise TypeError("the payload spilled by row names its split by rank")
    rows = np.asarray(fixed(take(batch.column("row"), ends)), np.int64)
    ids = (np.asarray(fixed(split), np.int64) << 40) | rows
    return int(ids[0]), int(ids[1])


def _same_split(a: pa.Table, b: pa.Table) -> bool:
    return a.column("split")[0].as_py() == b.column("split")[0].as_py()


class DiskSpill:
    """Keyed rows on disk: ``<dir>/<rule index>/<partition>.<writer>.arrow``, one Arrow stream
    per writer (a process, or a chunk in a worker), so writers never share a file. The first
    ``budget`` bytes of pieces (default :data:`SPILL_BUDGET`) stay in this process's memory
    instead (0: every piece to disk, as a worker process writing for its parent must;
    ``shared``: a spill whose pieces in memory count too, the verification hop's scratch beside
    the keyed rows)."""

    def __init__(
        self,
        root: str | os.PathLike | None = None,
        budget: int | None = None,
        shared: DiskSpill | None = None,
    ):
        self.owner = root is None  # the folder is this object's: removed with it
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="dataaudit-"))
        self.name = uuid.uuid4().hex
        self.writers: dict[tuple[int, int], Any] = {}
        self.budget, self.held = SPILL_BUDGET if budget is None else budget, 0
        self.shared = shared  # a spill whose memory counts against this one's budget too
        self.memory: dict[tuple[Any, int], list[pa.Table]] = {}
        self.blocks: dict[str, list[tuple[int, int, int, int]]] = {}  # add_rows' batches
        self.pending: dict[str, list[pa.Table]] = {}  # add_rows' pieces not written yet
        self.rows: dict[str, list[tuple[pa.RecordBatch, int, int]]] = {}  # held, under budget
        self.streams: set[str] = set()  # add_rows' names with a stream on disk (or on its way)
        self.behind: _WriteBehind | None = None  # add_rows' writer thread, while it writes
        if self.owner:  # an audit that raised mid-scan leaves no partitions behind
            weakref.finalize(self, shutil.rmtree, str(self.root), True)

    def add(self, index: Any, parts: int, table: pa.Table) -> None:
        for p, piece in enumerate(_cut(table, parts)):
            if piece is not None:
                self.put(index, p, piece)

    def put(self, index: Any, p: int, piece: pa.Table) -> None:
        """A piece already cut for partition ``p``."""
        size = piece.nbytes
        held = self.held + (self.shared.held if self.shared is not None else 0)
        # a partition's pieces read back in the order they came: none to memory after its first
        # on disk
        if held + size <= self.budget and (index, p) not in self.writers:
            # a copy: a piece is a slice of its batch's cut, which would stay alive whole
            piece = take(piece, np.arange(piece.num_rows))
            self.memory.setdefault((index, p), []).append(piece)
            self.held += size
            return
        writer = self.writers.get((index, p))
        if writer is None:
            folder = self.root / str(index)
            folder.mkdir(parents=True, exist_ok=True)
            # buffered: a batch's piece of one partition is a few KB written in ~6 small
            # writes (the stream's framing, metadata and each buffer), ~1,850 write calls for
            # a 40k-document DUP002 scan
            raw = pa.OSFile(str(folder / f"{p}.{self.name}.arrow"), "wb")
            sink = pa.BufferedOutputStream(raw, PIECE_BUFFER)
            writer = self.writers[(index, p)] = (sink, pa.ipc.new_stream(sink, piece.schema))
        writer[1].write_table(piece)

    def _files(self, index: Any, p: int) -> list[Path]:
        """The files of partition ``p`` of ``index``, every writer's, in writer order: one
        folder per index, ``<p>.<writer>.arrow`` (not a folder per partition: ext4's mkdir and
        rmdir cost ~1-4 ms each, 30-60 ms an index of 16 partitions where unlinking its
        files costs a few)."""
        folder = self.root / str(index)
        return sorted(folder.glob(f"{p}.*.arrow")) if folder.is_dir() else []

    def add_rows(self, index: int, table: pa.Table) -> None:
        """A verifying rule's payload rows (:func:`emit_rows`, without keys; the split as its
        rank), written as they come: one Arrow stream per writer,
        ``<dir>/<index>.rows/<writer>.arrow``, each batch one split's rows in row order, and
        beside it (``.idx.npy``, on :meth:`close`) each entry's byte range and first and last
        row, so :class:`PayloadRows` maps only the batches it reads."""
        name = rows_index(index)
        for column in table.column_names:  # a batch read alone has no dictionaries
            if pa.types.is_dictionary(table.column(column).type):
                col = table.column(column)
                table = table.set_column(
                    table.column_names.index(column), column, cast(col, col.type.value_type)
                )
        pending = self.pending.setdefault(name, [])
        if pending and (
            not _same_split(pending[-1], table) or table.nbytes >= ROWS_BATCH_BYTES // 2
        ):
            self._write_rows(name)  # a batch on disk holds one split's rows; a large piece
            # goes alone (joining it to the pending ones would copy it for nothing)
        self.pending.setdefault(name, []).append(table)
        if sum(t.nbytes for t in self.pending[name]) >= ROWS_BATCH_BYTES // 2:
            self._write_rows(name)

    def _write_rows(self, name: str) -> None:
        """The pending payload pieces of ``name`` as one batch (few, large batches: a lookup
        costs ~0.5 ms a batch it reads from, whatever its size)."""
        pieces = self.pending.pop(name, [])
        if not pieces:
            return
        # the pieces stay as they came, one Arrow batch each (one index entry covers them
        # all): joining them into one batch copied the whole payload once more (DUP002, 40k
        # documents: 61 MB, ~0.08 CPU-s on the scan thread)
        table = pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]
        rows = np.asarray(fixed(table.column("row")), np.int64)
        if len(rows) > 1 and not (rows[1:] > rows[:-1]).all():  # pieces came out of order
            order = np.argsort(rows, kind="stable")
            if (rows[order][1:] == rows[order][:-1]).any():
                raise ValueError("emit_rows() gave a row twice (or a row of another batch)")
            table = take(table, order).combine_chunks()
        held = self.held + (self.shared.held if self.shared is not None else 0)
        if held + table.nbytes <= self.budget and name not in self.streams:
            for batch in table.to_batches():  # under the budget: kept here, not written
                if batch.num_rows:
                    self.rows.setdefault(name, []).append((batch, *_row_span(batch)))
            self.held += table.nbytes
            return
        self.streams.add(name)
        if WRITE_BEHIND <= 0:
            self._stream_rows(name, table)
            return
        if self.behind is None:
            self.behind = _WriteBehind(WRITE_BEHIND)
            # a spill dropped mid-scan (its audit raised) ends its thread with it
            weakref.finalize(self, self.behind.queue.put, None)
        self.behind.submit(self._stream_rows, name, table)

    def _stream_rows(self, name: str, table: pa.Table) -> None:
        """``table``'s batches appended to the payload stream of ``name`` (on the writer thread
        but for ``WRITE_BEHIND = 0``), one index entry for them: byte range and rows."""
        writer = self.writers.get((name, -1))
        if writer is None:
            folder = self.root / name
            folder.mkdir(parents=True, exist_ok=True)
            sink = pa.PythonFile(_SlicedWrites(folder / f"{self.name}.arrow"), mode="w")
            writer = self.writers[(name, -1)] = (sink, pa.ipc.new_stream(sink, table.schema))
            self.blocks[name] = []
        sink, stream = writer
        batches = [batch for batch in table.to_batches() if batch.num_rows]
        if not batches:
            return
        at = sink.tell()
        for batch in batches:  # one entry for the lot (in row order): read back together
            stream.write_batch(batch)
        first, last = _row_span(batches[0]), _row_span(batches[-1])
        self.blocks[name].append((at, sink.tell() - at, first[0], last[1]))

    def payload(self, index: int, splits: list[str]) -> PayloadRows | None:
        """The payload rows :meth:`add_rows` wrote for rule ``index`` (every writer's), once
        the writers are closed (their last writes waited for here, if :meth:`close` did not
        wait); None if there are none."""
        self._close_rows()
        folder = self.root / rows_index(index)
        paths = sorted(folder.glob("*.arrow")) if folder.is_dir() else []
        held = self.rows.get(rows_index(index), [])
        return PayloadRows(paths, splits, held) if paths or held else None

    def _written(self) -> None:
        """The payload writes the writer thread has not done yet, done (its errors raised)."""
        if self.behind is not None:
            behind, self.behind = self.behind, None
            behind.wait()

    def close(self, wait: bool = True) -> None:
        """Every piece written and every file complete; ``wait=False``: the partitions, while
        the payload's last writes may still run on the writer thread until :meth:`payload`
        (the local finish reads the partitions first: DUP002's last ~8 MB of payload, 0.02-0.04
        s, are written while its candidates are found)."""
        for name in list(self.pending):
            self._write_rows(name)
        for key in [key for key in self.writers if key[1] != -1]:
            sink, writer = self.writers.pop(key)
            writer.close()
            sink.close()
        if wait:
            self._close_rows()

    def _close_rows(self) -> None:
        """The payload streams complete: their writes done (errors raised), closed, indexed."""
        self._written()
        for key in [key for key in self.writers if key[1] == -1]:
            sink, writer = self.writers.pop(key)
            writer.close()
            sink.close()
        for name, blocks in self.blocks.items():
            np.save(self.root / name / f"{self.name}.idx.npy", np.array(blocks, np.int64))
        self.blocks = {}

    def drop(self, index: Any, p: int) -> None:
        """Forget the pieces of ``index`` and partition ``p``, in memory and on disk (read for
        the last time: their memory is free for the pieces that follow)."""
        self.held -= sum(piece.nbytes for piece in self.memory.pop((index, p), ()))
        if (index, p) in self.writers:
            sink, writer = self.writers.pop((index, p))
            writer.close()
            sink.close()
        for path in self._files(index, p):
            path.unlink(missing_ok=True)

    def table(self, index: Any, p: int) -> pa.Table | None:
        pieces = list(self.memory.get((index, p), ()))
        if (index, p) in self.writers:  # still open: what its buffer holds goes to the file
            self.writers[(index, p)][0].flush()
        for path in self._files(index, p):
            with pa.OSFile(str(path), "rb") as source:
                pieces.append(pa.ipc.open_stream(source).read_all())
        return pa.concat_tables(pieces) if pieces else None

    def remove(self) -> None:
        """Every piece forgotten and the folder deleted: nothing pending is written, and a
        write or close that fails now is moot (its files go; removed after a failure, the
        first error stands)."""
        self.memory, self.rows, self.pending, self.held = {}, {}, {}, 0
        with contextlib.suppress(Exception):
            self._written()
        for sink, writer in self.writers.values():
            with contextlib.suppress(Exception):
                writer.close()
            sink.close()
        self.writers, self.blocks = {}, {}
        shutil.rmtree(self.root, ignore_errors=True)


class PayloadRows:
    """A verifying rule's payload on disk, by row (:meth:`DiskSpill.add_rows`): Arrow streams,
    each batch one split's rows in row order, found by an index of entries (a run of batches:
    byte range, first and last row); a lookup maps the byte range of each entry it reads,
    alone, and copies the rows it takes, so it touches the candidates' rows, not the whole
    payload (Arrow's own memory map asks the kernel for a whole batch on every read, and a
    file kept mapped would count every page read around a row in this process's RSS)."""

    def __init__(
        self,
        paths: list[Path],
        splits: list[str],
        held: list[tuple[pa.RecordBatch, int, int]] = (),
    ):
        self.paths, self.splits = [str(p) for p in paths], splits
        self.schemas = []
        self.held = [batch for batch, _, _ in held]  # batches kept in memory (file -1 - i)
        blocks = [np.array([[-1 - i, 0, 0, lo, hi] for i, (_, lo, hi) in enumerate(held)])]
        blocks = [b for b in blocks if len(b)]
        for f, path in enumerate(self.paths):
            index = np.load(path[: -len(".arrow")] + ".idx.npy")
            with pa.OSFile(path, "rb") as source:
                self.schemas.append(pa.ipc.open_stream(source).schema)
            if len(index):
                blocks.append(np.column_stack([np.full(len(index), f), index]))
        table = np.concatenate(blocks) if blocks else np.zeros((0, 5), np.int64)
        table = table[np.argsort(table[:, 3], kind="stable")]
        self.file, self.offset, self.length = table[:, 0], table[:, 1], table[:, 2]
        self.lo, self.hi = table[:, 3], table[:, 4]
        if len(self.lo) > 1 and not (self.lo[1:] > self.hi[:-1]).all():
            raise ValueError("emit_rows() gave a row twice (or a row of another batch)")

    def take(self, nodes: np.ndarray, columns: list[str] | None = None) -> pa.Table:
        """The payload rows of these node ids (:func:`_node_ids`), in their order: ``split``
        (rank), ``row`` and ``columns`` (default: all). Each must have emitted a payload."""
        nodes = np.asarray(nodes, np.int64)
        uniq, inverse = np.unique(nodes, return_inverse=True)
        at = np.searchsorted(self.lo, uniq, side="right") - 1
        if len(uniq) and ((at < 0).any() or (uniq > self.hi[np.maximum(at, 0)]).any()):
            raise ValueError("a candidate pair names a row that emitted no payload (emit_rows)")
        pieces = []
        bounds = np.flatnonzero(np.diff(at)) + 1
        for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), len(uniq)]):
            if hi > lo:
                pieces.append(self._rows(int(at[lo]), uniq[lo:hi] & ((1 << 40) - 1), columns))
        if not pieces:
            schema = self.schemas[0] if self.schemas else self.held[0].schema
            names = ["split", "row", *columns] if columns is not None else schema.names
            return pa.schema([schema.field(n) for n in names]).empty_table()
        table = pa.concat_tables(pieces, promote_options="default")
        if len(uniq) == len(nodes) and (inverse == np.arange(len(nodes))).all():
            return table
        return take(table, inverse)

    def _rows(self, b: int, rows: np.ndarray, columns: list[str] | None) -> pa.Table:
        """Rows ``rows`` of batch ``b``, copied out of a mapping of that batch alone (or taken
        from the batch held in memory)."""
        import mmap

        f, offset, length = int(self.file[b]), int(self.offset[b]), int(self.length[b])
        if f < 0:
            return pa.Table.from_batches([_take_rows(self.held[-1 - f], rows, columns)])
        start = offset - offset % mmap.ALLOCATIONGRANULARITY
        with open(self.paths[f], "rb") as fh:
            view = mmap.mmap(fh.fileno(), offset + length - start, offset=start,
                             access=mmap.ACCESS_READ)  # fmt: skip
        try:
            buf = pa.BufferReader(pa.py_buffer(view).slice(offset - start, length))
            batches, message = [], None  # an entry's batches (the pieces as written), in order
            while buf.tell() < length:
                message = pa.ipc.read_message(buf)
                if message.type != "schema":  # the stream's first batch comes after its schema
                    batches.append(pa.ipc.read_record_batch(message, self.schemas[f]))
            out = _take_batches(batches, rows, columns)
            del buf, message, batches  # no view of the mapping left: it can close
        finally:
            with contextlib.suppress(BufferError):  # still exported: unmapped with the last
                view.close()
        return out


def _take_batches(
    batches: list[pa.RecordBatch], rows: np.ndarray, columns: list[str] | None
) -> pa.Table:
    """Rows ``rows`` (sorted row ids) of consecutive payload batches (in row order), copied,
    each taken from its own batch (a take from the batches joined would copy them all)."""
    if len(batches) == 1:
        return pa.Table.from_batches([_take_rows(batches[0], rows, columns)])
    lasts = np.array([_row_span(b)[1] & ((1 << 40) - 1) for b in batches], np.int64)
    cuts = np.searchsorted(rows, lasts, side="right")
    if cuts[-1] != len(rows):
        raise ValueError("a candidate pair names a row that emitted no payload (emit_rows)")
    parts, lo = [], 0
    for batch, hi in zip(batches, cuts.tolist()):
        if hi > lo:
            parts.append(_take_rows(batch, rows[lo:hi], columns))
        lo = hi
    return pa.Table.from_batches(parts)


def _take_rows(batch: pa.RecordBatch, rows: np.ndarray, columns: list[str] | None):
    """Rows ``rows`` (row ids) of a payload batch (in row order), copied: split, row and
    ``columns`` (default all)."""
    if columns is not None:
        batch = batch.select(["split", "row", *columns])
    have = fixed(batch.column("row"))
    pos = np.minimum(np.searchsorted(have, rows), len(have) - 1)
    if not (have[pos] == rows).all():
        raise ValueError("a candidate pair names a row that emitted no payload (emit_rows)")
    return take(batch, pos)


#: keys of a partition beyond which :func:`_shared_keys` sorts them (its table's slots are int32)
_HASHED_KEYS = 1 << 30


def _shared_keys(keys: np.ndarray) -> np.ndarray:
    """Positions (ascending) of the keys that occur more than once.

    Most rows of an LSH band are alone with their key, so only the few that are not matter: a
    compiled pass puts each key in a hash table (twice as many int32 slots as keys, probed from
    the key's top bits) and marks those it finds there already. It replaced a sort of the keys
    (packed with their positions) that took ~2.5 ms of a 45k-key partition, 0.05 CPU-s of a
    40k-document DUP002 audit's finish."""
    from ..sketches.native import mark_shared

    n = len(keys)
    if n < 2:
        return np.zeros(0, np.int64)
    shared = np.zeros(n, bool)
    if n >= _HASHED_KEYS:  # int32 slots: a partition this large is sorted instead
        order = np.argsort(keys)
        k = keys[order]
        tied = np.zeros(n, bool)
        tied[1:] = k[1:] == k[:-1]
        tied[:-1] |= tied[1:]
        shared[order[tied]] = True
        return np.flatnonzero(shared)
    bits = max(int(2 * n - 1).bit_length(), 1)
    slots = np.empty(1 << bits, np.int32)
    mark_shared(np.ascontiguousarray(keys, np.uint64), 64 - bits, slots, shared)
    return np.flatnonzero(shared)


def _sorted_part(part: pa.Table, splits: list[str]) -> pa.Table | None:
    """The rows of a partition that share their key with another row (a row alone with its key
    meets no one: most rows of an LSH band), in an order that does not depend on the
    partitioning of the input: (key, split in the audit's order, row); None if there are none."""
    keys = fixed(part.column("key"))
    at = _shared_keys(keys)
    if not len(at):
        return None
    r = _ranks(part.column("split"), splits)[at]
    rows = np.asarray(fixed(part.column("row")), np.int64)[at]
    return _named(take(part, at[np.lexsort((rows, r, keys[at]))]), splits)


def _check_edges(edges: pa.Table, what: str) -> None:
    missing = [c for c in EDGE_COLUMNS if c not in edges.column_names]
    if missing:
        raise TypeError(f"{what} must return a table with columns {', '.join(EDGE_COLUMNS)}")


def edges_of(rule: Any, part: pa.Table | None, splits: list[str]) -> pa.Table | None:
    """The rule's verified edges in one partition, its rows in an order that does not depend on
    the partitioning of the input: (key, split in the audit's order, row)."""
    if part is None or part.num_rows == 0:
        return None
    part = _sorted_part(part, splits)
    edges = None if part is None else rule.edges(part)
    if edges is None or edges.num_rows == 0:
        return None
    _check_edges(edges, "edges()")
    edges = edges.select(list(EDGE_COLUMNS))
    # each end's emitted row rides along (``a.<column>``, ``b.<column>``): the clusters' payload
    ids = _node_ids(part.column("split"), part.column("row"), splits)
    nodes, first = np.unique(ids, return_index=True)  # a row's first key in (key, split, row)
    local = ("split", "row", *getattr(rule, "verify_columns", ()))
    payload = [c for c in part.column_names if c not in local]
    for end in ("a", "b"):
        want = _node_ids(edges[f"split_{end}"], edges[f"row_{end}"], splits)
        at = np.minimum(np.searchsorted(nodes, want), len(nodes) - 1)
        if not (nodes[at] == want).all():
            raise ValueError("edges() named a row that is not in its partition")
        taken = take(part.select(payload), first[at])
        for name in payload:
            edges = edges.append_column(f"{end}.{name}", taken.column(name))
    return edges


# -- the verification hop (rules with emit_rows and verify) -------------------------------------
def candidates_of(
    rule: Any, part: pa.Table | None, splits: list[str], parts: int
) -> list[pa.Table | None]:
    """Hop 1 of a verifying rule: the candidate pairs ``edges(part)`` names in one keyed
    partition, each with its ends in (split, row) order, cut by the partition of its first end
    (``parts`` tables)."""
    if part is None or part.num_rows == 0:
        return [None] * parts
    part = _sorted_part(part, splits)
    pairs = None if part is None else rule.edges(part)
    if pairs is None or pairs.num_rows == 0:
        return [None] * parts
    _check_edges(pairs, "edges()")
    na = _node_ids(pairs.column("split_a"), pairs.column("row_a"), splits)
    nb = _node_ids(pairs.column("split_b"), pairs.column("row_b"), splits)
    swap = na > nb
    if swap.any():  # pairs are unordered: the smaller end first
        mask = mask_array(swap)
        cols = {c: pairs.column(c) for c in EDGE_COLUMNS}
        for a, b in (("split_a", "split_b"), ("row_a", "row_b")):
            pairs = pairs.set_column(
                pairs.column_names.index(a), a, call("if_else", mask, cols[b], cols[a])
            )
            pairs = pairs.set_column(
                pairs.column_names.index(b), b, call("if_else", mask, cols[a], cols[b])
            )
    keep = na != nb
    if not keep.all():
        pairs = call("filter", pairs, mask_array(keep))
    if pairs.num_rows == 0:
        return [None] * parts
    key = node_keys(pairs.column("split_a"), pairs.column("row_a"))
    return _cut(pairs.append_column("key", numeric_array(key)), parts)


def _locate(rows: pa.Table | None, nodes: np.ndarray, splits: list[str], what: str) -> np.ndarray:
    """Positions in ``rows`` of the rows with these node ids (each must be there)."""
    if rows is None or rows.num_rows == 0:
        if len(nodes):
            raise ValueError(f"{what} names a row that emitted no payload (emit_rows)")
        return np.zeros(0, np.int64)
    have = _node_ids(rows.column("split"), rows.column("row"), splits)
    order = np.argsort(have, kind="stable")
    at = np.minimum(np.searchsorted(have[order], nodes), len(order) - 1)
    if not (have[order][at] == nodes).all():
        raise ValueError(f"{what} names a row that emitted no payload (emit_rows)")
    return order[at]


def join_first(
    pairs: pa.Table | None, rows: pa.Table | None, splits: list[str], parts: int
) -> list[pa.Table | None]:
    """Hop 2a, at the partition of the pairs' first ends (``rows``: that partition's payload):
    each distinct pair once, cut by the partition of its second end, and for each such
    partition the payload of the first ends it needs, once per row. ``2 * parts`` tables:
    the pairs, then the rows."""
    out: list[pa.Table | None] = [None] * (2 * parts)
    if pairs is None or pairs.num_rows == 0:
        return out
    if "key" in pairs.column_names:
        pairs = pairs.drop_columns(["key"])
    na = _node_ids(pairs.column("split_a"), pairs.column("row_a"), splits)
    nb = _node_ids(pairs.column("split_b"), pairs.column("row_b"), splits)
    order = np.lexsort((nb, na))
    first = np.ones(len(order), bool)
    first[1:] = (na[order][1:] != na[order][:-1]) | (nb[order][1:] != nb[order][:-1])
    keep = order[first]  # the distinct pairs, sorted (a, b)
    at = _locate(rows, na[keep], splits, "a candidate pair")
    # grouped by the partition of the second end (stable: (a, b) order within), one take of
    # the pairs and one of the rows, then zero-copy slices
    by, bounds = _by_part(
        node_keys(
            take(pairs.column("split_b"), keep),
            take(pairs.column("row_b"), keep),
        ),
        parts,
    )
    pairs = take(pairs, keep[by])
    need = [sorted_unique(at[by][bounds[q] : bounds[q + 1]]) for q in range(parts)]
    starts = np.concatenate([[0], np.cumsum([len(n) for n in need])])
    ends = take(rows, np.concatenate(need))
    for q in range(parts):
        if bounds[q + 1] > bounds[q]:
            out[q] = pairs.slice(bounds[q], bounds[q + 1] - bounds[q])
            out[parts + q] = ends.slice(starts[q], starts[q + 1] - starts[q])
    return out


def verify_part(
    rule: Any,
    pairs: list[pa.Table | None],
    ends: list[pa.Table | None],
    rows: pa.Table | None,
    splits: list[str],
) -> tuple[pa.Table | None, pa.Table | None]:
    """Hop 2b, at the partition of the pairs' second ends (``rows``: its payload; ``ends``:
    the first ends' payload sent here): the rule's accepted edges, and the payload of their
    ends (the clusters' members, ``member_columns``)."""
    tables = [t for t in pairs if t is not None and t.num_rows]
    if not tables:
        return None, None
    pairs_t = pa.concat_tables(tables)
    ends_t = pa.concat_tables([t for t in ends if t is not None and t.num_rows])
    na = _node_ids(pairs_t.column("split_a"), pairs_t.column("row_a"), splits)
    nb = _node_ids(pairs_t.column("split_b"), pairs_t.column("row_b"), splits)
    order = np.lexsort((nb, na))  # the same order whatever the partitions
    pairs_t, na, nb = take(pairs_t, order), na[order], nb[order]
    at_a = _locate(ends_t, na, splits, "a candidate pair")
    at_b = _locate(rows, nb, splits, "a candidate pair")
    need_b, inv_b = np.unique(at_b, return_inverse=True)
    cols = [c for c in rows.column_names if c != "key"]
    both = pa.concat_tables(
        [ends_t.select(cols), take(rows.select(cols), need_b)], promote_options="default"
    )
    both = _named(both, splits)
    pairs_t = pairs_t.append_column("at_a", indices(at_a))
    pairs_t = pairs_t.append_column("at_b", indices(ends_t.num_rows + inv_b))
    edges = rule.verify_pairs(pairs_t, both)
    if edges is None or edges.num_rows == 0:
        return None, None
    _check_edges(edges, "verify_pairs()")
    keep = list(EDGE_COLUMNS) + (["score"] if "score" in edges.column_names else [])
    edges = edges.select(keep)
    ends_of = sorted_unique(
        np.concatenate(
            [
                _node_ids(edges.column("split_a"), edges.column("row_a"), splits),
                _node_ids(edges.column("split_b"), edges.column("row_b"), splits),
            ]
        ),
        in_place=True,
    )
    payload = _carried(rule, cols, fetchable=False)
    members = take(both, _locate(both, ends_of, splits, "verify_pairs()"))
    return edges, members.select(["split", "row", *payload])


def _carried(rule: Any, cols: list[str], fetchable: bool) -> list[str]:
    """The payload columns a cluster member carries to the finish: the rule's
    ``member_columns`` (default all), and its ``fetch_columns`` unless the finish can
    ``fetch`` them from the payload on disk (``fetchable``)."""
    wanted = getattr(rule, "member_columns", None)
    if wanted is not None and not fetchable:
        wanted = (*wanted, *getattr(rule, "fetch_columns", ()))
    return [c for c in cols if c not in ("split", "row", "key") and (wanted is None or c in wanted)]


def verify_rows(
    rule: Any, pairs: pa.Table | None, payload: PayloadRows, splits: list[str]
) -> tuple[pa.Table | None, pa.Table | None]:
    """The local verification hop for the candidate pairs of one partition of first ends:
    each distinct pair once, both ends' payload taken from the by-row spill (only theirs),
    the rule's accepted edges and their ends' payload (:func:`_carried`)."""
    if pairs is None or pairs.num_rows == 0:
        return None, None
    if "key" in pairs.column_names:
        pairs = pairs.drop_columns(["key"])
    na = _node_ids(pairs.column("split_a"), pairs.column("row_a"), splits)
    nb = _node_ids(pairs.column("split_b"), pairs.column("row_b"), splits)
    order = np.lexsort((nb, na))  # the same order whatever the partitions
    first = np.ones(len(order), bool)
    first[1:] = (na[order][1:] != na[order][:-1]) | (nb[order][1:] != nb[order][:-1])
    keep = order[first]
    pairs, na, nb = take(pairs, keep), na[keep], nb[keep]
    nodes, inverse = np.unique(np.concatenate([na, nb]), return_inverse=True)
    both = _named(payload.take(nodes), splits)
    pairs = pairs.append_column("at_a", indices(inverse[: len(na)]))
    pairs = pairs.append_column("at_b", indices(inverse[len(na) :]))
    edges = rule.verify_pairs(pairs, both)
    if edges is None or edges.num_rows == 0:
        return None, None
    _check_edges(edges, "verify_pairs()")
    edges = edges.select(list(EDGE_COLUMNS) + (["score"] if "score" in edges.column_names else []))
    ends_of = sorted_unique(
        np.concatenate(
            [
                _node_ids(edges.column("split_a"), edges.column("row_a"), splits),
                _node_ids(edges.column("split_b"), edges.column("row_b"), splits),
            ]
        ),
        in_place=True,
    )
    at = np.minimum(np.searchsorted(nodes, ends_of), len(nodes) - 1)
    if not (nodes[at] == ends_of).all():
        raise ValueError("verify_pairs() named a row that is not an end of its pairs")
    cols = _carried(rule, both.column_names, fetchable=True)
    return edges, take(both.select(["split", "row", *cols]), at)


def run_local(
    rule: Any, store: Any, index: Any, splits: list[str], scratch: Any = None
) -> Clusters:
    """A keyed rule's stage in this process, one partition at a time: its edges (verified in
    the second hop if the rule verifies) and their components. ``store``: the spilled rows;
    ``scratch``: where the second hop's pieces go (a DiskSpill of their own, or in memory)."""
    parts = partitions_of(rule)
    if not verifies(rule):
        edges = [edges_of(rule, store.table(index, p), splits) for p in range(parts)]
        return clusters_of(edges, splits)
    scratch = MemorySpill() if scratch is None else scratch
    payload = rows_index(index)
    threads = min(THREADS, os.cpu_count() or 1)
    by_row = None  # the payload by row, once the first hop is done (see DiskSpill.close)
    held, size = MemorySpill(), 0  # the first PAIRS_HELD bytes of candidate pairs
    counts = np.zeros(parts, np.int64)  # candidate pairs per partition of first ends
    try:
        hop1 = _windowed(
            lambda p: candidates_of(rule, store.table(index, p), splits, parts), parts, threads
        )
        for p, pieces in enumerate(hop1):
            _drop(store, index, p)  # read: its memory is free for the hop's pieces
            for q, piece in enumerate(pieces):
                if piece is not None:
                    counts[q] += piece.num_rows
                    size += piece.nbytes  # once beyond, all to disk: each partition's pieces
                    # read back in the order they came (held ones first)
                    (held if size <= PAIRS_HELD else scratch).put("pairs", q, piece)
        scratch.close()
        if callable(getattr(store, "payload", None)):
            by_row = store.payload(index, splits)

        def pairs(p: int) -> pa.Table | None:
            found = [
                t for t in (held.table("pairs", p), scratch.table("pairs", p)) if t is not None
            ]
            return pa.concat_tables(found) if len(found) > 1 else found[0] if found else None

        if callable(getattr(store, "payload", None)):  # the payload on disk, by row
            if by_row is None:
                found = [pairs(p) for p in range(parts)]
                if any(t is not None and t.num_rows for t in found):
                    raise ValueError("a candidate pair names a row that emitted no payload")
                return Clusters()
            # a group per thread at least (the merges and takes release the GIL)
            groups = _groups(counts, VERIFY_PAIRS, threads)

            def verify(g: list[int]) -> tuple[pa.Table | None, pa.Table | None]:
                found = [t for t in map(pairs, g) if t is not None]
                together = pa.concat_tables(found) if len(found) > 1 else next(iter(found), None)
                return verify_rows(rule, together, by_row, splits)

            hop2 = _windowed(lambda i: verify(groups[i]), len(groups), threads)
            edges, members = [], []
            for i, (found, rows) in enumerate(hop2):
                for p in groups[i]:
                    held.drop("pairs", p)
                    _drop(scratch, "pairs", p)
                edges.append(found)
                members.append(rows)
            clusters = clusters_of(edges, splits, members)
            clusters.payload = by_row
            return clusters
        hop2a = _windowed(
            lambda p: join_first(pairs(p), store.table(payload, p), splits, parts),
            parts,
            threads,
        )
        for p, pieces in enumerate(hop2a):
            held.drop("pairs", p)
            _drop(scratch, "pairs", p)
            for q in range(parts):
                if pieces[q] is not None:
                    scratch.put("first", q, pieces[q])
                    scratch.put("ends", q, pieces[parts + q])
        scratch.close()
        hop2b = _windowed(
            lambda q: verify_part(
                rule,
                [scratch.table("first", q)],
                [scratch.table("ends", q)],
                store.table(payload, q),
                splits,
            ),
            parts,
            threads,
        )
        edges, members = [], []
        for q, (found, rows) in enumerate(hop2b):
            _drop(store, payload, q)
            edges.append(found)
            members.append(rows)
        return clusters_of(edges, splits, members)
    finally:
        scratch.remove()


#: bytes of the first hop's candidate pairs :func:`run_local` keeps in memory before it spills
#: them to its scratch (~60 B a pair: 32 MB is ~500k pairs). Unlike the keyed rows, they are
#: few (bench_dedup's 40k documents: ~2,000 pairs, 256 pieces of a few KB): written, each
#: partition's pieces took a file and a folder each, 0.06-0.1 s of the 0.2 s finish
PAIRS_HELD = 32 << 20


#: candidate pairs the local verification hop takes at once: consecutive partitions of first
#: ends are verified together up to this many (a partition with more, alone). Each batch of
#: the payload a lookup reads costs ~0.2 ms whatever it takes from it, so 16 partitions of a
#: few hundred pairs read every batch 16 times (bench_dedup's 40k documents: ~2,000 pairs,
#: 170 batch reads, 0.03-0.05 s; their rows' sets sorted once per partition they are in).
#: Memory: both ends' payload, ~2 KB a row for DUP002: 20k pairs are <= 80 MB
VERIFY_PAIRS = 20_000


def _groups(counts: np.ndarray, most: int, threads: int = 1) -> list[list[int]]:
    """Consecutive partitions in groups of about equal ``counts``, each summing to at most
    ``most`` (or one partition over it alone), as many as a multiple of ``threads`` (their
    work ends together: packed greedily up to ``most``, 40k documents made 3 groups for 2
    threads, and the third ran alone); partitions without any left out."""
    nonzero = np.flatnonzero(counts)
    if not len(nonzero):
        return []
    sizes = counts[nonzero].astype(np.int64)
    want = max(-(-int(sizes.sum()) // max(most, 1)), 1)
    want = min(-(-want // threads) * threads, len(nonzero))
    while True:
        # each partition to the group its middle falls in, by the counts before it
        middle = np.cumsum(sizes) - sizes / 2
        group = np.minimum((middle * want // int(sizes.sum())).astype(np.int64), want - 1)
        groups = [nonzero[group == g].tolist() for g in range(want)]
        groups = [g for g in groups if g]
        heavy = [sum(int(counts[p]) for p in g) for g in groups if len(g) > 1]
        if want >= len(nonzero) or not heavy or max(heavy) <= most:
            return groups
        want += threads


def _drop(store: Any, index: Any, p: int) -> None:
    """``store`` forgets partition ``p`` of ``index`` (one without ``drop`` keeps it until it is
    removed)."""
    if callable(getattr(store, "drop", None)):
        store.drop(index, p)


#: partitions of the verification hop worked on at once in one process (numpy's sorts, Arrow's
#: takes and the compiled merges release the GIL; memory is that many partitions)
THREADS = 2


def _windowed(fn: Any, n: int, threads: int) -> Any:
    """``fn(0) .. fn(n - 1)``'s results in order, ``threads`` of them running at a time and one
    more waiting for a free thread (never all at once: each result holds a partition's worth of
    rows). The next starts as soon as a thread is free, not when a whole window of ``threads``
    is done: windows waited for their slowest call, the other thread idle (a third of the
    finish's two cores at 40k documents)."""
    if threads <= 1:
        yield from map(fn, range(n))
        return
    import collections
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(threads, thread_name_prefix="dataaudit-keyed") as pool:
        running: collections.deque[Any] = collections.deque()
        for i in range(n):
            if len(running) > threads:
                yield running.popleft().result()
            running.append(pool.submit(fn, i))
        while running:
            yield running.popleft().result()


def _ranks(split: Any, splits: list[str]) -> np.ndarray:
    """Each row's split as its rank in ``splits``: a spilled rank column as it is, a column of
    names looked up (a rule's edges, a conformance check's spill)."""
    if pa.types.is_integer(split.type):
        r = np.asarray(fixed(split), np.int64)
        if len(r) and (r.min() < 0 or r.max() >= len(splits)):
            raise ValueError("a keyed row names a split the audit does not have")
        return r
    rank = is_in_positions(split, strings(splits, pa.string()))
    if rank.null_count:
        raise ValueError("a keyed row names a split the audit does not have")
    return np.asarray(fixed(rank), np.int64)


def _named(table: pa.Table, splits: list[str]) -> pa.Table:
    """``table`` with its ``split`` column as names, as rules see it (spilled as ranks)."""
    split = table.column("split")
    if not pa.types.is_integer(split.type):
        return table
    names = take(strings(splits, pa.string()), _ranks(split, splits))
    return table.set_column(table.column_names.index("split"), "split", names)


def _node_ids(split: Any, row: Any, splits: list[str]) -> np.ndarray:
    """(split rank << 40) | row: one sortable int64 per (split, row)."""
    return (_ranks(split, splits) << 40) | np.asarray(fixed(row), np.int64)


def _take_chunked(col: pa.ChunkedArray, at: np.ndarray) -> pa.Array | pa.ChunkedArray:
    """``col.take(at)`` chunk by chunk: Arrow's take on a chunked column of strings joins its
    chunks first (a copy of the whole column, here every edge's payload twice)."""
    if col.num_chunks <= 1:
        return take(col, at)
    lengths = np.array([len(c) for c in col.chunks], np.int64)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    which = np.searchsorted(bounds, at, side="right") - 1
    by = np.argsort(which, kind="stable")
    cuts = np.searchsorted(which[by], np.arange(len(lengths) + 1))
    pieces = [
        take(col.chunk(c), at[by[cuts[c] : cuts[c + 1]]] - bounds[c])
        for c in range(len(lengths))
        if cuts[c + 1] > cuts[c]
    ]
    if not pieces:
        return take(col, at)
    inverse = np.empty(len(at), np.int64)
    inverse[by] = np.arange(len(at))
    return take(pa.concat_arrays(pieces), inverse)


class Cluster(list):
    """A connected component: its members as a sorted list of (split, row); ``rows`` are their
    emitted rows (split, row, key and the payload), one per member in the same order."""

    def __init__(self, members: list[tuple[str, int]], table: pa.Table | None = None, at: int = 0):
        super().__init__(members)
        self.table, self.at = table, at  # the rows of all clusters; this one's start

    @property
    def rows(self) -> pa.Table | None:
        return None if self.table is None else self.table.slice(self.at, len(self))

    def __reduce__(self):  # a list subclass pickles its attributes only this way
        return (Cluster, (list(self), self.table, self.at))


class Clusters(list):
    """The clusters, and ``rows``: every member's emitted row, cluster after cluster (so a rule
    reads a payload column of all members at once instead of cluster by cluster). ``edges``:
    with scored edges (a verifying rule's), every distinct edge's ``split`` and ``score``,
    sorted by (first end, second end)."""

    def __init__(
        self,
        clusters: list[Cluster] = (),
        rows: pa.Table | None = None,
        edges: pa.Table | None = None,
    ):
        super().__init__(clusters)
        self.rows = rows
        self.edges = edges
        self.payload: PayloadRows | None = None  # the payload on disk, by row (local engine)

    def fetch(self, columns: list[str], at: Any) -> pa.Table:
        """Payload ``columns`` of the members at positions ``at`` of :attr:`rows` (a rule's
        ``fetch_columns``, read for a few members only: the findings' examples): from the
        payload on disk where the finish runs beside it, else from the members' rows."""
        at = np.asarray(at, np.int64)
        if self.rows is not None and all(c in self.rows.column_names for c in columns):
            return take(self.rows.select(columns), at)
        if self.payload is None or self.rows is None:
            raise KeyError(f"the clusters carry no payload columns {columns}")
        taken = take(self.rows.select(["split", "row"]), at)
        nodes = _node_ids(taken.column("split"), taken.column("row"), self.payload.splits)
        return self.payload.take(nodes, list(columns)).select(list(columns))

    def __reduce__(self):
        return (Clusters, (list(self), self.rows, self.edges))


def clusters_of(
    edges: list[pa.Table | None],
    splits: list[str],
    members: list[pa.Table | None] | None = None,
) -> Clusters:
    """Connected components of the edges: each a sorted list of (split, row) with its members'
    emitted rows, the list ordered by first member; the same whatever order or partition the
    edges came from. ``members``: the members' payload rows (a verifying rule's; else each
    edge carries its ends' as ``a.<column>``, ``b.<column>``). Edges with a ``score`` give
    each member its best edge's score (column ``score``)."""
    from ..sketches.lsh import components

    tables = [t for t in edges if t is not None and t.num_rows]
    if not tables:
        return Clusters()
    table = pa.concat_tables(tables, promote_options="default")
    a = _node_ids(table.column("split_a"), table.column("row_a"), splits)
    b = _node_ids(table.column("split_b"), table.column("row_b"), splits)
    scored = None
    if "score" in table.column_names:  # a distinct edge once, in (a, b) order
        order = np.lexsort((b, a))
        dup = np.zeros(len(order), bool)
        dup[1:] = (a[order][1:] == a[order][:-1]) & (b[order][1:] == b[order][:-1])
        order = order[~dup]
        a, b, table = a[order], b[order], take(table, order)
        scored = pa.table(
            {"split": table.column("split_a"), "score": cast(table.column("score"), pa.float64())}
        )
    ends = np.concatenate([a, b])
    nodes, first, inverse = np.unique(ends, return_index=True, return_inverse=True)
    n = len(nodes)
    ia, ib = inverse[: len(a)], inverse[len(a) :]
    # each node's component as its smallest node (the compiled union-find; a node only on a
    # self-edge is its own)
    labels = components(n, ia, ib)
    labels = np.where(labels < 0, np.arange(n), labels)
    # members grouped by component, the components by first member: nodes are sorted, so a
    # stable sort by the component's smallest node keeps each component's members sorted
    order = np.argsort(labels, kind="stable")
    sizes = np.bincount(labels, minlength=n)[labels[order]]
    keep = sizes > 1  # singletons are left out
    order, sizes = order[keep], sizes[keep]
    cut = labels[order][1:] != labels[order][:-1]
    starts = np.flatnonzero(np.concatenate([[True], cut])) if len(order) else order
    split_col = np.asarray(splits, dtype=object)[(nodes[order] >> 40)]
    row_col = nodes[order] & ((1 << 40) - 1)
    # each member's emitted row: the payload of its first appearance as an end of an edge, or
    # its row in ``members``; taken once, in member order
    payload: dict[str, Any] = {}
    if members is None:
        for name in [c[2:] for c in table.column_names if c.startswith("a.")]:
            col = pa.chunked_array(
                table.column(f"a.{name}").chunks + table.column(f"b.{name}").chunks
            )
            payload[name] = _take_chunked(col, first[order])
    else:
        given = [t for t in members if t is not None and t.num_rows]
        if given:
            mt = pa.concat_tables(given, promote_options="default")
            at = _locate(mt, nodes, splits, "an edge")[order]
            for name in mt.column_names:
                if name not in ("split", "row", "key"):
                    payload[name] = _take_chunked(mt.column(name), at)
    if scored is not None:
        score = fixed(scored.column("score"))
        best = np.zeros(n)
        np.maximum.at(best, ia, score)
        np.maximum.at(best, ib, score)
        payload["score"] = numeric_array(best[order])
    del table
    rows = pa.table(
        {
            "split": take(strings(splits, pa.string()), nodes[order] >> 40),
            "row": numeric_array(row_col),
            **payload,
        }
    )
    names, rows_of = split_col.tolist(), row_col.tolist()
    out = Clusters(rows=rows, edges=scored)
    for lo in starts.tolist():
        k = int(sizes[lo])
        out.append(Cluster(list(zip(names[lo : lo + k], rows_of[lo : lo + k])), rows, lo))
    return out

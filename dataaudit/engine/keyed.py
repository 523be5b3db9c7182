"""The keyed stage: for rules whose answer needs all rows at once, rows emit keys, rows that share
a key meet in one partition, each partition yields verified candidate edges, and connected
components of the edges are the clusters the rule finishes with. No process holds every row.

A rule opts in with ``keyed = True`` and three methods (DUP001 is the first built-in one):

- ``emit(state, batch) -> pa.Table | None``: per row, zero or more keys (column ``key``, uint64,
  already a hash) with the row id (column ``row``, int64) and a small payload (any other
  columns). Runs on the workers, right after ``update`` (the state is there for the settings
  ``start`` put in it, e.g. the report's example length; emit must not change it).
- ``edges(part) -> pa.Table | None``: all emitted rows of one partition (every key with
  ``key % partitions == p``), the engine's ``split`` column added, sorted by (key, split, row) so
  the order never depends on how the input was cut. Returns candidate pairs the rule verified,
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
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
]

#: partitions of the keyed shuffle (a rule may set ``partitions``)
PARTITIONS = 16
EDGE_COLUMNS = ("split_a", "row_a", "split_b", "row_b")


def is_keyed(rule: Any) -> bool:
    return getattr(rule, "keyed", False) is True


def partitions_of(rule: Any) -> int:
    return int(getattr(rule, "partitions", PARTITIONS))


def _cut(table: pa.Table, parts: int) -> list[pa.Table | None]:
    """The rows of ``table`` per partition (``key % parts``)."""
    keys = table.column("key").to_numpy()
    which = (keys % np.uint64(parts)).astype(np.int64)
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(parts + 1))
    out: list[pa.Table | None] = []
    for p in range(parts):
        lo, hi = bounds[p], bounds[p + 1]
        out.append(table.take(pa.array(order[lo:hi])) if hi > lo else None)
    return out


def emit(run: RuleRun, batch: Any) -> pa.Table | None:
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
            table.column_names.index("key"), "key", table.column("key").cast(pa.uint64())
        ).set_column(table.column_names.index("row"), "row", table.column("row").cast(pa.int64()))
        return table.append_column("split", pa.array([batch.split] * table.num_rows, pa.string()))
    except RULE_FAILURES as exc:
        run.error, run.state = error_message(exc), None
        return None


class MemorySpill:
    """One fold task's keyed rows, cut by partition, kept until the task returns them."""

    def __init__(self) -> None:
        self.parts: dict[tuple[int, int], list[pa.Table]] = {}

    def add(self, index: int, parts: int, table: pa.Table) -> None:
        for p, piece in enumerate(_cut(table, parts)):
            if piece is not None:
                self.parts.setdefault((index, p), []).append(piece)

    def table(self, index: int, p: int) -> pa.Table | None:
        pieces = self.parts.get((index, p))
        return pa.concat_tables(pieces) if pieces else None


class DiskSpill:
    """Keyed rows on disk: ``<dir>/<rule index>/<partition>/<writer>.arrow``, one Arrow stream
    per writer (a process, or a chunk in a worker), so writers never share a file."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.owner = root is None  # the folder is this object's: removed with it
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="dataaudit-"))
        self.name = uuid.uuid4().hex
        self.writers: dict[tuple[int, int], Any] = {}
        if self.owner:  # an audit that raised mid-scan leaves no partitions behind
            weakref.finalize(self, shutil.rmtree, str(self.root), True)

    def add(self, index: int, parts: int, table: pa.Table) -> None:
        for p, piece in enumerate(_cut(table, parts)):
            if piece is None:
                continue
            writer = self.writers.get((index, p))
            if writer is None:
                folder = self.root / str(index) / str(p)
                folder.mkdir(parents=True, exist_ok=True)
                sink = pa.OSFile(str(folder / f"{self.name}.arrow"), "wb")
                writer = self.writers[(index, p)] = (sink, pa.ipc.new_stream(sink, piece.schema))
            writer[1].write_table(piece)

    def close(self) -> None:
        for sink, writer in self.writers.values():
            writer.close()
            sink.close()
        self.writers = {}

    def table(self, index: int, p: int) -> pa.Table | None:
        folder = self.root / str(index) / str(p)
        if not folder.is_dir():
            return None
        pieces = []
        for path in sorted(folder.glob("*.arrow")):
            with pa.OSFile(str(path), "rb") as source:
                pieces.append(pa.ipc.open_stream(source).read_all())
        return pa.concat_tables(pieces) if pieces else None

    def remove(self) -> None:
        self.close()
        shutil.rmtree(self.root, ignore_errors=True)


def edges_of(rule: Any, part: pa.Table | None, splits: list[str]) -> pa.Table | None:
    """The rule's verified edges in one partition, its rows in an order that does not depend on
    the partitioning of the input: (key, split in the audit's order, row)."""
    if part is None or part.num_rows == 0:
        return None
    rank = pc.index_in(part.column("split"), value_set=pa.array(splits, pa.string()))
    part = part.append_column("_split_rank", rank)
    part = part.sort_by([("key", "ascending"), ("_split_rank", "ascending"), ("row", "ascending")])
    part = part.drop_columns(["_split_rank"])
    edges = rule.edges(part)
    if edges is None or edges.num_rows == 0:
        return None
    missing = [c for c in EDGE_COLUMNS if c not in edges.column_names]
    if missing:
        raise TypeError(f"edges() must return a table with columns {', '.join(EDGE_COLUMNS)}")
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
        taken = part.select(payload).take(pa.array(first[at]))
        for name in payload:
            edges = edges.append_column(f"{end}.{name}", taken.column(name))
    return edges


def _node_ids(split: Any, row: Any, splits: list[str]) -> np.ndarray:
    """(split rank << 40) | row: one sortable int64 per (split, row)."""
    rank = pc.index_in(split, value_set=pa.array(splits, pa.string()))
    if rank.null_count:
        raise ValueError("a keyed row names a split the audit does not have")
    r = np.asarray(rank.to_numpy(zero_copy_only=False), np.int64)
    return (r << 40) | np.asarray(row.to_numpy(), np.int64)


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
    reads a payload column of all members at once instead of cluster by cluster)."""

    def __init__(self, clusters: list[Cluster] = (), rows: pa.Table | None = None):
        super().__init__(clusters)
        self.rows = rows

    def __reduce__(self):
        return (Clusters, (list(self), self.rows))


def clusters_of(edges: list[pa.Table | None], splits: list[str]) -> Clusters:
    """Connected components of the edges: each a sorted list of (split, row) with its members'
    emitted rows, the list ordered by first member; the same whatever order or partition the
    edges came from."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    tables = [t for t in edges if t is not None and t.num_rows]
    if not tables:
        return Clusters()
    table = pa.concat_tables(tables, promote_options="default")
    a = _node_ids(table.column("split_a"), table.column("row_a"), splits)
    b = _node_ids(table.column("split_b"), table.column("row_b"), splits)
    ends = np.concatenate([a, b])
    nodes, first, inverse = np.unique(ends, return_index=True, return_inverse=True)
    n = len(nodes)
    ia, ib = inverse[: len(a)], inverse[len(a) :]
    graph = coo_matrix((np.ones(len(ia), dtype=np.int8), (ia, ib)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    # members grouped by component, the components by first member: nodes are sorted, so a
    # stable sort by the component's smallest node keeps each component's members sorted
    smallest = np.full(labels.max() + 1 if n else 0, n, np.int64)
    np.minimum.at(smallest, labels, np.arange(n))
    order = np.argsort(smallest[labels], kind="stable")
    sizes = np.bincount(labels)[labels[order]]
    # each member's emitted row: the payload of its first appearance as an end of an edge
    payload = [c[2:] for c in table.column_names if c.startswith("a.")]
    stacked = {
        name: pa.chunked_array(table.column(f"a.{name}").chunks + table.column(f"b.{name}").chunks)
        for name in payload
    }
    keep = sizes > 1  # singletons are left out
    order, sizes = order[keep], sizes[keep]
    cut = labels[order][1:] != labels[order][:-1]
    starts = np.flatnonzero(np.concatenate([[True], cut])) if len(order) else order
    split_col = np.asarray(splits, dtype=object)[(nodes[order] >> 40)]
    row_col = nodes[order] & ((1 << 40) - 1)
    rows = pa.table(
        {
            "split": pa.array(split_col, pa.string()),
            "row": row_col,
            **{name: col.take(pa.array(first[order])) for name, col in stacked.items()},
        }
    )
    names, members = split_col.tolist(), row_col.tolist()
    out = Clusters(rows=rows)
    for lo in starts.tolist():
        k = int(sizes[lo])
        out.append(Cluster(list(zip(names[lo : lo + k], members[lo : lo + k])), rows, lo))
    return out

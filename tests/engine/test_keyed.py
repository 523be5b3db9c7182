"""The keyed stage (engine/keyed.py): rows emit keys, partitions meet on disk (local) or in the
object store (Ray), edges and their connected components reach the rule's finish_keyed. A test
rule (exact duplicates by key) checks it against a direct grouping of the fixture's texts, and
the same report from one process and worker processes (Ray: tests/engine/test_ray.py)."""

from __future__ import annotations

import json
import tempfile

import numpy as np
import pytest

from dataaudit import audit
from dataaudit.engine import keyed as keyed_engine
from dataaudit.engine import parallel as parallel_engine
from tests.engine._keyed_rules import KeyedExact, normalized
from tests.engine.test_workers_invariance import _rows, _timeless


def _expected(fixtures_dir) -> list[list[tuple[str, int]]]:
    groups: dict[str, list[tuple[str, int]]] = {}
    for split in ("train", "validation", "test"):
        for i, row in enumerate(_rows(fixtures_dir / "classification" / f"{split}.jsonl")):
            text = row.get("text")
            if isinstance(text, str) and text.strip():
                groups.setdefault(normalized(text), []).append((split, i))
    return [g for g in groups.values() if len(g) > 1]


def _clusters(report) -> list[list[tuple[str, int]]]:
    flags = report.flags().filter(report.flags()["code"] == "KEY001")
    out: dict[str, list[tuple[str, int]]] = {}
    for row in flags.iter_rows(named=True):
        out.setdefault(row["cluster"], []).append((row["split"], row["row"]))
    return list(out.values())


def _run(data, **options):
    report = audit(data, select=["KEY001"], extra_rules=[KeyedExact], batch_size=64, **options)
    body = _timeless(report.to_dict())
    for key in ("workers", "batch_size"):
        body["config"].pop(key)
    body.pop("engine")
    return report, json.dumps(body, indent=1)


def test_keyed_clusters_are_the_exact_groups(fixtures_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the partitions spill
    report, _ = _run(fixtures_dir / "classification")
    expected = _expected(fixtures_dir)
    assert len(expected) >= 7  # the fixture's planted exact duplicates, across splits too
    assert sorted(map(sorted, _clusters(report))) == sorted(map(sorted, expected))
    assert report.result("KEY001")["metrics"][1]["value"] == len(expected)
    assert list(tmp_path.iterdir()) == []  # the on-disk partitions are gone


def test_keyed_clusters_ignore_partitioning(fixtures_dir):
    # rows met in one partition per key; the order of edges never matters
    assert keyed_engine.clusters_of([None], ["train"]) == []
    four, _ = _run(fixtures_dir / "classification")
    one, _ = _run(fixtures_dir / "classification", rules={"KEY001": {"partitions": 1}})
    for key in ("findings", "metrics", "status"):
        assert one.result("KEY001")[key] == four.result("KEY001")[key]
    assert one.flags().equals(four.flags())


@pytest.mark.slow
def test_keyed_stage_in_worker_processes(fixtures_dir, monkeypatch):
    monkeypatch.setattr(parallel_engine, "MIN_CHUNK_ROWS", 100)
    monkeypatch.setattr(parallel_engine, "MAX_CHUNK_ROWS", 100)
    _, serial = _run(fixtures_dir / "classification")
    _, workers = _run(fixtures_dir / "classification", workers=2)
    assert workers == serial


def test_clusters_carry_their_members_emitted_rows():
    # a member's payload reaches finish_keyed with it (KEY001 emits each text's length), in
    # member order, whatever partition or edge order it came from
    import pickle

    import pyarrow as pa
    import pyarrow.compute  # noqa: F401

    part = pa.table(
        {
            "key": pa.array([9, 5, 5, 9, 6, 7], pa.uint64()),
            "row": pa.array([4, 8, 1, 0, 3, 2], pa.int64()),
            "chars": pa.array([40, 80, 10, 0, 30, 20], pa.int64()),
            "split": ["test", "train", "train", "test", "test", "train"],
        }
    )
    splits = ["train", "test"]
    rule = KeyedExact()
    one = keyed_engine.edges_of(rule, part, splits)
    odd = pa.compute.equal(pa.compute.bit_wise_and(part["key"], 1), 1)
    halves = [
        keyed_engine.edges_of(rule, part.filter(m), splits) for m in (odd, pa.compute.invert(odd))
    ]
    for edges in ([one], halves, halves[::-1]):
        clusters = keyed_engine.clusters_of(edges, splits)
        assert clusters == [[("train", 1), ("train", 8)], [("test", 0), ("test", 4)]]
        assert [c.rows.column("chars").to_pylist() for c in clusters] == [[10, 80], [0, 40]]
        assert [c.rows.column("key").to_pylist() for c in clusters] == [[5, 5], [9, 9]]
    again = pickle.loads(pickle.dumps(clusters))
    assert again == clusters and again[1].rows.equals(clusters[1].rows)


def test_verify_columns_stay_in_the_partition():
    # a rule's verify_columns reach edges() but not the clusters (LBL001's signatures)
    import pyarrow as pa

    class Verifying(KeyedExact):
        verify_columns = ("sig",)

        def edges(self, part):
            assert "sig" in part.column_names
            return super().edges(part)

    part = pa.table(
        {
            "key": pa.array([5, 5], pa.uint64()),
            "row": pa.array([1, 8], pa.int64()),
            "chars": pa.array([10, 80], pa.int64()),
            "sig": pa.array([b"x" * 512, b"y" * 512]),
            "split": ["train", "train"],
        }
    )
    for rule, carried in ((KeyedExact(), True), (Verifying(), False)):
        clusters = keyed_engine.clusters_of(
            [keyed_engine.edges_of(rule, part, ["train"])], ["train"]
        )
        assert clusters == [[("train", 1), ("train", 8)]]
        assert ("sig" in clusters.rows.column_names) is carried
        assert clusters.rows.column("chars").to_pylist() == [10, 80]


def test_disk_spill_keeps_pieces_in_memory_up_to_its_budget():
    # pieces under the budget never touch the disk; beyond it they are written, and a
    # partition reads back both (a worker's spill, budget 0, writes everything for its parent)
    import pyarrow as pa

    piece = pa.table({"key": pa.array([1, 2], pa.uint64()), "row": pa.array([0, 1], pa.int64())})
    for budget, on_disk in ((0, 3), (piece.nbytes, 2), (10 * piece.nbytes, 0)):
        store = keyed_engine.DiskSpill(budget=budget)
        try:
            for _ in range(3):
                store.put(0, 1, piece)
            store.close()
            read = store.table(0, 1)
            assert read.num_rows == 6 and read.column("row").to_pylist() == [0, 1] * 3
            files = list((store.root / "0").glob("1.*.arrow"))
            written = sum(1 for f in files for _ in pa.ipc.open_stream(f.read_bytes()))
            assert written == on_disk and store.held <= budget
            assert store.table(0, 2) is None
        finally:
            store.remove()


def test_disk_spill_pieces_written_through_a_buffer_read_back_whole(monkeypatch):
    """A partition's stream is buffered (a batch's piece is a few KB in ~6 writes): what a
    partition holds reads back whole and in order, whether its stream is closed or not."""
    import pyarrow as pa

    monkeypatch.setattr(keyed_engine, "PIECE_BUFFER", 4096)
    store = keyed_engine.DiskSpill(budget=0)
    try:
        for k in range(200):  # ~1 MB over the buffer's size, a piece at a time
            piece = pa.table({"key": pa.array(range(k * 50, k * 50 + 50), pa.uint64())})
            store.put(0, k % 3, piece)
        open_read = store.table(0, 1)  # its stream is still open
        assert open_read.column("key").to_pylist() == [
            v for k in range(1, 200, 3) for v in range(k * 50, k * 50 + 50)
        ]
        store.close()
        for p in range(3):
            keys = store.table(0, p).column("key").to_pylist()
            assert keys == [v for k in range(p, 200, 3) for v in range(k * 50, k * 50 + 50)]
    finally:
        store.remove()


def test_keyed_rows_spill_their_split_as_its_rank():
    # the partitions hold an int16 split rank (cheap takes and sorts); rules see its name
    import pyarrow as pa

    from dataaudit.engine.state import RuleRun

    seen = []

    class Names(KeyedExact):
        def edges(self, part):
            seen.append(part.column("split").to_pylist())
            return super().edges(part)

    from dataaudit.context import AuditContext
    from dataaudit.rule import Roles

    rule, ctx = Names(), AuditContext(splits={}, roles=Roles(text="text"))
    rb = pa.record_batch({"text": ["a", "a", "b"]})
    store = keyed_engine.MemorySpill()
    run = RuleRun(rule, rule.severity, rule.start(ctx))
    batch = ctx.batch("test", rb, 0)
    keyed_engine.spill(store, 0, run, batch, ["train", "test"])
    tables = [store.table(0, p) for p in range(keyed_engine.partitions_of(rule))]
    assert {t.column("split").type for t in tables if t is not None} == {pa.int16()}
    edges = [keyed_engine.edges_of(rule, t, ["train", "test"]) for t in tables]
    assert keyed_engine.clusters_of(edges, ["train", "test"]) == [[("test", 0), ("test", 1)]]
    assert seen and all(set(names) == {"test"} for names in seen)


def _shared_reference(keys: np.ndarray) -> np.ndarray:
    values, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return np.flatnonzero(counts[inverse] > 1)


@pytest.mark.parametrize("hashed", [1 << 30, 3])  # 3: a partition too large to hash, sorted
def test_rows_sharing_a_key_are_found_exactly(monkeypatch, hashed):
    monkeypatch.setattr(keyed_engine, "_HASHED_KEYS", hashed)
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 2**64 - 1, 5_000, dtype=np.uint64)
    keys[rng.choice(5_000, 300)] = keys[rng.choice(5_000, 300)]  # shared keys
    # keys equal in their top bits (where the table is probed from) but not whole
    keys[10] = keys[20] ^ np.uint64(1)
    keys[30] = keys[40] ^ np.uint64(0xFFFFFF)
    keys[50:53] = keys[60]  # three rows on one key
    # a partition's keys: all alike in their low bits (key % 16); and keys alike in their top
    # 40 bits, which all probe one run of slots
    part = keys - keys % np.uint64(16) + np.uint64(5)
    top = (keys[0] & ~np.uint64(0xFFFFFF)) | rng.integers(0, 300, 5_000).astype(np.uint64)
    for case in (keys, keys[:0], keys[:1], np.full(9, 5, np.uint64), part, top):
        got = keyed_engine._shared_keys(case)
        assert got.dtype == np.int64 and (np.diff(got) > 0).all()
        assert got.tolist() == _shared_reference(case).tolist()
    got = keyed_engine._shared_keys(keys)
    assert {50, 51, 52, 60} <= set(got.tolist())
    assert not {10, 20, 30, 40} & set(got.tolist())

"""The keyed stage's verification hop (engine/keyed.py): candidate pairs meet their rows'
payload in the partitions of their ends, the rule's verify_pairs keeps the edges, and the
clusters, their members' payload and best scores do not depend on partitions, workers or the
engine; a rule that raises in the hop is that rule's error."""

from __future__ import annotations

import json
import random
from itertools import combinations

import numpy as np
import pyarrow as pa
import pytest

from dataaudit import audit
from dataaudit.engine import keyed as keyed_engine
from dataaudit.engine import parallel as parallel_engine
from tests.engine._keyed_verify_rules import KeyedWords, jaccard

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
]


def _records(n: int = 240, seed: int = 5) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6)))
        if rng.random() < 0.05:
            text = rng.choice(["", "   ", None])
        out.append({"text": text, "split": "train" if i % 3 else "test"})
    return out


def _expected(records: list[dict]) -> list[list[tuple[str, int]]]:
    """Components of pairs with the same first word and word Jaccard >= 0.5, per split."""
    rows: dict[str, list[tuple[int, str]]] = {}
    for r in records:
        rows.setdefault(r["split"], []).append(r["text"])
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for split, texts in rows.items():
        live = [(i, t) for i, t in enumerate(texts) if isinstance(t, str) and t.split()]
        for (i, a), (j, b) in combinations(live, 2):
            if a.casefold().split()[0] == b.casefold().split()[0] and jaccard(a, b) >= 0.5:
                parent[find((split, i))] = find((split, j))
    groups: dict = {}
    for node in parent:
        groups.setdefault(find(node), []).append(node)
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)


def _run(records, **options):
    report = audit(records, select=["KEY002"], extra_rules=[KeyedWords], split="split", **options)
    body = report.to_dict()
    body = {  # what the rule found: not the config (options), times or engine
        "results": [
            {k: r.get(k) for k in ("code", "status", "metrics", "findings")}
            for r in body["results"]
        ],
        "flags": body["flags"],
    }
    return report, json.dumps(body, indent=1, sort_keys=True)


def _clusters(report) -> list[list[tuple[str, int]]]:
    flags = report.flags()
    groups: dict = {}
    for split, row, group in zip(flags["split"], flags["row"], flags["cluster"]):
        groups.setdefault(group, []).append((split, row))
    return sorted(sorted(g) for g in groups.values())


def test_verified_clusters_are_the_direct_computation(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the partitions spill
    records = _records()
    report, _ = _run(records, batch_size=32)
    expected = _expected(records)
    assert len(expected) >= 5
    assert _clusters(report) == expected
    assert report.status("KEY002") == "warn"
    assert list(tmp_path.iterdir()) == []  # the partitions and the hop's pieces are gone


@pytest.mark.parametrize("partitions", [1, 3, 16])
def test_verified_clusters_ignore_partitions_and_batches(partitions):
    records = _records()
    _, four = _run(records, batch_size=32)
    _, other = _run(records, batch_size=7, rules={"KEY002": {"partitions": partitions}})
    assert other == four


def test_verified_clusters_in_worker_processes(monkeypatch):
    monkeypatch.setattr(parallel_engine, "MIN_CHUNK_ROWS", 50)
    monkeypatch.setattr(parallel_engine, "MAX_CHUNK_ROWS", 50)
    records = _records()
    _, serial = _run(records, batch_size=16)
    _, workers = _run(records, batch_size=16, workers=2)
    assert workers == serial


def test_verified_clusters_on_ray(ray_cluster, monkeypatch):
    monkeypatch.setattr(parallel_engine, "MIN_CHUNK_ROWS", 50)
    monkeypatch.setattr(parallel_engine, "MAX_CHUNK_ROWS", 50)
    records = _records()
    _, local = _run(records, batch_size=16)
    _, remote = _run(records, batch_size=16, engine="ray")
    assert remote == local


def test_the_hop_pieces_carry_each_first_end_once_per_partition():
    # pairs are kept once (whatever their orientation or how often edges() names them), and a
    # first end's payload goes once to each partition of second ends, not once per pair
    splits = ["train"]
    rows = pa.table(
        {
            "row": pa.array(range(6), pa.int64()),
            "text": [f"t{i}" for i in range(6)],
            "split": ["train"] * 6,
        }
    )
    pairs = pa.table(
        {
            "split_a": ["train"] * 6,
            "row_a": pa.array([0, 0, 3, 0, 0, 5], pa.int64()),
            "split_b": ["train"] * 6,
            "row_b": pa.array([3, 4, 0, 5, 4, 0], pa.int64()),
        }
    )
    rule = KeyedWords(partitions=1)
    (cand,) = keyed_engine.candidates_of(rule, None, splits, 1)  # nothing to pair
    assert cand is None
    out = keyed_engine.join_first(pairs, rows, splits, 1)
    assert out[0].select(["row_a", "row_b"]).to_pylist() == [
        {"row_a": 0, "row_b": 3},
        {"row_a": 0, "row_b": 4},
        {"row_a": 0, "row_b": 5},
        {"row_a": 3, "row_b": 0},
        {"row_a": 5, "row_b": 0},
    ]
    assert out[1].column("row").to_pylist() == [0, 3, 5]  # each first end once
    with pytest.raises(ValueError, match="emitted no payload"):
        keyed_engine.join_first(pairs, rows.slice(1), splits, 1)


class _Raises(KeyedWords):
    """Fails in verify_pairs."""

    code = "KEY003"
    name = "test.keyed-raises"

    def verify_pairs(self, pairs, rows):
        raise RuntimeError("verification broke")


def test_a_rule_that_raises_in_the_hop_is_its_error():
    report = audit(
        _records(), select=["KEY002", "KEY003"], extra_rules=[KeyedWords, _Raises], split="split"
    )
    assert report.status("KEY003") == "error"
    assert "verification broke" in report.result("KEY003")["message"]
    assert report.status("KEY002") == "warn"


class _Fetched(KeyedWords):
    """KeyedWords whose finish reads the texts through ``Clusters.fetch``: members carry none."""

    code = "KEY004"
    name = "test.keyed-fetched"
    member_columns = ()
    fetch_columns = ("text",)
    carried: list[list[str]] = []

    def finish_keyed(self, state, clusters, ctx):
        if clusters:
            _Fetched.carried.append(clusters.rows.column_names)
        return super().finish_keyed(state, clusters, ctx)

    def first_text(self, clusters, cluster) -> str:
        return clusters.fetch(["text"], [cluster.at]).column("text")[0].as_py()


def _body(records, code, rule, **options):
    report = audit(records, select=[code], extra_rules=[rule], split="split", **options)
    body = report.to_dict()
    for r in body["results"]:  # findings are ordered by their fingerprint: the code's hash
        for f in r.get("findings") or []:
            f.pop("fingerprint")
        r["findings"] = sorted(r.get("findings") or [], key=lambda f: json.dumps(f))
    return json.dumps(
        [{k: r.get(k) for k in ("status", "metrics", "findings")} for r in body["results"]]
        + [sorted(json.dumps(f, sort_keys=True) for f in body["flags"])],
        sort_keys=True,
    )


def test_fetched_columns_stay_on_disk_and_read_the_same(monkeypatch):
    # members carry no text locally (the finish reads the texts it shows from the spill), and
    # the report is the one of the rule whose members carry their texts
    _Fetched.carried.clear()
    records = _records()
    carried = _body(records, "KEY002", KeyedWords, batch_size=32).replace("KEY002", "KEY")
    fetched = _body(records, "KEY004", _Fetched, batch_size=32).replace("KEY004", "KEY")
    assert fetched == carried
    assert _Fetched.carried and all("text" not in cols for cols in _Fetched.carried)


def test_only_the_candidates_payload_is_read(monkeypatch):
    # the payload is spilled by row; verification reads the rows of candidate pairs, not all
    taken: list[int] = []
    take = keyed_engine.PayloadRows.take

    def counting(self, nodes, columns=None):
        taken.extend(np.asarray(nodes).tolist())
        return take(self, nodes, columns)

    monkeypatch.setattr(keyed_engine.PayloadRows, "take", counting)
    records = [{"text": f"w{i} a b c d", "split": "train"} for i in range(300)]
    records += [{"text": "same first word", "split": "train"}] * 4
    report, _ = _run(records, batch_size=32)
    assert _clusters(report) == [[("train", 300), ("train", 301), ("train", 302), ("train", 303)]]
    assert 0 < len(set(taken)) <= 4  # the four candidates, not the 304 rows with a payload


@pytest.mark.parametrize("budget", [0, 1 << 30])  # on disk; held in memory (under budget)
def test_payload_rows_are_found_by_row_across_writers(tmp_path, budget):
    # two writers (processes), batches of several splits: every row is found, a row without a
    # payload is an error; emit_rows gives rows in row order, and a row given twice is the
    # rule's error
    from dataaudit.engine.state import RuleRun

    splits = ["train", "test"]
    store = keyed_engine.DiskSpill(tmp_path, budget=budget)
    other = keyed_engine.DiskSpill(tmp_path, budget=0)  # a worker's: always on disk
    for spill, split, rows in (
        (store, "train", [1, 2, 3]),
        (other, "test", [5, 7]),
        (store, "test", [0]),
        (other, "train", [10, 11]),
    ):
        text = [f"{split}{r}" for r in rows]
        spill.add_rows(
            0,
            pa.table({"row": pa.array(rows, pa.int64()), "text": text}).append_column(
                "split", pa.array([splits.index(split)] * len(rows), pa.int16())
            ),
        )
    store.close(), other.close()
    assert bool(store.rows) == (budget > 0)
    rows = store.payload(0, splits)
    ids = [(0 << 40) | 11, (1 << 40) | 5, (0 << 40) | 1, (1 << 40) | 0, (0 << 40) | 11]
    got = rows.take(np.array(ids), ["text"])
    assert got.column("text").to_pylist() == ["train11", "test5", "train1", "test0", "train11"]
    with pytest.raises(ValueError, match="emitted no payload"):
        rows.take(np.array([(1 << 40) | 6]))

    class Twice(KeyedWords):
        def emit_rows(self, state, batch):
            out = super().emit_rows(state, batch)
            return pa.concat_tables([out, out])

    class Reversed(KeyedWords):
        def emit_rows(self, state, batch):
            out = super().emit_rows(state, batch)
            return out.take(pa.array(range(out.num_rows - 1, -1, -1)))

    from dataaudit.context import AuditContext
    from dataaudit.rule import Roles

    ctx = AuditContext(splits={}, roles=Roles(text="text"))
    batch = ctx.batch("train", pa.record_batch({"text": ["a b", "c", "d e"]}), 0)
    run = RuleRun(Reversed(), Reversed.severity, {"rows": 0})
    out = keyed_engine.emit_rows(run, batch, splits, keys=False)
    assert out.column("row").to_pylist() == [0, 1, 2]
    assert out.column("text").to_pylist() == ["a b", "c", "d e"]
    run = RuleRun(Twice(), Twice.severity, {"rows": 0})
    keyed_engine.emit_rows(run, batch, splits)
    assert "each row once" in run.error


def test_take_chunked_is_take_without_joining_the_chunks():
    col = pa.chunked_array([["a", "b"], [], ["c", "d", "e"], ["f"]], pa.large_string())
    rng = np.random.default_rng(3)
    for at in (np.array([5, 0, 3, 3, 1]), rng.integers(0, 6, 40), np.zeros(0, np.int64)):
        got = keyed_engine._take_chunked(col, at)
        assert got.to_pylist() == col.take(pa.array(at, pa.int64())).to_pylist()


def _payload_piece(rows: list[int], split: int = 0) -> pa.Table:
    return pa.table(
        {
            "row": pa.array(rows, pa.int64()),
            "text": [f"t{r}" * 50 for r in rows],
            "split": pa.array([split] * len(rows), pa.int16()),
        }
    )


def test_payload_written_behind_is_the_same_bytes(tmp_path, monkeypatch):
    # the writer thread writes what the scan's thread would have, in the same order; close()
    # waits for it (the files are complete before the finish reads them)
    monkeypatch.setattr(keyed_engine, "ROWS_BATCH_BYTES", 4096)  # many batches, many writes
    files = {}
    for behind in (0, 1):
        monkeypatch.setattr(keyed_engine, "WRITE_BEHIND", behind)
        store = keyed_engine.DiskSpill(tmp_path / str(behind))
        store.name = "w"
        for lo in range(0, 400, 20):
            store.add_rows(0, _payload_piece(list(range(lo, lo + 20)), split=lo // 200))
        assert (store.behind is not None) == bool(behind)
        store.close()
        assert store.behind is None
        folder = tmp_path / str(behind) / keyed_engine.rows_index(0)
        files[behind] = {p.name: p.read_bytes() for p in folder.iterdir()}
        got = store.payload(0, ["train", "test"]).take(np.array([5, (1 << 40) | 399]), ["text"])
        assert got.column("text").to_pylist() == ["t5" * 50, "t399" * 50]
    assert files[0] == files[1] and len(files[0]) == 2


def test_payload_pieces_are_written_as_they_came_not_joined(tmp_path, monkeypatch):
    # an index entry covers several pieces, each its own Arrow batch (joining them copied the
    # whole payload once more); a lookup takes each row from the piece that holds it
    monkeypatch.setattr(keyed_engine, "ROWS_BATCH_BYTES", 64 << 10)
    store = keyed_engine.DiskSpill(tmp_path)
    pieces = [list(range(lo, lo + 7)) for lo in range(0, 700, 10)]  # gaps between pieces
    for rows in pieces:
        store.add_rows(0, _payload_piece(rows))
    store.close()
    (path,) = (tmp_path / keyed_engine.rows_index(0)).glob("*.arrow")
    with pa.OSFile(str(path), "rb") as source:
        batches = pa.ipc.open_stream(source).read_all().to_batches()
    index = np.load(str(path)[: -len(".arrow")] + ".idx.npy")
    assert [b.num_rows for b in batches] == [7] * len(pieces)
    assert 1 < len(index) < len(batches)
    payload = store.payload(0, ["train"])
    want = np.array([699 - 3, 0, 16, 10, 12, 333, 696, 16])
    got = payload.take(want, ["text"]).column("text").to_pylist()
    assert got == [f"t{r}" * 50 for r in want]
    with pytest.raises(ValueError, match="emitted no payload"):
        payload.take(np.array([17]))  # between two pieces of one entry
    store.remove()


def test_close_without_waiting_leaves_the_payload_writes_to_payload(tmp_path, monkeypatch):
    # the local finish reads the partitions while the payload's last writes run; payload()
    # waits for them, and a write that failed is raised there
    import threading

    monkeypatch.setattr(keyed_engine, "ROWS_BATCH_BYTES", 4096)
    release = threading.Event()
    stream = keyed_engine.DiskSpill._stream_rows

    def slow(self, name, table):
        release.wait(10)
        stream(self, name, table)

    monkeypatch.setattr(keyed_engine.DiskSpill, "_stream_rows", slow)
    store = keyed_engine.DiskSpill(tmp_path)
    store.add(0, 4, pa.table({"key": pa.array([1, 2], pa.uint64()), "row": [0, 1]}))
    store.add_rows(0, _payload_piece(list(range(20))))
    store.close(wait=False)  # returns while the payload write waits
    assert not release.is_set() and store.table(0, 1).num_rows == 1
    release.set()
    got = store.payload(0, ["train"]).take(np.array([19]), ["text"])
    assert got.column("text").to_pylist() == ["t19" * 50]
    store.remove()

    def full(self, name, table):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(keyed_engine.DiskSpill, "_stream_rows", full)
    store = keyed_engine.DiskSpill(tmp_path / "full")
    store.add_rows(0, _payload_piece(list(range(20))))
    store.close(wait=False)
    with pytest.raises(OSError, match="No space left"):
        store.payload(0, ["train"])
    store.remove()


def test_a_failed_payload_write_is_raised_on_the_scan_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(keyed_engine, "ROWS_BATCH_BYTES", 4096)

    def full(self, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(keyed_engine._SlicedWrites, "write", full)
    store = keyed_engine.DiskSpill(tmp_path)
    with pytest.raises(OSError, match="No space left"):
        for lo in range(0, 400, 20):  # a later add_rows, or close(), raises it
            store.add_rows(0, _payload_piece(list(range(lo, lo + 20))))
        store.close()
    store.remove()


def test_payload_writes_waiting_are_bounded(tmp_path, monkeypatch):
    # the scan blocks once WRITE_BEHIND writes wait beyond the one being written: the payload
    # held for the writer is a few batches, whatever the corpus
    import threading
    import time

    monkeypatch.setattr(keyed_engine, "ROWS_BATCH_BYTES", 4096)
    release, started = threading.Event(), []
    stream = keyed_engine.DiskSpill._stream_rows

    def slow(self, name, table):
        started.append(table.num_rows)
        release.wait(10)
        stream(self, name, table)

    monkeypatch.setattr(keyed_engine.DiskSpill, "_stream_rows", slow)
    store = keyed_engine.DiskSpill(tmp_path)
    done = []

    def scan():
        for lo in range(0, 200, 20):
            store.add_rows(0, _payload_piece(list(range(lo, lo + 20))))
            done.append(lo)

    thread = threading.Thread(target=scan)
    thread.start()
    for _ in range(1000):  # the writer has the first piece
        if started:
            break
        time.sleep(0.01)
    time.sleep(0.3)  # time for the scan to run ahead as far as it may
    # one piece per write (each >= half a batch): one written, WRITE_BEHIND waiting, one
    # more submit blocked -> the pieces added are the writes started + waiting + pending
    assert len(started) == 1 and len(done) <= 1 + keyed_engine.WRITE_BEHIND + 1
    release.set()
    thread.join(10)
    store.close()
    assert len(done) == 10
    got = store.payload(0, ["train"]).take(np.arange(200), ["text"])
    assert got.column("text").to_pylist() == [f"t{r}" * 50 for r in range(200)]
    store.remove()


def test_candidate_pairs_beyond_the_held_bytes_go_to_disk(monkeypatch):
    # the first hop's pairs stay in memory up to PAIRS_HELD, the rest in the scratch spill;
    # either way the same clusters
    records = _records(300)
    want = _run(records, batch_size=32)[1]
    written = []
    put = keyed_engine.DiskSpill.put

    def counting(self, index, p, piece):
        if index == "pairs":
            written.append(piece.num_rows)
        put(self, index, p, piece)

    monkeypatch.setattr(keyed_engine.DiskSpill, "put", counting)
    assert _run(records, batch_size=32)[1] == want and not written
    monkeypatch.setattr(keyed_engine, "PAIRS_HELD", 2000)
    assert _run(records, batch_size=32)[1] == want and written


def test_groups_of_partitions_hold_at_most_the_pairs_asked():
    counts = np.array([0, 5, 3, 0, 9, 1, 1, 12, 0])
    assert keyed_engine._groups(counts, 8) == [[1, 2], [4], [5, 6], [7]]
    assert keyed_engine._groups(counts, 100) == [[1, 2, 4, 5, 6, 7]]
    assert keyed_engine._groups(np.zeros(4, np.int64), 8) == []


@pytest.mark.parametrize("seed", range(20))
def test_groups_of_partitions_split_the_pairs_evenly_between_threads(seed):
    """As many groups as a multiple of the threads, of about equal pairs: greedy packing up to
    the cap made three groups of 16 partitions for two threads, and the third ran alone."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 200, 16) * (rng.random(16) > 0.1)
    most = int(rng.choice([100_000, 600, 300]))
    groups = keyed_engine._groups(counts, most, 2)
    assert [p for g in groups for p in g] == np.flatnonzero(counts).tolist()  # in order, once
    sums = [int(counts[g].sum()) for g in groups]
    assert all(s <= most for s, g in zip(sums, groups) if len(g) > 1)
    if len(groups) == 2:
        assert abs(sums[0] - sums[1]) <= counts.max()
    assert len(groups) % 2 == 0 or len(groups) == np.count_nonzero(counts)


def test_few_candidate_pairs_are_verified_together(monkeypatch):
    # partitions of first ends verified in groups: the payload is looked up once a group,
    # not once a partition; the clusters are the same
    records = _records(600)
    calls: list[int] = []
    take = keyed_engine.PayloadRows.take

    def counting(self, nodes, columns=None):
        calls.append(len(nodes))
        return take(self, nodes, columns)

    monkeypatch.setattr(keyed_engine.PayloadRows, "take", counting)
    monkeypatch.setattr(keyed_engine, "THREADS", 1)
    together = _run(records, batch_size=32)[1]
    grouped = len(calls)
    calls.clear()
    monkeypatch.setattr(keyed_engine, "VERIFY_PAIRS", 1)  # each partition alone
    alone = _run(records, batch_size=32)[1]
    assert together == alone
    assert grouped < len(calls) and len(calls) > 2

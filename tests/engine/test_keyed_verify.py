"""The keyed stage's verification hop (engine/keyed.py): candidate pairs meet their rows'
payload in the partitions of their ends, the rule's verify_pairs keeps the edges, and the
clusters, their members' payload and best scores do not depend on partitions, workers or the
engine; a rule that raises in the hop is that rule's error."""

from __future__ import annotations

import json
import random
from itertools import combinations

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

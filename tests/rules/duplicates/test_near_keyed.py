"""DUP002 through the engine's keyed stage: its state holds counts, not rows; its clusters,
flags, scores and findings are those of the in-process MinHash-LSH search with the same bands
and verification (sketches/lsh.py), for any batching, partitioning and worker count; and a
split whose clusters are all exact copies says so instead of a bare pass."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pyarrow as pa
import pytest

import dataaudit
from dataaudit.rules.duplicates.near import NearDuplicates, lsh_params
from dataaudit.sketches.lsh import near_duplicate_pairs
from dataaudit.sketches.minhash import pair_jaccard, shingle_auto, shingle_sets
from dataaudit.testing import _case

VOCAB = [f"w{i}" for i in range(400)]


def _corpus(n: int, seed: int = 11) -> dict[str, list[dict]]:
    """Distinct 30-word rows, ~20% near copies (a few words changed), ~5% exact copies,
    a few blank rows, ids and sources."""
    rng = random.Random(seed)
    out: dict[str, list[dict]] = {"train": [], "test": []}
    for split, rows in out.items():
        for i in range(n if split == "train" else n // 4):
            r = rng.random()
            if rows and r < 0.2:
                words = ((rng.choice(rows)["text"] or "").strip() or "x").split()
                for _ in range(rng.randint(1, 3)):
                    words[rng.randrange(len(words))] = rng.choice(VOCAB)
                text = " ".join(words)
            elif rows and r < 0.25:
                text = rng.choice(rows)["text"]
            elif r < 0.27:
                text = rng.choice(["", "  ", None])
            else:
                text = " ".join(rng.choice(VOCAB) for _ in range(30))
            rows.append({"id": f"{split}-{i}", "text": text, "source": rng.choice("abc")})
    return out


def _direct(texts: list[str | None], rule: NearDuplicates) -> dict[int, tuple[int, float]]:
    """The in-process search on one split: {row: (cluster, score)} of clustered rows."""
    import pyarrow.compute as pc

    from dataaudit.features.normalize import tokenizable_array

    arr = tokenizable_array(pa.array(texts, pa.large_string()))
    sh, _ = shingle_auto(pc.fill_null(arr, ""), int(rule.ngram), 1)
    from dataaudit.sketches.minhash import minhash_signatures

    sig = minhash_signatures(sh, int(rule.num_perm), 1)
    sets = shingle_sets(sh)
    bands, rows = lsh_params(rule)
    labels, a, b, s = near_duplicate_pairs(
        sig,
        float(rule.threshold),
        bands=bands,
        rows=rows,
        verify=lambda i, j: pair_jaccard(sets, i, j),  # every candidate merged, as the rule does
    )
    best = np.zeros(len(texts))
    np.maximum.at(best, a, s)
    np.maximum.at(best, b, s)
    return {int(i): (int(labels[i]), round(float(best[i]), 4)) for i in np.flatnonzero(labels >= 0)}


@pytest.mark.parametrize("workers", [None, pytest.param(2, marks=pytest.mark.slow)])
def test_clusters_are_the_in_process_search(workers, monkeypatch):
    from dataaudit.engine import parallel

    monkeypatch.setattr(parallel, "MIN_CHUNK_ROWS", 300)
    monkeypatch.setattr(parallel, "MAX_CHUNK_ROWS", 300)
    data = _corpus(2000)
    report = dataaudit.audit(data, select=["DUP002"], batch_size=128, workers=workers)
    flags = report.flags()
    got = {
        (r["split"], r["row"]): (int(r["cluster"]), r["score"], r["detail"])
        for r in flags.iter_rows(named=True)
    }
    want = {}
    for split, rows in data.items():
        direct = _direct([r["text"] for r in rows], NearDuplicates())
        for row, (cluster, score) in direct.items():
            want[split, row] = (cluster, score, "kept" if row == cluster else "duplicate")
    assert len(want) > 250
    assert got == want
    res = report.result("DUP002")
    train = res["details"]["splits"]["train"]
    removable = sum(1 for (s, _), v in want.items() if s == "train" and v[2] == "duplicate")
    assert train["near_duplicate_rows"] == removable
    assert sum(v["duplicate_rows"] for v in train["per_source"].values()) == removable
    assert sum(v["rows"] for v in train["per_source"].values()) == 2000
    metrics = {(m["name"], m["split"]): m["value"] for m in res["metrics"]}
    assert train["rows_by_unit"]["none"] == metrics["rows_without_shingles", "train"] > 0
    top = res["findings"][0]
    assert top["examples"][0]["similarity"] == 1.0 and len(top["examples"]) > 1
    assert all(0.8 <= e["similarity"] <= 1.0 for e in top["examples"])


@pytest.mark.parametrize("partitions", [1, 3])
def test_partitions_do_not_change_the_report(partitions, monkeypatch):
    data = _corpus(600)
    sixteen = dataaudit.audit(data, select=["DUP002"], batch_size=64)
    monkeypatch.setattr(NearDuplicates, "partitions", partitions, raising=False)
    other = dataaudit.audit(data, select=["DUP002"], batch_size=50)
    for key in ("status", "metrics", "findings", "details"):
        assert other.result("DUP002")[key] == sixteen.result("DUP002")[key]
    assert other.flags().equals(sixteen.flags())


def test_estimate_verification_goes_through_the_hop_too():
    data = _corpus(600)
    report = dataaudit.audit(data, select=["DUP002"], rules={"DUP002": {"verify": "estimate"}})
    res = report.result("DUP002")
    metrics = {(m["name"], m["split"]): m["value"] for m in res["metrics"]}
    assert metrics["near_duplicate_rows", "train"] > 20
    assert all(0.8 <= e["similarity"] <= 1 for f in res["findings"] for e in f["examples"])


def test_state_holds_counts_not_rows():
    sizes = []
    for n in (400, 4000):
        case = _case.Case(NearDuplicates, data=_corpus(n))
        rule, ctx = case.runnable()
        state = case.fold(rule, ctx, case.batches(256))
        sizes.append(len(pickle.dumps(state)))
    assert sizes[1] < sizes[0] + 64, sizes
    assert sizes[1] < 2000, sizes


def test_only_exact_copies_is_not_a_bare_pass():
    # DUP001 reports exact copies; DUP002 flags them in its clusters and says so
    rows = [{"text": f"row number {i} " + "word " * 10} for i in range(20)]
    rows += [rows[3], rows[3], rows[7]]
    report = dataaudit.audit(rows, select=["DUP002"])
    res = report.result("DUP002")
    assert res["status"] == "pass"
    (finding,) = res["findings"]
    assert finding["severity"] == "info"
    assert finding["message"] == (
        "train: 2 clusters of identical normalized text (3 removable rows) are flagged here and "
        "reported by DUP001"
    )
    assert len(report.flags()) == 5
    assert "1 finding · 5 rows flagged" in report.summary()


@pytest.mark.parametrize("verify", ["exact", "estimate"])
def test_payload_carries_only_what_verification_reads(verify):
    # "exact" merges every candidate's shingle sets: the signature (512 B a row, written for
    # every row, read for the few candidates) is not spilled; "estimate" needs no sets
    case = _case.Case(NearDuplicates, data=_corpus(300), options={"verify": verify})
    rule, ctx = case.runnable()
    state = rule.start(ctx)
    split, offset, rb = case.batches(128)[0]
    cols = set(rule.emit_rows(state, ctx.batch(split, rb, offset)).column_names)
    assert cols >= {"row", "hash", "snip", "id", "source"}
    assert ("sig" in cols, "sets" in cols) == (verify == "estimate", verify == "exact")


def test_exact_verification_merges_every_candidate():
    # no signature pre-filter: a pair is accepted on its sets' Jaccard alone (9/11 here)
    from dataaudit.rules._keyed_minhash import set_column
    from dataaudit.sketches.minhash import ShingleSets

    sets = ShingleSets(np.array([0, 10, 20, 22]), np.r_[0:10, 1:11, 50:52].astype(np.uint32))
    rows = pa.table({"split": ["train"] * 3, "row": [0, 1, 2], "sets": set_column(sets, [0, 1, 2])})
    pairs = pa.table(
        {
            "split_a": ["train"] * 2,
            "row_a": [0, 0],
            "split_b": ["train"] * 2,
            "row_b": [1, 2],
            "same": [False, False],
            "at_a": [0, 0],
            "at_b": [1, 2],
        }
    )
    edges = NearDuplicates(threshold=0.8).verify_pairs(pairs, rows)
    assert edges.column("row_b").to_pylist() == [1]
    assert edges.column("score").to_pylist() == [pytest.approx(9 / 11)]


def test_the_findings_examples_are_read_in_one_fetch(monkeypatch):
    """Every finding's shown members come from one read of the payload (one read per finding
    took each payload batch up to max_findings times); the examples are each cluster's own,
    as a read per cluster gives them."""
    from dataaudit.engine.keyed import Clusters

    data = _corpus(2000)
    calls = []
    real = Clusters.fetch

    def counted(self, columns, at):
        calls.append(len(at))
        return real(self, columns, at)

    monkeypatch.setattr(Clusters, "fetch", counted)
    res = dataaudit.audit(data, select=["DUP002"], batch_size=128).result("DUP002")
    findings = [f for f in res["findings"] if f["examples"]]
    assert len(findings) > 3
    assert len(calls) == len({f["split"] for f in findings})  # one read per split
    for f in findings:
        rows = [e["row"] for e in f["examples"]]
        texts = [data[f["split"]][r]["text"] for r in rows]
        assert [e["text"] for e in f["examples"]] == texts
        assert rows[0] == int(f["message"].split("kept row ")[1].split(",")[0])

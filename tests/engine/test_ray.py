"""engine="ray" gives the local engine's report: same findings, metrics, fingerprints, cluster
ids and flags, whatever the partitioning; a rule that raises on a worker is that rule's error; a
worker killed mid-scan is retried by Ray and the report does not change.

One local Ray cluster (2 CPUs, tests/engine/conftest.py) serves the whole session. CI installs
the ``ray`` extra and sets DATAAUDIT_REQUIRE_RAY, so there these tests fail instead of skipping
when Ray is missing.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit import audit
from dataaudit.engine import parallel as parallel_engine
from tests.engine.test_workers_invariance import _rows, _timeless

pytestmark = pytest.mark.slow


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 100 rows: many fold tasks and a merge tree several levels deep (files the
    workers read: many reads of small groups of files, folded 100 rows a task)."""
    from dataaudit.engine import ray as ray_engine

    monkeypatch.setattr(parallel_engine, "MIN_CHUNK_ROWS", 100)
    monkeypatch.setattr(parallel_engine, "MAX_CHUNK_ROWS", 100)
    monkeypatch.setattr(ray_engine, "MAX_READ_ROWS", 100)
    monkeypatch.setattr(ray_engine, "MIN_READ_BYTES", 1)


def _body(report) -> dict[str, Any]:
    body = _timeless(report.to_dict())
    for key in ("workers", "batch_size"):  # run settings, outside the config hash
        body["config"].pop(key)
    body.pop("engine", None)
    return body


def _same(data, *, batch_size: int = 64, **options) -> Any:
    """Audit with the local engine (2 workers) and with Ray; the reports must be equal but for
    the engine they name."""
    import ray

    local = audit(data, workers=2, batch_size=batch_size, **options)
    remote = audit(data, engine="ray", batch_size=batch_size, **options)
    assert json.dumps(_body(remote), indent=1) == json.dumps(_body(local), indent=1)
    assert remote.flags().equals(local.flags())
    assert local.to_dict()["engine"] == {
        "name": "local",
        "version": None,
        "nodes": 1,
        "cpus": os.cpu_count(),
    }
    engine = remote.to_dict()["engine"]
    assert engine == {"name": "ray", "version": ray.__version__, "nodes": 1, "cpus": 2}
    return remote


def _split_parquet(fixtures_dir, tmp_path, files_per_split: int = 3) -> Any:
    """The classification fixture as a folder of Parquet files, several per split with small
    row groups, so the workers read many row groups and row ids must add up across them."""
    root = tmp_path / "parquet"
    for split in ("train", "validation", "test"):
        rows = _rows(fixtures_dir / "classification" / f"{split}.jsonl")
        for row in rows:  # one type per column, as Parquet needs
            row["text"] = None if row["text"] is None else str(row["text"])
        table = pa.Table.from_pylist(rows)
        step = -(-len(rows) // files_per_split)
        (root / split).mkdir(parents=True)
        for i in range(files_per_split):
            part = table.slice(i * step, step)
            pq.write_table(part, root / split / f"part-{i}.parquet", row_group_size=37)
    return root


def test_every_fixture_gives_the_local_report(ray_cluster, small_chunks, fixtures_dir, tmp_path):
    ref = str(fixtures_dir / "contamination_ref.jsonl")
    reference = {"train": _rows(fixtures_dir / "classification" / "validation.jsonl")}
    report = _same(
        fixtures_dir / "classification",
        select=["ALL"],
        contamination_ref=ref,
        reference=reference,
        rules={"MIX001": {"recipe": {"fortunes": 0.6, "pydoc": 0.3, "glossary": 0.1}}},
    )
    results = {r["code"]: r for r in report.to_dict()["results"]}
    assert sum(len(r["findings"]) for r in results.values()) > 10
    assert results["DUP002"]["findings"] and results["DUP001"]["findings"]
    _same(fixtures_dir / "classification.parquet", split="split", select=["ALL"])
    _same(fixtures_dir / "chat_sft", select=["ALL"])
    _same(fixtures_dir / "contamination_ref.jsonl", select=["ALL"])


def test_parquet_row_groups_are_read_on_the_workers_with_their_row_ids(
    ray_cluster, small_chunks, fixtures_dir, tmp_path, monkeypatch
):
    from dataaudit.engine import ray as ray_engine

    calls: list[list[tuple[str, int, int]]] = []
    plan = ray_engine._parquet_units

    def counted(*args):
        calls.append([])
        for split, row, path, groups, rows in plan(*args):
            calls[-1].append((split, row, rows))
            yield split, row, path, groups, rows

    monkeypatch.setattr(ray_engine, "_parquet_units", counted)
    data = _split_parquet(fixtures_dir, tmp_path)
    report = _same(data, select=["ALL"], batch_size=50)
    # the leakage rules' prepass read the eval splits' row groups on the workers first
    prepass, units = calls
    assert {s for s, _, _ in prepass} == {"validation", "test"}
    # the driver planned row groups (37 rows) from the footers; the workers read them
    assert {s for s, _, _ in units} == {"train", "validation", "test"}
    for split in ("train", "validation", "test"):
        rows = [(r, n) for s, r, n in units if s == split]
        assert len(rows) >= 5
        assert [r for r, _ in rows] == [sum(n for _, n in rows[:i]) for i in range(len(rows))]
    flagged = report.flags()
    assert flagged.height > 0 and set(flagged["split"].unique()) >= {"train"}
    assert [f["rows"] for f in report.to_dict()["dataset"]["splits"]["train"]["files"]] == [
        200,
        200,
        200,
    ]


def test_a_parquet_file_the_workers_cannot_read_is_an_input_error(
    ray_cluster, fixtures_dir, tmp_path, monkeypatch
):
    from dataaudit.engine import ray as ray_engine
    from dataaudit.errors import InputError

    data = _split_parquet(fixtures_dir, tmp_path, files_per_split=1)
    plan = ray_engine._parquet_units

    def truncated(*args):  # a file changes after the driver read its footer
        units = list(plan(*args))
        path = units[0][2]
        path.write_bytes(path.read_bytes()[:100])
        yield from units

    monkeypatch.setattr(ray_engine, "_parquet_units", truncated)
    with pytest.raises(InputError, match="cannot read as Parquet"):
        audit(data, engine="ray", select=["DUP001"])


@pytest.mark.parametrize("where", ["update", "merge", "finish"])
def test_a_rule_that_raises_on_a_worker_is_its_error(
    ray_cluster, small_chunks, fixtures_dir, where
):
    from tests.engine._crashy_rules import CountRows, Raises

    report = audit(
        fixtures_dir / "classification",
        engine="ray",
        select=["RAISE001", "OKAY001", "DUP001"],
        extra_rules=[Raises, CountRows],
        rules={"RAISE001": {"where": where}},
    )
    assert report.status("RAISE001") == "error"
    assert f"kaboom in {where}" in report.result("RAISE001")["message"]
    assert report.status("OKAY001") == "pass"
    assert report.result("OKAY001")["metrics"][0]["value"] == 900
    assert report.status("DUP001") in ("warn", "fail")
    assert not report.passed


def test_a_worker_killed_mid_scan_is_retried_and_the_report_is_unchanged(
    ray_cluster, small_chunks, fixtures_dir, tmp_path
):
    from tests.engine._ray_rules import KilledOnce

    marker = tmp_path / "killed"
    options = dict(
        select=["KILL001", "DUP001", "DUP002", "LEAK001"],
        extra_rules=[KilledOnce],
        rules={"KILL001": {"marker": str(marker), "driver_pid": os.getpid(), "at_row": 450}},
    )
    killed = audit(fixtures_dir / "classification", engine="ray", batch_size=64, **options)
    assert marker.exists() and int(marker.read_text()) != os.getpid()  # a worker was killed
    again = audit(fixtures_dir / "classification", engine="ray", batch_size=64, **options)
    assert json.dumps(_body(killed)) == json.dumps(_body(again))
    assert killed.status("KILL001") == "pass"
    assert killed.result("KILL001")["metrics"][0]["value"] == 900


def test_without_ray_the_engine_says_how_to_install_it(monkeypatch, capsys, fixtures_dir):
    import sys

    from dataaudit.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    code = main(["audit", str(fixtures_dir / "classification"), "--engine", "ray"])
    err = capsys.readouterr().err
    assert code == 2
    assert "pip install 'dataaudit[ray]'" in err
    assert "Traceback" not in err


def test_keyed_rules_shuffle_through_the_object_store(ray_cluster, small_chunks, fixtures_dir):
    from tests.engine._keyed_rules import KeyedExact
    from tests.engine.test_keyed import _clusters, _expected

    options = dict(select=["KEY001", "DUP001"], extra_rules=[KeyedExact])
    report = _same(fixtures_dir / "classification", **options)
    expected = _expected(fixtures_dir)
    assert sorted(map(sorted, _clusters(report))) == sorted(map(sorted, expected))


def test_100k_rows_of_real_text_give_the_local_report(
    ray_cluster, fixtures_dir, tmp_path, monkeypatch
):
    """The fixtures' real text (fortunes, Python docs) recombined into 100k documents of 1-3
    texts (seeded), in 2 Parquet files and a JSON Lines file of 50k rows (a column only some
    rows have): duplicates and near-duplicates at scale, read by the workers (the JSON Lines
    in byte ranges of 1 MB blocks), merged in a tree several levels deep."""
    import random

    texts = [
        row["text"]
        for split in ("train", "validation", "test")
        for row in _rows(fixtures_dir / "classification" / f"{split}.jsonl")
        if isinstance(row.get("text"), str) and row["text"].strip()
    ]
    rng = random.Random(15)
    docs = [" ".join(rng.choices(texts, k=rng.randint(1, 3))) for _ in range(100_000)]
    root = tmp_path / "corpus" / "train"
    root.mkdir(parents=True)
    for i in range(2):
        part = pa.table({"text": docs[i * 25_000 : (i + 1) * 25_000]})
        pq.write_table(part, root / f"part-{i}.parquet", row_group_size=5_000)
    with open(root / "part-2.jsonl", "w") as fh:  # one file the workers read in ranges
        for i, doc in enumerate(docs[50_000:]):
            fh.write(json.dumps({"text": doc, "n": i} if i % 1000 else {"text": doc}) + "\n")
    from dataaudit.inputs import jsonl

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 1 << 20)
    report = _same(
        tmp_path / "corpus", batch_size=4096, select=["DUP001", "DUP002", "TXT001", "LEN002"]
    )
    assert report.result("DUP001")["findings"] and report.result("DUP002")["metrics"]


def test_the_cli_runs_on_ray_and_the_report_names_it(ray_cluster, fixtures_dir, tmp_path):
    from dataaudit.cli import main

    out = tmp_path / "r.json"
    data = str(fixtures_dir / "classification")
    code = main(["audit", data, "--engine", "ray", "--select", "DUP001", "--json", str(out), "-q"])
    report = json.loads(out.read_text())
    assert code == (0 if report["passed"] else 1)
    assert report["engine"]["name"] == "ray" and report["engine"]["cpus"] == 2
    assert report["results"][0]["code"] == "DUP001" and report["results"][0]["findings"]


def test_a_ray_address_other_than_the_connected_cluster_is_an_error(
    ray_cluster, fixtures_dir, capsys
):
    """Ray connects a process to one cluster: an address naming another is refused with both
    addresses, the connected cluster's own address (or 'auto') runs there."""
    from dataaudit.cli import main
    from dataaudit.errors import ConfigError

    current = ray_cluster.get_runtime_context().gcs_address
    port = int(current.rsplit(":", 1)[1])
    other = f"127.0.0.1:{port + 1}"
    data = fixtures_dir / "contamination_ref.jsonl"
    with pytest.raises(ConfigError) as err:
        audit(data, engine="ray", ray_address=other, select=["DUP001"])
    assert other in str(err.value) and current in str(err.value)
    assert "ray.shutdown()" in str(err.value)
    code = main(["audit", str(data), "--engine", "ray", "--ray-address", other, "-q"])
    assert code == 2 and current in capsys.readouterr().err
    for same in (current, "auto"):
        report = audit(data, engine="ray", ray_address=same, select=["DUP001"])
        assert report.to_dict()["engine"]["cpus"] == 2


def _messy_jsonl(root) -> Any:
    """JSON Lines with what the corpus stream notes: a bad line, a lone surrogate, a column
    that turns up late, a file without the label column, blank lines; and a CSV split."""
    (root / "train").mkdir(parents=True)
    rows = [{"text": f"document {i % 40} about things", "label": i % 3} for i in range(300)]
    lines = [json.dumps(r) for r in rows]
    lines[7] = '{"text": "broken'
    lines[20] = '{"text": "lone \\ud800 surrogate", "label": 1}'
    lines[30] = ""
    lines[120] = "[1, 2]"
    (root / "train" / "a.jsonl").write_text("\n".join(lines[:150]) + "\n")
    late = [json.dumps({**r, "source": "web"}) for r in rows[150:250]]
    (root / "train" / "b.jsonl").write_text("\n".join(late) + "\n")
    no_label = [json.dumps({"text": r["text"]}) for r in rows[250:]]
    (root / "train" / "c.jsonl").write_text("\n".join(no_label) + "\n{oops\n")
    (root / "test.csv").write_text(
        "text,label\n" + "".join(f"test doc {i},{i % 3}\n" for i in range(60))
    )
    return root


def test_json_lines_and_csv_are_read_on_the_workers_with_the_streams_notes(
    ray_cluster, small_chunks, tmp_path, monkeypatch
):
    """The driver never streams the files (Corpus.stream would raise): the workers read them,
    the JSON Lines in byte ranges of 1 KB blocks, and the report (row ids, INPUT001's notes
    with file:line, late and missing columns, the files list) equals the local engine's."""
    from dataaudit.corpus import Corpus
    from dataaudit.errors import InputError
    from dataaudit.inputs import jsonl

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 1024)  # the driver plans, the parent reads
    data = _messy_jsonl(tmp_path / "messy")
    local = audit(data, workers=2, batch_size=16, on_bad_lines="skip", select=["ALL"])

    def no_stream(self, batch_size):
        raise AssertionError("the driver streamed the corpus")
        yield

    monkeypatch.setattr(Corpus, "stream", no_stream)
    remote = audit(data, engine="ray", batch_size=16, on_bad_lines="skip", select=["ALL"])
    assert json.dumps(_body(remote), indent=1) == json.dumps(_body(local), indent=1)
    assert remote.flags().equals(local.flags())
    places = [p for f in remote.result("INPUT001")["findings"] for p in f.get("places", [])]
    text = json.dumps(remote.result("INPUT001"))
    assert "a.jsonl:8" in text and "a.jsonl:121" in text and "c.jsonl:51" in text, places
    assert "'source'" in text
    files = remote.to_dict()["dataset"]["splits"]["train"]["files"]
    assert [f["rows"] for f in files] == [147, 100, 50]
    with pytest.raises(InputError, match=r"a\.jsonl:8: not valid JSON"):
        audit(data, engine="ray", select=["DUP001"])
    # the first bad line of c.jsonl is in its last range: read again knowing its first line
    with pytest.raises(InputError, match=r"c\.jsonl:51: not valid JSON"):
        audit(data / "train" / "c.jsonl", engine="ray", select=["DUP001"])

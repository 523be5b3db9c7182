"""Data where users keep it: fsspec filesystems, a web server, Hub names, lazy queries.
No test touches the network: a loopback HTTP server and fsspec's in-memory filesystem stand in."""

from __future__ import annotations

import functools
import http.server
import json
import threading
import time

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit import audit
from dataaudit.errors import InputError

upath = pytest.importorskip("upath")

ROWS = [
    {"text": f"Harbour log {i}: the ferry left at {6 + i % 12} o'clock.", "label": "ab"[i % 2]}
    for i in range(60)
]


def _jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture
def memory_bucket():
    root = upath.UPath("memory://bucket/data")
    for split, rows in (("train", ROWS), ("test", ROWS[:6])):
        path = root / split / "part-0.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_jsonl(rows))
    yield "memory://bucket/data"
    root.fs.rm("/bucket", recursive=True)


def test_fsspec_folder_and_globs_name_their_splits(memory_bucket):
    for given in (
        memory_bucket,
        f"{memory_bucket}/*/*.jsonl",
        [f"{memory_bucket}/train/*.jsonl", f"{memory_bucket}/test/*.jsonl"],
    ):
        report = audit(given, select=["LEAK001"])
        splits = report.data["dataset"]["splits"]
        assert {n: s["rows"] for n, s in splits.items()} == {"train": 60, "test": 6}
        assert report.status("LEAK001") == "fail"  # the test rows are train rows


def test_missing_remote_path_is_an_input_error(memory_bucket):
    with pytest.raises(InputError, match="no such file or folder"):
        audit(f"{memory_bucket}/nope.jsonl")
    with pytest.raises(InputError, match="matches no files"):
        audit(f"{memory_bucket}/*/*.parquet")


@pytest.fixture
def web_server(tmp_path):
    (tmp_path / "train.jsonl").write_text(_jsonl(ROWS))
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "train.parquet", row_group_size=16)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep the test output clean
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(tmp_path))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_files_over_http_are_read(web_server):
    pytest.importorskip("aiohttp")
    base = web_server
    for name in ("train.jsonl", "train.parquet"):
        report = audit(f"{base}/{name}", select=["DUP001"])
        assert report.data["dataset"]["splits"]["train"]["rows"] == 60
    with pytest.raises(InputError, match="not found"):
        audit(f"{base}/missing.jsonl")


def test_hub_name_offline_and_not_cached_fails_at_once(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path))
    t0 = time.perf_counter()
    with pytest.raises(InputError, match="not in the local Hugging Face cache"):
        audit("someorg/somedata")
    assert time.perf_counter() - t0 < 1.0


def test_hub_name_is_streamed_when_the_hub_is_reachable(monkeypatch, tmp_path):
    datasets = pytest.importorskip("datasets")
    import dataaudit.inputs.hub as hub

    calls = []

    def fake_load(name, **kw):
        calls.append((name, kw))
        ds = datasets.Dataset.from_list(ROWS).to_iterable_dataset()
        return datasets.IterableDatasetDict({"train": ds, "test": ds.take(5)})

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path))
    monkeypatch.setattr(hub, "_load", fake_load)
    monkeypatch.setattr(hub, "hub_reachable", lambda host="": True)
    report = audit("someorg/somedata", select=["LEAK001"])
    assert calls == [("someorg/somedata", {"streaming": True})]
    assert {n: s["rows"] for n, s in report.data["dataset"]["splits"].items()} == {
        "train": 60,
        "test": 5,
    }


def test_lazy_frame_is_streamed_not_collected(monkeypatch, tmp_path):
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "rows.parquet")
    lazy = pl.scan_parquet(tmp_path / "rows.parquet").filter(pl.col("label") == "a")

    def no_collect(*args, **kwargs):
        raise AssertionError("the LazyFrame was collected whole")

    monkeypatch.setattr(pl.LazyFrame, "collect", no_collect)
    report = audit(lazy, select=["DUP001", "LBL003"], batch_size=8)
    assert report.data["dataset"]["splits"]["train"]["rows"] == 30

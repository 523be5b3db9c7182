"""The prepass: rules read a few splits first (the eval side) and every worker sees the merged
value in the scan; the result is the same with workers=1, workers=2 and Ray whatever the
chunking; the value is pickled once and loaded once per worker process; a prepass that raises
is its rule's error; the prepass reads only the splits asked for and counts no rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataaudit import audit
from dataaudit.engine import parallel as parallel_engine
from tests.engine import _prepass_rules
from tests.engine._prepass_rules import EvalLengths, PrepassRaises, SplitsSeen
from tests.engine.test_workers_invariance import _rows, _timeless

RULES = [EvalLengths, SplitsSeen]
SELECT = ["PRE001", "PRE002", "TXT001"]


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 100 rows: the prepass and the scan fold in many chunks that merge."""
    from dataaudit.engine import ray as ray_engine

    monkeypatch.setattr(parallel_engine, "MIN_CHUNK_ROWS", 100)
    monkeypatch.setattr(parallel_engine, "MAX_CHUNK_ROWS", 100)
    monkeypatch.setattr(ray_engine, "MAX_READ_ROWS", 100)
    monkeypatch.setattr(ray_engine, "MIN_READ_BYTES", 1)


@pytest.fixture
def data(fixtures_dir) -> Path:
    return fixtures_dir / "classification"


def _expected_rows(data: Path) -> list[int]:
    """The train rows whose text length some validation or test row has, by brute force."""
    lengths = {
        len(r["text"])
        for split in ("validation", "test")
        for r in _rows(data / f"{split}.jsonl")
        if isinstance(r.get("text"), str)
    }
    train = _rows(data / "train.jsonl")
    return [
        i for i, r in enumerate(train) if isinstance(r["text"], str) and len(r["text"]) in lengths
    ]


def _body(report) -> str:
    body = _timeless(report.to_dict())
    for key in ("workers", "batch_size"):
        body["config"].pop(key)
    body.pop("engine", None)
    return json.dumps(body, indent=1)


def _only_its_rules_error(report, code: str, message: str, data: Path) -> None:
    """``code`` is an error whose message starts with ``message``; PRE001 still found its rows."""
    bad = report.result(code)
    assert bad["status"] == "error"
    assert bad["message"].startswith(message)
    assert report.result("PRE001")["details"]["rows"] == _expected_rows(data)


def test_the_value_reaches_start_update_and_finish(data, monkeypatch):
    from dataaudit.corpus import Corpus

    streams: list[list[str]] = []
    stream = Corpus.stream

    def counted(self, batch_size):
        streams.append(list(self.splits))
        return stream(self, batch_size)

    monkeypatch.setattr(Corpus, "stream", counted)
    report = audit(data, select=SELECT, batch_size=64, extra_rules=RULES)
    # one read of the union of both rules' prepass splits, then the scan
    assert sorted(streams) == [["train", "validation", "test"], ["validation", "test"]]
    pre = report.result("PRE001")
    expected = _expected_rows(data)
    assert 0 < len(expected) < 600  # the check means something on this data
    assert pre["details"] == {"seen": [True], "rows": expected}
    assert report.result("PRE002")["details"] == {"prepass": {"test": [150, True]}}
    # the prepass is a stage of its own and a phase of each rule that has one
    timings = report.to_dict()["timings"]
    assert list(timings["stages"])[:3] == ["load", "prepass", "scan"]
    assert "prepass" in timings["rules"]["PRE001"] and "prepass" not in timings["rules"]["TXT001"]
    # rows read by the prepass are not counted again: row counts and content hashes as without
    plain = audit(data, select=["TXT001"], batch_size=64)
    assert report.to_dict()["dataset"] == plain.to_dict()["dataset"]


def test_no_prepass_without_prepass_splits(fixtures_dir):
    # one split: no eval split, no prepass, prepared() is None everywhere
    train = fixtures_dir / "classification" / "train.jsonl"
    report = audit(train, select=SELECT, extra_rules=RULES)
    assert report.result("PRE001")["details"] == {"seen": [False], "rows": []}
    assert report.result("PRE002")["details"] == {"prepass": {}}
    assert "prepass" not in report.to_dict()["timings"]["stages"]


@pytest.mark.slow
def test_workers_give_the_one_process_result(data, small_chunks, tmp_path):
    one = audit(data, select=SELECT, batch_size=30, extra_rules=RULES)
    two = audit(data, select=SELECT, batch_size=30, workers=2, extra_rules=RULES)
    assert _body(two) == _body(one)
    assert two.result("PRE001")["details"]["seen"] == [True]


@pytest.mark.slow
def test_the_value_is_pickled_once_and_loaded_once_per_worker(data, small_chunks, tmp_path):
    log = tmp_path / "loads.txt"
    rules = {"PRE001": {"log": str(log)}}
    _prepass_rules.DUMPS["count"] = 0
    report = audit(data, select=SELECT, batch_size=30, workers=2, rules=rules, extra_rules=RULES)
    assert report.result("PRE001")["details"]["seen"] == [True]
    # 9 chunks of the scan (and 3 of the prepass) on 2 workers: one pickle, one load a process
    assert _prepass_rules.DUMPS["count"] == 1
    pids = log.read_text().split()
    assert 1 <= len(pids) <= 2 and len(set(pids)) == len(pids)


@pytest.mark.parametrize(
    "where", ["prepass_splits", "prepass_start", "prepass_update", "prepass_finish"]
)
def test_a_prepass_that_raises_is_its_rules_error(data, where):
    report = audit(
        data,
        select=[*SELECT, "PRE003"],
        rules={"PRE003": {"where": where}},
        extra_rules=[*RULES, PrepassRaises],
    )
    _only_its_rules_error(
        report, "PRE003", f"RuntimeError: boom in {where} (at _prepass_rules.py:", data
    )
    status = {r["code"]: r["status"] for r in report.to_dict()["results"]}
    assert status["PRE001"] != "error" and status["PRE002"] != "error"
    assert status["TXT001"] != "error"


@pytest.mark.slow
@pytest.mark.parametrize("where", ["prepass_update", "prepass_merge", "prepass_finish"])
def test_a_prepass_that_raises_in_a_worker_is_its_rules_error(data, small_chunks, where):
    report = audit(
        data,
        select=[*SELECT, "PRE003"],
        rules={"PRE003": {"where": where}},
        workers=2,
        batch_size=30,
        extra_rules=[*RULES, PrepassRaises],
    )
    _only_its_rules_error(
        report, "PRE003", f"RuntimeError: boom in {where} (at _prepass_rules.py:", data
    )
    assert report.result("PRE002")["details"] == {"prepass": {"test": [150, True]}}


def test_the_prepass_reads_only_its_splits(data, monkeypatch):
    """The prepass of the test split never opens the train split's files."""
    from dataaudit.corpus import load_corpus
    from dataaudit.engine import prepass

    corpus = load_corpus(data)

    def unread():
        raise AssertionError("the prepass read train")

    monkeypatch.setattr(corpus.splits["train"], "iter_parts", unread)
    got = [(split, rb.num_rows) for split, rb in prepass.stream(corpus, ["test"], 64)]
    assert {s for s, _ in got} == {"test"} and sum(n for _, n in got) == 150
    # the scan's records are untouched: its files list and input notes stay empty
    assert corpus.files == {} and not corpus.log.notes


# -- Ray ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_ray_gives_the_local_result_and_ships_the_value_once(
    ray_cluster, data, small_chunks, tmp_path
):
    log = tmp_path / "loads.txt"
    rules = {"PRE001": {"log": str(log)}}
    local = audit(data, select=SELECT, batch_size=30, rules=rules, extra_rules=RULES)
    _prepass_rules.DUMPS["count"] = 0
    remote = audit(data, select=SELECT, batch_size=30, engine="ray", rules=rules, extra_rules=RULES)
    assert _body(remote) == _body(local)
    assert remote.result("PRE001")["details"]["seen"] == [True]
    assert _prepass_rules.DUMPS["count"] == 1  # the driver put it in the object store once
    pids = log.read_text().split()
    assert pids and len(set(pids)) == len(pids)  # each Ray worker process loaded it once
    assert "prepass" in remote.to_dict()["timings"]["stages"]


@pytest.mark.slow
def test_a_prepass_that_raises_on_ray_is_its_rules_error(ray_cluster, data, small_chunks):
    report = audit(
        data,
        select=[*SELECT, "PRE003"],
        rules={"PRE003": {"where": "prepass_merge"}},
        engine="ray",
        batch_size=30,
        extra_rules=[*RULES, PrepassRaises],
    )
    _only_its_rules_error(
        report, "PRE003", "RuntimeError: boom in prepass_merge (at _prepass_rules.py:", data
    )


@pytest.mark.slow
def test_a_worker_that_dies_in_the_prepass_stops_the_scan_with_a_reason(data, small_chunks):
    from tests.engine._prepass_rules import PrepassDiesInWorker

    report = audit(
        data,
        select=["PRE004", "TXT001"],
        workers=2,
        batch_size=30,
        extra_rules=[PrepassDiesInWorker],
    )
    for code in ("PRE004", "TXT001"):
        result = report.result(code)
        assert result["status"] == "error"
        assert "a worker process died during the prepass (test rows" in result["message"]
    assert not report.passed


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["workers", "ray"])
def test_a_value_that_cannot_be_sent_is_its_rules_error(data, small_chunks, engine, request):
    from tests.engine._prepass_rules import UnsendableValue

    run = {"workers": 2} if engine == "workers" else {"engine": "ray"}
    if engine == "ray":
        request.getfixturevalue("ray_cluster")
    report = audit(
        data,
        select=[*SELECT, "PRE005"],
        batch_size=30,
        extra_rules=[*RULES, UnsendableValue],
        **run,
    )
    _only_its_rules_error(
        report, "PRE005", "the rule's prepass value cannot be sent to the workers", data
    )
    assert report.result("PRE002")["details"] == {"prepass": {"test": [150, True]}}

"""The JSON Lines reader's shortcuts give what the slow paths give."""

from __future__ import annotations

import json
import time

import pytest

from dataaudit.inputs.jsonl import _scalar_schema, jsonl_schema
from dataaudit.inputs.records import records_to_batch


@pytest.mark.parametrize(
    "rec",
    [
        {"text": "a", "label": 1, "score": 0.5, "ok": True, "note": None},
        {"text": "", "n": -(1 << 63), "m": (1 << 63) - 1},
        {},
    ],
)
def test_flat_first_record_schema_is_the_records_schema(tmp_path, rec):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(rec) + "\n" + json.dumps({"text": "later"}) + "\n")
    assert _scalar_schema(rec) is not None
    assert jsonl_schema(path)[0] == records_to_batch([rec]).schema


@pytest.mark.parametrize(
    "rec",
    [
        {"text": "a", "tags": ["x"]},
        {"text": {"nested": 1}},
        {"text": "a", "big": 1 << 63},
        {"t\u00e9xte": "a"},
    ],
)
def test_other_first_records_take_the_records_path(tmp_path, rec):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    assert _scalar_schema(rec) is None
    assert jsonl_schema(path)[0] == records_to_batch([rec]).schema


def _lines(n: int, bad_at: int | None = None) -> str:
    out = []
    for i in range(n):
        out.append("{not json" if i == bad_at else json.dumps({"text": f"row {i} " + "x" * 40}))
    return "\n".join(out) + "\n"


def _count_parses(monkeypatch) -> list[int]:
    import pyarrow.json as pj

    calls = []
    real = pj.read_json

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pj, "read_json", counted)
    return calls


@pytest.mark.parametrize("name", ["t.jsonl", "t.jsonl.gz"])
def test_the_first_block_is_parsed_once_for_peek_and_stream(tmp_path, monkeypatch, name):
    import gzip

    import dataaudit.inputs.jsonl as jsonl
    from dataaudit.corpus import load_corpus

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 32768)
    text = "\ufeff" + _lines(2000)  # a BOM, ~4 blocks of ~550 rows (the peek reads 256)
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    blocks = len(list(jsonl.iter_jsonl(path, 10_000)))  # one table per block here
    calls = _count_parses(monkeypatch)
    corpus = load_corpus(path)
    assert len(calls) == 1  # the peek
    texts = [t for _, rb in corpus.stream(64) for t in rb.column("text").to_pylist()]
    assert texts == [json.loads(line)["text"] for line in text[1:].splitlines()]
    assert len(calls) == blocks  # the stream did not parse the first block again
    assert not jsonl._PEEKED


def test_the_peek_reads_and_checks_the_first_block_only(tmp_path, monkeypatch):
    """The corpus peek stops after the first batch: the next block is neither read nor checked
    for it (on 8 MB blocks that was ~30 ms of a load); the stream then reads every block once."""
    import dataaudit.inputs.jsonl as jsonl
    from dataaudit.corpus import load_corpus

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 32768)
    path = tmp_path / "t.jsonl"
    path.write_text(_lines(2000))  # ~4 blocks of ~550 rows (the peek reads 2 batches of 256)
    checked = []
    real = jsonl._too_deep
    monkeypatch.setattr(jsonl, "_too_deep", lambda block: checked.append(1) or real(block))
    corpus = load_corpus(path)
    assert len(checked) == 1
    rows = sum(rb.num_rows for _, rb in corpus.stream(64))
    assert rows == 2000
    blocks = -(-path.stat().st_size // 32768)
    assert len(checked) in (blocks, blocks + 1)  # a block ends at a line's end: one more
    jsonl._PEEKED.clear()


def test_a_block_parsed_in_several_chunks_gives_full_batches(tmp_path):
    """A block of several MB (pyarrow's threads would parse it in 1 MB chunks) gives batches
    of batch_size rows but the last, not a short batch at every chunk's end, each paying
    every rule's per-batch cost."""
    import dataaudit.inputs.jsonl as jsonl

    path = tmp_path / "t.jsonl"
    path.write_text(_lines(60_000))  # ~3.5 MB: one block
    sizes = [rb.num_rows for rb in jsonl.iter_jsonl(path, 5000)]
    assert sizes == [5000] * 12
    jsonl._PEEKED.clear()


def test_a_peeked_block_is_not_reused_for_a_changed_file(tmp_path, monkeypatch):
    import dataaudit.inputs.jsonl as jsonl

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 4096)
    path = tmp_path / "t.jsonl"
    path.write_text(_lines(300))
    batches = jsonl.iter_jsonl(path, 8)
    next(batches)
    batches.close()  # stopped early: its first block is kept
    assert jsonl._PEEKED
    path.write_text(_lines(301))
    rows = sum(rb.num_rows for rb in jsonl.iter_jsonl(path, 100))
    assert rows == 301
    jsonl._PEEKED.clear()


def test_a_bad_line_after_a_peeked_block_is_named_by_its_line(tmp_path, monkeypatch):
    import dataaudit.inputs.jsonl as jsonl
    from dataaudit.corpus import load_corpus
    from dataaudit.errors import InputError

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 4096)
    path = tmp_path / "t.jsonl"
    path.write_text(_lines(300, bad_at=250))
    corpus = load_corpus(path)
    assert jsonl._PEEKED
    with pytest.raises(InputError, match=r"t\.jsonl:251: not valid JSON"):
        for _ in corpus.stream(64):
            pass


def test_blocks_parsed_ahead_read_as_one_after_another(tmp_path, monkeypatch):
    """The next block is parsed in a thread while this one is read: values, columns, skipped
    lines and their order are those of reading the blocks in turn."""
    import dataaudit.inputs.jsonl as jsonl
    from dataaudit.inputs.notes import InputLog

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 2048)
    lines = []
    for i in range(600):
        rec = {"text": f"row {i} " + "y" * (i % 50)}
        if i >= 400:
            rec["late"] = i  # a column from the ~14th block on
        lines.append(json.dumps(rec))
    lines[150] = '{"text": 7}'  # pyarrow rejects its block: read by Python, kept as text
    lines[300] = "{broken"  # a bad line, skipped and noted
    lines[450] = "[" * 300 + "]" * 300  # too deep for pyarrow
    lines.insert(200, "")
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    log = InputLog()
    batches = list(jsonl.iter_jsonl(path, 50, on_bad_lines="skip", log=log))
    texts = [t for rb in batches for t in rb.column("text").to_pylist()]
    kept = [json.loads(x) for x in lines if x.startswith('{"')]
    assert texts == [str(r["text"]) for r in kept]
    late = [v for rb in batches if "late" in rb.schema.names for v in rb.column("late").to_pylist()]
    assert [v for v in late if v is not None] == [r["late"] for r in kept if "late" in r]
    places = [p for note in log.notes for p in note.places]
    assert [p.split(":")[1] for p in places] == ["302", "452"]  # file order, 1-based lines


def test_the_stream_after_a_peek_parses_the_next_blocks_while_the_first_is_read(
    tmp_path, monkeypatch
):
    """Resumed after the corpus peek, the stream hands the next READ_AHEAD blocks to its
    parser before it yields the first block's batches, so that their parse runs while the rules
    read them (it used to run after them, on the scan's thread); none is parsed twice."""
    import dataaudit.inputs.jsonl as jsonl
    from dataaudit.corpus import load_corpus

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 32768)
    path = tmp_path / "t.jsonl"
    path.write_text(_lines(3000))  # ~6 blocks of ~550 rows
    blocks = len(list(jsonl.iter_jsonl(path, 10_000)))  # one table per block here
    calls = _count_parses(monkeypatch)
    corpus = load_corpus(path)
    assert len(calls) == 1  # the peek's
    stream = corpus.stream(64)
    next(stream)  # the first block's first batch
    for _ in range(200):  # the parse runs on the reader's thread: wait for it briefly
        if len(calls) >= 1 + jsonl.READ_AHEAD:
            break
        time.sleep(0.01)
    time.sleep(0.05)
    assert len(calls) == 1 + jsonl.READ_AHEAD  # and no more until the rules read on
    assert sum(rb.num_rows for _, rb in stream) == 3000 - 64
    assert len(calls) == blocks  # each block parsed once


def test_the_reader_goes_on_while_the_rules_read_a_block(tmp_path, monkeypatch):
    """READ_AHEAD blocks wait on the reader behind the one the rules read: a reader done with
    the next block early parses the one after it, instead of idling until the rules ask for
    the next (on two cores its parse fills the time the scan's thread works alone)."""
    import threading

    import dataaudit.inputs.jsonl as jsonl

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(jsonl, "_cores_free", lambda: False)  # a reader at the scan's priority
    path = tmp_path / "t.jsonl"
    path.write_text(_lines(600))
    parsed = []
    real = jsonl._check_and_parse

    def spy(block, schema):
        out = real(block, schema)
        parsed.append(threading.current_thread().name)
        return out

    monkeypatch.setattr(jsonl, "_check_and_parse", spy)
    batches = jsonl.iter_jsonl(path, 1000)  # one batch per block
    first = next(batches).num_rows  # the first block, parsed here
    first += next(batches).num_rows  # the second: the rules read it now
    for _ in range(200):
        if len(parsed) >= 2 + jsonl.READ_AHEAD:
            break
        time.sleep(0.01)
    assert len(parsed) == 2 + jsonl.READ_AHEAD  # the blocks after it are parsed already
    here = threading.current_thread().name
    assert parsed[:2] == [here, here]  # nothing runs beside them: parsed on this thread
    assert all(name.startswith("dataaudit-jsonl") for name in parsed[2:])
    assert sum(rb.num_rows for rb in batches) == 600 - first


@pytest.mark.parametrize(
    "at", [3, 150, 399]
)  # the first block, one checked on the thread, the last
def test_a_late_block_is_checked_on_the_reader_thread_with_its_line(tmp_path, monkeypatch, at):
    """Blocks after the first are checked for UTF-8 and nesting on the reader's thread, while
    the block before is read; the messages still name the file's line, and a deep line is
    still kept from pyarrow and reported."""
    import dataaudit.inputs.jsonl as jsonl
    from dataaudit.errors import InputError

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 4096)  # ~60 lines a block
    lines = _lines(400).splitlines()
    path = tmp_path / "t.jsonl"
    bad = lines.copy()
    bad[at] = '{"text": "caf\xe9"}'  # latin-1, not UTF-8
    path.write_bytes("\n".join(bad).encode("latin-1") + b"\n")
    with pytest.raises(InputError, match=rf"t.jsonl:{at + 1}: not valid UTF-8 \(byte 0xe9\)"):
        list(jsonl.iter_jsonl(path, 64))
    deep = lines.copy()
    deep[at] = '{"text": ' + "[" * (jsonl.MAX_DEPTH + 1) + "]" * (jsonl.MAX_DEPTH + 1) + "}"
    path.write_text("\n".join(deep) + "\n")
    with pytest.raises(InputError, match=rf"t.jsonl:{at + 1}: nested {jsonl.MAX_DEPTH + 2} levels"):
        list(jsonl.iter_jsonl(path, 64))
    texts = [
        t for rb in jsonl.iter_jsonl(path, 64, on_bad_lines="skip") for t in rb["text"].to_pylist()
    ]
    assert texts == [json.loads(line)["text"] for i, line in enumerate(lines) if i != at]


def test_blocks_after_the_first_are_checked_off_the_scans_thread(tmp_path, monkeypatch):
    """After the corpus peek, every block is checked and parsed on the reader's thread."""
    import threading

    import dataaudit.inputs.jsonl as jsonl

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 4096)
    path = tmp_path / "t.jsonl"
    path.write_text(_lines(400))
    where = []
    real = jsonl._too_deep
    monkeypatch.setattr(
        jsonl, "_too_deep", lambda b: where.append(threading.current_thread().name) or real(b)
    )
    from dataaudit.corpus import load_corpus

    corpus = load_corpus(path)  # the peek, here (its first batch takes a few small blocks)
    peeked = len(where)
    assert sum(rb.num_rows for _, rb in corpus.stream(64)) == 400
    assert where[0] == threading.current_thread().name and len(where) > peeked + 3
    assert all(name.startswith("dataaudit-jsonl") for name in where[peeked:])


def test_the_reader_runs_below_the_scan_only_while_the_cores_are_free(tmp_path, monkeypatch):
    """The next block is parsed at a lower priority than the scan (it then runs in the gaps
    between the scan's threads), unless other work already keeps the cores busy."""
    import os
    import sys
    import threading

    import dataaudit.inputs.jsonl as jsonl

    if not sys.platform.startswith("linux"):
        pytest.skip("per-thread nice values are Linux's")
    load = tmp_path / "loadavg"
    load.write_text("0.50 0.40 0.30 1/200 999\n")
    assert jsonl._cores_free(str(load))
    load.write_text(f"3.00 2.00 1.00 {(os.cpu_count() or 1) + 2}/200 999\n")
    assert not jsonl._cores_free(str(load)) and not jsonl._cores_free(str(tmp_path / "none"))
    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 4096)
    path = tmp_path / "t.jsonl"
    path.write_text(_lines(400))
    real = jsonl._too_deep
    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())  # CI may run niced
    for free, nice in ((True, jsonl.READER_NICE), (False, base)):
        monkeypatch.setattr(jsonl, "_cores_free", lambda free=free: free)
        seen = []

        def spy(block, seen=seen):
            if threading.current_thread().name.startswith("dataaudit-jsonl"):
                seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
            return real(block)

        monkeypatch.setattr(jsonl, "_too_deep", spy)
        assert sum(rb.num_rows for rb in jsonl.iter_jsonl(path, 64)) == 400
        assert seen and set(seen) == {nice}


def test_a_lowered_reader_that_lags_is_given_up(tmp_path, monkeypatch):
    """Other work may keep a lowered reader from the cores: a block it has not parsed within
    READER_PATIENCE is parsed by the scan's thread, and the next go to a reader at the scan's
    priority; every row is read once, in order."""
    import threading
    import time

    import dataaudit.inputs.jsonl as jsonl

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(jsonl, "_cores_free", lambda: True)
    monkeypatch.setattr(jsonl, "READER_PATIENCE", 0.05)
    path = tmp_path / "t.jsonl"
    text = _lines(400)
    path.write_text(text)
    real = jsonl._check_and_parse
    where = []

    def starved(block, schema):
        name = threading.current_thread().name
        where.append(name)
        if name.startswith("dataaudit-jsonl") and len(where) < 3:
            time.sleep(0.3)  # kept from the cores
        return real(block, schema)

    monkeypatch.setattr(jsonl, "_check_and_parse", starved)
    texts = [t for rb in jsonl.iter_jsonl(path, 64) for t in rb["text"].to_pylist()]
    assert texts == [json.loads(line)["text"] for line in text.splitlines()]
    assert "MainThread" in where  # the late block, parsed by the scan's thread
    assert len(where) > 4 and where[-1].startswith("dataaudit-jsonl")  # then a new reader


def test_the_depth_bound_ignores_the_kernels_module_while_it_is_imported(monkeypatch):
    """The reader's thread asks whether the compiled kernels run while the scan's thread may be
    importing their module: a module still being initialized (no ``running`` yet) means no,
    not an AttributeError (it failed an audit once, as an internal error)."""
    import importlib.machinery
    import sys
    import types

    import dataaudit.inputs.jsonl as jsonl

    half = types.ModuleType("dataaudit.sketches.native")
    half.__spec__ = importlib.machinery.ModuleSpec("dataaudit.sketches.native", None)
    half.__spec__._initializing = True
    monkeypatch.setitem(sys.modules, "dataaudit.sketches.native", half)
    block = b'{"text": "a"}\n{"text": [[1]]}\n'
    assert jsonl._line_opens(block) is None
    assert jsonl._too_deep(block) == ([], 2)


class _Trickle:
    """A stream whose reads return at most 7 bytes (pipes and decompressors may return less
    than asked for)."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def readinto(self, view) -> int:
        n = min(7, len(view), len(self.data) - self.at)
        view[:n] = self.data[self.at : self.at + n]
        self.at += n
        return n


def test_a_block_is_read_into_place_after_the_tail_whatever_the_reads_return():
    from dataaudit.inputs.jsonl import _read_block

    stream = _Trickle(b"0123456789" * 5)
    block, got = _read_block(stream, b"tail:", 23)
    assert (bytes(block), got) == (b"tail:" + (b"0123456789" * 3)[:23], 23)
    block, got = _read_block(stream, b"", 100)  # the rest: fewer than asked for
    assert (bytes(block), got) == ((b"0123456789" * 5)[23:], 27)
    block, got = _read_block(stream, b"end", 100)
    assert (bytes(block), got) == (b"end", 0)


@pytest.mark.parametrize("name", ["t.jsonl", "t.jsonl.gz"])
def test_lines_longer_than_a_block_and_a_bom_read_whole(tmp_path, name):
    """Blocks are read into buffers and cut in place at their last newline: a line longer
    than a block is carried whole to the next, the BOM is dropped, every row comes once."""
    import gzip

    import dataaudit.inputs.jsonl as jsonl

    rows = [{"text": f"row {i} " + "y" * (5000 if i % 7 == 3 else 30)} for i in range(300)]
    text = "\ufeff" + "".join(json.dumps(r) + "\n" for r in rows)
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    got = [t for rb in jsonl.iter_jsonl(path, 64, block_bytes=4096) for t in rb["text"].to_pylist()]
    assert got == [r["text"] for r in rows]
    jsonl._PEEKED.clear()


def test_the_first_block_is_smaller_and_types_the_columns(tmp_path, monkeypatch):
    """A file's first block (read and parsed before the scan, alone on the machine) is
    FIRST_BLOCK_BYTES, the next ones BLOCK_BYTES; a file larger than the first block is not
    read in one block, so its first batch may not have every column."""
    import dataaudit.inputs.jsonl as jsonl

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 32768)
    monkeypatch.setattr(jsonl, "FIRST_BLOCK_BYTES", 8192)
    path = tmp_path / "t.jsonl"
    path.write_text(_lines(1000))  # ~54 KB
    sizes = []
    real = jsonl._too_deep
    monkeypatch.setattr(jsonl, "_too_deep", lambda block: sizes.append(len(block)) or real(block))
    rows = sum(rb.num_rows for rb in jsonl.iter_jsonl(path, 64))
    assert rows == 1000
    assert 8192 - 60 < sizes[0] <= 8192 and all(32768 - 60 < n <= 32768 for n in sizes[1:-1])
    assert sum(sizes) == path.stat().st_size
    assert not jsonl.read_in_one_block(path)
    small = tmp_path / "s.jsonl"
    small.write_text(_lines(100))  # ~5 KB
    assert jsonl.read_in_one_block(small)
    jsonl._PEEKED.clear()


def test_a_float_after_a_block_typed_int_keeps_its_value(tmp_path, monkeypatch):
    """The first block types "score" int64; a later block's 1.5 makes pyarrow reject that block,
    and Python's reader must not squeeze it into the int schema (pyarrow truncates floats given
    for an integer type, at any depth: 1.5 -> 1)."""
    import dataaudit.inputs.jsonl as jsonl
    from dataaudit.inputs.records import records_to_batch

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 2048)
    monkeypatch.setattr(jsonl, "FIRST_BLOCK_BYTES", 2048)
    rows = [{"text": f"row {i} words", "score": i, "tags": [i]} for i in range(60)]
    rows += [{"text": f"later {i}", "score": i + 0.5, "tags": [i + 0.25]} for i in range(60)]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = [r for rb in jsonl.iter_jsonl(path, 50) for r in rb.to_pylist()]
    assert [(g["score"], g["tags"]) for g in got] == [(r["score"], r["tags"]) for r in rows]
    int_schema = records_to_batch([{"score": 1, "tags": [1]}]).schema
    batch = records_to_batch([{"score": 1.5, "tags": [2.5]}], int_schema)
    assert batch.to_pylist() == [{"score": 1.5, "tags": [2.5]}]
    assert records_to_batch([{"score": 2, "tags": [3]}], int_schema).schema == int_schema
    jsonl._PEEKED.clear()

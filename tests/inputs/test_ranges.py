"""Byte ranges of a JSON Lines file read exactly as the whole file reads: same batches, same
types (pyarrow's schema from the first block carries over where the values fit it), same
bad-line notes and numbers."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from dataaudit.errors import InputError
from dataaudit.inputs.jsonl import iter_jsonl
from dataaudit.inputs.notes import InputLog
from dataaudit.inputs.ranges import RangePath, block_ends

BLOCK = 512


@pytest.fixture
def messy(tmp_path):
    """Lines of many lengths (one longer than a block), an int column that later holds
    floats, bad lines, blank lines, no final newline."""
    lines = []
    for i in range(400):
        if i % 97 == 50:
            lines.append("{broken")
        elif i % 61 == 7:
            lines.append("")
        else:
            score = i if i < 200 else i + 0.5
            lines.append(json.dumps({"text": "w" * (i % 37) * (40 if i == 123 else 1), "n": score}))
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode())
    return path


def _whole(path, log):
    return list(iter_jsonl(path, 16, block_bytes=BLOCK, on_bad_lines="skip", log=log))


def _same_batches(a: list[pa.RecordBatch], b: list[pa.RecordBatch]) -> bool:
    """Batch by batch: the blocks Python's reader took keep their own types (floats after a
    first block typed int are not cut to ints), so the batches need not share one schema."""
    return len(a) == len(b) and all(x.equals(y) for x, y in zip(a, b))


def test_block_ends_are_where_the_reader_cuts(messy):
    data = messy.read_bytes()
    ends = block_ends(messy, len(data), BLOCK)
    assert ends[-1] == len(data) and ends == sorted(set(ends))
    for end in ends[:-1]:
        assert data[end - 1 : end] == b"\n"
    # a chunk whose last newline is the cut: no newline between the cut and the chunk's end
    for end in ends[:-1]:
        chunk_end = min((end - 1) // BLOCK * BLOCK + BLOCK, len(data))
        assert b"\n" not in data[end:chunk_end]


@pytest.mark.parametrize("per_range", [1, 2, 5])
def test_ranges_read_as_the_whole_file(messy, per_range):
    whole_log = InputLog()
    whole = _whole(messy, whole_log)
    data = messy.read_bytes()
    ends = [0, *block_ends(messy, len(data), BLOCK)]
    log, tables, schema, line = InputLog(), [], None, 0
    for k in range(0, len(ends) - 1, per_range):
        where = RangePath(messy, ends[k : k + per_range + 1])
        reader = iter_jsonl(where, 16, on_bad_lines="skip", log=log, first_line=line, schema=schema)
        while True:
            try:
                tables.append(next(reader))
            except StopIteration as stop:
                schema = stop.value
                break
        line += where.newlines
    assert line == data.count(b"\n")
    assert _same_batches(tables, whole)
    assert 250.5 in [n for b in whole for n in b.column("n").to_pylist()]  # not cut to 250
    assert [n.to_dict() for n in log.notes] == [n.to_dict() for n in whole_log.notes]
    assert whole_log.notes[0].count == 4 and "m.jsonl:51" in whole_log.notes[0].places[0]


def test_a_bad_line_in_a_later_range_has_its_file_line(messy):
    data = messy.read_bytes()
    ends = [0, *block_ends(messy, len(data), BLOCK)]
    k = next(i for i in range(len(ends) - 1) if b"{broken" in data[ends[i] : ends[i + 1]])
    assert k > 0
    first_line = data[: ends[k]].count(b"\n")
    with pytest.raises(InputError, match=r"m\.jsonl:51: not valid JSON"):
        list(iter_jsonl(RangePath(messy, ends[k : k + 2]), 16, first_line=first_line))


def test_ranges_of_a_remote_file_read_through_fsspec(messy):
    """A URL's ranges: the window reads and the blocks are fsspec seeks and reads."""
    upath = pytest.importorskip("upath")
    remote = upath.UPath("memory://ranges-bucket/m.jsonl")
    remote.write_bytes(messy.read_bytes())
    try:
        size = remote.stat().st_size
        ends = block_ends(remote, size, BLOCK)
        assert ends == block_ends(messy, size, BLOCK)
        k = len(ends) // 2
        lines = messy.read_bytes()[: ends[k - 1]].count(b"\n")
        far = RangePath(remote, ends[k - 1 : k + 1])
        near = RangePath(messy, ends[k - 1 : k + 1])
        got = list(iter_jsonl(far, 16, first_line=lines, on_bad_lines="skip"))
        want = list(iter_jsonl(near, 16, first_line=lines, on_bad_lines="skip"))
        assert got and [b.to_pylist() for b in got] == [b.to_pylist() for b in want]
        assert far.newlines == near.newlines > 0 and str(far) == "memory://ranges-bucket/m.jsonl"
    finally:
        remote.fs.rm("/ranges-bucket", recursive=True)

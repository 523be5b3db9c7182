"""One atomic text writer (dataaudit/_io.py): whole texts and streamed pieces give the same
bytes, lone surrogates become U+FFFD wherever a slice cuts, and a failed stream leaves nothing."""

from __future__ import annotations

import pytest

from dataaudit import _io
from dataaudit._io import atomic_write_pieces, atomic_write_text

# a lone surrogate on each side of the first slice's end, non-ASCII around them
_PIECES = ["{\n", "é" * (_io._SLICE - 1) + "\ud800" + "\udc80x", "", "日本\n"]


def test_pieces_are_written_as_their_text(tmp_path):
    atomic_write_pieces(tmp_path / "p.txt", iter(_PIECES))
    atomic_write_text(tmp_path / "t.txt", "".join(_PIECES))
    got = (tmp_path / "p.txt").read_bytes()
    assert got == (tmp_path / "t.txt").read_bytes()
    want = "".join(_PIECES).replace("\ud800", "\ufffd").replace("\udc80", "\ufffd")
    assert got == want.encode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.txt", "t.txt"]


def test_pieces_to_stdout(capsys):
    atomic_write_pieces("-", ["a\ud800", "b\n"])
    assert capsys.readouterr().out == "a\ufffdb\n"


def test_a_failing_stream_leaves_the_old_file_and_no_temporary_file(tmp_path):
    path = tmp_path / "report.json"
    path.write_text("old")

    def pieces():
        yield "x" * (3 * _io._SLICE)  # written to the temporary file before the failure
        raise RuntimeError("the report failed half way")

    with pytest.raises(RuntimeError, match="half way"):
        atomic_write_pieces(path, pieces())
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]

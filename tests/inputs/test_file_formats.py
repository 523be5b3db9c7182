"""Every file format a user may hand over: compressed JSON Lines, text, standard input."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pyarrow as pa
import pytest

from dataaudit import audit

ROWS = [{"text": f"The river rose {i} inches overnight near the old mill."} for i in range(12)]


@pytest.mark.parametrize("codec", ["gzip", "zstd", "bz2"])
def test_compressed_json_lines(tmp_path, codec):
    suffix = {"gzip": ".gz", "zstd": ".zst", "bz2": ".bz2"}[codec]
    path = tmp_path / f"train.jsonl{suffix}"
    data = "".join(json.dumps(r) + "\n" for r in ROWS).encode()
    with pa.output_stream(str(path), compression=codec) as out:
        out.write(data)
    report = audit(path, select=["DUP001"])
    assert report.data["dataset"]["splits"]["train"]["rows"] == 12


def test_gzip_csv(tmp_path):
    path = tmp_path / "train.csv.gz"
    path.write_bytes(gzip.compress(b"text\n" + b"".join(r["text"].encode() + b"\n" for r in ROWS)))
    assert audit(path, select=["TXT001"]).data["dataset"]["splits"]["train"]["rows"] == 12


def test_text_file_is_one_document_per_line(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("first document\nsecond document\n\nfourth document\n")
    report = audit(path, select=["TXT001"])
    assert report.data["dataset"]["splits"]["train"]["rows"] == 4
    assert report.metric("TXT001", "empty_text_rows", "train") == 1


def test_folder_of_text_files_is_one_document_per_file(tmp_path):
    for i in range(3):
        (tmp_path / f"doc{i}.txt").write_text(f"Document {i}.\nIt has two lines.\n")
    (tmp_path / "doc3.txt").write_text("Document 0.\nIt has two lines.\n")  # a copy of doc0
    report = audit(tmp_path, select=["DUP001"])
    assert report.data["dataset"]["splits"]["train"]["rows"] == 4
    assert report.status("DUP001") == "warn"


def test_split_named_text_files_are_lines(tmp_path):
    (tmp_path / "train.txt").write_text("a\nb\nc\n")
    (tmp_path / "test.txt").write_text("d\n")
    splits = audit(tmp_path, select=["TXT001"]).data["dataset"]["splits"]
    assert {n: s["rows"] for n, s in splits.items()} == {"train": 3, "test": 1}


@pytest.mark.slow
def test_standard_input(tmp_path):
    data = "".join(json.dumps(r) + "\n" for r in ROWS)
    cli = [sys.executable, "-m", "dataaudit.cli", "audit", "-", "--select", "TXT001"]
    out = subprocess.run(cli, input=data, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "train (train): 12 rows" in out.stdout
    bad = subprocess.run(cli, input="hello\n", capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "standard input must be JSON Lines" in bad.stderr

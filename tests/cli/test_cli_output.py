"""Report outputs: checked before the scan, never over the data, stdout with ``-``, no temp files
left behind by a signal, flags written in the format their extension names."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import polars as pl
import pytest

import dataaudit.api
from dataaudit.cli import main
from dataaudit.report.flags import FLAG_COLUMNS

ROWS = '{"text": "a good row"}\n{"text": ""}\n{"text": "another good row"}\n'


@pytest.fixture()
def data(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text(ROWS)
    return path


@pytest.fixture()
def no_scan(monkeypatch):
    """The audit must not start: an output problem is found before any data is read."""

    def scanned(*a, **k):
        raise AssertionError("the audit ran before the outputs were checked")

    monkeypatch.setattr(dataaudit.api, "audit", scanned)


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err
    return err


# -- never over the data ---------------------------------------------------------------------------
@pytest.mark.parametrize("option", ["--json", "--html", "--flags", "--junit"])
def test_output_at_the_input_file_is_refused(data, capsys, no_scan, option):
    assert main(["audit", str(data), option, str(data), "-q"]) == 2
    assert f"{option} {data}: it is the input" in _err(capsys)
    assert data.read_text() == ROWS


def test_output_at_the_input_through_another_spelling(data, tmp_path, capsys, no_scan, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    link = tmp_path / "alias.jsonl"
    link.symlink_to(data)
    assert main(["audit", "train.jsonl", "--json", "sub/../train.jsonl", "-q"]) == 2
    assert main(["audit", "train.jsonl", "--json", str(link), "-q"]) == 2
    assert data.read_text() == ROWS


def test_output_inside_an_input_folder_with_a_data_extension(tmp_path, capsys, no_scan):
    folder = tmp_path / "data"
    (folder / "nested").mkdir(parents=True)
    (folder / "train.jsonl").write_text(ROWS)
    for out in (folder / "report.json", folder / "nested" / "flags.parquet"):
        opt = "--flags" if out.suffix == ".parquet" else "--json"
        assert main(["audit", str(folder), opt, str(out), "-q"]) == 2
        assert "inside the input folder" in _err(capsys)
        assert not out.exists()


def test_output_inside_an_input_folder_that_is_not_data_is_fine(tmp_path, capsys):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "train.jsonl").write_text(ROWS)
    html, hidden = folder / "report.html", folder / ".report.json"
    assert main(["audit", str(folder), "--html", str(html), "--json", str(hidden), "-q"]) == 0
    assert html.is_file() and json.loads(hidden.read_text())["passed"] is True


def test_output_matched_by_an_input_glob_or_at_a_reference(tmp_path, capsys, no_scan):
    (tmp_path / "train.jsonl").write_text(ROWS)
    (tmp_path / "test.jsonl").write_text(ROWS)
    pattern = str(tmp_path / "*.jsonl")
    assert main(["audit", pattern, "--json", str(tmp_path / "test.jsonl"), "-q"]) == 2
    assert "input pattern" in _err(capsys)
    bench = tmp_path / "bench.jsonl"
    bench.write_text(ROWS)
    args = ["audit", str(tmp_path / "train.jsonl"), "--contamination-ref", str(bench)]
    assert main([*args, "--html", str(bench), "-q"]) == 2
    assert main(["audit", str(tmp_path / "train.jsonl"), "--reference", str(tmp_path),
                 "--json", str(tmp_path / "r.json"), "-q"]) == 2  # fmt: skip
    assert bench.read_text() == ROWS


def test_two_outputs_at_one_path_are_refused(data, tmp_path, capsys, no_scan):
    out = tmp_path / "r.out"
    assert main(["audit", str(data), "--json", str(out), "--html", str(out), "-q"]) == 2
    assert "--json and --html both write" in _err(capsys)


# -- writable before the scan ----------------------------------------------------------------------
def test_a_folder_as_the_report_path(data, tmp_path, capsys, no_scan):
    assert main(["audit", str(data), "--json", str(tmp_path), "-q"]) == 2
    assert f"--json {tmp_path}: is a folder; give a file path, e.g." in _err(capsys)


def test_a_parent_that_cannot_be_created(data, tmp_path, capsys, no_scan):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("x")
    assert main(["audit", str(data), "--html", str(blocker / "sub" / "r.html"), "-q"]) == 2
    assert f"{blocker} is a file, so the folder" in _err(capsys)


def test_a_read_only_folder(data, tmp_path, capsys, no_scan):
    if os.geteuid() == 0:  # root writes through permission bits; /sys refuses everyone
        folder = Path("/sys")
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
    assert main(["audit", str(data), "--junit", str(folder / "junit.xml"), "-q"]) == 2
    err = _err(capsys)
    assert f"cannot write in the folder {folder}" in err and "choose a writable folder" in err


def test_a_missing_parent_is_created(data, tmp_path):
    out = tmp_path / "a" / "b" / "report.json"
    assert main(["audit", str(data), "--json", str(out), "-q"]) == 0
    assert json.loads(out.read_text())["passed"] is True


def test_a_write_that_fails_after_the_scan_is_exit_2_and_the_others_are_written(
    data, tmp_path, capsys, monkeypatch
):
    from dataaudit.report.model import Report

    def full(self, path=None, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Report, "write_json", full)  # how the CLI writes --json
    html = tmp_path / "r.html"
    assert main(["audit", str(data), "--json", str(tmp_path / "r.json"), "--html", str(html)]) == 2
    err = capsys.readouterr().err
    assert "--json" in err and "No space left on device" in err and "incomplete" in err
    assert html.is_file()


# -- stdout and special files ----------------------------------------------------------------------
def test_dash_writes_the_report_to_stdout_and_the_summary_to_stderr(data, capsys):
    assert main(["audit", str(data), "--json", "-", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["summary"]["rules"] > 0  # stdout is one JSON document
    assert "gate PASSED" in err


def test_dash_for_flags_is_csv_and_only_one_output_on_stdout(data, capsys):
    assert main(["audit", str(data), "--flags", "-", "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ",".join(FLAG_COLUMNS) and any(",TXT001," in x for x in lines)
    assert main(["audit", str(data), "--json", "-", "--html", "-"]) == 2
    assert "only one output can go to stdout" in _err(capsys)


@pytest.mark.slow
def test_dev_stdout_is_written_directly(data):
    out = subprocess.run(
        [sys.executable, "-m", "dataaudit.cli", "audit", str(data), "--json", "/dev/stdout", "-q"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["passed"] is True


@pytest.mark.slow
def test_dev_stdout_redirected_to_a_file_stays_a_link(data, tmp_path):
    target = tmp_path / "out.json"
    with target.open("w") as stdout:
        out = subprocess.run(
            [sys.executable, "-m", "dataaudit.cli", "audit", str(data), "--json", "/dev/stdout"],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert out.returncode == 0, out.stderr
    assert os.path.islink("/dev/stdout")  # not replaced by a renamed temporary file
    assert json.loads(target.read_text())["passed"] is True  # the summary went to stderr
    assert "gate PASSED" in out.stderr


def test_a_symlinked_report_is_replaced_through_the_link(data, tmp_path):
    real = tmp_path / "reports" / "r.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    assert main(["audit", str(data), "--json", str(link), "-q"]) == 0
    assert link.is_symlink() and json.loads(real.read_text())["passed"] is True


def test_a_fifo_is_written_directly(data, tmp_path):
    fifo = tmp_path / "report.pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    assert main(["audit", str(data), "--html", str(fifo), "-q"]) == 0
    reader.join(10)
    assert got and got[0].lower().startswith("<!doctype html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.pipe", "train.jsonl"]


# -- flags by extension ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "read"),
    [
        ("f.parquet", pl.read_parquet),
        ("f.pq", pl.read_parquet),
        ("f.csv", pl.read_csv),
        ("f.jsonl", pl.read_ndjson),
    ],
)
def test_flags_are_written_in_the_format_of_their_extension(data, tmp_path, name, read):
    path = tmp_path / name
    assert main(["audit", str(data), "--flags", str(path), "-q"]) == 0
    frame = read(path)
    assert frame.columns == list(FLAG_COLUMNS)
    assert ("train", 1, "TXT001") in set(frame.select("split", "row", "code").iter_rows())


def test_flags_with_an_unknown_extension_fail_before_the_scan(data, tmp_path, capsys, no_scan):
    assert main(["audit", str(data), "--flags", str(tmp_path / "f.xlsx"), "-q"]) == 2
    err = _err(capsys)
    assert "unknown extension '.xlsx'" in err and ".parquet, .pq, .csv, .jsonl" in err


# -- interrupted writes ----------------------------------------------------------------------------
SLOW_WRITE = textwrap.dedent(
    """
    import pathlib, sys, time
    def slow(self, data, *a, **k):
        with open(self, "w") as f:
            f.write(data[:10])
        print("WRITING", file=sys.stderr, flush=True)
        time.sleep(60)
    pathlib.Path.write_text = slow
    from dataaudit._io import atomic_write
    from dataaudit.report import Report
    # --json is written piece by piece (Report.write_json), through atomic_write as well
    Report.write_json = lambda self, path, **k: atomic_write(path, lambda p: slow(p, "{" * 10))
    from dataaudit.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_the_write_leaves_no_temporary_file(data, tmp_path, sig):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_WRITE, "audit", str(data), "--json", str(out_dir / "r.json")],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        assert line.strip() == "WRITING"
        assert [p.name for p in out_dir.iterdir()][0].startswith(".r.json.")  # mid-write
        proc.send_signal(sig)
        proc.wait(30)
    finally:
        proc.kill()
    assert proc.returncode == (143 if sig == signal.SIGTERM else 130)
    assert list(out_dir.iterdir()) == []  # neither a partial report nor its temporary file


@pytest.mark.slow
def test_sigterm_in_a_subprocess_without_a_write_exits_143(tmp_path):
    script = textwrap.dedent(
        """
        import sys, time, dataaudit.api
        def slow(*a, **k):
            print("SCANNING", file=sys.stderr, flush=True)
            time.sleep(60)
        dataaudit.api.audit = slow
        from dataaudit.cli import main
        sys.exit(main(sys.argv[1:]))
        """
    )
    data = tmp_path / "train.jsonl"
    data.write_text(ROWS)
    proc = subprocess.Popen(
        [sys.executable, "-c", script, "audit", str(data)], stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr.readline().strip() == "SCANNING"
        time.sleep(0.1)
        proc.terminate()
        proc.wait(30)
    finally:
        proc.kill()
    assert proc.returncode == 143
    assert "terminated (SIGTERM)" in proc.stderr.read()

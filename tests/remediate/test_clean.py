"""`dataaudit clean`: audit → clean → re-audit on the bundled fixture shows the findings gone, the
benchmark untouched, each split in the input's format, and a manifest that adds up."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest

from dataaudit import audit
from dataaudit.cli import main
from dataaudit.remediate import MANIFEST_NAME
from tests import ROOT

FIXTURE = ROOT / "fixtures" / "classification"
FIXED = ("DUP001", "DUP002", "LEAK001")


def _statuses(report_path: Path) -> dict[str, str]:
    return {r["code"]: r["status"] for r in json.loads(report_path.read_text())["results"]}


@pytest.fixture(scope="module")
def fixture_report(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "r.json"
    assert main(["audit", str(FIXTURE), "--json", str(path), "-q"]) == 1  # planted leaks
    return path


def test_audit_clean_reaudit_on_the_fixture(fixture_report, tmp_path, capsys):
    out = tmp_path / "clean"
    code = main(
        ["clean", str(FIXTURE), "--report", str(fixture_report), "--out", str(out)]
        + ["--drop", "DUP,LEAK001", "--severity", "warn"]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert (
        "removed 23 of 900 rows (train: 23 of 600; validation: 0 of 150; test: 0 of 150)" in printed
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["train.jsonl", "validation.jsonl", "test.jsonl", MANIFEST_NAME]
    )
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask  # a normal folder, not a private temp
    # the benchmark stays intact, byte for byte; train keeps its lines, in order
    for split in ("validation", "test"):
        assert (out / f"{split}.jsonl").read_bytes() == (FIXTURE / f"{split}.jsonl").read_bytes()
    before = (FIXTURE / "train.jsonl").read_text().splitlines()
    after = (out / "train.jsonl").read_text().splitlines()
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    removed = {r["row"] for r in manifest["removed"]}
    assert after == [line for i, line in enumerate(before) if i not in removed]
    assert manifest["splits"]["train"] == {
        "file": "train.jsonl",
        "rows_in": 600,
        "rows_out": 577,
        "removed": 23,
    }
    assert manifest["selection"]["codes"] == list(FIXED)
    first = manifest["removed"][0]
    assert first["split"] == "train" and first["id"] == f"train-{first['row']:04d}"
    assert first["codes"] and all(r.split()[0] in FIXED for r in first["reasons"])
    leak = next(r for r in manifest["removed"] if r["row"] == 122)
    assert leak["reasons"] == ["LEAK001 error: exact copy of test row 74 (cluster test:74)"]
    # re-audit: the manifest is not read as data, and the findings are gone
    again = tmp_path / "again.json"
    main(["audit", str(out), "--json", str(again), "-q"])
    statuses = _statuses(again)
    assert all(statuses[c] == "pass" for c in FIXED), statuses
    data = json.loads(again.read_text())["dataset"]["splits"]
    assert {s: v["rows"] for s, v in data.items()} == {"train": 577, "validation": 150, "test": 150}
    original = json.loads(fixture_report.read_text())["dataset"]["splits"]
    assert data["test"]["content_hash"] == original["test"]["content_hash"]


def test_a_split_column_parquet_input(tmp_path):
    src = ROOT / "fixtures" / "classification.parquet"
    report = tmp_path / "r.json"
    main(["audit", str(src), "--split", "split", "--json", str(report), "-q"])
    out = tmp_path / "clean"
    assert main(["clean", str(src), "--report", str(report), "--out", str(out), "-q"]) == 0
    assert sorted(p.name for p in out.glob("*.parquet")) == [
        "test.parquet",
        "train.parquet",
        "validation.parquet",
    ]
    test = pl.read_parquet(out / "test.parquet")
    assert test.equals(pl.read_parquet(src).filter(pl.col("split") == "test"))
    again = audit(str(out))
    assert all(again.status(c) == "pass" for c in FIXED)


def _csv_copy(dst: Path, sep: str, ext: str) -> None:
    dst.mkdir()
    for split in ("train", "validation", "test"):
        frame = pl.read_ndjson(FIXTURE / f"{split}.jsonl").with_columns(
            pl.col("text").cast(pl.String)
        )
        if sep == "\t":  # a TSV has no quoting: no tabs or newlines in its values
            frame = frame.with_columns(pl.col("text").str.replace_all(r"[\t\r\n]", " "))
        quote = "never" if sep == "\t" else "necessary"
        frame.write_csv(dst / f"{split}{ext}", separator=sep, quote_style=quote)


@pytest.mark.parametrize(("sep", "ext"), [(",", ".csv"), ("\t", ".tsv")])
def test_csv_and_tsv_stay_csv_and_tsv(tmp_path, sep, ext):
    src = tmp_path / "data"
    _csv_copy(src, sep, ext)
    report = tmp_path / "r.json"
    main(["audit", str(src), "--json", str(report), "-q"])
    out = tmp_path / "clean"
    assert main(["clean", str(src), "--report", str(report), "--out", str(out), "-q"]) == 0
    quote = None if sep == "\t" else '"'
    train = pl.read_csv(out / f"train{ext}", separator=sep, infer_schema=False, quote_char=quote)
    assert train.columns == ["id", "text", "label", "source"]
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    assert train.height == manifest["splits"]["train"]["rows_out"] < 600
    again = audit(str(out))
    assert all(again.status(c) == "pass" for c in FIXED)


def test_compressed_json_lines_and_json_arrays(tmp_path):
    src = tmp_path / "data"
    src.mkdir()
    with gzip.open(src / "train.jsonl.gz", "wb") as fh:
        fh.write((FIXTURE / "train.jsonl").read_bytes())
    rows = [json.loads(line) for line in (FIXTURE / "test.jsonl").read_text().splitlines()]
    (src / "test.json").write_text(json.dumps(rows, indent=2))
    report = tmp_path / "r.json"
    main(["audit", str(src), "--json", str(report), "-q", "--select", "DUP,LEAK001"])
    out = tmp_path / "clean"
    assert main(["clean", str(src), "--report", str(report), "--out", str(out), "-q"]) == 0
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    assert manifest["splits"]["train"]["rows_out"] == 600 - 19  # no validation leaks here
    with gzip.open(out / "train.jsonl.gz", "rt") as fh:
        kept = fh.read().splitlines()
    removed = {r["row"] for r in manifest["removed"]}
    assert kept == [
        line
        for i, line in enumerate((FIXTURE / "train.jsonl").read_text().splitlines())
        if i not in removed
    ]
    assert json.loads((out / "test.json").read_text()) == rows
    again = audit(str(out), select=["DUP", "LEAK001"])
    assert all(again.status(c) == "pass" for c in FIXED)


def test_refusals_exit_2_and_leave_nothing_behind(fixture_report, tmp_path, capsys):
    def err(*args):
        assert main(["clean", *args]) == 2
        return capsys.readouterr().err

    inside = tmp_path / "data"
    shutil.copytree(FIXTURE, inside)
    msg = err(str(inside), "--report", str(fixture_report), "--out", str(inside / "clean"))
    assert "overlaps the input" in msg
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    assert "not empty" in err(str(FIXTURE), "--report", str(fixture_report), "--out", str(busy))
    (inside / "test.jsonl").write_text((FIXTURE / "test.jsonl").read_text().replace("a", "b", 1))
    out = tmp_path / "out"
    msg = err(str(inside), "--report", str(fixture_report), "--out", str(out))
    assert "split 'test' has the report's 150 rows, but not their content" in msg
    assert "matches no rule" in err(
        str(FIXTURE), "--report", str(fixture_report), "--out", str(out), "--drop", "DUPE"
    )
    old = json.loads(fixture_report.read_text())
    old.pop("flags")
    old["schema_version"] = "1.1"
    (tmp_path / "old.json").write_text(json.dumps(old))
    msg = err(str(FIXTURE), "--report", str(tmp_path / "old.json"), "--out", str(out))
    assert "does not store the row flags" in msg
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_copy_that_does_not_read_back_is_not_published(
    fixture_report, tmp_path, monkeypatch, capsys
):
    import dataaudit.remediate.copy as remediate_copy

    def copy_everything(paths, keep, fmt, on_bad, target):  # a bug: ignores what to drop
        target.write_bytes(b"".join(Path(p).read_bytes() for p in paths))

    monkeypatch.setattr(remediate_copy, "_copy_json_split", copy_everything)
    out = tmp_path / "clean"
    assert main(["clean", str(FIXTURE), "--report", str(fixture_report), "--out", str(out)]) == 2
    assert "does not read back as the rows it should keep" in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_explain_a_prefix_or_group_lists_its_rules(capsys):
    assert main(["explain", "DUP"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("DUP selects 2 rules:")
    assert "DUP001    duplicates.exact" in out and "DUP002    duplicates.near" in out
    assert main(["explain", "leakage"]) == 0
    assert "LEAK001" in capsys.readouterr().out
    assert main(["explain", "default"]) == 0
    assert "TXT001" in capsys.readouterr().out
    assert main(["explain", "DUP001"]) == 0  # one rule: its documentation, as before
    assert "What it does:" in capsys.readouterr().out
    assert main(["explain", "DUPLICATE"]) == 2
    assert "matches no rule" in capsys.readouterr().err


def test_arrow_zstd_json_lines_and_text_keep_their_format(tmp_path):
    import pyarrow as pa

    rows = [json.loads(line) for line in (FIXTURE / "train.jsonl").read_text().splitlines()]
    for r in rows:  # one type per Arrow column
        r["text"] = None if r["text"] is None else str(r["text"])
    src = tmp_path / "data"
    src.mkdir()
    table = pa.Table.from_pylist(rows)
    with pa.ipc.new_stream(str(src / "train.arrow"), table.schema) as writer:
        writer.write_table(table)
    with pa.CompressedOutputStream(str(src / "test.jsonl.zst"), "zstd") as fh:
        fh.write((FIXTURE / "test.jsonl").read_bytes())
    text = tmp_path / "text"
    text.mkdir()
    lines = [(r["text"] or "").replace("\n", " ") for r in rows]
    (text / "train.txt").write_text("\n".join(lines) + "\n")
    for data, names in ((src, ["test.jsonl.zst", "train.arrow"]), (text, ["train.txt"])):
        report, out = tmp_path / f"{data.name}.json", tmp_path / f"clean-{data.name}"
        main(["audit", str(data), "--json", str(report), "-q"])
        assert main(["clean", str(data), "--report", str(report), "--out", str(out), "-q"]) == 0
        assert sorted(p.name for p in out.iterdir()) == sorted([*names, MANIFEST_NAME])
        manifest = json.loads((out / MANIFEST_NAME).read_text())
        again = audit(str(out), select=["DUP", "LEAK001", "TXT001"])
        assert all(again.status(c) == "pass" for c in ("DUP001", "DUP002", "TXT001"))
        rows_out = {s: v["rows"] for s, v in again.data["dataset"]["splits"].items()}
        assert rows_out == {s: v["rows_out"] for s, v in manifest["splits"].items()}
    kept = pa.ipc.open_stream(str(tmp_path / "clean-data" / "train.arrow")).read_all()
    assert kept.schema == table.schema and kept.num_rows < 600
    with pa.input_stream(str(tmp_path / "clean-data" / "test.jsonl.zst"), compression="zstd") as fh:
        assert fh.read() == (FIXTURE / "test.jsonl").read_bytes()

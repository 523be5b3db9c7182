"""The gate never passes on data it did not read: every way the readers used to lose rows,
columns or values quietly, each with the input that showed it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit import audit
from dataaudit.corpus import load_corpus
from dataaudit.errors import InputError

SENTENCES = [
    "The committee postponed the vote until the budget figures were checked.",
    "Rain is expected across the northern valleys by the weekend.",
    "She repaired the bicycle chain with a borrowed set of pliers.",
    "The museum extended its opening hours for the summer exhibition.",
    "Our train was delayed because of a signal failure near the bridge.",
    "He wrote the report in plain language so everyone could follow it.",
]


def rows(n: int, label_from: int = 0) -> list[dict]:
    out = []
    for i in range(n):
        rec = {"text": f"{SENTENCES[i % len(SENTENCES)]} Item {i}."}
        if i >= label_from:
            rec["label"] = "pos" if i % 2 else "neg"
        out.append(rec)
    return out


def write_jsonl(path: Path, records) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def status(report, code: str) -> str:
    return report.status(code)


def input_findings(report) -> list[dict]:
    return report.result("INPUT001")["findings"]


# -- a column that starts after the first record --------------------------------------------------


def test_list_of_dicts_label_starting_on_row_2_is_a_column():
    report = audit(rows(40, label_from=1), select=["LBL003"])
    assert report.data["dataset"]["roles"]["label"]["column"] == "label"
    assert status(report, "LBL003") != "skipped"


def test_json_array_label_starting_in_a_later_batch(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps(rows(70_000, label_from=66_000)))
    corpus = load_corpus(path)
    assert corpus.roles.label == "label"
    batches = [rb for _, rb in corpus.stream(65_536)]
    assert all("label" in rb.schema.names for rb in batches)
    assert sum(rb.column("label").null_count for rb in batches) == 66_000


def test_jsonl_python_path_keeps_keys_of_later_lines(tmp_path):
    # a number where text belongs makes pyarrow reject the block: the Python path reads it
    recs = [{"text": 5}] + rows(30, label_from=0)
    path = write_jsonl(tmp_path / "train.jsonl", recs)
    corpus = load_corpus(path)
    assert corpus.roles.label == "label"
    (rb,) = [rb for _, rb in corpus.stream(1000)]
    assert rb.column("label").to_pylist()[:3] == [None, "neg", "pos"]


def test_jsonl_column_after_the_first_block_fails_the_gate(tmp_path, monkeypatch):
    import dataaudit.inputs.jsonl as jsonl

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 4096)
    path = write_jsonl(tmp_path / "train.jsonl", rows(400, label_from=300))
    report = audit(path, select=["TXT001"])
    assert not report.passed
    (late,) = [f for f in input_findings(report) if f["data"]["kind"] == "late_column"]
    assert late["severity"] == "error"
    assert "column 'label' first appears at 'train' row 300" in late["message"]
    assert "train.jsonl" in late["message"] and "--label label" in late["message"]


def test_jsonl_named_role_column_after_the_first_block_is_audited(tmp_path, monkeypatch):
    import dataaudit.inputs.jsonl as jsonl

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 4096)
    path = write_jsonl(tmp_path / "train.jsonl", rows(400, label_from=300))
    report = audit(path, select=["LBL003", "FMT001"], label="label")
    assert status(report, "LBL003") != "skipped"
    assert report.metric("FMT001", "label:null_rows", "train") == 300
    assert not [f for f in input_findings(report) if f["severity"] == "error"]


def test_named_role_column_no_record_has_fails(tmp_path, monkeypatch):
    import dataaudit.inputs.jsonl as jsonl

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 4096)
    path = write_jsonl(tmp_path / "train.jsonl", rows(400))
    report = audit(path, select=["TXT001"], label="gold")
    assert not report.passed
    assert any(
        "'gold' was named but no record has it" in f["message"] for f in input_findings(report)
    )
    with pytest.raises(InputError, match="Did you mean 'label'"):
        audit(path, label="lable")  # a near miss is a typo: an error before the scan


def test_shards_with_and_without_the_label(tmp_path):
    write_jsonl(tmp_path / "data" / "train-00000.jsonl", rows(20, label_from=99))
    write_jsonl(tmp_path / "data" / "train-00001.jsonl", rows(20))
    report = audit(tmp_path / "data", select=["FMT001"])
    assert report.data["dataset"]["roles"]["label"]["column"] == "label"
    assert report.metric("FMT001", "label:null_rows", "train") == 20
    (missing,) = [f for f in input_findings(report) if f["data"]["kind"] == "missing_column"]
    assert missing["severity"] == "warn" and missing["count"] == 20
    assert "train-00000.jsonl" in missing["message"]


def test_parquet_shards_union_their_columns(tmp_path):
    pq.write_table(pa.Table.from_pylist(rows(10, label_from=99)), tmp_path / "train-00000.parquet")
    pq.write_table(pa.Table.from_pylist(rows(10)), tmp_path / "train-00001.parquet")
    corpus = load_corpus(tmp_path)
    assert corpus.roles.label == "label"
    labels = [v for _, rb in corpus.stream(8) for v in rb.column("label").to_pylist()]
    assert labels.count(None) == 10 and len(labels) == 20


# -- dictionary-encoded text ----------------------------------------------------------------------


def _text_rules_run(report) -> None:
    for code in ("TXT001", "DUP001", "DUP002", "LEN002"):
        assert status(report, code) != "skipped", code


@pytest.mark.parametrize("kind", ["polars", "pandas", "parquet"])
def test_dictionary_encoded_text_is_text(tmp_path, kind):
    recs = rows(60) + [{"text": "   ", "label": "neg"}]
    if kind == "polars":
        data = pl.DataFrame(recs).with_columns(pl.col("text", "label").cast(pl.Categorical))
    elif kind == "pandas":
        data = pd.DataFrame(recs).astype({"text": "category", "label": "category"})
    else:
        data = tmp_path / "train.parquet"
        pq.write_table(pa.Table.from_pylist(recs), data, use_dictionary=True)
        assert pa.types.is_dictionary(
            pq.read_table(data, read_dictionary=["text"]).schema.field("text").type
        )
        data = pq.read_table(data, read_dictionary=["text", "label"])
    report = audit(data)
    _text_rules_run(report)
    assert report.metric("TXT001", "empty_text_rows", "train") == 1
    plain = audit(recs)
    assert report.result("DUP002")["metrics"] == plain.result("DUP002")["metrics"]


# -- CSV and TSV -----------------------------------------------------------------------------------


def test_latin1_csv_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "train.csv"
    lines = ["text,label"] + [f"{r['text']},{r['label']}" for r in rows(10)]
    lines[4] += " café"
    path.write_bytes("\n".join(lines).encode("latin-1"))
    with pytest.raises(InputError, match=r"train.csv:5: not valid UTF-8 \(byte 0xe9\).*iconv"):
        audit(path)


def test_tsv_quotes_are_text_and_never_merge_rows(tmp_path):
    path = tmp_path / "train.tsv"
    recs = rows(300)
    path.write_text(
        "text\tlabel\n"
        + "".join(
            ('"' if i % 2 == 0 else "") + f"{r['text']}\t{r['label']}\n" for i, r in enumerate(recs)
        )
    )
    report = audit(path, select=["TXT001"])
    assert report.data["dataset"]["splits"]["train"]["rows"] == 300
    first = next(rb for _, rb in load_corpus(path).stream(10))
    assert first.column("text")[0].as_py().startswith('"The committee')


def test_csv_with_a_value_over_128_kib_is_read(tmp_path):
    """Python's csv module stops at 128 KiB a field; the strict quoting check used it and
    called a valid CSV of long e-mails 'malformed quoting'."""
    path = tmp_path / "train.csv"
    long = "a long e-mail body line\n" * 10_000  # 240k characters over many lines
    pl.DataFrame({"text": ["short one", long, "after it"], "label": ["a", "b", "a"]}).write_csv(
        path
    )
    report = audit(path, select=["TXT001"])
    assert report.data["dataset"]["splits"]["train"]["rows"] == 3
    texts = [t for _, rb in load_corpus(path).stream(10) for t in rb.column("text").to_pylist()]
    assert texts == ["short one", long, "after it"]


def test_csv_unbalanced_quote_is_an_error_naming_the_lines(tmp_path):
    path = tmp_path / "train.csv"
    recs = rows(20)
    body = "".join(
        ('"' if i in (5, 10) else "") + f"{r['text'].replace(',', '')},{r['label']}\n"
        for i, r in enumerate(recs)
    )
    path.write_text("text,label\n" + body)
    with pytest.raises(InputError, match=r"train.csv:7: malformed quoting .* lines 7-12"):
        audit(path)
    # a properly quoted multi-line value is fine
    path.write_text('text,label\n"two lines, one value\nsecond line",pos\nplain,neg\n')
    assert audit(path, select=["TXT001"]).data["dataset"]["splits"]["train"]["rows"] == 2


def test_csv_column_type_change_after_the_first_block_is_read_as_text(tmp_path, monkeypatch):
    import dataaudit.inputs.delimited as delimited

    monkeypatch.setattr(delimited, "BLOCK_BYTES", 1024)
    path = tmp_path / "train.csv"
    labels = ["1"] * 200 + ["positive"]
    path.write_text(
        "text,label\n" + "".join(f"row {i} text,{lab}\n" for i, lab in enumerate(labels))
    )
    corpus = load_corpus(path)
    values = [v for _, rb in corpus.stream(64) for v in rb.column("label").to_pylist()]
    assert values[-1] == "positive" and values[0] == "1" and len(values) == 201


def test_csv_wrong_field_count_names_the_line_or_is_skipped(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("text,label\nfine,pos\nbroken,row,here\nalso fine,neg\n")
    with pytest.raises(InputError, match=r"train.csv:3: expected 2 fields .* found 3"):
        audit(path)
    report = audit(path, select=["TXT001"], on_bad_lines="skip")
    assert report.data["dataset"]["splits"]["train"]["rows"] == 2
    (skipped,) = input_findings(report)
    assert skipped["severity"] == "warn" and "train.csv:3" in skipped["message"]


def test_duplicate_header_names_are_an_error(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("text,text\na,b\n")
    with pytest.raises(InputError, match="'text' more than once"):
        audit(path)


# -- split names from paths, however they were given ------------------------------------------------


@pytest.fixture
def split_folders(tmp_path) -> Path:
    write_jsonl(tmp_path / "data" / "train" / "part-0.jsonl", rows(12))
    write_jsonl(tmp_path / "data" / "test" / "part-0.jsonl", rows(3))
    return tmp_path / "data"


def test_globs_and_folders_keep_test_apart_from_train(split_folders):
    data = split_folders
    for given in (
        [str(data / "train" / "*.jsonl"), str(data / "test" / "*.jsonl")],
        str(data / "*" / "*.jsonl"),
        [data / "train", data / "test"],
        data,
    ):
        corpus = load_corpus(given)
        assert {n: s.kind for n, s in corpus.splits.items()} == {"train": "train", "test": "test"}
    report = audit([str(data / "train" / "*.jsonl"), str(data / "test" / "*.jsonl")])
    assert report.status("LEAK001") == "fail"  # the test rows are copies of train rows


def test_several_split_files_as_a_list(tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", rows(12))
    test = write_jsonl(tmp_path / "test.jsonl", rows(3))
    report = audit([str(train), str(test)], select=["LEAK001"])
    assert set(report.data["dataset"]["splits"]) == {"train", "test"}


# -- values that are valid JSON but not text --------------------------------------------------------


def test_lone_surrogates_are_replaced_and_flagged(tmp_path):
    path = tmp_path / "train.jsonl"
    lines = [json.dumps(r) for r in rows(20)]
    lines[3] = '{"text": "broken \\ud800 scrape", "label": "pos"}'
    path.write_text("\n".join(lines) + "\n")
    report = audit(path, select=["TXT002"])
    assert report.metric("TXT002", "replacement_char_rows", "train") == 1
    (note,) = input_findings(report)
    assert note["severity"] == "info" and "train.jsonl:4" in note["message"]
    in_memory = audit([{"text": "broken \ud800 scrape"}] + rows(5), select=["TXT002"])
    assert in_memory.metric("TXT002", "replacement_char_rows", "train") == 1
    frame = audit(pd.DataFrame([{"text": "x \udfff y"}] + rows(5), dtype=object), select=["TXT002"])
    assert frame.metric("TXT002", "replacement_char_rows", "train") == 1


@pytest.mark.slow
def test_deep_nesting_is_a_bad_line_not_a_crash(tmp_path):
    path = tmp_path / "train.jsonl"
    deep = '{"text": "x", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path.write_text("\n".join([json.dumps(r) for r in rows(5)] + [deep]) + "\n")
    cli = [sys.executable, "-m", "dataaudit.cli", "audit", str(path), "--select", "TXT001"]
    out = subprocess.run(cli, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "train.jsonl:6: nested 100,001 levels deep" in out.stderr
    report = audit(path, select=["TXT001"], on_bad_lines="skip")
    assert report.data["dataset"]["splits"]["train"]["rows"] == 5
    assert "train.jsonl:6" in input_findings(report)[0]["message"]
    # brackets inside strings are text, not nesting
    text = {"text": "[" * 5000}
    path.write_text(json.dumps(text) + "\n")
    assert audit(path, select=["TXT001"]).passed


def test_bad_jsonl_line_skipped_on_request_is_listed(tmp_path):
    path = tmp_path / "train.jsonl"
    lines = [json.dumps(r) for r in rows(10)]
    lines[6] = '{"text": broken}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="train.jsonl:7: not valid JSON"):
        audit(path)
    report = audit(path, select=["TXT001"], on_bad_lines="skip")
    assert report.data["dataset"]["splits"]["train"]["rows"] == 9
    (skipped,) = input_findings(report)
    assert skipped["severity"] == "warn" and "train.jsonl:7" in skipped["message"]
    assert report.metric("INPUT001", "skipped_records") == 1


def test_input_integrity_runs_whatever_is_selected(tmp_path):
    report = audit(rows(10), select=["DUP002"])
    assert [r["code"] for r in report.results] == ["DUP002", "INPUT001"]
    assert report.status("INPUT001") == "pass"
    report = audit(rows(10), select=["DUP002"], ignore=["INPUT001"])
    assert [r["code"] for r in report.results] == ["DUP002"]


def test_what_the_reference_could_not_read_is_reported(tmp_path):
    current = write_jsonl(tmp_path / "new" / "train.jsonl", rows(30))
    old = tmp_path / "old" / "train.jsonl"
    old.parent.mkdir()
    lines = [json.dumps(r) for r in rows(30)]
    lines[4] = '{"text": broken'
    old.write_text("\n".join(lines) + "\n")
    report = audit(current, reference=old, select=["LEN003"], on_bad_lines="skip")
    (skipped,) = input_findings(report)
    assert skipped["split"] == "reference train" and "old/train.jsonl:5" in skipped["message"]


def test_on_bad_lines_from_the_cli_and_a_pack(tmp_path):
    from dataaudit.cli import main

    path = tmp_path / "train.jsonl"
    lines = [json.dumps(r) for r in rows(10)]
    lines[2] = "not json"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "r.json"
    assert main(["audit", str(path), "--select", "TXT001", "-q"]) == 2
    code = main(
        [
            "audit",
            str(path),
            "--select",
            "TXT001",
            "--on-bad-lines",
            "skip",
            "--json",
            str(out),
            "-q",
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    assert report["config"]["on_bad_lines"] == "skip"
    assert report["dataset"]["splits"]["train"]["rows"] == 9
    pack = tmp_path / "pack.yaml"
    pack.write_text("on_bad_lines: skip\nselect: [TXT001]\n")
    assert audit(path, config=str(pack)).data["dataset"]["splits"]["train"]["rows"] == 9
    pack.write_text("on_bad_lines: ignore\n")
    with pytest.raises(Exception, match="on_bad_lines='ignore': use 'error'"):
        audit(path, config=str(pack))


def test_jsonl_bad_line_after_a_block_of_blank_lines_is_named_by_its_line(tmp_path, monkeypatch):
    import dataaudit.inputs.jsonl as jsonl

    monkeypatch.setattr(jsonl, "BLOCK_BYTES", 4096)
    lines = [json.dumps(r) for r in rows(5)] + [""] * 10_000 + ["{not json"]
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(lines) + "\n")
    # blocks that hold only blank lines still count their lines
    with pytest.raises(InputError, match=rf"train.jsonl:{len(lines)}: not valid JSON"):
        audit(path, select=["TXT001"])


@pytest.mark.parametrize("compiled", [True, False])
def test_depth_guard_finds_exactly_the_lines_nested_too_deep(monkeypatch, compiled):
    """With the kernels loaded (a DUP002 audit) the bound per line comes from a compiled
    pass; without, from bytes.translate: the same lines either way."""
    import random

    from dataaudit.inputs import jsonl
    from dataaudit.inputs.jsonl import MAX_DEPTH, _line_depth, _too_deep

    if compiled:
        from dataaudit.sketches import kernels, native  # noqa: F401 - numba writes the file

        monkeypatch.setattr(native, "loaded", lambda: True)
        block = b'{"a": [[1]]}\n[[[\n' + b"{" * 300 + b"\n" + b"x" * 13
        assert jsonl._line_opens(block) == (300, 3)
        assert jsonl._line_opens(b"") == (0, 0)
    else:
        monkeypatch.setattr(jsonl, "_line_opens", lambda block: None)
    rng = random.Random(0)
    for _ in range(300):
        lines = []
        for _ in range(rng.randint(0, 30)):
            k = rng.choice([0, 1, 5, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 1000])
            lines.append(
                rng.choice(
                    [
                        "[" * k + "]" * k,
                        '{"a":' * k + "1" + "}" * k,
                        json.dumps({"t": "[" * k}),  # brackets inside a string do not nest
                        "".join(rng.choice(["[", '{"k":']) for _ in range(k)),
                    ]
                )
            )
        block = ("\n".join(lines) + rng.choice(["", "\n"])).encode()
        expected = [
            (i, d)
            for i, raw in enumerate(block.split(b"\n"))
            if (d := _line_depth(raw)) > MAX_DEPTH
        ]
        assert _too_deep(block) == (expected, block.count(b"\n"))

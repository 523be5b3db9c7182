"""Hugging Face ``datasets`` inputs are read by meaning, however the library typed them."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from dataaudit import audit

datasets = pytest.importorskip("datasets")

CHAT = [
    {
        "messages": [
            {"role": "system", "content": "You answer briefly."},
            {"role": "user", "content": "What is the capital of Norway?"},
            {"role": "assistant", "content": "Oslo.", "name": "helper"},  # OpenAI's optional name
        ]
    },
    {
        "messages": [
            {"role": "user", "content": "Translate 'cat' to French."},
            {"role": "assistant", "content": ""},  # a planted empty reply
        ]
    },
    {
        "messages": [
            {"role": "user", "content": "Name a prime above ten."},
            {"role": "assistant", "content": "Eleven.", "weight": 1},
        ]
    },
]


def _load_json(tmp_path: Path, rows: list[dict]):
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return datasets.load_dataset("json", data_files=str(path), split="train")


def test_chat_stored_as_generic_json_is_read_as_chat(tmp_path):
    ds = _load_json(tmp_path, CHAT)
    assert "Json" in repr(ds.features["messages"])  # datasets 5 gave up on a struct type
    report = audit(ds, select=["TXT001", "FMT001"])
    assert report.status("FMT001") == "pass"
    assert report.metric("TXT001", "empty_response_rows", "train") == 1
    assert report.data["dataset"]["roles"]["messages"]["column"] == "messages"


def test_a_chat_column_no_row_of_which_reads_fails_the_gate():
    report = audit([{"messages": "not a chat"}, {"messages": "[1, 2]"}], select=["FMT001"])
    (finding,) = report.result("FMT001")["findings"]
    assert finding["severity"] == "error"
    assert "no row of 'messages' could be read" in finding["message"]
    assert not report.passed
    # one readable chat among them: a warning, as before
    mixed = audit([{"messages": "not a chat"}, CHAT[0]], select=["FMT001"])
    assert mixed.result("FMT001")["findings"][0]["severity"] == "warn"


def test_nested_categoricals_are_plain_strings():
    frame = pl.DataFrame(
        {"text": ["a cat sat", "a dog ran", "   "], "tags": [["x", "y"], ["z"], []]}
    ).with_columns(
        pl.col("text").cast(pl.Categorical), pl.col("tags").cast(pl.List(pl.Categorical))
    )
    report = audit(frame, select=["TXT001"])
    assert report.metric("TXT001", "empty_text_rows", "train") == 1


def _labelled():
    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])}
    )
    texts = [f"review number {i} says the film was {'good' if i % 2 else 'bad'}" for i in range(40)]
    labels = [i % 2 for i in range(40)]
    labels[5] = -1  # the "no label" of unlabeled splits
    return datasets.Dataset.from_dict({"text": texts, "label": labels}, features=features)


def test_class_labels_are_reported_by_name():
    report = audit(_labelled(), select=["LBL003", "FMT001"])
    table = report.result("LBL003")["details"]
    assert "pos" in json.dumps(table) and "neg" in json.dumps(table)
    assert report.metric("FMT001", "label:null_rows", "train") == 1  # -1 is no label


def test_shuffled_dataset_streams_in_full_batches():
    from dataaudit.corpus import load_corpus

    shuffled = _labelled().shuffle(seed=0)  # an indices mapping: one-row chunks in Arrow
    sizes = [rb.num_rows for _, rb in load_corpus(shuffled).stream(16)]
    assert sizes == [16, 16, 8]
    texts = [t for _, rb in load_corpus(shuffled).stream(16) for t in rb.column("text").to_pylist()]
    assert texts == shuffled["text"]


def test_save_to_disk_folders(tmp_path):
    ds = _labelled()
    datasets.DatasetDict({"train": ds, "test": ds.select(range(5))}).save_to_disk(tmp_path / "dd")
    report = audit(tmp_path / "dd", select=["LEAK001"])
    assert set(report.data["dataset"]["splits"]) == {"train", "test"}
    assert report.status("LEAK001") == "fail"  # test rows are train rows
    ds.save_to_disk(tmp_path / "one")
    one = audit(tmp_path / "one", select=["TXT001"])
    assert one.data["dataset"]["splits"]["train"]["rows"] == 40


def test_hf_cache_arrow_file_and_metadata_beside_shards(tmp_path):
    ds = _labelled()
    ds.save_to_disk(tmp_path / "saved")
    (arrow,) = (tmp_path / "saved").glob("*.arrow")
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "train-00000-of-00001.arrow").write_bytes(arrow.read_bytes())
    (folder / "dataset_infos.json").write_text('{"default": {"description": "not data"}}')
    report = audit(folder, select=["TXT001"])
    assert list(report.data["dataset"]["splits"]) == ["train"]
    assert report.data["dataset"]["splits"]["train"]["rows"] == 40


def test_iterable_dataset_keeps_mixed_values_and_repairs_surrogates():
    from dataaudit.corpus import load_corpus

    def rows():  # no features: datasets hands the values over as they are
        yield {"text": "hello there", "label": "a"}
        yield {"text": 12345, "label": "b"}  # a number where text belongs
        yield {"text": "bad \ud800 text", "label": "a"}  # a lone surrogate

    corpus = load_corpus(datasets.IterableDataset.from_generator(rows))
    (batch,) = [rb for _, rb in corpus.stream(100)]
    assert batch.column("text").to_pylist() == ["hello there", "12345", "bad \ufffd text"]
    assert batch.column("__dataaudit_type__text").to_pylist() == [None, "int", None]
    (note,) = corpus.log.notes
    assert (note.kind, note.count, note.places) == ("surrogates", 1, ["IterableDataset[train]"])

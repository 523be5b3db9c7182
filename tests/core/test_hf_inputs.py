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

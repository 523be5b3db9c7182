"""LEAK001/LEAK002 on generated data: a near leak is an error naming the train rows; a benchmark
file, a Bloom-filter index, and options that are refused."""

from __future__ import annotations

import json

import pytest

import dataaudit
from dataaudit.errors import ConfigError
from tests.rules.texts import BASE, edit_word


def test_leak_is_an_error_and_names_train_rows():
    data = {
        "train": [{"text": BASE}, {"text": "other train text about cooking pasta with garlic"}],
        "test": [
            {"text": edit_word(BASE, 2)},
            {"text": "unrelated test sentence about the weather"},
        ],
    }
    r = dataaudit.audit(data, select=["LEAK001"])
    assert r.status("LEAK001") == "fail"
    f = r.result("LEAK001")["findings"]
    assert len(f) == 1 and f[0]["data"]["train_rows"] == [0] and f[0]["data"]["kind"] == "near"
    assert r.metric("LEAK001", "leaked_rows", "test") == 1


def test_contamination_reference_file(tmp_path):
    ref = tmp_path / "bench.jsonl"
    long = " ".join(f"w{i}" for i in range(30))
    ref.write_text(
        json.dumps({"text": "Q: " + long + " ?"}) + "\n" + json.dumps({"text": "no"}) + "\n"
    )
    data = {"train": [{"text": "prefix words " + long}], "test": [{"text": "clean row"}]}
    r = dataaudit.audit(data, select=["LEAK002"], contamination_ref=[str(ref)])
    f = [x for x in r.result("LEAK002")["findings"] if x["data"].get("reference")]
    assert f and f[0]["data"]["ref_rows"] == [0]
    assert f[0]["examples"][0]["span_words"] == 30


def test_contamination_with_a_tiny_bloom_index_still_finds_the_overlap():
    long = " ".join(f"t{i}" for i in range(20))
    data = {
        "train": [{"text": long}]
        + [{"text": " ".join(f"x{i}_{j}" for j in range(20))} for i in range(50)],
        "test": [{"text": "a b " + long}, {"text": "nothing shared here at all"}],
    }
    # the eval side has 10 n-grams, more than 5: the train index runs, a filter above 5
    cfg = {"rules": {"LEAK002": {"max_index_ngrams": 5, "bloom_mb": 1}}}
    r = dataaudit.audit(data, select=["LEAK002"], config=cfg)
    det = r.result("LEAK002")["details"]
    assert det["index"]["mode"] == "train-index" and det["index"]["exact"] is False
    assert r.metric("LEAK002", "contaminated_rows", "test") == 1


@pytest.mark.parametrize("code,opts", [("LEAK001", {"verify": "maybe"}), ("LEAK002", {"ngram": 0})])
def test_bad_options_are_rejected(code, opts):
    with pytest.raises((ConfigError, ValueError)):
        dataaudit.audit([{"text": BASE}], select=[code], config={"rules": {code: opts}})

"""DUP001/DUP002/LEAK001/LEAK002 on generated data: bad input, options, keys, merge."""

from __future__ import annotations

import json

import pytest

import dataaudit
from dataaudit.errors import ConfigError

BASE = (
    "the quick brown fox jumps over the lazy dog while the farmer watches from the old red barn "
    "and thinks about the harvest that will come in the autumn months after a long dry summer "
    "of work in the fields where the wheat grew tall and golden under a wide open sky full of "
    "birds that sang every morning before the sun rose above the hills behind the small village"
)


def _edit(text: str, k: int, word: str = "changed") -> str:
    w = text.split()
    w[k] = word
    return " ".join(w)


def _flags(report, code):
    fl = report.flags()
    return fl.filter(fl["code"] == code)


def test_empty_one_word_and_null_rows():
    rows = [{"text": t} for t in ["", "   ", "word", "word", "Word", None, BASE, _edit(BASE, 3)]]
    r = dataaudit.audit(rows, select=["DUP001", "DUP002"])
    dup = _flags(r, "DUP001")
    assert sorted(dup["row"].to_list()) == [2, 3, 4]  # the one-word rows; empty ones never match
    res = r.result("DUP002")
    assert r.metric("DUP002", "rows_without_shingles", "train") == 3
    assert any("no text to shingle" in f["message"] for f in res["findings"])
    near = _flags(r, "DUP002")
    assert {6, 7} <= set(near["row"].to_list())
    assert 0 not in near["row"].to_list() and 1 not in near["row"].to_list()


def test_cjk_rows_are_shingled_by_character():
    zh = (
        "机器学习模型需要大量高质量的训练数据才能获得良好的泛化能力和稳定的表现同时也需要仔细检查"
        "数据中是否存在重复的样本以及测试集中的样本是否已经出现在训练集中否则评估结果会严重失真"
    )
    rows = [
        {"text": zh},
        {"text": zh[:30] + "优" + zh[31:]},
        {"text": "完全不同的另一段中文文本内容"},
    ]
    r = dataaudit.audit(rows, select=["DUP002"])
    d = r.result("DUP002")["details"]["splits"]["train"]
    assert d["rows_by_unit"]["char"] == 3
    near = _flags(r, "DUP002")
    assert sorted(near["row"].to_list()) == [0, 1]
    # forced word units cannot see it: a space-less text is one token
    r2 = dataaudit.audit(rows, select=["DUP002"], config={"rules": {"DUP002": {"unit": "word"}}})
    assert _flags(r2, "DUP002").height == 0


def test_keys_are_text_hashes_not_row_numbers():
    rows = [{"text": f"filler text number {i} with some more words here"} for i in range(5)]
    a = dataaudit.audit(rows + [{"text": BASE}, {"text": BASE}], select=["DUP001"])
    b = dataaudit.audit([{"text": BASE}, {"text": BASE}] + rows, select=["DUP001"])
    ka = [f["fingerprint"] for f in a.result("DUP001")["findings"]]
    kb = [f["fingerprint"] for f in b.result("DUP001")["findings"]]
    assert ka == kb and len(ka) == 1


def test_flags_mark_kept_and_duplicate():
    rows = [{"text": BASE}, {"text": _edit(BASE, 5)}, {"text": _edit(BASE, 9)}, {"text": "x y"}]
    r = dataaudit.audit(rows, select=["DUP002"])
    fl = _flags(r, "DUP002").sort("row")
    assert fl["cluster"].to_list() == ["0", "0", "0"]
    assert fl["detail"].to_list() == ["kept", "duplicate", "duplicate"]


def test_leak_is_an_error_and_names_train_rows():
    data = {
        "train": [{"text": BASE}, {"text": "other train text about cooking pasta with garlic"}],
        "test": [{"text": _edit(BASE, 2)}, {"text": "unrelated test sentence about the weather"}],
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
    cfg = {"rules": {"LEAK002": {"max_index_ngrams": 10, "bloom_mb": 1}}}
    r = dataaudit.audit(data, select=["LEAK002"], config=cfg)
    det = r.result("LEAK002")["details"]
    assert det["index"]["exact"] is False
    assert r.metric("LEAK002", "contaminated_rows", "test") == 1


@pytest.mark.parametrize(
    "code,opts",
    [
        ("DUP002", {"threshold": 1.5}),
        ("DUP002", {"unit": "sentence"}),
        ("DUP002", {"bands": 20}),
        ("DUP002", {"bands": 20, "rows": 10}),
        ("LEAK001", {"verify": "maybe"}),
        ("LEAK002", {"ngram": 0}),
    ],
)
def test_bad_options_are_rejected(code, opts):
    with pytest.raises((ConfigError, ValueError)):
        dataaudit.audit([{"text": BASE}], select=[code], config={"rules": {code: opts}})

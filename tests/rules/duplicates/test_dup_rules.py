"""DUP001/DUP002 on generated data: empty, one-word, null and CJK rows, keys, flags, options."""

from __future__ import annotations

import pytest

import dataaudit
from dataaudit.errors import ConfigError
from tests.rules.texts import BASE, edit_word


def _flags(report, code):
    fl = report.flags()
    return fl.filter(fl["code"] == code)


def test_empty_one_word_and_null_rows():
    rows = [
        {"text": t} for t in ["", "   ", "word", "word", "Word", None, BASE, edit_word(BASE, 3)]
    ]
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
    rows = [
        {"text": BASE},
        {"text": edit_word(BASE, 5)},
        {"text": edit_word(BASE, 9)},
        {"text": "x y"},
    ]
    r = dataaudit.audit(rows, select=["DUP002"])
    fl = _flags(r, "DUP002").sort("row")
    assert fl["cluster"].to_list() == ["0", "0", "0"]
    assert fl["detail"].to_list() == ["kept", "duplicate", "duplicate"]


@pytest.mark.parametrize(
    "code,opts",
    [
        ("DUP002", {"threshold": 1.5}),
        ("DUP002", {"unit": "sentence"}),
        ("DUP002", {"bands": 20}),
        ("DUP002", {"bands": 20, "rows": 10}),
    ],
)
def test_bad_options_are_rejected(code, opts):
    with pytest.raises((ConfigError, ValueError)):
        dataaudit.audit([{"text": BASE}], select=[code], config={"rules": {code: opts}})

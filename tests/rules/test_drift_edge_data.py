"""Drift rules on legitimate edge data: a split with no text gives a stated verdict, not a crash."""

from __future__ import annotations

import pytest

from dataaudit import audit

WORDS = [{"text": f"the quick brown fox {i} jumps"} for i in range(60)]
EMPTY = [{"text": ""}] * 60


@pytest.mark.parametrize(
    "data, empty",
    [
        ({"train": WORDS, "test": EMPTY}, "test"),
        ({"train": EMPTY, "test": WORDS}, "train"),
        ({"train": WORDS, "test": [{"text": None}] * 30 + [{"text": " \n\t"}] * 60}, "test"),
    ],
    ids=["empty-test", "empty-train", "null-and-blank-test"],
)
def test_tok001_with_a_split_without_words_skips_that_comparison_with_the_reason(data, empty):
    res = audit(data, select=["TOK001"]).result("TOK001")
    assert res["status"] == "skipped", res["message"]
    assert f"{empty} has no words" in res["message"]
    assert res["details"]["notes"] == [res["message"]]
    assert res["metrics"] == []


def test_tok001_still_judges_the_other_splits_when_one_has_no_words():
    data = {"train": WORDS, "validation": WORDS[::-1], "test": EMPTY}
    res = audit(data, select=["TOK001"]).result("TOK001")
    assert res["status"] == "pass"
    assert [m["split"] for m in res["metrics"] if m["name"] == "js"] == ["validation"]
    assert any("test has no words" in n for n in res["details"]["notes"])


def test_tok001_with_no_words_anywhere_names_both_splits():
    res = audit({"train": EMPTY, "test": EMPTY}, select=["TOK001"]).result("TOK001")
    assert res["status"] == "skipped"
    assert "train and test have no words" in res["message"]

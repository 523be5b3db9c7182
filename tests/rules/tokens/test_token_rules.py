"""TOK001 token drift (with SHIFT001, the other view of the same vocabulary shift) and TOK002
unknown tokens, through a BPE trained on the fixtures."""

from __future__ import annotations

import random

from dataaudit import audit
from tests.rules.texts import WORDS_A, WORDS_B, sentences


def _findings(report, code, split=None):
    return [f for f in report.result(code)["findings"] if split is None or f["split"] == split]


def test_tok001_and_shift001_find_a_vocabulary_shift(bpe):
    rng = random.Random(4)
    data = {
        "train": [{"text": t} for t in sentences(rng, 600, WORDS_A)],
        "test": [{"text": t} for t in sentences(rng, 200, WORDS_A + WORDS_B)],
    }
    report = audit(data, select=["TOK001", "SHIFT001"], tokenizer=bpe)
    # half of the test split's words never occur in train: a gross shift fails the default gate
    assert report.status("TOK001") == "fail"
    (found,) = _findings(report, "TOK001")
    assert found["severity"] == "error" and found["data"]["excess"] >= 0.1
    over = found["data"]["over"]
    assert over and all(e["share"] > e["base_share"] for e in over)
    assert report.status("SHIFT001") == "fail"
    assert report.metric("SHIFT001", "auc", "test") > 0.9


def test_tok002_reports_unknown_tokens(bpe):
    data = {"train": [{"text": "the function 💥💥 returns"}] + [{"text": "the function"}] * 20}
    report = audit(data, select=["TOK002"], tokenizer=bpe)
    assert report.metric("TOK002", "rows_with_unknown", "train") == 1
    assert report.flags().filter(code="TOK002")["row"].to_list() == [0]
    assert report.status("TOK002") == "warn"
    assert audit(data, select=["TOK002"]).status("TOK002") == "skipped"  # words: no vocabulary
    with_ids = {"train": [{"id": f"doc-{i}", **r} for i, r in enumerate(data["train"])]}
    flags = audit(with_ids, select=["TOK002"], tokenizer=bpe).flags().filter(code="TOK002")
    assert flags["id"].to_list() == ["doc-0"] and flags["action"].to_list() == ["review"]
    assert 0 < flags["score"][0] <= 1  # the row's share of unknown tokens

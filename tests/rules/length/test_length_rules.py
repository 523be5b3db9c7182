"""LEN001 truncation, LEN002 length outliers and LEN003 length drift on generated rows and on the
fixture's planted long rows and validation cut-off."""

from __future__ import annotations

import random

import pytest

from dataaudit import audit
from dataaudit.testing import check_rule
from tests import FIXTURES
from tests.rules.texts import WORDS_A, sentences

CLS = FIXTURES / "classification"


def _findings(report, code, split=None):
    return [f for f in report.result(code)["findings"] if split is None or f["split"] == split]


# -- conformance with the options the default suite cannot give ------------------------------
def test_len001_conformance_with_max_seq_len():
    from dataaudit.rules.length.truncation import Truncation

    check_rule(Truncation, options={"max_seq_len": 20})


# -- LEN001 -----------------------------------------------------------------------------------
def test_len001_counts_exactly_the_rows_over_max_seq_len(bpe):
    rows = [{"text": t} for t in sentences(random.Random(0), 200, WORDS_A, 5, 60)]
    limit = 40
    expected = sorted(i for i, r in enumerate(rows) if len(bpe.encode(r["text"])) > limit)
    assert expected  # the test data must contain truncated rows
    report = audit(rows, select=["LEN001"], rules={"LEN001": {"max_seq_len": limit}}, tokenizer=bpe)
    flagged = report.flags().filter(code="LEN001")["row"].to_list()
    assert flagged == expected
    assert report.metric("LEN001", "truncated_rows", "train") == len(expected)
    assert report.status("LEN001") == "fail"  # rate far above max_rate=0.01
    assert report.result("LEN001")["details"]["unit"] == "tokens"


def test_len001_finds_chat_rows_whose_response_is_cut_off_entirely(bpe):
    rng = random.Random(1)
    rows = []
    for i in range(60):
        prompt = " ".join(rng.choice(WORDS_A) for _ in range(80 if i % 10 == 0 else 5))
        rows.append(
            {
                "messages": [
                    {"role": "user", "content": prompt},
                    {"role": "assistant", "content": "ok"},
                ]
            }
        )
    report = audit(rows, select=["LEN001"], rules={"LEN001": {"max_seq_len": 50}}, tokenizer=bpe)
    lost = report.flags().filter(code="LEN001", detail="response_lost")["row"].to_list()
    assert lost == list(range(0, 60, 10))


def test_len001_without_max_seq_len_is_skipped_with_the_fix():
    report = audit([{"text": "a b"}] * 3, select=["LEN001"])
    assert report.status("LEN001") == "skipped"
    assert "max_seq_len" in report.result("LEN001")["message"]


def test_len001_on_fixture_long_rows_without_tokenizer_says_words():
    report = audit(str(CLS), select=["LEN001"], rules={"LEN001": {"max_seq_len": 2000}})
    flagged = sorted(report.flags().filter(code="LEN001", split="train")["row"].to_list())
    assert flagged == [232, 366, 512]  # the planted > 20000-character rows
    assert "words" in _findings(report, "LEN001")[0]["message"]


# -- LEN002 -----------------------------------------------------------------------------------
def test_len002_finds_the_planted_long_rows(bpe):
    for tok in (None, bpe):
        report = audit(str(CLS), select=["LEN002"], tokenizer=tok)
        long_rows = report.flags().filter(code="LEN002", split="train", detail="long")["row"]
        assert sorted(long_rows.to_list()) == [232, 366, 512]


def test_len002_small_split_gets_no_verdict():
    report = audit([{"text": "a b c"}] * 10, select=["LEN002"])
    assert report.status("LEN002") == "skipped"
    assert "min_rows" in report.result("LEN002")["message"]


# -- LEN003 on the fixture's planted drift ------------------------------------------------------
@pytest.fixture(scope="module")
def fixture_report():
    return audit(str(CLS), select=["LEN003"])


def test_len003_finds_the_validation_length_cutoff(fixture_report):
    found = _findings(fixture_report, "LEN003")
    assert [f["split"] for f in found] == ["validation"]
    assert found[0]["data"]["ks"] > 0.3


def test_len001_and_len002_carry_per_split_histograms_as_chart_data():
    import dataaudit as da

    rows = {
        "train": [{"text": " ".join(["w"] * (1 + i % 90))} for i in range(300)]
        + [{"text": None}, {"text": ""}],
        "test": [{"text": " ".join(["w"] * (30 + i % 50))} for i in range(100)],
    }
    report = da.audit(
        rows, select=["LEN001", "LEN002"], rules={"LEN001": {"max_seq_len": 64}}, batch_size=37
    )
    h = report.result("LEN001")["details"]["histograms"]
    assert h["unit"] == "words" and h["max_seq_len"] == 64
    edges = h["edges"]
    assert edges == sorted(set(edges)) and len(edges) <= 44
    assert set(h["splits"]) == {"train", "test"}
    for split, counts in h["splits"].items():
        assert len(counts) == len(edges) - 1
        n = 301 if split == "train" else 100  # every row with a length (the null row has none)
        assert sum(counts) == n
        # the bars left of max_seq_len + 1 are exactly the rows that fit
        fit = sum(c for c, hi in zip(counts, edges[1:]) if hi <= 65)
        assert n - fit == report.metric("LEN001", "truncated_rows", split)
    h2 = report.result("LEN002")["details"]["histograms"]
    assert h2["max_seq_len"] is None
    assert {s: sum(c) for s, c in h2["splits"].items()} == {"train": 300, "test": 100}

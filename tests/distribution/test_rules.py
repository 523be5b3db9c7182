from __future__ import annotations

import random

import pytest

from dataaudit import audit
from dataaudit.errors import ConfigError
from dataaudit.testing import check_rule
from tests.distribution.dist_helpers import FIXTURES, WORDS_A, WORDS_B, sentences

CLS = FIXTURES / "classification"
CHAT = FIXTURES / "chat_sft"


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


# -- LEN003 / TOK001 / SHIFT001 / MIX001 on the fixture's planted drift ------------------------
@pytest.fixture(scope="module")
def fixture_report():
    return audit(
        str(CLS),
        select=["LEN003", "TOK001", "SHIFT001", "MIX001"],
        rules={
            "MIX001": {"recipe": {"fortunes": 0.5, "pydoc": 0.4, "glossary": 0.1}, "share": "rows"}
        },
    )


def test_len003_finds_the_validation_length_cutoff(fixture_report):
    found = _findings(fixture_report, "LEN003")
    assert [f["split"] for f in found] == ["validation"]
    assert found[0]["data"]["ks"] > 0.3


def test_mix001_finds_recipe_deviation_and_test_source_drift(fixture_report, ground_truth):
    found = _findings(fixture_report, "MIX001")
    off = {f["data"]["source"] for f in found if "recipe" in f["data"]}
    assert off == {"fortunes", "pydoc"}  # glossary 9.7% is within ±5% of 10%
    assert fixture_report.status("MIX001") == "fail"
    drift = [f for f in found if "cramers_v" in f["data"]]
    assert [f["split"] for f in drift] == ["test"]
    table = fixture_report.result("MIX001")["details"]["splits"]["train"]
    assert table["fortunes"]["row_share"] == pytest.approx(0.7333, abs=1e-3)
    assert table["fortunes"]["duplicate_rate"] > 0  # the planted exact duplicates are fortunes
    assert "mean_length" in table["pydoc"]


def test_drift_rules_do_not_flag_a_random_split():
    rng = random.Random(3)
    rows = [{"text": t} for t in sentences(rng, 1200, WORDS_A + WORDS_B)]
    data = {"train": rows[:900], "test": rows[900:]}
    report = audit(data, select=["LEN003", "TOK001", "SHIFT001"])
    for code in ("LEN003", "TOK001", "SHIFT001"):
        assert report.status(code) == "pass", (code, report.result(code)["details"])


def test_tok001_and_shift001_find_a_vocabulary_shift(bpe):
    rng = random.Random(4)
    data = {
        "train": [{"text": t} for t in sentences(rng, 600, WORDS_A)],
        "test": [{"text": t} for t in sentences(rng, 200, WORDS_A + WORDS_B)],
    }
    report = audit(data, select=["TOK001", "SHIFT001"], tokenizer=bpe)
    assert report.status("TOK001") == "warn"
    over = _findings(report, "TOK001")[0]["data"]["over"]
    assert over and all(e["share"] > e["base_share"] for e in over)
    assert report.status("SHIFT001") == "warn"
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


# -- MIX001 bad input -------------------------------------------------------------------------
def test_mix001_recipe_must_sum_to_one():
    with pytest.raises(ConfigError, match="sum to"):
        audit(
            [{"text": "a", "source": "web"}],
            select=["MIX001"],
            rules={"MIX001": {"recipe": {"web": 0.5}}},
        )


def test_mix001_recipe_without_source_column_is_an_error_status():
    report = audit(
        [{"text": "a b"}] * 5, select=["MIX001"], rules={"MIX001": {"recipe": {"web": 1.0}}}
    )
    assert report.status("MIX001") == "error"
    assert "source column" in report.result("MIX001")["message"]
    assert not report.passed


def test_mix001_missing_and_unexpected_sources():
    rows = [{"text": f"row {i}", "source": "web" if i % 2 else "forum"} for i in range(40)]
    report = audit(rows, select=["MIX001"], rules={"MIX001": {"recipe": {"web": 0.5, "code": 0.5}}})
    kinds = {f["fingerprint"]: f for f in _findings(report, "MIX001")}
    messages = " | ".join(f["message"] for f in kinds.values())
    assert "'code'" in messages and "missing" in messages
    assert "'forum' is not in the recipe" in messages


# -- reference comparison ---------------------------------------------------------------------
def test_reference_dataset_and_saved_report(tmp_path):
    rng = random.Random(5)
    old = {"train": [{"text": t, "source": "a"} for t in sentences(rng, 400, WORDS_A)]}
    same = {"train": [{"text": t, "source": "a"} for t in sentences(rng, 400, WORDS_A)]}
    new = {
        "train": [
            {"text": t, "source": "b"} for t in sentences(rng, 400, WORDS_A + WORDS_B, 30, 60)
        ]
    }
    codes = ["LEN003", "TOK001", "SHIFT001", "MIX001"]
    base = audit(old, select=codes)
    assert base.status("LEN003") == "skipped"  # nothing to compare without a reference
    unchanged = audit(same, select=codes, reference=old)
    for code in codes:
        assert unchanged.status(code) == "pass", code
    changed = audit(new, select=codes, reference=old)
    for code in codes:
        assert changed.status(code) == "warn", code
        assert any("reference" in f["message"] for f in _findings(changed, code))
    # a saved report carries the sketches of LEN003, TOK001 and MIX001; SHIFT001 needs rows
    path = tmp_path / "old.json"
    base.to_json(path)
    from_report = audit(new, select=codes, reference=str(path))
    for code in ("LEN003", "TOK001", "MIX001"):
        assert from_report.status(code) == "warn", code
    assert from_report.status("SHIFT001") == "skipped"
    assert "reference dataset" in from_report.result("SHIFT001")["message"]

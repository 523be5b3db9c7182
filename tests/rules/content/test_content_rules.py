"""TXT001-TXT003 and FMT001 on the bundled fixtures: every planted row is found, nothing else."""

from __future__ import annotations

import pytest

from dataaudit import audit
from dataaudit.rules.content.encoding import is_mojibake


def flagged(report, code, detail=None, split="train"):
    flags = report.flags().filter(code=code, split=split)
    if detail is not None:
        flags = flags.filter(detail=detail)
    return sorted(flags["row"].to_list())


@pytest.fixture(scope="module")
def classification(fixtures_dir):
    return audit(
        fixtures_dir / "classification",
        select=["TXT", "FMT"],
        rules={"TXT003": {"max_chars": 20000}},
    )


def test_planted_content_issues_are_found_exactly(classification, ground_truth):
    gt = ground_truth["classification"]
    assert flagged(classification, "TXT001", "empty_text") == gt["empty_rows"]["train"]
    assert flagged(classification, "FMT001", "text:null") == gt["null_text"]["train"]
    assert flagged(classification, "FMT001", "text:not_string") == gt["non_string_text"]["train"]
    assert flagged(classification, "TXT003", "too_long") == gt["long_rows"]["train"]
    for kind, rows in gt["encoding"].items():
        assert flagged(classification, "TXT002", kind) == rows["train"], kind
    for split in ("validation", "test"):
        assert flagged(classification, "TXT002", split=split) == []


def test_parquet_with_split_column_gives_the_same_flags(classification, fixtures_dir):
    other = audit(
        fixtures_dir / "classification.parquet",
        split="split",
        select=["TXT", "FMT"],
        rules={"TXT003": {"max_chars": 20000}},
    )
    # parquet has one type per column, so the planted number is the string "12345" there
    # (see fixtures/README.md): the JSONL read flags it, the parquet read cannot
    assert classification.flags().filter(detail="text:not_string").height == 1
    assert other.flags().filter(detail="text:not_string").height == 0

    def without_type_flags(flags):
        return flags.filter(flags["detail"] != "text:not_string").sort(
            ["split", "row", "code", "detail"]
        )

    assert without_type_flags(other.flags()).equals(without_type_flags(classification.flags()))


def test_chat_fixture(fixtures_dir, ground_truth):
    gt = ground_truth["chat_sft"]
    report = audit(
        fixtures_dir / "chat_sft", select=["TXT", "FMT"], rules={"TXT003": {"max_chars": 20000}}
    )
    assert flagged(report, "TXT001", "empty_response") == gt["empty_assistant"]["train"]
    assert flagged(report, "FMT001", "messages:malformed") == sorted(
        gt["missing_content"]["train"] + gt["null_content"]["train"]
    )
    assert flagged(report, "TXT002", "mojibake") == gt["mojibake"]["train"]
    assert flagged(report, "TXT003", "too_long") == gt["long_conversations"]["train"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("donâ€™t", True),
        ("cafÃ©", True),
        ("naÃ¯ve", True),
        ("café naïve déjà vu", False),
        ("Ã la carte", False),  # a real capital A-grave followed by a space
        ("£5 Â£", True),  # "£" encoded as UTF-8, read as Latin-1
        ("Ângela", False),
        ("plain ascii", False),
    ],
)
def test_mojibake_detection(text, expected):
    assert is_mojibake(text) is expected


def test_extreme_length_messages_name_the_limits(classification):
    """'3 rows are longer than max_chars' left the reader to look the limit up."""
    messages = [f["message"] for f in classification.result("TXT003")["findings"]]
    assert messages and all("are longer than max_chars=20,000 characters" in m for m in messages)

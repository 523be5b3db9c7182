"""check_rule says what ran and what was skipped, and why; comparisons fail when unsure."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.rules.length.truncation import Truncation
from dataaudit.rules.tokens.unknown import UnknownTokens
from dataaudit.testing import (
    CHECKS,
    ConformanceSkipWarning,
    check_rule,
    first_difference,
    rule_checks,
)
from tests.testing.conformance_rules import DropsB, NeedsLabel, NoVerdict, ReadsFile, WordRows

DATA_CHECKS = [c for c in CHECKS if c not in ("options_stored_verbatim", "docstring_sections")]


def test_a_rule_that_keeps_the_contract_runs_every_check() -> None:
    report = check_rule(WordRows)
    assert report.passed == list(CHECKS) and report.skipped == {}
    assert report.findings == 1  # one finding over the sample data: the checks compared it
    assert str(report).startswith(f"TST001: {len(CHECKS)} checks passed")


def test_checks_that_cannot_apply_are_skipped_visibly_with_the_reason() -> None:
    with pytest.warns(ConformanceSkipWarning) as warned:
        report = check_rule(NeedsLabel)
    assert [str(w.message).split(" skipped")[0] for w in warned] == [
        f"TST001: conformance check {name}" for name in DATA_CHECKS
    ]
    assert report.passed == ["options_stored_verbatim", "docstring_sections"]
    assert list(report.skipped) == DATA_CHECKS
    assert all("needs the prompt column role" in r for r in report.skipped.values())
    assert report.findings is None
    assert "skipped merge_identity: the rule skips the data" in str(report)


def test_a_result_without_a_verdict_is_not_compared() -> None:
    with pytest.warns(ConformanceSkipWarning):
        report = check_rule(NoVerdict)
    assert {"merge_identity", "split_and_merge", "state_pickles"} == set(report.skipped)
    assert all("gave no verdict" in r for r in report.skipped.values())
    assert "empty_input" in report.passed


@pytest.mark.parametrize(
    "cls, options, reason",
    [(UnknownTokens, None, "needs a tokenizer"), (Truncation, None, "max_seq_len is not set")],
)
def test_builtin_rules_without_what_they_need_skip_instead_of_passing(cls, options, reason) -> None:
    """LEN001 and TOK002 used to pass their data checks without running."""
    with pytest.warns(ConformanceSkipWarning):
        report = check_rule(cls, options=options)
    assert list(report.skipped) == DATA_CHECKS
    assert all(reason in r for r in report.skipped.values())


def test_given_what_they_need_they_run_and_fire(tmp_path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        ["the storm knocked the sign down"] * 5,
        trainers.BpeTrainer(vocab_size=60, special_tokens=["[UNK]"]),
    )
    for cls, options in ((UnknownTokens, None), (Truncation, {"max_seq_len": 64})):
        report = check_rule(cls, options=options, tokenizer=tok)
        assert report.passed == list(CHECKS) and report.findings


def test_every_broken_contract_is_reported_at_once() -> None:
    class Twice(DropsB):
        """What it does: x. Why it matters: x. Options: x."""

    with pytest.raises(AssertionError) as info:
        check_rule(Twice)
    message = str(info.value)
    assert message.startswith("TST001 breaks the rule contract:")
    assert "\ndocstring_sections: TST001: docstring lacks section(s) Example" in message
    assert "\nmerge_identity: TST001: merge(start, s) differs" in message


def test_expected_failures_must_still_fail() -> None:
    report = check_rule(ReadsFile, expected_failures={"start_does_no_io": "reads a file"})
    assert "did I/O" in report.expected_failures["start_does_no_io"]
    assert "start_does_no_io" not in report.passed
    with pytest.raises(AssertionError, match="expected to fail .*but passed"):
        check_rule(WordRows, expected_failures={"start_does_no_io": "reads a file"})


def test_unknown_check_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown check.*merge_identiy"):
        check_rule(WordRows, checks=["merge_identiy"])


def test_rule_checks_share_one_case() -> None:
    named = dict(rule_checks(WordRows))
    assert list(named) == list(CHECKS)
    named["merge_identity"]()  # raises on failure


# -- field-by-field comparison ---------------------------------------------------------------------
@dataclasses.dataclass
class Shaped:
    ids: np.ndarray
    lengths: np.ndarray
    words: tuple | None = None


def test_dataclasses_of_arrays_compare_field_by_field() -> None:
    a = Shaped(np.arange(5, dtype=np.uint32), np.array([2, 3]))
    assert first_difference(a, Shaped(np.arange(5, dtype=np.uint32), np.array([2, 3]))) is None
    b = Shaped(np.arange(5, dtype=np.uint32), np.array([2, 4]))
    assert first_difference(a, b) == "value.lengths: 1 array values differ, first at [1]: 3 != 4"
    c = Shaped(np.arange(5, dtype=np.int64), np.array([2, 3]))
    assert first_difference(a, c) == "value.ids: array uint32[5] != int64[5]"


def test_values_that_cannot_be_compared_are_a_difference() -> None:
    class Ambiguous:
        __slots__ = ()

        def __eq__(self, other):
            return np.array([True, False])

    class Raises:
        __slots__ = ()

        def __eq__(self, other):
            raise TypeError("no")

    assert "cannot compare Ambiguous" in first_difference(Ambiguous(), Ambiguous())
    assert "cannot compare Raises values (TypeError: no)" in first_difference(Raises(), Raises())


def test_floats_arrays_and_containers() -> None:
    assert first_difference(float("nan"), float("nan")) is None
    assert first_difference(np.array([np.nan, 1.0]), np.array([np.nan, 1.0])) is None
    assert first_difference(1.0, 1.0 + 1e-12, rel_tol=1e-9) is None
    assert first_difference(1.0, 1.0 + 1e-12) is not None
    assert first_difference(pa.array(["a"]), pa.array(["a"])) is None
    assert "Arrow" in first_difference(pa.array(["a"]), pa.array(["b"]))
    assert "keys differ" in first_difference({"a": 1}, {"b": 1})
    assert first_difference({"a": [1, (2, 3)]}, {"a": [1, (2, 4)]}) == "value['a'][1][1]: 3 != 4"
    assert first_difference(1, True) is not None  # a bool is not the int it equals

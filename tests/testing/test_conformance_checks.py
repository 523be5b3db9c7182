"""Each conformance check catches a rule broken in the way it checks for, and passes the same
rule without the defect: a check that cannot fail proves nothing."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit.rule import Rule
from dataaudit.testing import CHECKS, check_rule
from tests.testing.conformance_rules import (
    Clamping,
    Connects,
    DropsB,
    DropsPrepassShard,
    EmptyCrash,
    EvalLengths,
    MaxNotSum,
    MergeKeyError,
    MergesAnyWord,
    NoExample,
    ReadsFile,
    ReadsNatively,
    Stripping,
    Unpicklable,
    WordRows,
    ZeroesFeature,
)


def fails(cls: type[Rule], check: str, match: str) -> None:
    """``check`` fails ``cls`` with a message matching ``match`` and passes ``WordRows``."""
    report = check_rule(WordRows, checks=[check])
    assert report.passed == [check] and not report.skipped
    with pytest.raises(AssertionError, match=match) as info:
        check_rule(cls, checks=[check])
    assert f"{check}: " in str(info.value)


def test_every_check_is_proven_by_a_test_here() -> None:
    tested = {name[len("test_") :] for name in globals() if name.startswith("test_")}
    assert set(CHECKS) <= tested, f"checks without a broken-rule test: {set(CHECKS) - tested}"


@pytest.mark.parametrize(
    "cls, stored",
    [(Clamping, "stored 1000"), (Stripping, "stored 'storm-Smoke'")],
    ids=["clamps", "strips"],
)
def test_options_stored_verbatim(cls: type[Rule], stored: str) -> None:
    """Smoke values, not the defaults, go in: the defaults come out of this clamp and this
    strip() as the very same objects, which is how such constructors passed before."""
    fails(cls, "options_stored_verbatim", stored)


def test_docstring_sections() -> None:
    fails(NoExample, "docstring_sections", "lacks section.*Example")


def test_empty_input() -> None:
    fails(EmptyCrash, "empty_input", "ZeroDivisionError")


def test_merge_identity() -> None:
    fails(DropsB, "merge_identity", r"merge\(start, s\) differs from s: result")


def test_split_and_merge() -> None:
    # merge by maximum keeps start as its identity: only the sharded run shows the defect
    assert check_rule(MaxNotSum, checks=["merge_identity"]).passed == ["merge_identity"]
    fails(MaxNotSum, "split_and_merge", r"shards merged \(a\+b\)\+c differ from one pass")


def test_state_pickles() -> None:
    fails(Unpicklable, "state_pickles", "the state does not pickle")


def test_batch_not_mutated() -> None:
    """Zeroing the shared ngram_hashes feature passed when a comparison error meant "equal"."""
    fails(ZeroesFeature, "batch_not_mutated", r"shared feature 'ngram_hashes'.*hashes.*differ")


def test_start_does_no_io() -> None:
    fails(ReadsFile, "start_does_no_io", r"start\(\) did I/O: opened .*conformance_rules.py")


def test_start_does_no_io_sees_sockets() -> None:
    with pytest.raises(AssertionError, match=r"did I/O: connected to"):
        check_rule(Connects, checks=["start_does_no_io"])


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts reads from /proc (Linux)")
def test_start_does_no_io_sees_native_reads(tmp_path: Path, monkeypatch) -> None:
    """pyarrow reads files in C++, past Python's audit events: the read system calls show it."""
    path = tmp_path / "stopwords.parquet"
    pq.write_table(pa.table({"word": ["the", "a"]}), path)
    monkeypatch.setattr(ReadsNatively, "path", str(path))
    with pytest.raises(AssertionError, match="read system call"):
        check_rule(ReadsNatively, checks=["start_does_no_io"])


def test_merge_refuses_incompatible_states() -> None:
    fails(MergesAnyWord, "merge_refuses_incompatible_states", r"accepted a state built with word=")


def test_merge_refuses_with_a_value_error() -> None:
    with pytest.raises(AssertionError, match="raised KeyError.*instead of a ValueError"):
        check_rule(MergeKeyError, checks=["merge_refuses_incompatible_states"])


def test_split_and_merge_also_cuts_the_prepass() -> None:
    """A rule with a prepass is checked on its broadcast value, its prepass merged from shards
    as workers and Ray merge it: a prepass_merge that drops a shard fails."""
    report = check_rule(EvalLengths, checks=["empty_input", "merge_identity", "split_and_merge"])
    assert report.passed == ["empty_input", "merge_identity", "split_and_merge"]
    assert report.findings == 1  # train rows matched eval lengths: the value reached update
    with pytest.raises(AssertionError, match="split_and_merge: .*differ from one pass"):
        check_rule(DropsPrepassShard, checks=["split_and_merge"])

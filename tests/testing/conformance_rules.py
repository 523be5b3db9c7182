"""A small rule that keeps the contract, and broken copies of it, one defect each.

Each conformance check is proven by the broken rule it must catch (tests/testing/test_checks.py),
with the good rule passing the same check, so a check that passes everything fails its test.
"""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path
from typing import Any

import numpy as np

from dataaudit.rule import Direction, Finding, Flag, Rule, RuleResult


class WordRows(Rule):
    """Rows whose text contains a word.

    What it does:
        Counts the rows of each split whose text contains ``word`` and flags them.

    Why it matters:
        The conformance suite's own tests need a rule that keeps the contract.

    Example:
        ``word="storm"`` flags "the storm knocked the sign down".

    Options:
        word: the word to look for (default "storm").
        min_rows: fewer matching rows are not a finding (default 1).
    """

    code = "TST001"
    name = "testing.word-rows"
    groups = ("testing",)
    requires = ("text",)

    def __init__(self, word: str = "storm", min_rows: int = 1):
        self.word = word
        self.min_rows = min_rows

    def start(self, ctx: Any) -> dict[str, Any]:
        return {"word": self.word, "rows": {}, "shingles": {}, "hits": []}

    def update(self, state: dict[str, Any], batch: Any) -> dict[str, Any]:
        texts = batch.text.to_pylist()
        sh = batch.feature("ngram_hashes", ngram=3)  # read, never changed: shared with others
        rows = state["rows"]
        rows[batch.split] = rows.get(batch.split, 0) + batch.num_rows
        shingles = state["shingles"]
        shingles[batch.split] = shingles.get(batch.split, 0) + int(np.count_nonzero(sh.hashes))
        state["hits"] += [
            (batch.split, batch.offset + i)
            for i, t in enumerate(texts)
            if t and self.word in t.split()
        ]
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        if a["word"] != b["word"]:
            raise ValueError(f"TST001: states for word {a['word']!r} and {b['word']!r}")
        return {
            "word": a["word"],
            "rows": {k: a["rows"].get(k, 0) + b["rows"].get(k, 0) for k in a["rows"] | b["rows"]},
            "shingles": {
                k: a["shingles"].get(k, 0) + b["shingles"].get(k, 0)
                for k in a["shingles"] | b["shingles"]
            },
            "hits": a["hits"] + b["hits"],
        }

    def finish(self, state: dict[str, Any], ctx: Any) -> RuleResult:
        result = RuleResult()
        for split in sorted(state["rows"]):
            result.metric("rows", state["rows"][split], Direction.NONE, split=split)
            result.metric("shingles", state["shingles"][split], Direction.NONE, split=split)
        hits = state["hits"]
        if len(hits) >= int(self.min_rows):
            result.findings.append(
                Finding(f"{len(hits)} rows contain {self.word!r}", key=self.word, count=len(hits))
            )
            result.flags.extend(Flag(split, row) for split, row in hits)
        return result


# -- one defect each -------------------------------------------------------------------------------
class Clamping(WordRows):
    """What it does: x. Why it matters: x. Example: x. Options: x."""

    def __init__(self, word: str = "storm", min_rows: int = 1):
        self.word = word
        self.min_rows = min(min_rows, 1000)  # clamps: the default 1 passes through unchanged


class Stripping(WordRows):
    """What it does: x. Why it matters: x. Example: x. Options: x."""

    def __init__(self, word: str = "storm", min_rows: int = 1):
        self.word = word.strip()  # coerces: strip() returns the default "storm" itself
        self.min_rows = min_rows


class NoExample(WordRows):
    """What it does: x. Why it matters: x. Options: x."""


class EmptyCrash(WordRows):
    """What it does: x. Why it matters: x. Example: x. Options: x."""

    def finish(self, state: dict[str, Any], ctx: Any) -> RuleResult:
        result = super().finish(state, ctx)
        result.metric("hit_share", len(state["hits"]) / sum(state["rows"].values()))
        return result


class DropsB(WordRows):
    """What it does: x. Why it matters: x. Example: x. Options: x."""

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        return a


class MaxNotSum(WordRows):
    """Merges counts by their maximum: start (zero) is still its identity, shards are not summed.

    What it does: x. Why it matters: x. Example: x. Options: x.
    """

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        out = super().merge(a, b)
        out["rows"] = {k: max(a["rows"].get(k, 0), b["rows"].get(k, 0)) for k in out["rows"]}
        return out


class Unpicklable(WordRows):
    """What it does: x. Why it matters: x. Example: x. Options: x."""

    def start(self, ctx: Any) -> dict[str, Any]:
        return {**super().start(ctx), "match": lambda text: "storm" in text}


class ZeroesFeature(WordRows):
    """Zeroes the shared ``ngram_hashes`` feature it reads (LEAK002 would then see nothing).

    What it does: x. Why it matters: x. Example: x. Options: x.
    """

    def update(self, state: dict[str, Any], batch: Any) -> dict[str, Any]:
        state = super().update(state, batch)
        batch.feature("ngram_hashes", ngram=3).hashes[:] = 0
        return state


class ReadsFile(WordRows):
    """What it does: x. Why it matters: x. Example: x. Options: x."""

    def start(self, ctx: Any) -> dict[str, Any]:
        state = super().start(ctx)
        state["stopwords"] = Path(__file__).read_text().split()[:3]
        return state


class ReadsNatively(WordRows):
    """Reads a file through pyarrow's C++ reader, which Python's audit events do not see.

    What it does: x. Why it matters: x. Example: x. Options: x.
    """

    path = ""

    def start(self, ctx: Any) -> dict[str, Any]:
        import pyarrow.parquet as pq

        state = super().start(ctx)
        state["stopwords"] = pq.read_table(self.path).column(0).to_pylist()
        return state


class Connects(WordRows):
    """What it does: x. Why it matters: x. Example: x. Options: x."""

    def start(self, ctx: Any) -> dict[str, Any]:
        with socket.socket() as s, contextlib.suppress(OSError):
            s.settimeout(0.5)
            s.connect(("127.0.0.1", 9))  # the discard port: refused or not, it was tried
        return super().start(ctx)


class MergesAnyWord(WordRows):
    """What it does: x. Why it matters: x. Example: x. Options: x."""

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        return super().merge(a, {**b, "word": a["word"]})  # a state for another word slips in


class MergeKeyError(WordRows):
    """What it does: x. Why it matters: x. Example: x. Options: x."""

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        if a["word"] != b["word"]:
            raise KeyError(b["word"])  # refuses, but not with a ValueError that says why
        return super().merge(a, b)


class NeedsLabel(WordRows):
    """What it does: x. Why it matters: x. Example: x. Options: x."""

    requires = ("text", "label", "prompt")


class NoVerdict(WordRows):
    """What it does: x. Why it matters: x. Example: x. Options: x."""

    def finish(self, state: dict[str, Any], ctx: Any) -> RuleResult:
        return RuleResult(skipped="needs a setting the sample does not have")


class EvalLengths(WordRows):
    """Train rows as long as an eval row: the eval lengths come from a prepass.

    What it does:
        Reads the eval splits first (a prepass), broadcasts their rows' text lengths, and
        flags the train rows of one of those lengths.

    Why it matters:
        The conformance suite's own tests need a rule with a prepass that keeps the contract.

    Example:
        A test row of 12 characters makes every 12-character train row a hit.

    Options:
        word: unused here (kept from WordRows, default "storm").
        min_rows: fewer matching rows are not a finding (default 1).
    """

    code = "TST002"

    def prepass_splits(self, ctx: Any) -> list[str]:
        return ctx.eval_splits()

    def prepass_start(self, ctx: Any) -> list[int]:
        return []

    def prepass_update(self, pre: list[int], batch: Any) -> list[int]:
        return pre + [len(t) for t in batch.text.to_pylist() if t]

    def prepass_merge(self, a: list[int], b: list[int]) -> list[int]:
        return a + b

    def prepass_finish(self, pre: list[int], ctx: Any) -> list[int]:
        return sorted(set(pre))

    def update(self, state: dict[str, Any], batch: Any) -> dict[str, Any]:
        lengths = set(batch.resources.prepared(self.code) or ())
        if batch.split == "train":
            texts = batch.text.to_pylist()
            state["hits"] += [
                (batch.split, batch.offset + i)
                for i, t in enumerate(texts)
                if t and len(t) in lengths
            ]
        rows = state["rows"]
        rows[batch.split] = rows.get(batch.split, 0) + batch.num_rows
        state["shingles"].setdefault(batch.split, 0)
        return state


class DropsPrepassShard(EvalLengths):
    """What it does: x. Why it matters: x. Example: x. Options: x."""

    def prepass_merge(self, a: list[int], b: list[int]) -> list[int]:
        return a  # the later shard's eval lengths are lost: workers see fewer than one pass

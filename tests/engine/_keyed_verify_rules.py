"""A keyed test rule that verifies in the engine's second hop (engine/keyed.py): rows meet by
their first word, and a pair is kept when the word sets of the two texts (which only the
rows' payload carries) overlap by at least half. Its own module: workers import it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import xxhash

from dataaudit.rule import Finding, Rule, RuleResult, Severity


def words(text: str) -> set[str]:
    return set(text.casefold().split())


def jaccard(a: str, b: str) -> float:
    x, y = words(a), words(b)
    return len(x & y) / len(x | y) if x | y else 0.0


class KeyedWords(Rule):
    """Texts sharing their first word and half their words, verified where the rows are.

    What it does: keys each text by its first word; verify_pairs reads both texts. Why it
    matters: tests the keyed stage's verification hop. Example: -. Options: partitions.
    """

    code = "KEY002"
    name = "test.keyed-words"
    requires = ("text",)
    severity = Severity.WARN
    keyed = True
    member_columns = ("text",)

    def __init__(self, partitions: int = 4):
        self.partitions = partitions

    def start(self, ctx):
        return {"rows": 0}

    def update(self, state, batch):
        state["rows"] += batch.num_rows
        return state

    def merge(self, a, b):
        return {"rows": a["rows"] + b["rows"]}

    def _rows(self, batch):
        texts = batch.role("text").to_pylist()
        keep = [i for i, t in enumerate(texts) if isinstance(t, str) and t.split()]
        return texts, keep, np.asarray(batch.row_ids)[keep]

    def emit(self, state, batch):
        texts, keep, rows = self._rows(batch)
        keys = [xxhash.xxh3_64_intdigest(texts[i].casefold().split()[0].encode()) for i in keep]
        return pa.table({"key": pa.array(keys, pa.uint64()), "row": pa.array(rows, pa.int64())})

    def emit_rows(self, state, batch):
        texts, keep, rows = self._rows(batch)
        return pa.table(
            {
                "row": pa.array(rows, pa.int64()),
                "text": pa.array([texts[i] for i in keep], pa.large_string()),
                "unused": pa.array([len(texts[i]) for i in keep], pa.int64()),
            }
        )

    def edges(self, part):
        # every pair of a bucket (buckets are small here), within a split, both orders mixed
        keys = part.column("key").to_numpy()
        split = part.column("split").to_pylist()
        a, b = [], []
        for i in range(len(keys)):
            for j in range(i + 1, len(keys)):
                if keys[i] == keys[j] and split[i] == split[j]:
                    a, b = a + [j if (i + j) % 2 else i], b + [i if (i + j) % 2 else j]
        take_a, take_b = pa.array(a, pa.int64()), pa.array(b, pa.int64())
        return pa.table(
            {
                "split_a": part.column("split").take(take_a),
                "row_a": part.column("row").take(take_a),
                "split_b": part.column("split").take(take_b),
                "row_b": part.column("row").take(take_b),
            }
        )

    def verify_pairs(self, pairs, rows):
        texts = rows.column("text").to_pylist()
        at_a, at_b = pairs.column("at_a").to_pylist(), pairs.column("at_b").to_pylist()
        score = np.array([jaccard(texts[i], texts[j]) for i, j in zip(at_a, at_b)])
        keep = pa.array(np.flatnonzero(score >= 0.5))
        out = pairs.select(["split_a", "row_a", "split_b", "row_b"]).take(keep)
        return out.append_column("score", pa.array(score[score >= 0.5]))

    def finish(self, state, ctx):
        raise RuntimeError("KEY002 needs the engine's keyed stage")

    def finish_keyed(self, state, clusters, ctx):
        result = RuleResult()
        result.metric("rows", state["rows"])
        result.metric("clusters", len(clusters))
        scores = clusters.edges.column("score").to_pylist() if clusters.edges is not None else []
        result.metric("edges", len(scores))
        for cluster in clusters:
            first = self.first_text(clusters, cluster)
            group = f"{cluster[0][0]}:{cluster[0][1]}"
            result.flags.add(
                cluster[0][0],
                [r for _, r in cluster],
                group=group,
                score=cluster.rows.column("score").to_numpy(),
            )
            result.findings.append(
                Finding(
                    message=f"{len(cluster)} texts like {first[:40]!r}",
                    key=group,
                    count=len(cluster),
                )
            )
        return result

    def first_text(self, clusters, cluster) -> str:
        """The cluster's first text, as the members carry it (a subclass may fetch it)."""
        rows = cluster.rows
        assert rows.column_names == ["split", "row", "text", "score"]  # member_columns
        return rows.column("text")[0].as_py()

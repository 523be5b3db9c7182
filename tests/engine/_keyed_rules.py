"""A keyed test rule: exact duplicates (across splits) through the engine's keyed stage
(engine/keyed.py). Its own module: worker processes unpickle it by importing it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import xxhash

from dataaudit.rule import Finding, Flag, Rule, RuleResult, Severity


def normalized(text: str) -> str:
    return " ".join(text.casefold().split())


class KeyedExact(Rule):
    """Exact duplicates (casefolded, whitespace collapsed) found by key, not held in a state.

    What it does: emits each text's hash as its key. Why it matters: tests the keyed stage.
    Example: -. Options: partitions (shuffle partitions).
    """

    code = "KEY001"
    name = "test.keyed-exact"
    requires = ("text",)
    severity = Severity.WARN
    keyed = True

    def __init__(self, partitions: int = 4):
        self.partitions = partitions

    def start(self, ctx):
        return {"rows": 0}

    def update(self, state, batch):
        state["rows"] += batch.num_rows
        return state

    def merge(self, a, b):
        return {"rows": a["rows"] + b["rows"]}

    def emit(self, state, batch):
        texts = batch.role("text").to_pylist()
        rows = batch.row_ids
        keep = [i for i, t in enumerate(texts) if isinstance(t, str) and t.strip()]
        keys = [xxhash.xxh3_64_intdigest(normalized(texts[i]).encode()) for i in keep]
        return pa.table(
            {
                "key": pa.array(keys, pa.uint64()),
                "row": pa.array(np.asarray(rows)[keep], pa.int64()),
                "chars": pa.array([len(texts[i]) for i in keep], pa.int64()),
            }
        )

    def edges(self, part):
        keys = part.column("key").to_numpy()
        same = np.flatnonzero(keys[1:] == keys[:-1])  # rows sorted by key: chain equal keys
        split, row = part.column("split"), part.column("row")
        idx_a, idx_b = pa.array(same), pa.array(same + 1)
        return pa.table(
            {
                "split_a": split.take(idx_a),
                "row_a": row.take(idx_a),
                "split_b": split.take(idx_b),
                "row_b": row.take(idx_b),
            }
        )

    def finish(self, state, ctx):
        raise RuntimeError("KEY001 needs the engine's keyed stage")

    def finish_keyed(self, state, clusters, ctx):
        result = RuleResult()
        result.metric("rows", state["rows"])
        result.metric("clusters", len(clusters))
        for cluster in clusters:
            group = f"{cluster[0][0]}:{cluster[0][1]}"
            result.flags += [Flag(split, row, group, None) for split, row in cluster]
            result.findings.append(
                Finding(
                    message=f"{len(cluster)} copies of one text",
                    key=group,
                    count=len(cluster),
                    examples=[ctx.example(s, r) for s, r in cluster[: ctx.max_examples]],
                )
            )
        return result

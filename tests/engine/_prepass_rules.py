"""Rules with a prepass, for the engine's prepass tests (a module of their own: worker
processes and Ray workers unpickle rules by importing their module)."""

from __future__ import annotations

import os

from dataaudit.rule import Direction, Finding, Rule, RuleResult

DOC = "What it does: prepass tests. Why it matters: -. Example: -. Options: -."

#: how many times this process pickled a Shipped value
DUMPS = {"count": 0}


def _loaded(lengths: list[int], log: str) -> Shipped:
    """A Shipped value unpickled: the process that loaded it says so in ``log``."""
    if log:
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
    return Shipped(lengths, log)


class Shipped:
    """The prepass value: counts its pickles here and its loads (one line per load) in ``log``."""

    def __init__(self, lengths: list[int], log: str = ""):
        self.lengths = frozenset(lengths)
        self.log = log

    def __reduce__(self):
        DUMPS["count"] += 1
        return _loaded, (sorted(self.lengths), self.log)


class EvalLengths(Rule):
    """Broadcasts the eval rows' text lengths; reports the train rows that have one of them."""

    __doc__ = DOC
    code = "PRE001"
    name = "test.eval-lengths"
    requires = ("text",)

    def __init__(self, log: str = ""):
        self.log = log

    def prepass_splits(self, ctx):
        return ctx.eval_splits()

    def prepass_start(self, ctx):
        return set()

    def prepass_update(self, pre, batch):
        pre.update(len(t) for t in batch.text.to_pylist() if isinstance(t, str))
        return pre

    def prepass_merge(self, a, b):
        return a | b

    def prepass_finish(self, pre, ctx):
        return Shipped(sorted(pre), self.log)

    def start(self, ctx):
        value = ctx.resources.prepared(self.code)
        return {"rows": [], "seen": [value is not None], "train": ctx.train_split()}

    def update(self, state, batch):
        value = batch.resources.prepared(self.code)
        state["seen"].append(value is not None)
        if batch.split == state["train"] and value is not None:
            for i, t in enumerate(batch.text.to_pylist()):
                if isinstance(t, str) and len(t) in value.lengths:
                    state["rows"].append(batch.offset + i)
        return state

    def merge(self, a, b):
        return {**a, "rows": a["rows"] + b["rows"], "seen": a["seen"] + b["seen"]}

    def finish(self, state, ctx):
        value = ctx.resources.prepared(self.code)
        result = RuleResult()
        result.metric("matching_train_rows", len(state["rows"]), Direction.NONE)
        result.metric("eval_lengths", len(value.lengths) if value else -1, Direction.NONE)
        result.details = {"seen": sorted(set(state["seen"])), "rows": sorted(state["rows"])}
        if state["rows"]:
            rows = sorted(state["rows"])
            result.findings.append(
                Finding(
                    message=f"{len(rows)} train rows have an eval row's length",
                    key="lengths",
                    count=len(rows),
                    data={"rows": rows[:50]},
                )
            )
        return result


class SplitsSeen(Rule):
    """Its prepass reads only ``test``: reports which splits and rows it saw there."""

    __doc__ = DOC
    code = "PRE002"
    name = "test.splits-seen"
    requires = ()

    def prepass_splits(self, ctx):
        return ["test"] if "test" in ctx.splits else []

    def prepass_start(self, ctx):
        return {}

    def prepass_update(self, pre, batch):
        rows = pre.setdefault(batch.split, [])
        rows.extend(range(batch.offset, batch.offset + batch.num_rows))
        return pre

    def prepass_merge(self, a, b):
        return {s: a.get(s, []) + b.get(s, []) for s in sorted({*a, *b})}

    def prepass_finish(self, pre, ctx):
        return {s: (len(r), r == list(range(len(r)))) for s, r in pre.items()}

    def start(self, ctx):
        return 0

    def update(self, state, batch):
        return state + batch.num_rows

    def merge(self, a, b):
        return a + b

    def finish(self, state, ctx):
        result = RuleResult()
        result.metric("rows", state, Direction.NONE)
        seen = ctx.resources.prepared(self.code)
        result.details = {"prepass": {s: list(v) for s, v in (seen or {}).items()}}
        return result


class PrepassRaises(SplitsSeen):
    """Raises in the prepass method named by ``where``."""

    code = "PRE003"
    name = "test.prepass-raises"

    def __init__(self, where: str = "prepass_update"):
        self.where = where

    def prepass_splits(self, ctx):
        if self.where == "prepass_splits":
            raise RuntimeError("boom in prepass_splits")
        return super().prepass_splits(ctx)

    def prepass_start(self, ctx):
        if self.where == "prepass_start":
            raise RuntimeError("boom in prepass_start")
        return super().prepass_start(ctx)

    def prepass_update(self, pre, batch):
        if self.where == "prepass_update":
            raise RuntimeError("boom in prepass_update")
        return super().prepass_update(pre, batch)

    def prepass_merge(self, a, b):
        if self.where == "prepass_merge":
            raise RuntimeError("boom in prepass_merge")
        return super().prepass_merge(a, b)

    def prepass_finish(self, pre, ctx):
        if self.where == "prepass_finish":
            raise RuntimeError("boom in prepass_finish")
        return super().prepass_finish(pre, ctx)


class PrepassDiesInWorker(SplitsSeen):
    """Ends its worker process (SIGKILL) in its prepass; never in the test process itself."""

    code = "PRE004"
    name = "test.prepass-dies"

    def prepass_update(self, pre, batch):
        import multiprocessing
        import signal

        if multiprocessing.parent_process() is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().prepass_update(pre, batch)


class UnsendableValue(SplitsSeen):
    """Its prepass value holds a lambda: it cannot reach a worker process."""

    code = "PRE005"
    name = "test.prepass-unsendable"

    def prepass_finish(self, pre, ctx):
        return {"check": lambda row: row}

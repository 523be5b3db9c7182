"""Plugin-style rules that misbehave, for the engine's isolation tests.

A module of its own, not a test file: spawned worker processes unpickle rules by importing their
module, and they get the parent's ``sys.path`` (pytest puts the repository root on it; the test
scripts run in fresh interpreters put this folder on it).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading

from dataaudit.rule import Rule, RuleResult

DOC = "What it does: misbehaves. Why it matters: isolation tests. Example: -. Options: -."


class CountRows(Rule):
    __doc__ = DOC
    code = "OKAY001"
    name = "test.count-rows"
    requires = ()

    def start(self, ctx):
        return {"rows": 0}

    def update(self, state, batch):
        state["rows"] += batch.num_rows
        return state

    def merge(self, a, b):
        return {**a, "rows": a["rows"] + b["rows"]}

    def finish(self, state, ctx):
        result = RuleResult()
        result.metric("rows", state["rows"])
        return result


class Raises(CountRows):
    """Raises in the method named by ``where``."""

    code = "RAISE001"
    name = "test.raises"

    def __init__(self, where: str = "update", how: str = "raise"):
        self.where = where
        self.how = how

    def _maybe(self, method: str) -> None:
        if self.where == method:
            if self.how == "exit":  # a plugin that calls sys.exit(0): must not pass the gate
                sys.exit(0)
            raise RuntimeError(f"kaboom in {method}")

    def skip_reason(self, ctx):
        self._maybe("skip_reason")
        return super().skip_reason(ctx)

    def start(self, ctx):
        self._maybe("start")
        return super().start(ctx)

    def update(self, state, batch):
        self._maybe("update")
        return super().update(state, batch)

    def merge(self, a, b):
        self._maybe("merge")
        return super().merge(a, b)

    def finish(self, state, ctx):
        self._maybe("finish")
        return super().finish(state, ctx)


class DiesInWorker(CountRows):
    """Ends its worker process on the rows from ``from_row`` on: SIGKILL (what the kernel's
    out-of-memory killer sends) or ``os._exit(1)``. Never in the test process itself."""

    code = "DIE001"
    name = "test.dies-in-worker"

    def __init__(self, how: str = "kill", from_row: int = 2048):
        self.how = how
        self.from_row = from_row

    def update(self, state, batch):
        if multiprocessing.parent_process() is not None and batch.offset >= self.from_row:
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(1)
        return super().update(state, batch)


class LambdaState(CountRows):
    code = "PKL001"
    name = "test.lambda-state"

    def start(self, ctx):
        return {"rows": 0, "key": lambda row: row}


class GeneratorState(CountRows):
    code = "PKL002"
    name = "test.generator-state"

    def start(self, ctx):
        return {"rows": 0, "todo": (i for i in range(3))}


class LockState(CountRows):
    code = "PKL003"
    name = "test.lock-state"

    def start(self, ctx):
        return {"rows": 0, "lock": threading.Lock()}


class LockedRule(CountRows):
    """The rule object itself cannot be pickled."""

    code = "PKL004"
    name = "test.locked-rule"

    def __init__(self):
        self._lock = threading.Lock()


ALL = (CountRows, Raises, DiesInWorker, LambdaState, GeneratorState, LockState, LockedRule)


def register(ruleset, *classes) -> None:
    for cls in classes or ALL:
        ruleset.rules[cls.code] = cls
        ruleset.origin[cls.code] = "test"

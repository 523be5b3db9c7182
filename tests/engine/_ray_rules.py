"""Rules for the Ray engine's fault tests (a module of their own: Ray workers unpickle rules by
importing their module; they get the driver's ``sys.path``, on which pytest put the root)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.engine._crashy_rules import CountRows


class KilledOnce(CountRows):
    """Kills the worker process folding row ``at_row`` the first time (``marker`` does not
    exist yet, and the process is not the driver ``driver_pid``): SIGKILL, as the kernel's
    out-of-memory killer sends; Ray's retry then folds the same rows again."""

    code = "KILL001"
    name = "test.killed-once"

    def __init__(self, marker: str = "", driver_pid: int = 0, at_row: int = 0):
        self.marker = marker
        self.driver_pid = driver_pid
        self.at_row = at_row

    def update(self, state, batch):
        inside = batch.offset <= self.at_row < batch.offset + batch.num_rows
        if inside and os.getpid() != self.driver_pid and not Path(self.marker).exists():
            Path(self.marker).write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return super().update(state, batch)

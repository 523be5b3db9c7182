"""Record the I/O a piece of code does: files opened, folders listed, sockets, processes.

Python raises an audit event for each of these (PEP 578); one hook, installed on first use and
active only inside :func:`record_io`, collects them. Imports are not I/O of the code under test
(the import system reads its own files), so opens made by the import machinery are left out.
Native readers bypass the events (pyarrow reads files in C++), so on Linux the read system
calls the process made (``/proc/self/io``) are counted too.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["IORecord", "record_io"]

_EVENTS = {
    "open": "opened",
    "os.listdir": "listed",
    "os.scandir": "listed",
    "glob.glob": "globbed",
    "socket.connect": "connected to",
    "socket.getaddrinfo": "looked up",
    "urllib.Request": "requested",
    "subprocess.Popen": "started",
    "os.system": "ran",
    "os.posix_spawn": "started",
    "os.exec": "started",
}
_IMPORT_FILES = ("<frozen importlib._bootstrap", "<frozen zipimport")

_local = threading.local()
_installed = False


@dataclass
class IORecord:
    """What was done: ``"opened '/data/bench.jsonl'"``, and read syscalls seen (Linux)."""

    events: list[str] = field(default_factory=list)
    read_calls: int = 0

    def __bool__(self) -> bool:
        return bool(self.events or self.read_calls)

    def describe(self) -> str:
        parts = list(dict.fromkeys(self.events))[:5]
        if self.read_calls and not self.events:
            parts.append(f"{self.read_calls} read system call(s) (native code reading a file?)")
        return "; ".join(parts)


def _hook(event: str, args: tuple) -> None:
    record = getattr(_local, "record", None)
    if record is None or event not in _EVENTS:
        return
    if event == "open" and _in_import():
        return
    target = args[0] if args else ""
    record.events.append(f"{_EVENTS[event]} {target!r}")


def _in_import() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith(_IMPORT_FILES):
            return True
        frame = frame.f_back
    return False


def _read_calls() -> int | None:
    try:
        with open("/proc/self/io", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    for line in data.splitlines():
        if line.startswith(b"syscr:"):
            return int(line.split()[1])
    return None


@contextmanager
def record_io() -> Iterator[IORecord]:
    """Collect the I/O done inside the ``with`` block (this thread's events, the process's reads)."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)  # cannot be removed: it does nothing outside record_io()
        _installed = True
    record = IORecord()
    # the cost of reading the counter itself, so only the block's own reads remain
    first, second = _read_calls(), _read_calls()
    before = _read_calls()
    _local.record = record
    try:
        yield record
    finally:
        _local.record = None
        after = _read_calls()
        if None not in (first, second, before, after):
            record.read_calls = max(0, (after - before) - (second - first))

"""Run code in a fresh interpreter: what a new process imports, and costs, cannot be seen from
inside the test process, which has imported everything the other tests needed."""

from __future__ import annotations

import subprocess
import sys


def run_python(code: str, env: dict[str, str] | None = None) -> str:
    """``python -c code`` in a new process; its stdout, stripped. Fails with its stderr."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip()

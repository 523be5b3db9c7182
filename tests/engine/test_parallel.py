"""Parallel scan (worker processes over contiguous chunks) gives the same results as one pass."""

from __future__ import annotations

import pytest

from dataaudit import engine
from dataaudit.api import resolve_rules
from dataaudit.config import load_config
from dataaudit.context import AuditContext, SplitInfo
from dataaudit.corpus import load_corpus

pytestmark = pytest.mark.slow  # worker processes


def _run(corpus, parallel: bool):
    cfg = load_config(select=["ALL"])
    rules, _ = resolve_rules(cfg)
    ctx = AuditContext({n: SplitInfo(n, s.kind) for n, s in corpus.splits.items()}, corpus.roles)
    state = engine.start(rules, ctx)
    if parallel:
        engine.scan_parallel(state, corpus.stream(64), ctx, workers=2, chunk_rows=128)
    else:
        engine.scan(state, corpus.stream(64), ctx)
    return engine.finish(state, ctx)


def test_parallel_scan_equals_serial_scan(fixtures_dir):
    corpus = load_corpus(fixtures_dir / "classification")
    serial, parallel = _run(corpus, False), _run(corpus, True)
    assert [r.rule.code for r in serial.runs] == [r.rule.code for r in parallel.runs]
    for a, b in zip(serial.runs, parallel.runs):
        assert (a.error, a.skipped) == (b.error, b.skipped), a.rule.code
        assert a.result == b.result, a.rule.code
    assert {k: v.content_hash() for k, v in serial.identity.items()} == {
        k: v.content_hash() for k, v in parallel.identity.items()
    }


def test_workers_from_a_plain_script_without_main_guard(tmp_path, fixtures_dir):
    """Spawned workers must not re-run the user's script (which would call audit() again)."""
    import subprocess
    import sys

    script = tmp_path / "audit_me.py"
    script.write_text(
        "from dataaudit import audit\n"
        f"r = audit({str(fixtures_dir / 'classification')!r}, select=['TXT'], workers=2, batch_size=64)\n"
        "print('flagged', r.data['summary']['flagged_rows'])\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("flagged") == 1

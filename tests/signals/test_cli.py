"""dataaudit signals LOG --data DATA: the verdict as the exit code, the findings on stdout, and
a bad log or order as exit 2 with the message and no traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dataaudit.cli import main
from tests import FIXTURES, ROOT

BAD = FIXTURES / "signals" / "bad"
DATA = FIXTURES / "classification" / "train.jsonl"


def test_the_planted_run_fails_the_gate_at_warn(run_dir, truth, tmp_path, capsys):
    out = tmp_path / "r.json"
    code = main(
        [
            "signals",
            str(run_dir / "planted" / "trainer_state.json"),
            "--data",
            str(run_dir / "data.jsonl"),
            "--order",
            str(run_dir / "planted" / "order.jsonl"),
            "--max-grad-norm",
            "4",
            "--fail-on",
            "warn",
            "--json",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert code == 1
    section = json.dumps(json.loads(out.read_text())["signals"])
    for plant in truth["planted"].values():
        assert f"step {plant['step']}:" in text
        assert any(f'"id": "{row}"' in section for row in plant["rows"])
    assert "SIG001 failed: 2 warn findings (fail_on=warn)" in text
    assert "encoding damage (TXT002): 16 of 16 rows" in text


def test_the_clean_run_passes(run_dir, capsys):
    code = main(
        [
            "signals",
            str(run_dir / "clean" / "trainer_state.json"),
            "--data",
            str(run_dir / "data.jsonl"),
            "--order",
            str(run_dir / "clean" / "order.jsonl"),
            "-q",
        ]
    )
    assert code == 0 and capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([str(BAD / "missing_loss.csv")], "no training loss column"),
        ([str(BAD / "non_monotonic.csv")], "step goes back to 2 after step 3"),
        (
            [str(BAD / "short.csv"), "--order", str(BAD / "order_too_big.jsonl")],
            "has 600 rows (positions 0-599)",
        ),
        ([str(BAD / "short.csv"), "--sampler-order", str(BAD / "short.csv")], "needs batch_size"),
    ],
)
def test_bad_input_exits_2_with_the_fix(args, words, capsys):
    code = main(["signals", *args[:1], "--data", str(DATA), *args[1:]])
    err = capsys.readouterr().err
    assert code == 2 and words in err and err.startswith("error: ")
    assert "Traceback" not in err


@pytest.mark.slow
def test_the_installed_command_has_no_traceback():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dataaudit.cli",
            "signals",
            str(BAD / "no_step.jsonl"),
            "--data",
            str(DATA),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2 and "no step column" in proc.stderr
    assert "Traceback" not in proc.stderr

"""A real training run made by fixtures/make/signals.py (numpy softmax regression on the
classification fixture's text, seeded): the planted run (four bad batches at known steps) and
the clean run (same seed, same order, no planted batch), written once per test session."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests import FIXTURES

GENERATOR = FIXTURES / "make" / "signals.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("signals_fixture_generator", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("signals-run")
    load_generator().write(out)
    return out


@pytest.fixture(scope="session")
def truth(run_dir):
    return json.loads((run_dir / "truth.json").read_text())


def _signals(run_dir, name, **kwargs):
    from dataaudit import signals

    return signals(
        run_dir / name / "trainer_state.json",
        run_dir / "data.jsonl",
        order=run_dir / name / "order.jsonl",
        max_grad_norm=4.0,
        **kwargs,
    )


@pytest.fixture(scope="session")
def planted(run_dir):
    return _signals(run_dir, "planted")


@pytest.fixture(scope="session")
def clean(run_dir):
    return _signals(run_dir, "clean")

"""A log or an order that cannot be read as a run of this data: an InputError that names the
file, the step or the row, and the fix — before the audit spends its time."""

from __future__ import annotations

import json

import pytest

from dataaudit import signals
from dataaudit.errors import ConfigError, InputError
from tests import FIXTURES

BAD = FIXTURES / "signals" / "bad"
DATA = FIXTURES / "classification" / "train.jsonl"  # 600 rows, ids train-0000 ...


@pytest.mark.parametrize(
    ("log", "words"),
    [
        ("missing_loss.csv", ["no training loss column", "grad_norm, learning_rate", "'loss'"]),
        ("no_step.jsonl", ["line 1", "no step column", "name the column 'step'"]),
        (
            "non_monotonic.csv",
            ["line 5", "step goes back to 2 after step 3", "keep one run, each step once"],
        ),
    ],
)
def test_a_bad_log_is_a_clear_error(log, words):
    with pytest.raises(InputError) as err:
        signals(BAD / log, DATA)
    for w in words:
        assert w in str(err.value)


def test_a_repeated_step_is_named(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text('{"step": 1, "loss": 2}\n{"step": 1, "loss": 2}\n')
    with pytest.raises(InputError, match="line 2: step repeats 1 after step 1"):
        signals(log, DATA)


def test_a_value_that_is_not_a_number_is_named(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("step,loss\n1,2.0\n2,oops\n")
    with pytest.raises(InputError, match=r"line 3: column 'loss' has 'oops'"):
        signals(log, DATA)


def test_an_order_beyond_the_data_names_the_row_and_the_fix():
    with pytest.raises(InputError) as err:
        signals(BAD / "short.csv", DATA, order=BAD / "order_too_big.jsonl")
    text = str(err.value)
    assert "row 600 at step 3" in text and "has 600 rows (positions 0-599)" in text
    assert "Pass the data the run trained on" in text


def test_an_order_with_fewer_steps_than_the_log(tmp_path):
    order = tmp_path / "order.jsonl"
    order.write_text('{"step": 1, "rows": [0, 1]}\n{"step": 2, "rows": [2, 3]}\n')
    with pytest.raises(InputError) as err:
        signals(BAD / "short.csv", DATA, order=order)
    assert "has rows for 2 steps (1-2), but the log has step 3" in str(err.value)


def test_an_id_that_is_not_in_the_data(tmp_path):
    order = tmp_path / "order.json"
    order.write_text(json.dumps({"1": ["train-0001"], "2": ["train-0002"], "3": ["nope-1"]}))
    with pytest.raises(InputError, match="id 'nope-1' at step 3, which is not in the id column"):
        signals(BAD / "short.csv", DATA, order=order)


def test_a_sampler_order_too_short_for_the_log(tmp_path):
    sampler = tmp_path / "sampler.json"
    sampler.write_text(json.dumps(list(range(8))))
    with pytest.raises(InputError, match="batch_size / gradient_accumulation_steps"):
        signals(BAD / "short.csv", DATA, sampler_order=sampler, batch_size=4)


def test_option_errors(tmp_path):
    with pytest.raises(ConfigError, match="needs batch_size"):
        signals(BAD / "short.csv", DATA, sampler_order=tmp_path / "x.json")
    with pytest.raises(ConfigError, match="not both"):
        signals(BAD / "short.csv", DATA, order=BAD / "order_too_big.jsonl", sampler_order="x")

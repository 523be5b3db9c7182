"""Order files in each accepted form give the same rows per step; malformed ones say why."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dataaudit.errors import InputError
from dataaudit.signals.order import read_order, sampler_order

WANT = {1: [0, 1], 2: ["a-2", 3]}


def test_every_order_form_reads_alike(tmp_path):
    (tmp_path / "o.jsonl").write_text(
        '{"step": 1, "rows": [0, 1]}\n\n{"step": 2, "indices": ["a-2", 3]}\n'
    )
    (tmp_path / "o.json").write_text(json.dumps({"2": ["a-2", 3], "1": [0, 1]}))
    (tmp_path / "l.json").write_text(json.dumps([[0, 1], ["a-2", 3]]))
    (tmp_path / "o.csv").write_text("step,row\n1,0\n1,1\n2,a-2\n2,3\n")
    for name in ("o.jsonl", "o.json", "l.json", "o.csv"):
        assert read_order(tmp_path / name) == WANT, name


def test_a_sampler_order_is_cut_into_steps(tmp_path):
    np.save(tmp_path / "s.npy", np.arange(10))
    (tmp_path / "s.txt").write_text("\n".join(map(str, range(10))) + "\n")
    (tmp_path / "s.json").write_text(json.dumps(list(range(10))))
    for name in ("s.npy", "s.txt", "s.json"):
        got = sampler_order(tmp_path / name, 2, 2)
        assert got == {1: [0, 1, 2, 3], 2: [4, 5, 6, 7], 3: [8, 9]}, name
    assert list(sampler_order(tmp_path / "s.txt", 5, first_step=10)) == [10, 11]


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("twice.jsonl", '{"step": 1, "rows": [0]}\n{"step": 1, "rows": [1]}\n', "listed twice"),
        ("nostep.jsonl", '{"rows": [0]}\n', 'expected {"step": N'),
        ("flat.json", "[0, 1, 2]", "a flat list of rows is a sampler order"),
        ("bad.csv", "step,something\n1,0\n", "needs a 'step' and a 'row'"),
        ("float.json", '{"1": [0.5]}', "is not a row reference"),
        ("empty.jsonl", "\n", "no steps in it"),
    ],
)
def test_a_malformed_order_says_what_is_wrong(tmp_path, name, text, words):
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match=words.replace("{", r"\{").replace("(", r"\(")):
        read_order(tmp_path / name)


def test_sampler_order_needs_a_batch_size(tmp_path):
    (tmp_path / "s.txt").write_text("1\n2\n")
    with pytest.raises(InputError, match="needs batch_size"):
        sampler_order(tmp_path / "s.txt", 0)

"""Arrow-built JSON text of nested cells is json.dumps' text, so content hashes do not change."""

from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pytest

from dataaudit import identity
from dataaudit._json_text import json_texts

_ALPHABET = ['a', 'Z', ' ', '"', "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x01", "\x1f", "\x7f",
             "é", "日", "\u2028", "😀", "/", "'", "{", "]", ":", ","]  # fmt: skip


def _text(rng: random.Random) -> str | None:
    if rng.random() < 0.1:
        return None
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 12)))


def _python(arr: pa.Array) -> list[str | None]:
    return [
        None if v is None else json.dumps(v, sort_keys=True, default=str, ensure_ascii=False)
        for v in arr.to_pylist()
    ]


def _chats(rng: random.Random, n: int) -> list:
    rows = []
    for _ in range(n):
        if rng.random() < 0.05:
            rows.append(None)
            continue
        turns = []
        for _ in range(rng.randint(0, 4)):
            if rng.random() < 0.05:
                turns.append(None)
                continue
            turn = {"role": rng.choice(["user", "assistant", None]), "content": _text(rng)}
            turn["weight"] = rng.choice([None, 0, 1, -7, 2**40])
            turn["done"] = rng.choice([None, True, False])
            turn["tags"] = (
                None if rng.random() < 0.2 else [_text(rng) for _ in range(rng.randint(0, 3))]
            )
            turns.append(turn)
        rows.append(turns)
    return rows


@pytest.mark.parametrize("seed", range(4))
def test_chats_are_written_as_json_dumps_writes_them(seed):
    rng = random.Random(seed)
    arr = pa.array(_chats(rng, 300))
    assert json_texts(arr).to_pylist()[:0] == []
    got = json_texts(arr).to_pylist()
    want = _python(arr)
    assert [g if w is not None else None for g, w in zip(got, want)] == want
    for kind in (pa.large_list, pa.list_):  # sliced, and as large lists
        part = arr.cast(kind(arr.type.value_type)).slice(7, 200)
        got = json_texts(part).to_pylist()
        assert [g if w is not None else None for g, w in zip(got, _python(part))] == _python(part)


def test_structs_lists_of_scalars_and_key_order():
    arr = pa.array([{"b": 1, "a": ["x", None], "é": True, "A": {"z": None, "y": "q"}}, None, {}])
    assert json_texts(arr).to_pylist()[0] == json.dumps(arr.to_pylist()[0], sort_keys=True,
                                                        ensure_ascii=False)  # fmt: skip
    assert json_texts(arr).to_pylist()[1] == "null"
    assert json_texts(pa.array([[], [1, 2], None, [None]])).to_pylist() == ["[]", "[1, 2]", "null",
                                                                             "[null]"]  # fmt: skip
    assert json_texts(pa.array([[None, None]])).to_pylist() == ["[null, null]"]  # a null type


@pytest.mark.parametrize(
    "values",
    [[[1.5, 2.0]], [{"t": 1.0}], [[b"x"]], [{"a": 1, "b": [0.5]}]],
    ids=["floats", "float field", "binary", "nested float"],
)
def test_types_python_writes_differently_take_the_python_path(values):
    """Floats (repr), binary (default=str): None, and the content hash uses json.dumps."""
    arr = pa.array(values)
    assert json_texts(arr) is None
    want = [identity.xxhash.xxh3_64_intdigest(t.encode()) for t in _python(arr)]
    assert identity._cell_hashes(arr).tolist() == want


def test_content_hash_of_nested_cells_is_unchanged():
    rng = random.Random(9)
    arr = pa.array(_chats(rng, 500))
    fast = identity._cell_hashes(arr)
    want = np.array(
        [
            identity._NULL if t is None else identity.xxhash.xxh3_64_intdigest(t.encode())
            for t in _python(arr)
        ],
        np.uint64,
    )
    assert (fast == want).all()

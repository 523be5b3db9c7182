"""The JSON Lines reader's shortcuts give what the slow paths give."""

from __future__ import annotations

import json

import pytest

from dataaudit.inputs.jsonl import _scalar_schema, jsonl_schema
from dataaudit.inputs.records import records_to_batch


@pytest.mark.parametrize(
    "rec",
    [
        {"text": "a", "label": 1, "score": 0.5, "ok": True, "note": None},
        {"text": "", "n": -(1 << 63), "m": (1 << 63) - 1},
        {},
    ],
)
def test_flat_first_record_schema_is_the_records_schema(tmp_path, rec):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(rec) + "\n" + json.dumps({"text": "later"}) + "\n")
    assert _scalar_schema(rec) is not None
    assert jsonl_schema(path)[0] == records_to_batch([rec]).schema


@pytest.mark.parametrize(
    "rec",
    [
        {"text": "a", "tags": ["x"]},
        {"text": {"nested": 1}},
        {"text": "a", "big": 1 << 63},
        {"t\u00e9xte": "a"},
    ],
)
def test_other_first_records_take_the_records_path(tmp_path, rec):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    assert _scalar_schema(rec) is None
    assert jsonl_schema(path)[0] == records_to_batch([rec]).schema

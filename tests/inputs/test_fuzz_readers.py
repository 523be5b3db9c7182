"""Property tests of the readers: for any input, a report or a clear InputError, never a crash,
and never a pass when a role column the input has was dropped on the way."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataaudit import audit
from dataaudit.corpus import load_corpus
from dataaudit.errors import InputError

FUZZ = settings(  # DATAAUDIT_FUZZ_EXAMPLES=5000 for a longer local run
    max_examples=int(os.environ.get("DATAAUDIT_FUZZ_EXAMPLES", 120)),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# text with the characters that break readers: quotes, delimiters, newlines, controls, surrogates
hostile_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(list('",\t\n\r\\[]{}') + ["\ud800", "\udfff", "\x00", "\x1b", "\ufeff"]),
        st.characters(codec="utf-8"),
    ),
    max_size=40,
)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | hostile_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_text, inner, max_size=3),
    max_leaves=8,
)
record = st.dictionaries(
    st.sampled_from(["text", "label", "source", "id", "meta", "x y", ""]), json_value, max_size=5
)


def _read_all(data, **kw) -> int:
    corpus = load_corpus(data, **kw)
    return sum(rb.num_rows for _, rb in corpus.stream(7))


def _outcome(fn):
    """Run ``fn``; an InputError is an acceptable answer, anything else propagates (a bug)."""
    try:
        return fn()
    except InputError as exc:
        assert str(exc), "an input error must say what is wrong"
        return exc


def _has_label(records: list[dict]) -> bool:
    return any(isinstance(r.get("label"), str) for r in records)


@FUZZ
@given(st.lists(record, min_size=1, max_size=12))
def test_any_records_read_or_explain_and_never_drop_the_label(records):
    out = _outcome(lambda: audit(records, select=["FMT001"]))
    if isinstance(out, InputError):
        return
    roles = out.data["dataset"]["roles"]
    if _has_label(records) and "text" in roles and roles["text"]["column"] != "label":
        assert "label" in roles, "a label key the input has must become the label role"
    assert out.data["dataset"]["splits"]["train"]["rows"] == len(records)


@FUZZ
@given(st.lists(record, min_size=1, max_size=12), st.integers(0, 2))
def test_any_jsonl_reads_or_explains(records, style):
    lines = [json.dumps(r, ensure_ascii=bool(style)) for r in records]
    if style == 2:  # hand-written damage: truncated, not an object, deep, blank
        lines += ['{"text": "unterminated', "[1, 2]", "", '{"a": ' + "[" * 3000 + "]" * 3000 + "}"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.jsonl"
        path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
        out = _outcome(lambda: _read_all(path))
        if style < 2 and not isinstance(out, InputError):
            assert out == len(records)
        skipped = _outcome(lambda: _read_all(path, on_bad_lines="skip"))
        if not isinstance(skipped, InputError):
            assert skipped <= len(lines)


@FUZZ
@given(
    st.lists(st.lists(hostile_text, min_size=2, max_size=2), min_size=1, max_size=10),
    st.sampled_from([",", "\t"]),
    st.booleans(),
)
def test_any_delimited_file_reads_or_explains(cells, delimiter, latin1):
    body = "text" + delimiter + "label\n" + "\n".join(delimiter.join(row) for row in cells) + "\n"
    raw = body.encode("latin-1", "replace") if latin1 else body.encode("utf-8", "surrogatepass")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("train.tsv" if delimiter == "\t" else "train.csv")
        path.write_bytes(raw)
        out = _outcome(lambda: _read_all(path))
        if isinstance(out, int):
            assert out >= 1 or not body.strip()


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_label_in_a_later_file_is_never_silently_dropped(tmp_path, kind):
    """A label column that only the second shard has: audited, or the gate fails."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    first = [{"text": f"first shard row {i}"} for i in range(5)]
    second = [{"text": f"second shard row {i}", "label": "a" if i % 2 else "b"} for i in range(5)]
    for i, part in enumerate((first, second)):
        path = tmp_path / f"train-{i:05d}.{kind}"
        if kind == "jsonl":
            path.write_text("".join(json.dumps(r) + "\n" for r in part))
        elif kind == "csv":
            keys = list(part[0])
            path.write_text(
                ",".join(keys) + "\n" + "".join(",".join(r[k] for k in keys) + "\n" for r in part)
            )
        else:
            pq.write_table(pa.Table.from_pylist(part), path)
    report = audit(tmp_path, select=["LBL003"])
    assert report.status("LBL003") != "skipped" or not report.passed

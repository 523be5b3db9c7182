"""Every supported input resolves to the same splits, rows and roles; bad input gets a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit import audit
from dataaudit.corpus import load_corpus, split_kind
from dataaudit.errors import InputError

ROWS = [
    {"id": "a", "text": "The cat sat on the mat.", "label": "x", "source": "web"},
    {"id": "b", "text": "A dog barked at the moon.", "label": "y", "source": "books"},
    {"id": "c", "text": "   ", "label": "x", "source": "web"},
]


def rows_of(data, **kw) -> dict[str, list[dict]]:
    corpus = load_corpus(data, **kw)
    out: dict[str, list[dict]] = {}
    for split, rb in corpus.stream(2):
        out.setdefault(split, []).extend(
            pa.Table.from_batches([rb]).select(["id", "text"]).to_pylist()
        )
    return out


def expected(split="train"):
    return {split: [{"id": r["id"], "text": r["text"]} for r in ROWS]}


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    "make",
    [
        lambda tmp: ROWS,
        lambda tmp: pl.DataFrame(ROWS),
        lambda tmp: pl.DataFrame(ROWS).lazy(),
        lambda tmp: pd.DataFrame(ROWS),
        lambda tmp: pa.Table.from_pylist(ROWS),
        lambda tmp: write_jsonl(tmp / "train.jsonl", ROWS),
        lambda tmp: str(write_jsonl(tmp / "data.jsonl", ROWS)),
    ],
    ids=["list", "polars", "lazy", "pandas", "arrow", "jsonl-path", "jsonl-str"],
)
def test_in_memory_and_file_inputs_give_the_same_rows(tmp_path, make):
    assert rows_of(make(tmp_path)) == expected()


def test_parquet_csv_and_json_array(tmp_path):
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "train.parquet")
    pl.DataFrame(ROWS).write_csv(tmp_path / "t.csv")
    (tmp_path / "a.json").write_text(json.dumps(ROWS))
    assert rows_of(tmp_path / "train.parquet") == expected()
    assert rows_of(tmp_path / "t.csv") == expected()
    assert rows_of(tmp_path / "a.json") == expected()


def test_folder_of_split_files_and_glob(tmp_path):
    write_jsonl(tmp_path / "train.jsonl", ROWS)
    write_jsonl(tmp_path / "test.jsonl", ROWS[:1])
    write_jsonl(tmp_path / "validation.jsonl", ROWS[1:2])
    corpus = load_corpus(tmp_path)
    assert list(corpus.splits) == ["train", "validation", "test"]
    assert [s.kind for s in corpus.splits.values()] == ["train", "validation", "test"]
    assert list(load_corpus(str(tmp_path / "*.jsonl")).splits) == ["train", "validation", "test"]


def test_sharded_files_form_one_split(tmp_path):
    write_jsonl(tmp_path / "train-00000-of-00002.jsonl", ROWS[:2])
    write_jsonl(tmp_path / "train-00001-of-00002.jsonl", ROWS[2:])
    assert rows_of(tmp_path) == expected()
    write_jsonl(tmp_path / "part-1.jsonl", ROWS)  # unnamed shards are one split too
    other = tmp_path / "o"
    other.mkdir()
    write_jsonl(other / "part-0001.jsonl", ROWS[:2])
    write_jsonl(other / "part-0002.jsonl", ROWS[2:])
    assert rows_of(other) == expected()


def test_dict_of_splits_and_split_column():
    data = {"train": ROWS, "test": pl.DataFrame(ROWS[:1])}
    got = rows_of(data)
    assert list(got) == ["train", "test"]
    assert got["test"] == [{"id": "a", "text": ROWS[0]["text"]}]
    mixed = [{**r, "split": s} for r, s in zip(ROWS, ["train", "test", "train"])]
    got = rows_of(mixed, split="split")
    assert [r["id"] for r in got["train"]] == ["a", "c"]
    assert [r["id"] for r in got["test"]] == ["b"]


def test_split_column_keeps_row_positions_per_split():
    rows = [{"text": f"row number {i}", "split": "train" if i % 3 else "test"} for i in range(30)]
    rows[4]["text"] = ""  # 4 % 3 != 0 → train; its position in train is 2 (rows 1, 2, 4 ...)
    report = audit(rows, split="split", select=["TXT001"], batch_size=4)
    flags = report.flags()
    assert flags.select("split", "row").rows() == [("train", 2)]


def test_hugging_face_datasets():
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_list(ROWS)
    dd = datasets.DatasetDict({"train": ds, "test": ds.select([1])})
    got = rows_of(dd)
    assert got["train"] == expected()["train"]
    assert got["test"] == [{"id": "b", "text": ROWS[1]["text"]}]
    shuffled = ds.select([2, 0, 1])  # indices mapping must be respected
    assert [r["id"] for r in rows_of(shuffled)["train"]] == ["c", "a", "b"]
    iterable = ds.to_iterable_dataset()
    assert rows_of(iterable) == expected()


def test_roles_detected_and_overridden():
    corpus = load_corpus([{"content": "x", "y": 1, "origin": "web", "idx": 3}])
    assert corpus.roles.text == "content"
    assert (
        corpus.roles.label == "y" and corpus.roles.source == "origin" and corpus.roles.id == "idx"
    )
    corpus = load_corpus([{"body": "x", "title": "t"}], roles={"text": "title"})
    assert corpus.roles.text == "title" and corpus.roles.detected["text"] is False
    chat = load_corpus([{"messages": [{"role": "user", "content": "hi"}]}])
    assert chat.roles.messages == "messages" and chat.roles.text is None
    alpaca = load_corpus([{"instruction": "a", "input": "b", "output": "c"}])
    assert (alpaca.roles.prompt, alpaca.roles.input, alpaca.roles.response) == (
        "instruction",
        "input",
        "output",
    )


def test_split_kinds():
    assert split_kind("train") == "train" and split_kind("dev") == "validation"
    assert split_kind("my_test_set") == "test" and split_kind("extra") == "other"


# -- bad input -------------------------------------------------------------------------------


def test_misnamed_column_lists_columns_and_suggests(tmp_path):
    with pytest.raises(InputError) as err:
        load_corpus(ROWS, roles={"label": "lable"})
    assert "Available columns: id, text, label, source" in str(err.value)
    assert "'label'" in str(err.value)


def test_corrupt_jsonl_names_file_and_line(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "ok"}\n{"text": "ok"}\n{"text": broken}\n')
    with pytest.raises(InputError, match=r"train.jsonl:3: not valid JSON"):
        audit(path)


def test_unknown_format_empty_and_missing(tmp_path):
    (tmp_path / "data.xlsx").write_text("x")
    with pytest.raises(InputError, match="unknown file format"):
        audit(tmp_path / "data.xlsx")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(InputError, match="no rows"):
        audit(tmp_path / "empty.jsonl")
    with pytest.raises(InputError, match="no such file"):
        audit(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="empty"):
        audit(pl.DataFrame({"text": []}, schema={"text": pl.String}))


def test_corrupt_parquet_names_the_file(tmp_path):
    path = tmp_path / "train.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(InputError, match="train.parquet"):
        audit(path)


def test_no_text_column_is_explained():
    with pytest.raises(InputError, match="found no text column"):
        audit([{"a": 1, "b": 2}])


def test_mixed_types_are_kept_and_marked(tmp_path):
    path = write_jsonl(tmp_path / "train.jsonl", [{"text": "fine"}, {"text": 42}, {"text": ["a"]}])
    report = audit(path, select=["FMT001"])
    assert report.metric("FMT001", "text:not_string_rows", "train") == 2
    assert path.read_text().count("\n") == 3  # nothing the user gave is changed


def test_unreadable_file_is_an_input_error(tmp_path):
    import os

    path = write_jsonl(tmp_path / "train.jsonl", ROWS)
    if os.geteuid() == 0:  # root reads anything: use a file that is not UTF-8 instead
        path.write_bytes(b'{"text": "\xff\xfe bad bytes"}\n')
        with pytest.raises(InputError, match="train.jsonl:1: not valid UTF-8"):
            audit(path)
        return
    path.chmod(0)
    with pytest.raises(InputError, match="cannot read"):
        audit(path)


def test_parquet_threads_decode_several_columns_only(tmp_path, monkeypatch):
    """pyarrow's reader threads decode columns in parallel: a one-column file is read without
    them (their hand-offs only cost wall time on a busy machine), a wider one with them; the
    rows are the same either way."""
    from dataaudit.inputs.parquet import iter_parquet

    used = []
    real = pq.ParquetFile.iter_batches

    def spy(self, *args, **kwargs):
        used.append(kwargs.get("use_threads", True))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    pq.write_table(pa.table({"text": ["a", "b", "c"]}), one, row_group_size=2)
    pq.write_table(pa.table({"text": ["a", "b", "c"], "n": [1, 2, 3]}), two, row_group_size=2)
    assert sum(rb.num_rows for rb in iter_parquet(one, 8)) == 3
    assert used == [False, False]  # a call per row group
    used.clear()
    assert sum(rb.num_rows for rb in iter_parquet(two, 8)) == 3
    assert used == [True, True]

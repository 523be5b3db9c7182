"""report.apply(data): the flagged rows removed, in the input's own type, only from the data the
report audited; re-auditing the result shows the findings gone."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from dataaudit import audit
from dataaudit.errors import ConfigError, InputError
from dataaudit.remediate import plan
from tests import ROOT

FIXTURE = ROOT / "fixtures" / "classification"
SPLITS = ("train", "validation", "test")
# the rows the fixture plants (fixtures/README.md): dropped are the duplicates that are not the
# first of their group/cluster and the train copies of leaked eval rows
FIXED = ["DUP001", "DUP002", "LEAK001"]


@pytest.fixture(scope="module")
def frames():
    return {s: pl.read_ndjson(FIXTURE / f"{s}.jsonl") for s in SPLITS}


@pytest.fixture(scope="module")
def report(frames):
    return audit(frames)


@pytest.fixture(scope="module")
def truth():
    return json.loads((ROOT / "fixtures" / "ground_truth.json").read_text())["classification"]


def _expected_drops(truth) -> set[int]:
    """Train rows the default remedy drops for DUP and LEAK001, from the ground truth."""
    drop = set()
    for group in truth["exact_duplicates"]["train"]:
        drop |= set(group) - {min(group)}
    for nd in truth["near_duplicates"]["train"]:
        drop |= set(nd["rows"]) - {min(nd["rows"])}
    for leak in truth["leaks"]:
        drop |= set(leak["train_rows"])
    return drop


def _assert_fixed(cleaned, **kwargs):
    again = audit(cleaned, **kwargs)
    for code in FIXED:
        assert again.status(code) == "pass", (code, again.result(code)["findings"][:1])
    return again


def test_apply_on_polars_drops_exactly_the_planted_rows(report, frames, truth):
    out = report.apply(frames, drop=["DUP", "LEAK001"], severity="warn")
    assert isinstance(out, dict) and all(isinstance(v, pl.DataFrame) for v in out.values())
    for s in ("validation", "test"):  # the benchmark stays intact
        assert out[s].equals(frames[s])
    gone = set(frames["train"]["id"]) - set(out["train"]["id"])
    assert gone == {f"train-{r:04d}" for r in _expected_drops(truth)}
    again = _assert_fixed(out)
    assert again.data["dataset"]["splits"]["test"] == report.data["dataset"]["splits"]["test"]


def test_dropping_duplicates_keeps_one_row_per_cluster(report, frames, truth):
    out = report.apply(frames, drop="DUP")
    kept = set(out["train"]["id"])
    for nd in truth["near_duplicates"]["train"]:
        ids = {f"train-{r:04d}" for r in nd["rows"]}
        assert len(ids & kept) == 1, nd
    assert out["train"].height == 600 - len(
        {r for g in truth["exact_duplicates"]["train"] for r in set(g) - {min(g)}}
        | {
            r
            for nd in truth["near_duplicates"]["train"]
            for r in set(nd["rows"]) - {min(nd["rows"])}
        }
    )


def test_apply_on_pandas_keeps_the_index_of_the_kept_rows(report, frames):
    data = {k: v.to_pandas() for k, v in frames.items()}
    out = report.apply(data, drop=["DUP", "LEAK001"])
    assert isinstance(out["train"], pd.DataFrame)
    polars_out = report.apply(frames, drop=["DUP", "LEAK001"])
    assert out["train"]["id"].tolist() == polars_out["train"]["id"].to_list()
    assert out["train"].index.tolist() == [int(i[6:]) for i in out["train"]["id"]]
    _assert_fixed(out)


def test_apply_on_a_hf_datasetdict(frames):
    from datasets import Dataset, DatasetDict

    data = DatasetDict({k: Dataset.from_polars(v) for k, v in frames.items()})
    report = audit(data)
    out = report.apply(data, drop=["DUP", "LEAK001"])
    assert type(out) is DatasetDict and list(out) == list(SPLITS)
    assert out["test"]["id"] == data["test"]["id"]
    assert out["train"].num_rows < data["train"].num_rows
    _assert_fixed(out)


def test_apply_on_a_list_of_dicts_an_arrow_table_and_a_lazy_frame():
    rows = [{"text": t} for t in ["a b c d e f", "A  b c d e f", "x", "", "a b c d e f"]]
    report = audit(rows, select=["DUP001", "TXT001"])
    assert report.apply(rows) == [rows[0], rows[2]]  # 1 and 4 copy 0, 3 is empty
    assert report.apply(rows, drop="DUP001") == [rows[0], rows[2], rows[3]]
    table = pa.Table.from_pylist(rows)
    assert report.apply(table).to_pylist() == [rows[0], rows[2]]
    lazy = pl.DataFrame(rows).lazy()
    out = report.apply(lazy)
    assert isinstance(out, pl.LazyFrame) and out.collect().to_dicts() == [rows[0], rows[2]]


def test_apply_on_one_frame_partitioned_by_a_split_column():
    df = pl.read_parquet(ROOT / "fixtures" / "classification.parquet")
    report = audit(df, split="split")
    out = report.apply(df, drop=["DUP", "LEAK001"])
    assert out.columns == df.columns
    assert out.filter(pl.col("split") == "test").equals(df.filter(pl.col("split") == "test"))
    assert (
        0
        < df.height - out.height
        == report.apply(df, drop="LEAK001").pipe(lambda o: df.height - o.height)
        + len(plan(report, drop="DUP").flags.filter(pl.col("action") == "drop")["row"].unique())
    )
    _assert_fixed(out, split="split")


def test_severity_action_and_splits_choose_the_rows(report, frames):
    every = report.apply(frames)
    warn = report.apply(frames, severity="warn")
    error = report.apply(frames, severity="error")
    assert every["train"].height <= warn["train"].height <= error["train"].height
    # only LEAK001 (severity error) drops at severity error: exactly the train copies
    assert frames["train"].height - error["train"].height == len(
        plan(report, drop="LEAK001").drop["train"]
    )
    review = report.apply(frames, drop="LBL001", action=["drop", "review"])
    assert review["train"].height < frames["train"].height
    assert report.apply(frames, drop="LBL001")["train"].height == frames["train"].height
    only_train = report.apply(frames, splits="train")
    assert all(only_train[s].equals(every[s]) for s in SPLITS)
    data = {"train": [{"text": "a"}, {"text": ""}], "test": [{"text": " "}, {"text": "b"}]}
    small = audit(data, select=["TXT001"])
    assert small.apply(data, splits="test") == {"train": data["train"], "test": [{"text": "b"}]}
    assert small.apply(data) == {"train": [{"text": "a"}], "test": [{"text": "b"}]}


def test_the_data_must_be_what_the_report_audited(report, frames):
    with pytest.raises(InputError, match=r"split 'train' has 599 rows, but the report audited 600"):
        report.apply({**frames, "train": frames["train"].head(599)})
    edited = frames["train"].with_columns(
        text=pl.when(pl.int_range(pl.len()) == 5).then(pl.lit("edited")).otherwise(pl.col("text"))
    )
    with pytest.raises(InputError, match=r"split 'train' has the report's 600 rows, but not"):
        report.apply({**frames, "train": edited})
    with pytest.raises(InputError, match=r"the data has the splits train, test, but the report"):
        report.apply({"train": frames["train"], "test": frames["test"]})
    shuffled = frames["train"].sample(fraction=1.0, shuffle=True, seed=1)
    out = report.apply({**frames, "train": shuffled}, drop="LEAK001")  # same content, any order:
    assert out["train"].height == 591  # rows are positions: the check cannot see an order change


def test_selectors_are_checked(report, frames):
    with pytest.raises(ConfigError, match=r"drop: 'DUPX' matches no rule.*Did you mean"):
        report.apply(frames, drop="DUPX")
    small = audit(frames, select=["TXT001"])
    with pytest.raises(ConfigError, match=r"drop: 'LEAK001' selects no rule of this report"):
        small.apply(frames, drop="LEAK001")
    with pytest.raises(ConfigError, match=r"action: 'keep' cannot remove rows"):
        report.apply(frames, action="keep")
    with pytest.raises(ConfigError, match=r"splits: no split 'dev'"):
        report.apply(frames, splits="dev")
    with pytest.raises(ConfigError, match="severity='fatal' is not a severity"):
        report.apply(frames, severity="fatal")


def test_paths_are_cleaned_not_applied(report):
    with pytest.raises(InputError, match="dataaudit clean"):
        report.apply(str(FIXTURE))


def test_a_loaded_report_applies_like_the_original(report, frames, tmp_path):
    path = tmp_path / "r.json"
    report.to_json(path)
    from dataaudit.report import Report

    loaded = Report.load(path).apply(frames, drop=["DUP", "LEAK001"])
    direct = report.apply(frames, drop=["DUP", "LEAK001"])
    assert all(loaded[s].equals(direct[s]) for s in SPLITS)


def test_plan_lists_sorted_unique_rows(report):
    p = plan(report, drop=["DUP", "LEAK001"])
    assert p.codes == ["DUP001", "DUP002", "LEAK001"]
    for rows in p.drop.values():
        assert np.all(np.diff(rows) > 0)
    assert p.drop["test"].size == 0 and p.removed == p.drop["train"].size


def test_apply_on_a_hf_dataset_and_an_iterable_dataset():
    from datasets import Dataset, IterableDataset

    rows = [
        {"text": t, "n": i} for i, t in enumerate(["same text here", "", "same  text HERE", "x"])
    ]
    ds = Dataset.from_list(rows)
    report = audit(ds, select=["DUP001", "TXT001"])
    out = report.apply(ds)
    assert isinstance(out, Dataset) and out["n"] == [0, 3]
    stream = ds.to_iterable_dataset()
    out = report.apply(stream)
    assert isinstance(out, IterableDataset) and [r["n"] for r in out] == [0, 3]

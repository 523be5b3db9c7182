"""The report's flags table is built from the rules' column blocks (``flag_table``) and held
as columns (``FlagTable``): the same table, the same JSON, as a plain Python reference of the
stored encoding makes it, and reading the report (JSON, flags files, ``Report.flags()``)
never turns it into one Python list per column."""

from __future__ import annotations

import copy
import json
import pickle
import random

import numpy as np
import pyarrow as pa
import pytest

from dataaudit import audit
from dataaudit.report import Report
from dataaudit.report.escape import shorten
from dataaudit.report.flags import (
    DICT_COLUMNS,
    FLAG_COLUMNS,
    FlagTable,
    column_json,
    decode_flags,
    flag_table,
)
from dataaudit.rule import Flag, Flags, Rule, RuleOutcome, RuleResult, Severity
from tests import ROOT


class _A(Rule):
    code = "AAA001"


class _B(Rule):
    code = "BBB002"


def _reference(outcomes: list[RuleOutcome]) -> dict:
    """The stored encoding, from Flag objects in plain Python: resolved, bounded, unique,
    sorted by split, row, code, cluster, detail, action, severity, id, score (null first)."""
    rows = set()
    for o in outcomes:
        for f in o.result.flags:
            rows.add(
                (
                    f.split,
                    f.row,
                    o.rule.code,
                    f.group,
                    None if f.detail is None else shorten(f.detail, 200),
                    f.action or "review",
                    (f.severity or o.severity).value,
                    None if f.id is None else shorten(f.id, 256),
                    f.score,
                )
            )
    order = ["split", "row", "code", "cluster", "detail", "action", "severity", "id", "score"]
    table = sorted(rows, key=lambda r: [(v is not None, v) for v in r])
    out: dict = {"count": len(table)}
    for name in FLAG_COLUMNS:
        column = [r[order.index(name)] for r in table]
        if name in DICT_COLUMNS:
            values = sorted({v for v in column if v is not None})
            index = [len(values) if v is None else values.index(v) for v in column]
            column = {"values": values + [None] * (None in column), "index": index}
        out[name] = column
    return out


def _random_block(rng: random.Random, n: int) -> dict:
    """One block's fields, each in one of the forms a rule can give (a constant, a list,
    numpy, Arrow), with nulls, long text and values equal once bounded."""

    def some(values: list) -> list:
        return [rng.choice(values) for _ in range(n)]

    words = ["kept", "dup", None, "x" * 230 + "a", "x" * 230 + "b"]
    forms = {
        "split": ["train", some(["train", "test"])],
        "group": [None, "g", np.array(some([0, 1, 4])), pa.array(some(["1", "10", "9", None]))],
        "detail": [None, "d", some(words), np.array(some(["kept", "dup"]))],
        "action": [None, "drop", some(["keep", None])],
        "severity": [None, "error", some(["info", None])],
        "score": [None, some([0.5, 0.0, None, float("nan"), 1.0])],
        "id": [None, pa.array(some([7, 30, None])), some(["a", "é" * 300, None])],
    }
    return {name: rng.choice(values) for name, values in forms.items()}


def _random_flags(rng: random.Random) -> Flags:
    """Blocks with repeated rows, and Flag objects; compacted as the engine does, or not."""
    flags = Flags()
    for _ in range(rng.randrange(0, 4)):
        n = rng.randrange(1, 25)
        fields = _random_block(rng, n)
        flags.add(fields.pop("split"), [rng.randrange(12) for _ in range(n)], **fields)
    for _ in range(rng.randrange(0, 3)):
        flags.append(Flag("test", rng.randrange(12), "g", rng.choice([None, "o"]), "keep"))
    return flags.compact() if rng.random() < 0.5 else flags


@pytest.mark.parametrize("seed", range(40))
def test_the_table_equals_the_plain_reference(seed):
    rng = random.Random(seed)
    outcomes = [
        RuleOutcome(rule(), rng.choice([Severity.WARN, Severity.INFO]), RuleResult(flags=f))
        for rule, f in ((_A, _random_flags(rng)), (_B, _random_flags(rng)))
    ]
    expected = _reference(outcomes)
    table = flag_table(outcomes)
    for name in FLAG_COLUMNS:  # written from the columns, before anything reads it as a dict
        text = "".join(column_json(table, name))
        assert text == json.dumps(expected[name], separators=(",", ":"), ensure_ascii=False)
    assert dict.__len__(table) == 1  # count only: no column was built as Python lists
    assert table.frame().equals(decode_flags(expected))
    assert table.flagged_rows() == len({(s, r) for s, r in zip(*table.frame()[:, :2])})
    assert table["count"] == expected["count"] and dict(table) == expected


def test_a_flag_table_reads_as_the_stored_dict():
    outcome = RuleOutcome(_A(), Severity.WARN, RuleResult(flags=[Flag("train", 3, "g")]))
    table = flag_table([outcome])
    assert isinstance(table, dict) and table.get("count") == 1
    expected = _reference([outcome])
    assert json.loads(json.dumps({"flags": table}))["flags"] == expected
    for other in (copy.deepcopy(table), pickle.loads(pickle.dumps(table)), table.copy()):
        assert type(other) is dict and other == expected
    assert table == expected and sorted(table) == sorted(expected)


def test_reading_the_report_never_builds_the_flags_as_lists(tmp_path):
    report = audit(str(ROOT / "fixtures" / "classification"))
    table = report.data["flags"]
    assert isinstance(table, FlagTable) and table["count"] > 50
    text = report.to_json(tmp_path / "r.json")
    for ext in ("csv", "parquet", "jsonl"):
        report.write_flags(tmp_path / f"flags.{ext}")
    report.summary(), report.to_html(), report.to_sarif(), report.to_markdown()
    frame = report.flags()
    assert dict.__len__(table) == 1  # the JSON and the files came from the columns
    # ... and say what the stored encoding says, as a report loaded from that JSON
    loaded = Report.load(tmp_path / "r.json")
    assert (tmp_path / "r.json").read_text() == text + "\n" == loaded.to_json() + "\n"
    assert loaded.flags().equals(frame)
    loaded.write_flags(tmp_path / "loaded.csv")
    assert (tmp_path / "loaded.csv").read_bytes() == (tmp_path / "flags.csv").read_bytes()
    assert report.to_dict()["flags"] == json.loads(text)["flags"]


def test_a_table_read_as_a_dict_writes_what_it_holds_then(tmp_path):
    outcome = RuleOutcome(_A(), Severity.WARN, RuleResult(flags=[Flag("train", 3, "g")]))
    report = Report({"flags": flag_table([outcome])})
    report.data["flags"]["row"] = [4]  # read as a dict, then changed: the change counts
    assert report.flags()["row"].to_list() == [4]
    assert "".join(column_json(report.data["flags"], "row")) == "[4]"


def test_write_json_writes_the_bytes_to_json_writes(tmp_path, capsys):
    report = audit(str(ROOT / "fixtures" / "classification"))
    report.data["results"][0]["message"] = "lone \ud800 surrogate"  # U+FFFD in the file
    text = report.to_json(tmp_path / "a.json")
    assert report.write_json(tmp_path / "b.json") == tmp_path / "b.json"
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert "lone \ufffd surrogate" in (tmp_path / "b.json").read_text()
    assert dict.__len__(report.data["flags"]) == 1 and text.count('"flags"') == 1
    report.write_json("-")
    assert capsys.readouterr().out == (tmp_path / "a.json").read_text()

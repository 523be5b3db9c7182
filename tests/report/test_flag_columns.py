"""Row flags stored as columns (``Flags``) give byte-identical outputs to Flag objects.

Every rule that flags rows in bulk (``result.flags.add``) is run twice on every fixture: as it
is, and with its result's flags turned back into a list of Flag objects right after ``finish``
(what a plugin returns, and what every rule returned before the columns). Everything written
from the report must be the same bytes: the JSON report, the flags table as CSV, Parquet and
JSONL, HTML, JUnit, SARIF, Markdown, GitHub annotations, the summary, a baseline, a diff and
what ``dataaudit clean`` writes. The API itself: Flag objects and bulk blocks mix, read back as
Flag objects in the order added, and a bad value is refused naming its field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import dataaudit
from dataaudit.cli import main
from dataaudit.registry import load_rules
from dataaudit.report.baseline import baseline_json
from dataaudit.rule import Flag, Flags, RuleResult, Severity
from tests import ROOT

FIXTURES = ROOT / "fixtures"


def _as_objects(monkeypatch) -> None:
    """Every rule's flags as a list of Flag objects, as rules returned them before Flags."""
    for cls in load_rules().rules.values():
        for name in ("finish", "finish_keyed"):
            method = cls.__dict__.get(name) or getattr(cls, name, None)
            if method is None:
                continue

            def objects(self, *args, _method=method, **kwargs):
                result = _method(self, *args, **kwargs)
                if isinstance(result, RuleResult):
                    result.flags = list(result.flags)
                return result

            monkeypatch.setattr(cls, name, objects)


def _timeless(value: Any, zero: bool = False) -> Any:
    """The report without what differs between two runs: times (zeroed) and the date."""
    if isinstance(value, dict):
        return {
            k: "" if k == "created" else _timeless(v, zero or k in ("seconds", "timings"))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_timeless(v, zero) for v in value]
    if zero and isinstance(value, float):
        return 0.0
    return value


def _outputs(report: dataaudit.Report, data: Path, out: Path) -> dict[str, bytes]:
    """Everything written from ``report`` (times zeroed first), as bytes by name."""
    out.mkdir(parents=True)
    report = dataaudit.Report(_timeless(report.data))
    files: dict[str, bytes] = {
        "json": report.to_json().encode(),
        "html": report.to_html().encode(),
        "junit": report.to_junit().encode(),
        "sarif": report.to_sarif().encode(),
        "markdown": report.to_markdown().encode(),
        "github": report.to_github().encode(),
        "summary": report.summary().encode(),
        "baseline": baseline_json(report.data).encode(),
    }
    for ext in ("csv", "parquet", "jsonl"):
        files[f"flags.{ext}"] = report.write_flags(out / f"flags.{ext}").read_bytes()
    report.to_json(out / "report.json")
    code = main(
        ["clean", str(data), "--report", str(out / "report.json"), "--out", str(out / "clean")]
        + ["--severity", "info", "--action", "drop,review"]
    )
    files["clean.exit"] = str(code).encode()
    for path in sorted((out / "clean").rglob("*")):
        if path.is_file():
            files[f"clean/{path.name}"] = path.read_bytes()
    files["flag_count"] = str(report.flags().height).encode()
    return files


def _compare(data: Path, tmp_path: Path, monkeypatch, **options) -> dict[str, bytes]:
    columns = dataaudit.audit(data, **options)
    with monkeypatch.context() as m:
        _as_objects(m)
        objects = dataaudit.audit(data, **options)
    a = _outputs(columns, data, tmp_path / "columns")
    b = _outputs(objects, data, tmp_path / "objects")
    assert a.keys() == b.keys()
    for name in a:
        if name.startswith("clean/") and name.endswith(".json"):  # the manifest names its dir
            continue
        assert a[name] == b[name], f"{name} differs between Flags and Flag objects"
    columns, objects = (dataaudit.Report(_timeless(r.data)) for r in (columns, objects))
    diff_a = dataaudit.diff(objects, columns).to_dict()
    diff_b = dataaudit.diff(columns, objects).to_dict()
    assert json.dumps(diff_a, sort_keys=True) == json.dumps(diff_b, sort_keys=True)
    return a


def test_the_default_pack_writes_the_same_bytes_from_columns_and_objects(tmp_path, monkeypatch):
    out = _compare(FIXTURES / "classification", tmp_path, monkeypatch)
    # the comparison covers bulk flags of several rules and removed rows
    assert int(out["flag_count"]) > 50
    assert out["clean.exit"] == b"0"
    codes = {line.split(",")[3] for line in out["flags.csv"].decode().splitlines()[1:]}
    assert {"DUP001", "LEN002", "TXT001"} <= codes


@pytest.mark.slow
def test_every_rule_writes_the_same_bytes_from_columns_and_objects(
    tmp_path, monkeypatch, bpe, fixtures_dir
):
    from tests.rules.eval import probe

    predictions = tmp_path / "predictions.csv"
    probe.write_csv(predictions, probe.planted())
    out = _compare(
        FIXTURES / "classification",
        tmp_path / "classification",
        monkeypatch,
        predictions=predictions,
        select=["ALL"],
        tokenizer=bpe,
        contamination_ref=str(fixtures_dir / "contamination_ref.jsonl"),
        rules={"LEN001": {"max_seq_len": 64}},
    )
    assert int(out["flag_count"]) > 100


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["chat_sft", "chat_tools", "chat_tokenized"])
def test_the_sft_pack_writes_the_same_bytes_from_columns_and_objects(
    tmp_path, monkeypatch, ground_truth, fixture
):
    options = ground_truth[fixture].get("options") or {}
    out = _compare(FIXTURES / fixture, tmp_path, monkeypatch, config="sft", rules=options)
    assert int(out["flag_count"]) > 0


def test_flags_mix_objects_and_columns_in_the_order_added():
    flags = Flags([Flag("train", 9, "g", "old style")])
    flags.add(
        "train",
        np.array([3, 1]),
        group=np.array([1, 1]),
        detail=np.array(["kept", "duplicate"]),
        action=["keep", "drop"],
        score=[0.5, float("nan")],
        id=pa.array([7, None]),
        severity="error",
    )
    flags += [Flag("test", 2, action="review")]
    assert len(flags) == 4 and flags.flagged_rows() == 4
    assert list(flags) == [
        Flag("train", 9, "g", "old style"),
        Flag("train", 3, "1", "kept", "keep", Severity.ERROR, 0.5, "7"),
        Flag("train", 1, "1", "duplicate", "drop", Severity.ERROR, None, None),
        Flag("test", 2, action="review"),
    ]
    assert flags[1].row == 3 and flags == list(flags)
    result = RuleResult(flags=[Flag("train", 1)])  # a list given to the result is read as Flags
    assert isinstance(result.flags, Flags) and len(result.flags) == 1


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("action", "delete", "action='delete'"),
        ("detail", [3, 4], "detail: 3 is not a str"),
        ("group", ["a"], "group: 1 values for 2 rows"),
        ("score", ["x", "y"], "score: expected numbers"),
        ("severity", "fatal", "severity='fatal'"),
    ],
)
def test_a_bad_block_is_refused_naming_its_field(field, value, message):
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace("[", r"\[")):
        Flags().add("train", [1, 2], **{field: value})


def test_rows_must_be_integers():
    with pytest.raises(ValueError, match="rows: expected a sequence of ints"):
        Flags().add("train", [1.5])

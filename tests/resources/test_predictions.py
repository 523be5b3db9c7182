"""Predictions in every form audit() takes, and every bad input a clear error naming the fix."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dataaudit import audit
from dataaudit.errors import ConfigError, DataAuditError, InputError

LABELS = ["a", "b", "c"]


def _rows(n: int = 60) -> list[dict]:
    words = {"a": "apple apricot", "b": "banana blueberry", "c": "cherry currant"}
    return [
        {"id": f"r{i}", "text": f"row {i} {words[LABELS[i % 3]]} {i * 7 % 13}",
         "label": LABELS[i % 3], "source": "s1" if i % 2 else "s2"}
        for i in range(n)
    ]  # fmt: skip


def _eval(report, code: str = "EVAL001") -> dict:
    data = json.loads(report.to_json())
    return next(r for r in data["results"] if r["code"] == code)


def _run(data, predictions, **kw):
    return audit(data, predictions=predictions, select=["EVAL001"], **kw)


def test_labels_probabilities_files_and_columns_give_the_same_verdict(tmp_path):
    rows = _rows()
    pred = [r["label"] if i % 4 else "a" for i, r in enumerate(rows)]
    base = _eval(_run(rows, pred))
    table = base["details"]["splits"]["train"]
    assert table["rows"] == 60 and table["accuracy"] == pytest.approx(1 - 10 / 60, abs=1e-4)
    proba = np.array([[0.8 if c == p else 0.1 for c in LABELS] for p in pred])
    as_proba = _eval(_run(rows, {"probabilities": proba, "classes": LABELS}))
    assert as_proba["details"]["splits"] == base["details"]["splits"]
    csv = tmp_path / "p.csv"
    csv.write_text("row,prediction\n" + "".join(f"{i},{p}\n" for i, p in enumerate(pred)))
    assert _eval(_run(rows, csv))["details"]["splits"] == base["details"]["splits"]
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text(
        "".join(
            json.dumps({"id": r["id"], "probabilities": dict(zip(LABELS, p.tolist()))}) + "\n"
            for r, p in zip(rows, proba)
        )
    )
    assert _eval(_run(rows, jsonl))["details"]["splits"] == base["details"]["splits"]
    with_column = [{**r, "pred": p} for r, p in zip(rows, pred)]
    assert _eval(_run(with_column, "pred"))["details"]["splits"] == base["details"]["splits"]


def test_correct_scores_for_a_generative_task_need_no_label(tmp_path):
    rows = [{"prompt": f"question {i}", "response": f"answer {i}", "kind": "math" if i < 20
             else "chat"} for i in range(80)]  # fmt: skip
    correct = [i >= 20 or i % 5 == 0 for i in range(80)]  # math mostly wrong
    report = audit(rows, predictions=correct, select=["EVAL"])
    per_class = _eval(report, "EVAL001")
    assert per_class["status"] == "skipped" and "label" in per_class["message"]
    slices = _eval(report, "EVAL002")
    found = {(f["data"]["dimension"], f["data"]["value"]) for f in slices["findings"]}
    assert ("column kind", "math") in found


def test_without_predictions_the_eval_rules_do_not_run_and_say_why_when_asked():
    rows = _rows()
    default = json.loads(audit(rows).to_json())
    assert not [r for r in default["results"] if r["code"].startswith("EVAL")]
    asked = _eval(audit(rows, select=["EVAL001"]))
    assert asked["status"] == "skipped"
    assert "--predictions" in asked["message"] and "predictions=" in asked["message"]


def test_predictions_run_the_eval_rules_unless_ignored():
    rows = _rows()
    pred = [r["label"] for r in rows]
    codes = {r["code"] for r in json.loads(audit(rows, predictions=pred).to_json())["results"]}
    assert {"EVAL001", "EVAL002", "EVAL003"} <= codes
    ignored = audit(rows, predictions=pred, ignore=["EVAL"])
    assert not {r["code"] for r in json.loads(ignored.to_json())["results"]} & {"EVAL001"}


# -- bad input ---------------------------------------------------------------------------------
def _jsonl(tmp_path, rows) -> str:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.mark.parametrize("streamed", [False, True], ids=["rows-known", "rows-after-scan"])
def test_wrong_length(tmp_path, streamed):
    rows = _rows()
    data = _jsonl(tmp_path, rows) if streamed else rows
    with pytest.raises(InputError, match=r"59 values but the split has 60 rows.*one prediction"):
        _run(data, [r["label"] for r in rows][:-1])


def test_unknown_ids(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("id,prediction\n" + "".join(f"r{i},a\n" for i in range(55, 65)))
    with pytest.raises(InputError, match=r"5 of 10 prediction ids are not ids of .*'r60'.*'id'"):
        _run(_rows(), path)


def test_rows_past_the_end(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("row,prediction\n0,a\n60,b\n")
    with pytest.raises(InputError, match=r"row 60 .* has 60 rows .*0-based"):
        _run(_rows(), path)


def test_probabilities_that_do_not_sum_to_one(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("row,prob_a,prob_b,prob_c\n0,0.2,0.3,0.5\n1,0.2,0.3,0.2\n")
    with pytest.raises(InputError, match=r"row 1 sum to 0.7, not 1 .*softmax"):
        _run(_rows(), path)
    logits = np.array([[2.0, -1.0, 0.5]] * 60)
    with pytest.raises(InputError, match=r"outside \[0, 1\].*logits: apply a softmax"):
        _run(_rows(), {"probabilities": logits, "classes": LABELS})


def test_labels_not_in_the_label_set():
    with pytest.raises(InputError, match=r"not in the dataset's label set: 'A', 'z'.*'a', 'b'"):
        _run(_rows(), ["a", "A", "z"] + ["b"] * 57)
    proba = np.full((60, 3), 1 / 3)
    with pytest.raises(InputError, match=r"label set: 'd'"):
        _run(_rows(), {"probabilities": proba, "classes": ["a", "b", "d"]})


@pytest.mark.parametrize(
    ("predictions", "error", "match"),
    [
        (np.full((60, 3), 1 / 3), ConfigError, r"need their class order.*model.classes_"),
        ("no_such_column", ConfigError, r"neither a file nor a column.*Columns: id, text"),
        ("label", ConfigError, r"is the dataset's label column"),
        ("missing.csv", InputError, r"missing.csv does not exist"),
        ({"validation": ["a"] * 60}, InputError, r"split 'validation', which the dataset"),
        ({"correct": [0.5, 2.0] + [1.0] * 58}, InputError, r"row 1 has correct=2.0.*\[0, 1\]"),
    ],
    ids=["proba-no-classes", "no-column", "role-column", "no-file", "no-split", "bad-score"],
)
def test_bad_predictions_name_the_fix(predictions, error, match):
    with pytest.raises(error, match=match):
        _run(_rows(), predictions)


def test_a_file_without_a_key_or_a_prediction_column(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("prediction\na\n")
    with pytest.raises(InputError, match=r"no key column; add `row`.*or `id`"):
        _run(_rows(), path)
    path.write_text("row,score\n0,1\n")
    with pytest.raises(InputError, match=r"exactly one of `prediction`.*found none"):
        _run(_rows(), path)


def test_ids_without_an_id_column(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("id,prediction\nx,a\n")
    rows = [{k: v for k, v in r.items() if k != "id"} for r in _rows()]
    with pytest.raises(InputError, match=r"no id column; pass id=COLUMN"):
        _run(rows, path)


def test_several_splits_need_a_split_for_row_keys(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("row,prediction\n0,a\n")
    with pytest.raises(InputError, match=r"add a `split` column"):
        _run({"train": _rows(), "test": _rows(9)}, path)


def test_errors_are_data_audit_errors_for_the_cli():
    assert issubclass(InputError, DataAuditError) and issubclass(ConfigError, DataAuditError)

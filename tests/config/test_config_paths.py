"""Files a config names (predictions, reference, baseline, tokenizer) are found beside the
config, as its ``extends`` is, whatever the working directory."""

from __future__ import annotations

import json

from dataaudit import audit
from dataaudit.config import load_config
from tests.rules.eval import probe


def _config(folder, **keys):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "audit.yaml"
    path.write_text("".join(f"{k}: {v}\n" for k, v in keys.items()))
    return path


def test_files_beside_the_config_resolve_from_the_working_directory(tmp_path, monkeypatch):
    cfg = _config(tmp_path / "configs", predictions="preds.csv", reference="ref.jsonl")
    (tmp_path / "configs" / "preds.csv").write_text("row,prediction\n")
    (tmp_path / "configs" / "ref.jsonl").write_text('{"text": "a"}\n')
    monkeypatch.chdir(tmp_path)
    config = load_config("configs/audit.yaml")
    assert config.predictions == "configs/preds.csv"
    assert config.reference == "configs/ref.jsonl"
    # the same config from elsewhere names the same files; the hash does not depend on where
    # the checkout is, only on the path from the working directory
    monkeypatch.chdir(tmp_path / "configs")
    assert load_config(str(cfg)).predictions == "preds.csv"


def test_values_that_are_not_files_beside_the_config_stay_as_written(tmp_path, monkeypatch):
    _config(tmp_path / "configs", predictions="pred_label", tokenizer="gpt2", baseline="b.json")
    (tmp_path / "b.json").write_text("{}")  # beside the working directory, as before
    monkeypatch.chdir(tmp_path)
    config = load_config("configs/audit.yaml")
    assert (config.predictions, config.tokenizer, config.baseline) == (
        "pred_label",
        "gpt2",
        "b.json",
    )


def test_an_audit_reads_the_predictions_its_config_names(tmp_path, monkeypatch):
    folder = tmp_path / "ci"
    cfg = _config(folder, extends="default", predictions="planted.csv")
    probe.write_csv(folder / "planted.csv", probe.planted())
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    report = audit(str(probe.FIXTURE), config=str(cfg), select=["EVAL001"])
    result = json.loads(report.to_json())["results"][0]
    assert result["code"] == "EVAL001" and result["status"] not in ("skipped", "error")

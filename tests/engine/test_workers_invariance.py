"""Every rule gives the same report for any number of workers and any batch size.

The parallel scan folds contiguous chunks in worker processes and merges their states in the
parent, so whatever a rule's ``finish`` needs must travel in its state: a name table kept in a
worker's memory (TOK001's words once were) is lost there. Each audit below starts with no
tokenizer loaded in the parent, as a fresh process would, so nothing one audit leaves in this
process can fill in for another's state.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dataaudit import audit
from dataaudit.engine import parallel as parallel_engine
from dataaudit.registry import load_rules


def _rows(path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def data(fixtures_dir):
    """Real text with planted duplicates, leaks, conflicts, drift and unreadable values, in
    train/validation/test files with labels, sources and ids."""
    return fixtures_dir / "classification"


@pytest.fixture(scope="module")
def reference(fixtures_dir) -> dict[str, list[dict[str, Any]]]:
    """An older version: the validation rows as its train, half the test rows as its test."""
    test = _rows(fixtures_dir / "classification" / "test.jsonl")
    return {"train": _rows(fixtures_dir / "classification" / "validation.jsonl"), "test": test[::2]}


@pytest.fixture(scope="module")
def bpe(data):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["[UNK]"], min_frequency=2)
    texts = [r["text"] for r in _rows(data / "train.jsonl") if isinstance(r.get("text"), str)]
    tok.train_from_iterator(texts, trainer)
    return tok


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _timeless(v) for k, v in value.items() if k not in ("seconds", "created", "timings")
        }
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def _run(data, *, workers: int, batch_size: int, **kwargs) -> tuple[str, Any]:
    """The report as JSON text without its timings and run settings, and the report."""
    report = audit(data, workers=workers, batch_size=batch_size, **kwargs)
    body = _timeless(report.to_dict())
    # recorded for provenance, outside the config hash
    assert (body["config"].pop("workers"), body["config"].pop("batch_size")) == (
        workers,
        batch_size,
    )
    return json.dumps(body, indent=1), report


@pytest.mark.slow
def test_every_rule_gives_the_same_report_for_any_workers(
    monkeypatch, data, reference, bpe, fixtures_dir, tmp_path
):
    # 900 rows in batches of 40, chunks of 100: several chunks per worker, cut inside batches
    monkeypatch.setattr(parallel_engine, "MIN_CHUNK_ROWS", 100)
    from tests.rules.eval import probe  # a model's predictions, so the EVAL rules run too

    predictions = tmp_path / "predictions.csv"
    probe.write_csv(predictions, probe.planted())
    options = dict(
        predictions=predictions,
        select=["ALL"],
        tokenizer=bpe,
        reference=reference,
        contamination_ref=str(fixtures_dir / "contamination_ref.jsonl"),
        rules={
            "LEN001": {"max_seq_len": 64},
            "MIX001": {"recipe": {"fortunes": 0.6, "pydoc": 0.3, "glossary": 0.1}},
            # the feature table GX001 builds (no suite: Great Expectations is not imported)
            "GX001": {"export": str(tmp_path / "features.parquet")},
        },
    )
    parallel, p_report = _run(data, workers=2, batch_size=40, **options)
    serial, s_report = _run(data, workers=1, batch_size=333, **options)
    assert parallel == serial
    assert p_report.flags().equals(s_report.flags())

    # every rule ran to a verdict, so the comparison covers every rule's output
    results = {r["code"]: r for r in s_report.to_dict()["results"]}
    assert set(results) == set(load_rules().rules)
    not_run = {c: r["status"] for c, r in results.items() if r["status"] in ("skipped", "error")}
    assert {c: s for c, s in not_run.items() if c not in CHAT_RULES} == {}
    assert sum(len(r["findings"]) for r in results.values()) > 10


#: rules that read chats or token columns: compared on the SFT fixtures below
CHAT_RULES = ("FMT002", "FMT003", "FMT004")


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["chat_tools", "chat_tokenized"])
def test_the_chat_rules_give_the_same_report_for_any_workers(
    monkeypatch, fixtures_dir, ground_truth, fixture
):
    monkeypatch.setattr(parallel_engine, "MIN_CHUNK_ROWS", 20)
    options = dict(select=list(CHAT_RULES), rules=ground_truth[fixture]["options"])
    parallel, p_report = _run(fixtures_dir / fixture, workers=2, batch_size=16, **options)
    serial, s_report = _run(fixtures_dir / fixture, workers=1, batch_size=200, **options)
    assert parallel == serial
    assert p_report.flags().equals(s_report.flags()) and len(s_report.flags()) > 10


@pytest.mark.slow
def test_token_drift_names_words_found_in_workers(monkeypatch, data, fixtures_dir):
    """TOK001 without a tokenizer counts hashed word buckets; the words behind the evidence
    come from the rule's state, also for words seen only in a worker or only in the reference."""
    monkeypatch.setattr(parallel_engine, "MIN_CHUNK_ROWS", 100)
    # another domain (answers about the Python docs), so most words it shows are only there
    reference = {
        split: [
            {"text": m["content"]}
            for row in _rows(fixtures_dir / "chat_sft" / f"{split}.jsonl")
            for m in row["messages"]
            if isinstance(m.get("content"), str)
        ]
        for split in ("train", "validation")
    }
    options = dict(select=["TOK001"], reference=reference, rules={"TOK001": {"min_count": 2}})
    parallel, report = _run(data, workers=2, batch_size=64, **options)
    serial, _ = _run(data, workers=1, batch_size=64, **options)
    assert parallel == serial
    comparisons = report.to_dict()["results"][-1]["details"]["comparisons"]
    assert {
        "test vs train",
        "train vs reference train",
        "validation vs reference validation",
    } <= set(comparisons)
    tokens = [e["token"] for c in comparisons.values() for e in c["over"] + c["under"]]
    assert len(tokens) > 20
    assert not [t for t in tokens if t.startswith("<word bucket")]


def test_config_hash_ignores_how_the_scan_runs():
    from dataaudit.config import AuditConfig

    base = AuditConfig().hash()
    assert AuditConfig(workers=3, batch_size=100).hash() == base
    assert AuditConfig(seed=1).hash() != base
    assert AuditConfig(max_examples=2).hash() != base

"""LEAK002 on the eval side's index (a prepass broadcasts the eval n-grams; train streams
against them, keeping only the eval n-grams it has) reports exactly what the train-side index
reported: same findings, metrics, flags and examples on every fixture and on recombined real
text with planted spans and a template, with workers=1, 2 and Ray. Only ``details.index``
differs (which index ran, its sizes). Above ``max_index_ngrams`` eval n-grams, or without a
prepass, the train index runs as before."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from dataaudit import audit
from dataaudit.rules.leakage.contamination import NgramContamination

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
CASES = {
    "classification": (FIXTURES / "classification", {}),
    "split-column": (FIXTURES / "classification.parquet", {"split": "split"}),
    "chat": (FIXTURES / "chat_sft", {}),
    "with-benchmark": (
        FIXTURES / "classification",
        {"contamination_ref": [str(FIXTURES / "contamination_ref.jsonl")]},
    ),
}


def _texts() -> list[str]:
    rows = []
    for split in ("train", "validation", "test"):
        for line in (FIXTURES / "classification" / f"{split}.jsonl").read_text().splitlines():
            text = json.loads(line).get("text")
            if isinstance(text, str) and len(text.split()) >= 8:
                rows.append(text)
    return rows


TEMPLATE = "You are a careful assistant and you answer every question in full sentences only."


def real_text(train_rows: int = 1500, test_rows: int = 300, seed: int = 7) -> dict[str, Any]:
    """Fixture text recombined into documents of 1-3 texts (seeded; train and test from
    different texts, but the fixture's own planted leaks); test rows quote
    20-word spans of train documents (40 of them), and a quarter of test rows and a few train
    rows start with the same instruction (a template, not a leak)."""
    rng = random.Random(seed)
    texts = _texts()
    rng.shuffle(texts)
    cut = len(texts) * 3 // 4  # train and test documents from different texts
    train = [" ".join(rng.choices(texts[:cut], k=rng.randint(1, 3))) for _ in range(train_rows)]
    for i in rng.sample(range(train_rows), 5):
        train[i] = f"{TEMPLATE} {train[i]}"
    test = [" ".join(rng.choices(texts[cut:], k=rng.randint(1, 2))) for _ in range(test_rows)]
    for i in rng.sample(range(test_rows), 40):
        words = rng.choice(train).split()
        at = rng.randrange(max(1, len(words) - 20))
        test[i] = f"{test[i]} {' '.join(words[at : at + 20])} and so on."
    for i in rng.sample(range(test_rows), test_rows // 4):
        test[i] = f"{TEMPLATE} {test[i]}"
    return {"train": [{"text": t} for t in train], "test": [{"text": t} for t in test]}


def _train_index_only(monkeypatch) -> None:
    """The rule as before its prepass: no prepass splits, so the train index runs."""
    monkeypatch.setattr(NgramContamination, "prepass_splits", lambda self, ctx: [])


def _result(report) -> tuple[str, dict[str, Any], Any]:
    """LEAK002's result without its timing and index details, the index details, its flags."""
    result = dict(report.result("LEAK002"))
    result.pop("seconds", None)
    details = dict(result.pop("details"))
    index = details.pop("index")
    flags = report.flags()
    return json.dumps({**result, "details": details}, sort_keys=True), index, flags


def same_as_train_index(data, monkeypatch, engines, **options) -> list[dict[str, Any]]:
    """LEAK002's result on each engine of ``engines`` equals the train index's on the same
    engine (forced in this process, where the engines plan the prepass) and on workers=1."""
    with monkeypatch.context() as m:
        _train_index_only(m)
        old = [
            audit(data, select=["LEAK002"], batch_size=64, **e, **options)
            for e in [{}, *(e for e in engines if e)]
        ]
    want, old_index, want_flags = _result(old[0])
    assert old_index["mode"] == "train-index" and old_index["exact"]
    indexes = []
    befores = iter(old[1:])
    for e in engines:
        before = next(befores) if e else old[0]
        report = audit(data, select=["LEAK002"], batch_size=64, **e, **options)
        got, index, flags = _result(report)
        assert got == want and _result(before)[0] == want, e
        assert flags.equals(want_flags) and before.flags().equals(want_flags)
        assert index["mode"] == "eval-index" and index["exact"]
        assert _result(before)[1]["mode"] == "train-index"
        indexes.append(index)
    return indexes


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_fixture_reports_what_the_train_index_reported(case, monkeypatch):
    data, options = CASES[case]
    (index,) = same_as_train_index(data, monkeypatch, [{}], **options)
    assert 0 < index["shared_ngrams"] < index["eval_ngrams"]


def test_real_text_with_spans_and_a_template(monkeypatch):
    data = real_text()
    (index,) = same_as_train_index(data, monkeypatch, [{}])
    report = audit(data, select=["LEAK002"], batch_size=64)
    result = report.result("LEAK002")
    # the planted spans are found, the template is set aside, not counted as leaks
    (leak,) = [f for f in result["findings"] if f["severity"] != "info"]
    assert 40 <= leak["count"] < 60  # 40 planted, a few of the fixture's own leaks
    assert any("template" in f["message"] for f in result["findings"])
    assert index["shared_ngrams"] < index["eval_ngrams"]


@pytest.mark.slow
def test_workers_give_the_train_index_report(monkeypatch):
    for data, options in [CASES["classification"], CASES["with-benchmark"], (real_text(), {})]:
        same_as_train_index(data, monkeypatch, [{"workers": 2}], **options)


def test_above_the_cap_the_train_index_runs_and_says_why(monkeypatch):
    data = real_text(train_rows=200, test_rows=60)
    rules = {"LEAK002": {"max_index_ngrams": 100}}  # the eval side has thousands
    capped = audit(data, select=["LEAK002"], rules=rules)
    with monkeypatch.context() as m:
        _train_index_only(m)
        old = audit(data, select=["LEAK002"], rules=rules)
    got, index, _ = _result(capped)
    want, _, _ = _result(old)
    assert got == want
    assert index["mode"] == "train-index" and not index["exact"]  # a Bloom filter above 100
    assert index["why"] == "the eval splits have more than 100 n-grams"


def test_without_a_prepass_the_rule_runs_on_the_train_index():
    """An engine that knows no prepass (the rule's own contract, called directly)."""
    from dataaudit.context import AuditContext
    from dataaudit.corpus import load_corpus

    corpus = load_corpus(real_text(train_rows=200, test_rows=60))
    ctx = AuditContext.from_corpus(corpus)
    rule = NgramContamination()
    state = rule.start(ctx)
    offsets: dict[str, int] = {}
    for split, rb in corpus.stream(64):
        state = rule.update(state, ctx.batch(split, rb, offsets.get(split, 0)))
        offsets[split] = offsets.get(split, 0) + rb.num_rows
    result = rule.finish(state, ctx)
    assert result.details["index"]["mode"] == "train-index"
    assert "why" not in result.details["index"]
    assert result.details["test"]["contaminated_rows"] > 0


def test_the_eval_side_is_the_same_whatever_the_chunks():
    """The prepass set merges to the sorted union in any grouping; the cap verdict too."""
    import numpy as np

    from dataaudit.sketches.ngram_index import NgramIndex

    rule = NgramContamination(max_index_ngrams=10_000)
    rng = np.random.default_rng(0)
    parts = [rng.integers(0, 5000, 300, dtype=np.uint64) for _ in range(6)]

    def pre(chunk: list[np.ndarray]) -> NgramIndex | None:
        p = rule.prepass_start(None)
        for x in chunk:
            p.add(x)
        return rule._capped(p)

    one = rule.prepass_finish(pre(parts), None)["hashes"]
    tree = rule.prepass_merge(pre(parts[4:]), rule.prepass_merge(pre(parts[:2]), pre(parts[2:4])))
    assert np.array_equal(rule.prepass_finish(tree, None)["hashes"], one)
    assert np.array_equal(one, np.unique(np.concatenate(parts)))
    small = NgramContamination(max_index_ngrams=len(one) - 1)
    assert small.prepass_finish(pre(parts), None)["hashes"] is None

"""Every registered rule passes the shared conformance suite (dataaudit.testing), given what
it needs (a tokenizer, a reference, a benchmark file, options), on data that makes it fire.

No check may skip unless listed in EXPECTED_SKIPS with its reason, and no rule may pass its
data checks on a result without findings: a check that compares two empty verdicts proves
nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from dataaudit.registry import load_rules
from dataaudit.rule import Rule
from dataaudit.testing import (
    CHECKS,
    Case,
    ConformanceSkip,
    sample_contamination,
    sample_data,
    sample_reference,
)

RULES = sorted(load_rules().rules.values(), key=lambda c: c.code)

#: what the sample data needs besides rows for these rules to fire
OPTIONS = {
    "LEN001": {"max_seq_len": 64},
    "MIX001": {"recipe": {"web": 0.5, "books": 0.3, "code": 0.2}},
    # the sample chats spell the user "user": a pack that knows only "human" sees unknown roles
    "FMT002": {"roles": {"user": ["human"], "assistant": ["assistant"]}},
    # the sample replies are prose: declared JSON, none of them parses
    "FMT003": {"json_roles": ["assistant"]},
    # a column the feature table lacks: an error finding, without importing GX (seconds)
    "GX001": {
        "suite": {
            "expectations": [
                {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "absent"}}
            ]
        }
    },
}


def _tokenized_rows(n: int = 40) -> dict[str, list[dict]]:
    """Pre-tokenized rows (FMT004 reads token columns, not text): every fifth row trains on
    its prompt, every seventh on nothing."""
    rows = []
    for i in range(n):
        ids = [1, *range(3, 3 + i % 9), 40 + i % 5, 2]
        labels = [-100] * (len(ids) - 2) + ids[-2:]
        if i % 5 == 0:
            labels = list(ids)
        if i % 7 == 0:
            labels = [-100] * len(ids)
        rows.append({"id": f"r{i}", "input_ids": ids, "labels": labels})
    return {"train": rows}


def _predictions(data: dict[str, list[dict]]) -> dict[str, list[str]]:
    """Per split, a model's predicted labels for the sample: always wrong on class gamma (a
    failing class) and on every other web row (a failing slice), right elsewhere."""
    out = {}
    for split, rows in data.items():
        preds = []
        for i, r in enumerate(rows):
            wrong = r["label"] == "gamma" or (r["source"] == "web" and i % 2 == 0)
            preds.append({"alpha": "beta", "beta": "alpha"}.get(r["label"], "alpha") if wrong
                         else (r["label"] or "alpha"))  # fmt: skip
        out[split] = preds
    return out


#: rules that fire only on data the samples lack
DATA = {"FMT004": _tokenized_rows()}
#: rules that need a model's predictions (EVAL): the classification sample and predictions for it
PREDICTED = ("EVAL001", "EVAL002", "EVAL003")
#: checks that cannot apply to a rule, and why; any other skip fails the test
EXPECTED_SKIPS = {("INPUT001", "options_stored_verbatim"): "the rule has no options"}
#: contract breaks known today, each with its reason (strict: a fix fails until removed here)
EXPECTED_FAILURES: dict[tuple[str, str], str] = {}


def _train_bpe(texts: list[str]):
    """A tiny BPE with an [UNK] token trained in-process on the sample's train text."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["[UNK]"], min_frequency=2)
    tok.train_from_iterator(texts, trainer)
    return tok


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> dict[str, Case]:
    data = sample_data()
    # the row with a lone surrogate cannot be encoded for training (the audit repairs it)
    texts = [r["text"] for r in data["train"] if r["text"].isprintable() and r["text"].strip()]
    bench = tmp_path_factory.mktemp("bench") / "bench.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in sample_contamination(data)))
    resources = dict(
        tokenizer=_train_bpe(texts), reference=sample_reference(), contamination_ref=[bench]
    )
    cases = {
        cls.code: Case(cls, OPTIONS.get(cls.code), data=DATA.get(cls.code), **resources)
        for cls in RULES
    }
    for code in PREDICTED:
        cases[code] = Case(cases[code].cls, data=data, predictions=_predictions(data), **resources)
    return cases


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("rule_cls", RULES, ids=lambda c: c.code)
def test_rule_conformance(
    cases: dict[str, Case], rule_cls: type[Rule], check: str, request: pytest.FixtureRequest
) -> None:
    key = (rule_cls.code, check)
    if key in EXPECTED_FAILURES:
        request.applymarker(
            pytest.mark.xfail(reason=EXPECTED_FAILURES[key], raises=AssertionError, strict=True)
        )
    try:
        CHECKS[check](cases[rule_cls.code])
    except ConformanceSkip as skip:
        assert EXPECTED_SKIPS.get(key) == skip.reason, f"{key} skipped: {skip.reason}"
        pytest.skip(skip.reason)
    assert key not in EXPECTED_SKIPS, f"{key} was expected to skip, but the check ran"


@pytest.mark.parametrize("rule_cls", RULES, ids=lambda c: c.code)
def test_rule_fires_on_the_sample_data(cases: dict[str, Case], rule_cls: type[Rule]) -> None:
    """The data checks compare results that hold findings, not two empty verdicts."""
    result = cases[rule_cls.code].verdict()
    assert result.findings, f"{rule_cls.code} found nothing in the sample data"


def test_the_sample_data_is_deterministic() -> None:
    assert sample_data(seed=3) == sample_data(seed=3)
    assert sample_data(seed=3) != sample_data(seed=4)
    assert sample_data("chat") == sample_data("chat")


@pytest.mark.parametrize(
    "code, mode",
    [
        ("LEAK001", lambda d: d["mode"] == "broadcast"),
        ("LEAK002", lambda d: d["index"]["mode"] == "eval-index"),
    ],
)
def test_rules_with_a_prepass_are_checked_on_its_value(
    cases: dict[str, Case], code: str, mode: Callable[[dict], bool]
) -> None:
    """The suite gives a prepass rule its broadcast value, as the engines do, so the checks
    above ran its broadcast path, not only its fallback."""
    assert mode(cases[code].verdict().details), cases[code].verdict().details

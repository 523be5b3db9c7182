"""The sft pack on the SFT fixtures finds every planted problem exactly (fixtures/README.md,
ground_truth.json: chat_tools and chat_tokenized), and nothing else of its kind."""

from __future__ import annotations

import pytest

from dataaudit import audit
from tests import FIXTURES
from tests.chatml import chatml_tokenizer


def _by_category(report, codes) -> dict[str, dict[str, list[int]]]:
    out: dict[str, dict[str, list[int]]] = {code: {} for code in codes}
    for code, row, detail in report.flags().select("code", "row", "detail").rows():
        if code in out:
            out[code].setdefault(detail, []).append(row)
    return {c: {k: sorted(v) for k, v in sorted(d.items())} for c, d in out.items()}


@pytest.fixture(scope="module")
def tools_report(tmp_path_factory, ground_truth):
    tok = chatml_tokenizer(tmp_path_factory.mktemp("chatml"))
    options = ground_truth["chat_tools"]["options"]
    return audit(FIXTURES / "chat_tools", config="sft", tokenizer=tok, rules=options)


def test_the_sft_pack_turns_the_sft_rules_on(tools_report):
    ran = {r["code"]: r["status"] for r in tools_report.to_dict()["results"]}
    assert {"FMT002", "FMT003", "TOK003"} <= {c for c, s in ran.items() if s != "skipped"}
    assert ran["FMT004"] == "skipped"  # chat rows, not token ids


def test_chat_tools_structure_and_targets_are_found_exactly(tools_report, ground_truth):
    truth = ground_truth["chat_tools"]
    got = _by_category(tools_report, ("FMT001", "FMT002", "FMT003"))
    assert got == {code: truth[code] for code in ("FMT001", "FMT002", "FMT003")}


def test_chat_tools_has_no_template_injection_and_round_trips(tools_report):
    assert _by_category(tools_report, ("TOK003",)) == {"TOK003": {}}
    assert tools_report.metric("TOK003", "sampled_rows") > 0


def test_chat_tokenized_masking_bugs_are_found_exactly(ground_truth):
    truth = ground_truth["chat_tokenized"]
    report = audit(FIXTURES / "chat_tokenized", config="sft", rules=truth["options"])
    assert _by_category(report, ("FMT004",)) == {"FMT004": truth["FMT004"]}
    assert report.metric("FMT004", "trained_tokens") == truth["trained_tokens"]
    assert report.metric("FMT004", "attended_tokens") == truth["attended_tokens"]
    status = {r["code"]: r["status"] for r in report.to_dict()["results"]}
    assert status["LBL003"] == "skipped"  # token labels are not a class label column
    share = report.metric("FMT004", "trained_share")
    assert share == pytest.approx(truth["trained_tokens"] / truth["attended_tokens"])


def test_chat_sft_structure_problems_are_its_planted_ones(ground_truth):
    """The older chat fixture: FMT002 finds its empty replies and its messages without content,
    and nothing else (every other row is a well-formed conversation)."""
    truth = ground_truth["chat_sft"]
    report = audit(FIXTURES / "chat_sft", select=["FMT002"])
    flags = report.flags()
    train = sorted(
        (row, detail)
        for split, row, detail in flags.select("split", "row", "detail").rows()
        if split == "train"
    )
    missing = truth["missing_content"]["train"] + truth["null_content"]["train"]
    expected = [(r, "empty_assistant") for r in truth["empty_assistant"]["train"]]
    expected += [(r, "bad_content") for r in missing]
    assert train == sorted(expected)
    assert set(flags["split"].to_list()) == {"train"}

"""Label rules on legitimate edge data: rows without text give a stated verdict, never a crash,
and are never called mislabeled (empty text is TXT001's finding)."""

from __future__ import annotations

import pytest

from dataaudit import audit

TOPICS = {
    "food": "the soup and bread taste of garlic and fresh herbs",
    "tech": "the compiler links the kernel module against the driver",
}
NO_TEXT = ["", None, "   ", "\n\t", "?!", "\u200b"]


def _labeled(n: int) -> list[dict]:
    rows = []
    for i in range(n):
        label = "food" if i % 2 else "tech"
        rows.append({"text": f"{TOPICS[label]} {i}", "label": label})
    return rows


@pytest.mark.parametrize("text", ["", None, "   "], ids=["empty", "null", "blank"])
def test_lbl004_on_rows_without_text_is_skipped_with_the_reason(text):
    rows = [{"text": text, "label": "ab"[i % 2]} for i in range(40)]
    res = audit(rows, select=["LBL004"]).result("LBL004")
    assert res["status"] == "skipped", res["message"]
    assert "no text to fit a probe on" in res["message"]
    assert "40 sampled train rows" in res["message"]


def test_lbl004_still_reports_empty_rows_among_real_ones():
    rows = _labeled(40) + [{"text": "", "label": "food"}, {"text": "", "label": "tech"}]
    res = audit(rows, select=["LBL004"]).result("LBL004")
    assert res["status"] in ("pass", "warn")
    reasons = {ex["reason"] for ex in res["details"]["not_memorized"]}
    assert "empty input" in reasons


def test_lbl002_never_flags_rows_without_text_and_counts_them():
    # uninformative text and rows without text whose labels disagree: scored on the class prior
    # alone, the probe used to call 6 of the text-less rows mislabeled
    rows = [{"text": f"plain row number {i}", "label": "ab"[i % 2]} for i in range(60)]
    no_text_rows = []
    for i in range(24):
        no_text_rows.append(len(rows))
        rows.append({"text": NO_TEXT[i % len(NO_TEXT)], "label": "ab"[i % 4 == 0]})
    report = audit(rows, select=["LBL002"])
    res = report.result("LBL002")
    # the text says nothing about the label: the probe has no skill, its flags are info
    assert res["status"] == "pass", res["message"]
    assert any("kappa" in (f["data"] or {}) for f in res["findings"])
    sample = res["details"]["sample"]
    assert (sample["rows_sampled"], sample["rows_without_text"], sample["rows_probed"]) == (
        84,
        24,
        60,
    )
    flagged = set(report.flags()["row"].to_list())
    assert flagged and not flagged & set(no_text_rows)
    assert all(r["row"] not in no_text_rows for r in res["details"]["ranked"])


def test_lbl002_with_no_text_at_all_is_skipped_with_the_reason():
    rows = [{"text": NO_TEXT[i % len(NO_TEXT)], "label": "ab"[i % 2]} for i in range(90)]
    res = audit(rows, select=["LBL002"]).result("LBL002")
    assert res["status"] == "skipped"
    assert "90 sampled rows have no text" in res["message"]
    assert res["details"]["sample"]["rows_without_text"] == 90

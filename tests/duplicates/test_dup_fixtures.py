"""Every planted exact duplicate, near duplicate, leak and contamination in fixtures/ is found."""

from __future__ import annotations

from collections import defaultdict


def _groups(report, code, split):
    fl = report.flags()
    fl = fl.filter((fl["code"] == code) & (fl["split"] == split))
    groups = defaultdict(set)
    for row, group in zip(fl["row"].to_list(), fl["cluster"].to_list()):
        groups[group].add(row)
    return {frozenset(v) for v in groups.values()}


def test_every_planted_exact_duplicate_is_found(truth, classification_report):
    found = _groups(classification_report, "DUP001", "train")
    planted = {frozenset(g) for g in truth["classification"]["exact_duplicates"]["train"]}
    assert planted == found  # and nothing else: the fixture has no unplanted duplicate
    m = classification_report.metric("DUP001", "duplicate_rows", "train")
    assert m == sum(len(g) - 1 for g in planted)


def test_exact_duplicate_flags_keep_the_first_row(classification_report):
    fl = classification_report.flags()
    fl = fl.filter(fl["code"] == "DUP001")
    for row, group, detail in zip(fl["row"], fl["cluster"], fl["detail"]):
        assert detail == ("kept" if str(row) == group else "duplicate")


def test_every_planted_near_duplicate_is_clustered(truth, classification_report):
    found = _groups(classification_report, "DUP002", "train")
    for nd in truth["classification"]["near_duplicates"]["train"]:
        assert any(set(nd["rows"]) <= g for g in found), nd
    res = classification_report.result("DUP002")
    near = {tuple(sorted(f["data"]["rows"])) for f in res["findings"] if "rows" in f["data"]}
    for nd in truth["classification"]["near_duplicates"]["train"]:
        assert tuple(sorted(nd["rows"])) in near


def test_chat_duplicates_found(truth, chat_report):
    found = _groups(chat_report, "DUP001", "train")
    for g in truth["chat_sft"]["exact_duplicates"]["train"]:
        assert frozenset(g) in found


def test_every_planted_leak_is_found(truth, classification_report):
    res = classification_report.result("LEAK001")
    assert classification_report.status("LEAK001") == "fail"  # default severity: error
    leaked = {
        (f["split"], f["data"]["eval_row"]): f["data"]
        for f in res["findings"]
        if "eval_row" in f["data"]
    }
    for leak in truth["classification"]["leaks"]:
        key = (leak["eval_split"], leak["eval_row"])
        assert key in leaked, leak
        assert set(leak["train_rows"]) <= set(leaked[key]["train_rows"])
        assert leaked[key]["kind"] == leak["kind"]
    assert len(leaked) == len(truth["classification"]["leaks"])


def test_chat_leaks_found(truth, chat_report):
    res = chat_report.result("LEAK001")
    leaked = {
        (f["split"], f["data"]["eval_row"]) for f in res["findings"] if "eval_row" in f["data"]
    }
    for leak in truth["chat_sft"]["leaks"]:
        assert (leak["eval_split"], leak["eval_row"]) in leaked


def test_every_planted_contamination_is_found(truth, classification_report):
    res = classification_report.result("LEAK002")
    fl = classification_report.flags()
    fl = fl.filter(fl["code"] == "LEAK002")
    flagged = set(zip(fl["split"].to_list(), fl["row"].to_list()))
    for c in truth["classification"]["contamination"]:
        assert (c["eval_split"], c["eval_row"]) in flagged, c
    spans = [e.get("span", "") for f in res["findings"] for e in f["examples"]]
    assert any("argparse module is very powerful" in s for s in spans)


def test_every_contaminated_reference_row_is_found(truth, classification_report):
    res = classification_report.result("LEAK002")
    refs = [f for f in res["findings"] if f["data"].get("reference")]
    assert len(refs) == 1
    found = set(refs[0]["data"]["ref_rows"])
    planted = {c["ref_row"] for c in truth["contamination_ref"]}
    assert planted == found

"""Every planted exact and near duplicate in fixtures/ is found, and nothing else."""

from __future__ import annotations

from collections import defaultdict


def _groups(report, code, split):
    fl = report.flags()
    fl = fl.filter((fl["code"] == code) & (fl["split"] == split))
    groups = defaultdict(set)
    for row, group in zip(fl["row"].to_list(), fl["cluster"].to_list()):
        groups[group].add(row)
    return {frozenset(v) for v in groups.values()}


def test_every_planted_exact_duplicate_is_found(ground_truth, classification_report):
    found = _groups(classification_report, "DUP001", "train")
    planted = {frozenset(g) for g in ground_truth["classification"]["exact_duplicates"]["train"]}
    assert planted == found  # and nothing else: the fixture has no unplanted duplicate
    m = classification_report.metric("DUP001", "duplicate_rows", "train")
    assert m == sum(len(g) - 1 for g in planted)


def test_exact_duplicate_flags_keep_the_first_row(classification_report):
    fl = classification_report.flags()
    fl = fl.filter(fl["code"] == "DUP001")
    for row, group, detail in zip(fl["row"], fl["cluster"], fl["detail"]):
        assert detail == ("kept" if str(row) == group else "duplicate")


def test_every_planted_near_duplicate_is_clustered(ground_truth, classification_report):
    found = _groups(classification_report, "DUP002", "train")
    for nd in ground_truth["classification"]["near_duplicates"]["train"]:
        assert any(set(nd["rows"]) <= g for g in found), nd
    res = classification_report.result("DUP002")
    near = {tuple(sorted(f["data"]["rows"])) for f in res["findings"] if "rows" in f["data"]}
    for nd in ground_truth["classification"]["near_duplicates"]["train"]:
        assert tuple(sorted(nd["rows"])) in near


def test_chat_duplicates_found(ground_truth, chat_report):
    found = _groups(chat_report, "DUP001", "train")
    for g in ground_truth["chat_sft"]["exact_duplicates"]["train"]:
        assert frozenset(g) in found

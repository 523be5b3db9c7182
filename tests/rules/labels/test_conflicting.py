"""LBL001: conflicting labels."""

from __future__ import annotations

import dataaudit as da


def _groups(report) -> list[dict]:
    return report.result("LBL001")["details"]["groups"]


def test_fixture_exact_conflicts_all_found(fixtures_dir, ground_truth):
    report = da.audit(fixtures_dir / "classification", select=["LBL001"])
    found = {(g["split"], tuple(sorted(g["rows"]))) for g in _groups(report)}
    planted = [c for c in ground_truth["classification"]["label_conflicts"] if c["kind"] == "exact"]
    assert planted
    for c in planted:
        assert (c["split"], tuple(sorted(c["rows"]))) in found  # recall 100% on exact conflicts
    # exact duplicates that agree on their label are not conflicts
    conflict_rows = {r for g in _groups(report) for r in g["rows"]}
    assert not conflict_rows & {12, 270, 35, 42, 134, 148, 421}
    flags = report.flags()
    assert set(flags.filter(flags["code"] == "LBL001")["row"].to_list()) >= {117, 194, 299, 486}


def test_fixture_labels_of_a_group_are_reported(fixtures_dir):
    report = da.audit(fixtures_dir / "classification", select=["LBL001"])
    by_rows = {tuple(sorted(g["rows"])): g for g in _groups(report)}
    assert by_rows[(117, 194)]["labels"] == {"literature": 1, "science": 1}
    pairs = report.result("LBL001")["details"]["class_pairs"]
    assert {"labels": ["food", "literature"], "groups": 1} in pairs


def test_chat_identical_prompts_are_info(fixtures_dir):
    report = da.audit(fixtures_dir / "chat_sft", select=["LBL001"])
    res = report.result("LBL001")
    found = {tuple(sorted(f["data"]["rows"])) for f in res["findings"]}
    assert {(12, 209), (49, 83), (93, 178)} <= found
    assert all(f["severity"] == "info" for f in res["findings"])
    assert report.status("LBL001") == "pass"


def test_int_and_bool_labels_conflict():
    rows = [{"text": f"row {i}", "label": i % 2} for i in range(6)]
    rows += [{"text": "row 0", "label": 1}]
    report = da.audit({"train": rows}, select=["LBL001"], text="text", label="label")
    groups = report.result("LBL001")["details"]["groups"]
    assert [sorted(g["rows"]) for g in groups] == [[0, 6]]
    assert groups[0]["labels"] == {"0": 1, "1": 1}


def test_fixture_near_duplicate_conflicts_found(fixtures_dir, ground_truth):
    report = da.audit(fixtures_dir / "classification", select=["LBL001"])
    groups = {tuple(sorted(g["rows"])): g for g in _groups(report)}
    for c in ground_truth["classification"]["label_conflicts"]:
        g = groups[tuple(sorted(c["rows"]))]
        assert g["kind"] == c["kind"]
        assert sorted(g["labels"]) == sorted(c["labels"])
    # near duplicates that agree on their label are not conflicts
    assert len(groups) == len(ground_truth["classification"]["label_conflicts"])


def test_exact_only_when_near_duplicates_off(fixtures_dir):
    report = da.audit(
        fixtures_dir / "classification",
        select=["LBL001"],
        rules={"LBL001": {"near_duplicates": False}},
    )
    assert {g["kind"] for g in _groups(report)} == {"exact"}

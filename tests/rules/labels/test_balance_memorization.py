"""LBL003 class balance / drift / per-class table, and LBL004 memorization."""

from __future__ import annotations

import dataaudit as da


def test_fixture_class_missing_from_train_is_an_error(fixtures_dir):
    report = da.audit(fixtures_dir / "classification", select=["LBL003"])
    res = report.result("LBL003")
    assert res["status"] == "fail"
    errors = [f for f in res["findings"] if f["severity"] == "error"]
    assert [f["data"]["class"] for f in errors] == ["pets"]
    assert errors[0]["split"] == "test"
    drift = [f for f in res["findings"] if f["message"].startswith("test: label distribution")]
    assert drift and drift[0]["data"]["cramers_v"] > 0.2
    assert report.metric("LBL003", "label_cramers_v", "validation") < 0.1


def test_fixture_per_class_table(fixtures_dir):
    report = da.audit(fixtures_dir / "classification", select=["LBL003"])
    table = {row["class"]: row for row in report.result("LBL003")["details"]["classes"]}
    assert set(table) == {"computers", "food", "literature", "python", "science", "pets"}
    assert table["pets"]["missing_from"] == ["train", "validation"]
    assert sum(r["rows_by_split"]["train"] for r in table.values()) == 600  # every row labeled
    # exact conflicts 117/194 (literature vs science) and 299/486 (food vs literature)
    assert table["literature"]["conflict_rate"] > 0
    assert table["python"]["conflict_rate"] == 0
    assert all(r["estimated_noise"] is not None for r in table.values())
    assert table["food"]["worst_confusions"]


def test_nulls_mixed_types_and_single_class():
    rows = [{"text": f"t {i}", "label": "a"} for i in range(10)]
    rows += [{"text": "x", "label": None}, {"text": "y", "label": 1}, {"text": "z", "label": True}]
    report = da.audit({"train": rows}, select=["LBL003"], text="text", label="label")
    res = report.result("LBL003")
    keys = {f["message"].split(":")[1].strip()[:20] for f in res["findings"]}
    assert any("no label" in f["message"] for f in res["findings"]), keys
    mixed = [f for f in res["findings"] if "mixes value types" in f["message"]]
    assert mixed and mixed[0]["data"]["types"] == {"bool": 1, "int": 1, "string": 10}
    flags = report.flags()
    assert flags.filter(flags["detail"] == "null label")["row"].to_list() == [10]


def test_thousands_of_classes_is_a_clear_finding():
    rows = [{"text": f"row {i}", "label": f"id-{i}"} for i in range(1500)]
    report = da.audit({"train": rows}, select=["LBL003", "LBL002"], text="text", label="label")
    res = report.result("LBL003")
    assert any("looks like free text or an id" in f["message"] for f in res["findings"])
    assert len(res["details"]["classes"]) == 1000
    assert report.status("LBL002") == "skipped"


def test_memorization_reports_contradictions():
    rows = [
        {"text": f"row number {i} about topic {i % 7}", "label": f"c{i % 3}"} for i in range(40)
    ]
    rows += [
        {"text": "the very same words", "label": "c0"},
        {"text": "The very  same words", "label": "c1"},
        {"text": "   ", "label": "c2"},
    ]
    report = da.audit(
        {"train": rows},
        select=["LBL004"],
        text="text",
        label="label",
        rules={"LBL004": {"sample_rows": 200}},
    )
    res = report.result("LBL004")
    missed = {e["row"]: e["reason"] for e in res["details"]["not_memorized"]}
    assert any("identical input" in r for r in missed.values())
    assert set(missed) & {40, 41}
    assert report.metric("LBL004", "memorization_accuracy") < 1.0


def test_memorization_says_it_read_a_sample_of_the_train_rows():
    rows = [{"text": f"row {i} on topic {i % 5}", "label": f"c{i % 2}"} for i in range(300)]
    rows.append({"text": "no label here", "label": None})
    data = {"train": rows, "test": [{"text": "t", "label": "c0"}]}
    report = da.audit(data, select=["LBL004"], text="text", label="label")
    cov = report.result("LBL004")["coverage"]
    assert (cov["examined"], cov["in_scope"], cov["complete"]) == (100, 300, False)
    assert cov["unit"] == "labeled train rows" and "sample_rows=100" in cov["reason"]
    assert "LBL004 examined 100 of 300 labeled train rows (33.3%)" in report.summary()
    full = da.audit(
        data, select=["LBL004"], text="text", label="label", rules={"LBL004": {"sample_rows": 300}}
    )
    assert full.result("LBL004")["coverage"]["complete"] is True
    assert full.data["summary"]["partial_coverage"] == []


def test_memorization_skips_tiny_or_single_class():
    rows = [{"text": f"a {i}", "label": "x"} for i in range(50)]
    report = da.audit({"train": rows}, select=["LBL004"], text="text", label="label")
    assert report.status("LBL004") == "skipped"


def test_one_class_everywhere_is_a_perfect_match_not_an_unknown():
    """Train and test with the same single class: the chi² test has nothing to find (p = 1),
    as stats.chi2_contingency says for every rule (LBL003 used to report no p-value)."""
    data = {
        "train": [{"text": f"train row {i}", "label": "a"} for i in range(60)],
        "test": [{"text": f"test row {i}", "label": "a"} for i in range(20)],
    }
    report = da.audit(
        data, select=["LBL003"], rules={"LBL003": {"probe": False}}, text="text", label="label"
    )
    assert report.metric("LBL003", "label_chi2_pvalue", "test") == 1.0
    assert report.metric("LBL003", "label_cramers_v", "test") == 0.0
    assert report.metric("LBL003", "label_js_divergence", "test") == 0.0
    again = da.audit(
        data,
        select=["LBL003"],
        rules={"LBL003": {"probe": False}},
        text="text",
        label="label",
        reference=data,
    )
    comparison = again.result("LBL003")["details"]["comparisons"]["test vs reference test"]
    assert comparison["p_value"] == 1.0 and comparison["drift"] is False

"""LBL003 against a reference: label drift between dataset versions (audit(new, reference=old))."""

from __future__ import annotations

import json

import pytest

import dataaudit as da
from dataaudit.errors import InputError

FAST = {"LBL003": {"probe": False}}


def _rows(split: str, mix: dict[str, int], start: int = 0) -> list[dict]:
    out = []
    for cls, n in sorted(mix.items()):
        out += [
            {"text": f"{split} {cls} row {start + i}", "label": cls, "source": "web"}
            for i in range(n)
        ]
    return out


def _data(train: dict[str, int], test: dict[str, int], start: int = 0) -> dict[str, list]:
    return {"train": _rows("train", train, start), "test": _rows("test", test, start)}


OLD = _data({"spam": 200, "ham": 200}, {"spam": 50, "ham": 50})


def _audit(data, **kw):
    return da.audit(data, select=["LBL003"], rules=kw.pop("rules", FAST), **kw)


def _ref_findings(report) -> list[dict]:
    return [f for f in report.result("LBL003")["findings"] if "reference" in f["message"]]


def test_reference_with_another_label_mix_is_flagged():
    new = _data({"spam": 40, "ham": 360}, {"spam": 50, "ham": 50}, start=1000)
    report = _audit(new, reference=OLD)
    res = report.result("LBL003")
    assert res["status"] == "warn"
    drift = [f for f in _ref_findings(report) if "label distribution differs" in f["message"]]
    assert [f["split"] for f in drift] == ["train"]
    assert "reference train" in drift[0]["message"]
    assert drift[0]["data"]["cramers_v"] > 0.3
    assert drift[0]["data"]["shifts"]["spam"] == pytest.approx(0.1 - 0.5)
    assert report.metric("LBL003", "label_cramers_v_vs_reference", "train") > 0.3
    assert report.metric("LBL003", "label_js_divergence_vs_reference", "train") > 0.1
    assert report.metric("LBL003", "label_chi2_pvalue_vs_reference", "train") < 1e-6
    # test has the same mix as the reference test split: measured, not flagged
    assert report.metric("LBL003", "label_cramers_v_vs_reference", "test") == pytest.approx(0.0)
    comps = res["details"]["comparisons"]
    assert comps["train vs reference train"]["drift"] is True
    assert comps["test vs reference test"]["drift"] is False
    table = {row["class"]: row for row in res["details"]["classes"]}
    assert table["spam"]["reference_share_by_split"] == {"train": 0.5, "test": 0.5}


def test_same_label_mix_is_not_flagged():
    same = _data({"spam": 200, "ham": 200}, {"spam": 50, "ham": 50}, start=5000)
    report = _audit(same, reference=OLD)
    assert report.status("LBL003") == "pass"
    assert _ref_findings(report) == []
    for split in ("train", "test"):
        assert report.metric("LBL003", "label_cramers_v_vs_reference", split) == pytest.approx(0)
        assert report.metric("LBL003", "classes_new_vs_reference", split) == 0
    assert report.result("LBL003")["details"]["notes"] == []


def test_no_reference_means_no_reference_metrics():
    report = _audit(OLD)
    with pytest.raises(KeyError):
        report.metric("LBL003", "label_cramers_v_vs_reference", "train")
    assert report.result("LBL003")["details"]["comparisons"] == {}
    assert report.result("LBL003")["details"]["notes"] == []


def test_classes_that_appear_or_disappear_are_findings():
    new = _data({"spam": 200, "ham": 150, "phish": 50}, {"spam": 50, "ham": 50}, start=7)
    old = _data({"spam": 200, "ham": 150, "promo": 50}, {"spam": 50, "ham": 50, "promo": 1})
    report = _audit(new, reference=old)
    found = {
        (f["split"], "new" if "new since" in f["message"] else "gone"): f
        for f in _ref_findings(report)
        if "new since" in f["message"] or "no rows any more" in f["message"]
    }
    assert set(found) == {("train", "new"), ("train", "gone"), ("test", "gone")}
    assert found["train", "new"]["data"]["classes"] == ["phish"]
    assert found["train", "new"]["severity"] == "warn"
    assert found["train", "gone"]["data"]["classes"] == ["promo"]
    assert found["train", "gone"]["data"]["reference_rows"] == {"promo": 50}
    # one 'promo' row among 101 in the reference test split: expected < 5 rows now, a note
    assert found["test", "gone"]["severity"] == "info"
    assert report.metric("LBL003", "classes_new_vs_reference", "train") == 1
    assert report.metric("LBL003", "classes_gone_vs_reference", "train") == 1


def test_saved_report_serves_as_reference(tmp_path):
    base = _audit(OLD)
    sketch = base.result("LBL003")["details"]["sketch"]
    assert sketch["splits"]["train"]["counts"] == {"ham": 200, "spam": 200}
    assert sketch["kinds"] == {"test": "test", "train": "train"}
    path = tmp_path / "old.json"
    base.to_json(path)
    new = _data({"spam": 40, "ham": 360}, {"spam": 50, "ham": 50}, start=1000)
    from_report = _audit(new, reference=str(path))
    from_data = _audit(new, reference=OLD)
    assert from_report.status("LBL003") == "warn"
    for split in ("train", "test"):
        for name in ("label_cramers_v_vs_reference", "label_js_divergence_vs_reference"):
            assert from_report.metric("LBL003", name, split) == pytest.approx(
                from_data.metric("LBL003", name, split)
            )
    assert [f["message"] for f in _ref_findings(from_report)] == [
        f["message"] for f in _ref_findings(from_data)
    ]
    # a Report object works too
    assert _audit(new, reference=base).status("LBL003") == "warn"


def test_old_report_without_sketch_skips_the_comparison(tmp_path):
    base = _audit(OLD)
    data = json.loads(base.to_json())
    for res in data["results"]:
        res["details"].pop("sketch", None)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    report = _audit(OLD, reference=str(path))
    res = report.result("LBL003")
    assert res["status"] == "pass"
    assert any("no LBL003 sketch" in n for n in res["details"]["notes"])
    skipped = [f for f in res["findings"] if f["message"].startswith("reference comparison")]
    assert len(skipped) == 1 and skipped[0]["severity"] == "info"


def test_reference_without_label_column_is_skipped_with_a_reason():
    old = {s: [{"text": r["text"], "source": "web"} for r in rows] for s, rows in OLD.items()}
    new = _data({"spam": 100, "ham": 300}, {"spam": 25, "ham": 75}, start=1000)
    report = _audit(new, reference=old)
    res = report.result("LBL003")
    assert res["status"] == "pass"  # the dataset itself is fine; the comparison is skipped
    notes = res["details"]["notes"]
    assert len(notes) == 1 and notes[0].startswith("reference comparison skipped: on the ref")
    assert "label" in notes[0]
    skipped = [f for f in res["findings"] if f["message"].startswith("reference comparison")]
    assert len(skipped) == 1 and skipped[0]["severity"] == "info"
    assert res["details"]["comparisons"] == {}
    with pytest.raises(KeyError):
        report.metric("LBL003", "label_cramers_v_vs_reference", "train")


def test_explicit_label_column_missing_from_reference_skips_the_comparison():
    # an older version without the named label column: the role is dropped on the reference
    # side, so the comparison is skipped with a reason instead of stopping the audit
    old = {s: [{"text": r["text"]} for r in rows] for s, rows in OLD.items()}
    res = _audit(OLD, reference=old, label="label").result("LBL003")
    assert res["details"]["comparisons"] == {}
    assert any("label" in n for n in res["details"]["notes"])


def test_explicit_text_column_missing_from_reference_is_a_clear_error():
    old = {s: [{"body": r["text"]} for r in rows] for s, rows in OLD.items()}
    with pytest.raises(InputError, match=r"reference: text='text': no such column"):
        _audit(OLD, reference=old, text="text")


def test_reference_with_null_labels_only_is_skipped_with_a_reason():
    old = {"train": [{"text": f"t {i}", "label": None} for i in range(20)]}
    report = _audit(OLD, reference=old, label="label")
    res = report.result("LBL003")
    assert res["details"]["comparisons"] == {}
    assert any("no labeled rows" in n for n in res["details"]["notes"])
    assert any(f["message"].startswith("reference comparison skipped") for f in res["findings"])


def test_reference_split_matched_by_kind():
    old = {"train": OLD["train"], "dev": _rows("dev", {"spam": 50, "ham": 50})}
    new = {"train": OLD["train"], "validation": _rows("validation", {"spam": 90, "ham": 10})}
    report = _audit(new, reference=old)
    comps = report.result("LBL003")["details"]["comparisons"]
    assert set(comps) == {"train vs reference train", "validation vs reference dev"}
    assert comps["validation vs reference dev"]["drift"] is True
    assert comps["train vs reference train"]["drift"] is False


def test_sketch_is_bounded_with_an_other_bucket():
    rules = {"LBL003": {"probe": False, "max_classes": 3}}
    mix = {"a": 100, "b": 80, "c": 60, "d": 5, "e": 4, "f": 1}
    old = {"train": _rows("train", mix)}
    base = _audit(old, rules=rules)
    sk = base.result("LBL003")["details"]["sketch"]["splits"]["train"]
    assert sk["counts"] == {"a": 100, "b": 80, "c": 60}
    assert (sk["other_rows"], sk["other_classes"], sk["classes"]) == (10, 3, 6)
    # classes outside the reference's top 3 go through "(other)": not claimed as new
    new = {"train": _rows("train", {"a": 100, "b": 80, "c": 60, "g": 10}, start=99)}
    report = _audit(new, reference=base, rules=rules)
    res = report.result("LBL003")
    comp = res["details"]["comparisons"]["train vs reference train"]
    assert comp["reference_bucketed"] is True
    assert comp["new_classes"] == [] and comp["gone_classes"] == []
    assert comp["cramers_v"] == pytest.approx(0.0)
    assert comp["drift"] is False
    # ...and a shift into the bucket is still measured
    shifted = {"train": _rows("train", {"a": 100, "b": 80, "c": 60, "g": 200}, start=99)}
    moved = _audit(shifted, reference=base, rules=rules).result("LBL003")
    comp = moved["details"]["comparisons"]["train vs reference train"]
    assert comp["drift"] is True
    drift = [f for f in moved["findings"] if "differs from reference" in f["message"]]
    assert "'(other)'" in drift[0]["message"]


def test_long_class_names_are_bounded_in_the_sketch():
    long_a, long_b = "x" * 5000 + "a", "x" * 5000 + "b"
    old = {"train": _rows("train", {long_a: 30, long_b: 30})}
    base = _audit(old)
    counts = base.result("LBL003")["details"]["sketch"]["splits"]["train"]["counts"]
    assert len(counts) == 2 and all(len(k) < 200 for k in counts)
    same = {"train": _rows("train", {long_a: 30, long_b: 30}, start=3)}
    comp = _audit(same, reference=base).result("LBL003")["details"]["comparisons"]
    assert comp["train vs reference train"]["new_classes"] == []
    assert comp["train vs reference train"]["cramers_v"] == pytest.approx(0.0)

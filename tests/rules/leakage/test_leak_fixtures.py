"""Every planted train/eval leak and benchmark contamination in fixtures/ is found."""

from __future__ import annotations


def test_every_planted_leak_is_found(ground_truth, classification_report):
    res = classification_report.result("LEAK001")
    assert classification_report.status("LEAK001") == "fail"  # default severity: error
    leaked = {
        (f["split"], f["data"]["eval_row"]): f["data"]
        for f in res["findings"]
        if "eval_row" in f["data"]
    }
    for leak in ground_truth["classification"]["leaks"]:
        key = (leak["eval_split"], leak["eval_row"])
        assert key in leaked, leak
        assert set(leak["train_rows"]) <= set(leaked[key]["train_rows"])
        assert leaked[key]["kind"] == leak["kind"]
    assert len(leaked) == len(ground_truth["classification"]["leaks"])


def test_chat_leaks_found(ground_truth, chat_report):
    res = chat_report.result("LEAK001")
    leaked = {
        (f["split"], f["data"]["eval_row"]) for f in res["findings"] if "eval_row" in f["data"]
    }
    for leak in ground_truth["chat_sft"]["leaks"]:
        assert (leak["eval_split"], leak["eval_row"]) in leaked


def test_every_planted_contamination_is_found(ground_truth, classification_report):
    res = classification_report.result("LEAK002")
    fl = classification_report.flags()
    fl = fl.filter(fl["code"] == "LEAK002")
    flagged = set(zip(fl["split"].to_list(), fl["row"].to_list()))
    for c in ground_truth["classification"]["contamination"]:
        assert (c["eval_split"], c["eval_row"]) in flagged, c
    spans = [e.get("span", "") for f in res["findings"] for e in f["examples"]]
    assert any("argparse module is very powerful" in s for s in spans)


def test_every_contaminated_reference_row_is_found(ground_truth, classification_report):
    res = classification_report.result("LEAK002")
    refs = [f for f in res["findings"] if f["data"].get("reference")]
    assert len(refs) == 1
    found = set(refs[0]["data"]["ref_rows"])
    planted = {c["ref_row"] for c in ground_truth["contamination_ref"]}
    assert planted == found

"""SHIFT001 domain classifier: graded against the null of its AUC (a perfectly separable split
fails the default gate, a shift below the old fixed 0.6 cut-off but far beyond the null warns),
the cause named by its n-grams, and a sample and verdict that do not depend on the row order."""

from __future__ import annotations

import random

from dataaudit import audit
from tests.rules.texts import WORDS_A, WORDS_B, sentences

#: a sentence none of WORDS_A's rows contains: a boilerplate footer
FOOTER = "visit example dot com for terms conditions privacy notice"


def _findings(report, code, split=None):
    return [f for f in report.result(code)["findings"] if split is None or f["split"] == split]


def test_a_perfectly_separable_test_split_fails_and_names_the_footer():
    rng = random.Random(1)
    train = [{"text": t} for t in sentences(rng, 600, WORDS_A)]
    test = [{"text": f"{t} {FOOTER}"} for t in sentences(rng, 200, WORDS_A)]
    report = audit({"train": train, "test": test}, select=["SHIFT001"])
    assert report.status("SHIFT001") == "fail" and not report.passed
    (found,) = _findings(report, "SHIFT001")
    assert found["severity"] == "error"
    assert found["data"]["auc_low"] >= 0.8
    assert "'conditions privacy'" in found["message"]  # the cause, named
    roc = found["data"]["roc"]
    assert roc["fpr"][0] == 0 and roc["tpr"][-1] == 1 and len(roc["fpr"]) <= 50
    # the band is an option: error_auc 1.0 never errs
    lenient = audit(
        {"train": train, "test": test}, select=["SHIFT001"], rules={"SHIFT001": {"error_auc": 1.0}}
    )
    assert lenient.status("SHIFT001") == "warn"


def test_shift001_threshold_comes_from_the_null():
    """15% of test rows carry a footer: AUC ~0.57, below the old fixed 0.6 but far above what
    two same-distribution samples of 2,000 reach (critical value ~0.538)."""
    rng = random.Random(2)
    train = [{"text": t} for t in sentences(rng, 2000, WORDS_A)]
    test = [
        {"text": f"{t} {FOOTER}" if i % 20 < 3 else t}
        for i, t in enumerate(sentences(rng, 2000, WORDS_A))
    ]
    report = audit({"train": train, "test": test}, select=["SHIFT001"])
    c = report.result("SHIFT001")["details"]["comparisons"]["test vs train"]
    assert 0.53 < c["auc_critical"] < 0.55
    assert c["auc"] < 0.6 and c["auc"] > c["auc_critical"]
    assert report.status("SHIFT001") == "warn"
    (found,) = _findings(report, "SHIFT001")
    assert any(w in " ".join(found["data"]["eval_ngrams"]) for w in FOOTER.split())


# -- SHIFT001 does not depend on the row order ----------------------------------------------------
def test_shift001_sample_and_verdict_do_not_depend_on_row_order():
    rng = random.Random(6)
    train = [{"text": t} for t in sentences(rng, 700, WORDS_A)]
    test = [{"text": t} for t in sentences(rng, 700, WORDS_A + WORDS_B[:3])]
    opts = {"SHIFT001": {"sample_size": 300}}
    a = audit({"train": train, "test": test}, select=["SHIFT001"], rules=opts)
    rng.shuffle(train)
    rng.shuffle(test)
    b = audit({"train": train, "test": test}, select=["SHIFT001"], rules=opts)
    ca = a.result("SHIFT001")["details"]["comparisons"]
    cb = b.result("SHIFT001")["details"]["comparisons"]
    assert ca == cb
    assert a.status("SHIFT001") == b.status("SHIFT001")


def test_shift001_says_when_it_read_a_sample():
    rng = random.Random(7)
    data = {
        "train": [{"text": t} for t in sentences(rng, 400, WORDS_A)],
        "test": [{"text": t} for t in sentences(rng, 150, WORDS_A)],
    }
    opts = {"SHIFT001": {"sample_size": 200}}
    cov = audit(data, select=["SHIFT001"], rules=opts).result("SHIFT001")["coverage"]
    assert (cov["examined"], cov["in_scope"], cov["complete"]) == (350, 550, False)
    assert "sample_size=200" in cov["reason"]
    full = audit(data, select=["SHIFT001"]).result("SHIFT001")["coverage"]
    assert full["complete"] and full["examined"] == 550

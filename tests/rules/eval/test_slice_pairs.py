"""EVAL002's two-attribute slices: an interaction (the model fails where two attributes meet)
is found and named; an effect of one attribute alone is not repeated as pairs."""

from __future__ import annotations

import json
import random

from dataaudit import audit


def _rows(error_rate) -> list[dict]:
    rng = random.Random(3)
    rows = []
    for i in range(800):
        domain, style = ("x", "y")[i % 2], ("p", "q")[(i // 2) % 2]
        label = ("pos", "neg")[(i // 4) % 2]
        wrong = rng.random() < error_rate(domain, style)
        pred = ("neg" if label == "pos" else "pos") if wrong else label
        rows.append(
            {"text": f"row {i} about {domain} in {style}", "label": label, "pred": pred,
             "region": domain, "style": style}
        )  # fmt: skip
    return rows


def _eval002(rows, **options) -> dict:
    report = audit(rows, predictions="pred", select=["EVAL002"], rules={"EVAL002": options})
    return next(r for r in json.loads(report.to_json())["results"] if r["code"] == "EVAL002")


def _pair_findings(res) -> list[dict]:
    return [f for f in res["findings"] if " and " in f["message"].split(":")[0]]


def test_an_interaction_of_two_columns_is_a_pair_finding():
    res = _eval002(_rows(lambda d, s: 0.6 if (d, s) == ("x", "p") else 0.1))
    pairs = _pair_findings(res)
    assert len(pairs) == 1, [f["message"] for f in res["findings"]]
    assert pairs[0]["message"].startswith("column region = 'x' and column style = 'p'")
    data = pairs[0]["data"]
    assert data["lift_over_parent"] >= 1.25 and data["q"] <= 0.05
    assert data["worse_parent"] in ("column region = 'x'", "column style = 'p'")
    metrics = {m["name"]: m["value"] for m in res["metrics"]}
    assert metrics["failing_slice_pairs"] == 1 and metrics["slice_pairs_tested"] >= 1
    # depth 1: single attributes only
    shallow = _eval002(_rows(lambda d, s: 0.6 if (d, s) == ("x", "p") else 0.1), depth=1)
    assert not _pair_findings(shallow)
    assert "failing_slice_pairs" not in {m["name"] for m in shallow["metrics"]}


def test_one_attribute_alone_is_not_repeated_as_pairs():
    res = _eval002(_rows(lambda d, s: 0.45 if d == "x" else 0.1))
    assert any(f["message"].startswith("column region = 'x'") for f in res["findings"])
    assert not _pair_findings(res), [f["message"] for f in _pair_findings(res)]

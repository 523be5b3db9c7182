"""The drift rules' severities scale with the effect (issue 12): a gross shift fails the default
gate, a moderate one warns, a same-distribution split stays clean at 1k and 100k rows, and the
bands are options (SHIFT001's own tests: tests/rules/shift)."""

from __future__ import annotations

import random

import pytest

from dataaudit import audit
from tests.rules.texts import WORDS_A, WORDS_B, sentences

DRIFT = ["LEN003", "TOK001", "SHIFT001", "MIX001", "LBL003"]


def _findings(report, code, split=None):
    return [f for f in report.result(code)["findings"] if split is None or f["split"] == split]


def _rows(rng: random.Random, n: int, words=WORDS_A, lo=8, hi=30) -> list[dict]:
    return [
        {"text": t, "label": rng.choice("abc"), "source": rng.choice(["web", "books"])}
        for t in sentences(rng, n, words, lo, hi)
    ]


# -- random same-distribution splits stay clean ------------------------------------------------
@pytest.mark.parametrize(
    "rows",
    [1000, pytest.param(100_000, marks=pytest.mark.slow)],
    ids=["1k", "100k"],
)
def test_random_splits_stay_clean(rows):
    rng = random.Random(12)
    data = _rows(rng, rows)
    cut = rows * 4 // 5
    report = audit({"train": data[:cut], "test": data[cut:]}, select=DRIFT, seed=7)
    for code in DRIFT:
        assert report.status(code) == "pass", (code, report.result(code)["findings"])
        # not even a note: a random split is not "a small drift"
        assert not _findings(report, code), code


# -- gross shifts fail the default gate ------------------------------------------------------------
def test_length_drift_is_graded_by_ks():
    rng = random.Random(3)
    train = [{"text": t} for t in sentences(rng, 1000, WORDS_A, 8, 30)]
    moderate = [{"text": t} for t in sentences(rng, 800, WORDS_A, 8, 30)] + [
        {"text": t} for t in sentences(rng, 200, WORDS_A, 60, 90)
    ]  # 20% long rows: KS D ~0.2
    gross = [{"text": t} for t in sentences(rng, 1000, WORDS_A, 20, 90)]  # D ~0.6
    mod = audit({"train": train, "test": moderate}, select=["LEN003"])
    assert mod.status("LEN003") == "warn", mod.result("LEN003")["details"]
    # the warn band is the rule's configured severity: a pack can re-grade it
    strict = audit(
        {"train": train, "test": moderate},
        select=["LEN003"],
        rules={"LEN003": {"severity": "error"}},
    )
    assert strict.status("LEN003") == "fail"
    big = audit({"train": train, "test": gross}, select=["LEN003"])
    assert big.status("LEN003") == "fail"
    assert _findings(big, "LEN003")[0]["data"]["severity"] == "error"
    off = audit(
        {"train": train, "test": gross}, select=["LEN003"], rules={"LEN003": {"error_ks": 1.0}}
    )
    assert off.status("LEN003") == "warn"


def test_token_drift_is_graded_by_its_excess_over_noise():
    rng = random.Random(4)
    train = [{"text": t} for t in sentences(rng, 1000, WORDS_A)]
    # a tenth of the test rows from another vocabulary: beyond noise, below error_js
    moderate = [{"text": t} for t in sentences(rng, 900, WORDS_A)] + [
        {"text": t} for t in sentences(rng, 100, WORDS_B)
    ]
    gross = [{"text": t} for t in sentences(rng, 1000, WORDS_B)]
    mod = audit({"train": train, "test": moderate}, select=["TOK001"])
    assert mod.status("TOK001") == "warn", mod.result("TOK001")["details"]["comparisons"]
    big = audit({"train": train, "test": gross}, select=["TOK001"])
    assert big.status("TOK001") == "fail"
    (found,) = _findings(big, "TOK001")
    assert found["severity"] == "error"
    assert "'swim'" in found["message"]  # the cause, named
    lenient = audit(
        {"train": train, "test": moderate},
        select=["TOK001"],
        rules={"TOK001": {"min_js": 0.5, "error_js": 0.5}},
    )
    assert lenient.status("TOK001") == "pass"  # beyond noise but below min_js: a note
    assert [f["severity"] for f in _findings(lenient, "TOK001")] == ["info"]


def _labelled(rng, n, shares):
    classes = list(shares)
    return [
        {"text": t, "label": rng.choices(classes, weights=[shares[c] for c in classes])[0]}
        for t in sentences(rng, n, WORDS_A)
    ]


def test_label_drift_is_graded_by_cramers_v():
    rng = random.Random(5)
    train = _labelled(rng, 1000, {"a": 0.8, "b": 0.2})
    moderate = _labelled(rng, 1000, {"a": 0.6, "b": 0.4})  # V ~0.2
    gross = _labelled(rng, 1000, {"a": 0.2, "b": 0.8})  # V ~0.6
    opts = {"LBL003": {"probe": False}}
    mod = audit({"train": train, "test": moderate}, select=["LBL003"], rules=opts)
    assert mod.status("LBL003") == "warn"
    big = audit({"train": train, "test": gross}, select=["LBL003"], rules=opts)
    assert big.status("LBL003") == "fail"
    (drift,) = [f for f in _findings(big, "LBL003") if "cramers_v" in f["data"]]
    assert drift["severity"] == "error" and drift["data"]["cramers_v"] >= 0.5
    lenient = audit(
        {"train": train, "test": gross},
        select=["LBL003"],
        rules={"LBL003": {"probe": False, "error_cramers_v": 1.0}},
    )
    assert lenient.status("LBL003") == "warn"


def test_mixture_is_graded_by_the_distance_from_the_recipe():
    def rows(web_share, n=1000):
        k = round(n * web_share)
        return [{"text": "a b c d", "source": "web" if i < k else "books"} for i in range(n)]

    recipe = {"MIX001": {"recipe": {"web": 0.6, "books": 0.4}, "share": "rows"}}
    near = audit({"train": rows(0.63)}, select=["MIX001"], rules=recipe)
    assert near.status("MIX001") == "pass"
    off = audit({"train": rows(0.68)}, select=["MIX001"], rules=recipe)
    assert off.status("MIX001") == "warn"  # beyond ±5%, within ±10%
    far = audit({"train": rows(0.8)}, select=["MIX001"], rules=recipe)
    assert far.status("MIX001") == "fail"
    assert far.metric("MIX001", "recipe_distance", "train") == pytest.approx(0.2)
    shares = far.result("MIX001")["details"]["recipe_shares"]["train"]
    assert shares["web"] == {"share": 0.8, "recipe": 0.6}
    # the split mix: Cramér's V of web 80% vs 20% is 0.6, an error
    split = audit({"train": rows(0.8), "test": rows(0.2)}, select=["MIX001"])
    assert split.status("MIX001") == "fail"


def test_label_messages_count_in_the_right_number():
    train = [{"text": f"row {i}", "label": "abc"[i % 3]} for i in range(300)]
    test = [{"text": f"row {i}", "label": "ab"[i % 2]} for i in range(99)] + [
        {"text": "odd one", "label": "z"}
    ]
    report = audit(
        {"train": train, "test": test}, select=["LBL003"], rules={"LBL003": {"probe": False}}
    )
    messages = " | ".join(f["message"] for f in report.result("LBL003")["findings"])
    assert "test: 1 class of train has no rows here" in messages
    assert "class 'z' (1 row) never appears in train" in messages
    assert "1 classes" not in messages and "(1 rows)" not in messages


def test_two_samples_of_one_distribution_do_not_differ_in_a_diff():
    """The drift metrics carry their sampling noise, so a diff of two versions drawn from the
    same distribution calls none of them worse or regressed."""
    from dataaudit import diff

    def version(seed):
        data = _rows(random.Random(seed), 1500)
        return audit({"train": data[:1200], "test": data[1200:]}, select=DRIFT, seed=7)

    d = diff(version(21), version(22))
    moved = [
        (m.code, m.name, m.old, m.new, m.tolerance)
        for m in d.metrics
        if m.code in DRIFT and m.verdict in ("worse", "regressed")
    ]
    assert not moved
    with_noise = {(m.code, m.name) for m in d.metrics if m.basis == "noise"}
    assert {
        ("SHIFT001", "auc"),
        ("LEN003", "ks"),
        ("TOK001", "js"),
        ("LBL003", "label_cramers_v"),
        ("MIX001", "source_mix_v"),
    } <= with_noise

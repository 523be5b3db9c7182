"""LBL002: likely mislabels via out-of-fold probe + confident learning."""

from __future__ import annotations

import random

import numpy as np

import dataaudit as da
from dataaudit.rules.labels import _probe


def test_fixture_flipped_labels_are_ranked(fixtures_dir, ground_truth):
    report = da.audit(fixtures_dir / "classification", select=["LBL002"])
    res = report.result("LBL002")
    # the fixture's probe is moderately skilled (kappa ~0.6 < min_skill 0.7): its suggestions
    # are info, led by a finding that says why
    assert res["status"] == "pass"
    skill = [f for f in res["findings"] if "kappa" in (f["data"] or {})]
    assert len(skill) == 1 and skill[0]["severity"] == "info"
    assert 0.5 < res["details"]["probe_skill"]["kappa"] < 0.7
    flips = {(f["split"], f["row"]) for f in ground_truth["classification"]["flipped_labels"]}
    flags = report.flags()
    flagged = set(zip(flags["split"].to_list(), flags["row"].to_list()))
    assert len(flagged & flips) >= 0.6 * len(flips)  # recall at the default threshold
    ranked = [(r["split"], r["row"]) for r in res["details"]["ranked"]]
    top = ranked[: len(flips)]
    # precision@k far above the 30/900 base rate
    assert len(set(top) & flips) >= 0.3 * len(flips)
    first = res["details"]["ranked"][0]
    assert {"given", "suggested", "confidence", "text"} <= set(first)
    sample = res["details"]["sample"]
    assert sample["rows_sampled"] == 900 and sample["max_rows"] == 50000
    assert set(res["details"]["noise_by_class"]) >= {"computers", "food", "python"}
    # the verb agrees with the count ("1 row labeled 'work' look like 'science'" on fortunes)
    for f in res["findings"]:
        assert f["severity"] == "info"
        if f in skill:
            continue
        verb = "looks" if f["count"] == 1 else "look"
        assert f" {verb} like " in f["message"], f["message"]


def test_row_cap_samples_and_is_deterministic(fixtures_dir):
    a = da.audit(
        fixtures_dir / "classification", select=["LBL002"], rules={"LBL002": {"max_rows": 300}}
    )
    b = da.audit(
        fixtures_dir / "classification",
        select=["LBL002"],
        rules={"LBL002": {"max_rows": 300}},
        batch_size=37,
    )
    ra, rb = a.result("LBL002"), b.result("LBL002")
    assert ra["details"]["sample"]["rows_sampled"] == 300
    assert ra["details"] == rb["details"]  # same sample and verdict however it was batched


def test_skipped_with_a_reason_when_too_little_data_or_one_class():
    rows = [{"text": f"some words {i}", "label": "a" if i % 2 else "b"} for i in range(20)]
    report = da.audit({"train": rows}, select=["LBL002"], text="text", label="label")
    assert report.status("LBL002") == "skipped"
    assert "too little data" in report.result("LBL002")["message"]
    rows = [{"text": f"some words {i}", "label": "a"} for i in range(200)]
    report = da.audit({"train": rows}, select=["LBL002"], text="text", label="label")
    assert report.status("LBL002") == "skipped"
    assert "2 classes" in report.result("LBL002")["message"]


def test_skipped_with_a_reason_when_copies_leave_no_row_to_judge():
    """Copies of a text share a fold, so two texts repeated 30 times leave each fold model
    without the label of the rows it judges: a skip that says so, not an IndexError."""
    rows = [{"text": "cafe bad x", "label": "a"}, {"text": "fine wide text e", "label": "b"}] * 30
    report = da.audit({"train": rows}, select=["LBL002"], text="text", label="label")
    assert report.status("LBL002") == "skipped"
    assert "2 distinct texts" in report.result("LBL002")["message"]


def test_confident_learning_flags_planted_errors():
    rng = np.random.default_rng(0)
    n, k = 600, 3
    truth = rng.integers(0, k, n)
    proba = np.full((n, k), 0.1)
    proba[np.arange(n), truth] = 0.8
    proba += rng.uniform(0, 0.05, (n, k))
    proba /= proba.sum(axis=1, keepdims=True)
    given = truth.copy()
    flipped = random.Random(0).sample(range(n), 30)
    for i in flipped:
        given[i] = (truth[i] + 1) % k
    cl = _probe.confident_learning(proba, given)
    found = set(np.flatnonzero(cl.issue).tolist())
    assert found <= set(flipped)  # no false positive on a clean probe
    assert len(found) >= 0.85 * len(flipped)
    assert all(truth[i] == cl.suggested[i] for i in flipped)
    assert 0.02 < cl.noise_rate.mean() < 0.1


def _flips(ground_truth) -> set[tuple[str, int]]:
    return {(f["split"], f["row"]) for f in ground_truth["classification"]["flipped_labels"]}


def test_rows_beyond_the_training_cap_are_scored_and_flagged(fixtures_dir, ground_truth):
    """The fold models trained on the capped sample score every other row (none of them saw
    those rows): a row cap bounds the training, not which rows can be flagged."""
    report = da.audit(
        fixtures_dir / "classification", select=["LBL002"], rules={"LBL002": {"max_rows": 300}}
    )
    res = report.result("LBL002")
    sample = res["details"]["sample"]
    assert sample["rows_sampled"] == 300 and sample["rows_scored_beyond_sample"] > 550
    cov = res["coverage"]
    assert cov["in_scope"] == sample["rows_labeled"] == 900
    assert cov["examined"] == sample["rows_probed"] + sample["rows_without_text"] >= 880
    # only the rows of a class too rare in the 300 training rows go unscored, and it says so
    assert cov["reason"].endswith(
        "with fewer than 5 sampled rows were not scored (too few to model)"
    )
    flags = report.flags()
    flagged = set(zip(flags["split"].to_list(), flags["row"].to_list()))
    flips = _flips(ground_truth)
    # the 300 sampled rows hold about a third of the flips: recall over all rows needs the rest
    assert len(flagged & flips) >= 0.5 * len(flips)


def test_a_scoring_cap_makes_coverage_partial_and_the_verdict_says_so(fixtures_dir):
    report = da.audit(
        fixtures_dir / "classification",
        select=["LBL002"],
        rules={"LBL002": {"max_rows": 200, "max_scored": 400}},
    )
    res = report.result("LBL002")
    cov = res["coverage"]
    assert cov["examined"] == 400 - res["details"]["sample"]["rows_of_classes_left_out"]
    assert cov["in_scope"] == res["details"]["sample"]["rows_labeled"] > 800
    assert not cov["complete"] and "beyond max_scored=400" in cov["reason"]
    assert report.data["summary"]["partial_coverage"] == ["LBL002"]
    text = report.summary()
    assert "on partial coverage" in text and "LBL002 examined" in text
    flags = report.flags()
    assert flags.height == res["flagged_rows"] > 0


def test_copies_of_one_text_share_a_fold_so_a_copied_wrong_label_is_caught():
    """Four copies of a food text all labeled 'computers': with copies in different folds each
    copy's model learned the wrong label from its twins and vouched for it (flagged none)."""
    rng = random.Random(3)
    food = "bread butter cheese soup salad pasta garlic onion pepper salt sugar flour".split()  # noqa: SIM905
    comp = "kernel compiler server network packet socket thread memory cache disk cpu".split()  # noqa: SIM905
    common = "the a of and with to in for on is it this that some more very good new".split()  # noqa: SIM905
    rows = []
    for i in range(400):
        words = food if i % 2 else comp
        text = rng.choices(words, k=4) + rng.choices(common + food + comp, k=8)
        rows.append({"text": " ".join(text), "label": "food" if i % 2 else "computers"})
    copied = "garlic bread with butter cheese and onion soup with pepper and salt"
    rows += [{"text": copied, "label": "computers"} for _ in range(4)]
    report = da.audit({"train": rows}, select=["LBL002"], text="text", label="label")
    flags = report.flags()
    assert set(range(400, 404)) <= set(flags["row"].to_list())


def test_group_folds_keep_groups_together_and_stay_stratified():
    rng = np.random.default_rng(0)
    n, folds = 3000, 5
    ids = rng.integers(1, 1200, n)  # many duplicates
    y = rng.integers(0, 3, 1200)[ids]  # a group's rows share a label
    groups = ids.astype(np.uint64)
    fold = _probe.group_folds(y, groups, folds, seed=0)
    for g in np.unique(groups):
        assert np.unique(fold[groups == g]).size == 1
    for c in range(3):
        counts = np.bincount(fold[y == c], minlength=folds)
        assert counts.min() >= 0.8 * counts.mean()
    again = _probe.group_folds(y, groups, folds, seed=0)
    assert np.array_equal(fold, again)
    assert not np.array_equal(fold, _probe.group_folds(y, groups, folds, seed=1))


def _texts_with_copies(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    words = {"a": "apple pear plum fig", "b": "bolt nut gear cog", "c": "rain snow wind hail"}
    base = [
        (" ".join(rng.choice(words[c].split()) for _ in range(5)) + f" {i % 7}", c)
        for i, c in enumerate(rng.choice("abc") for _ in range(60))
    ]
    rows = [rng.choice(base) for _ in range(n)]  # popular texts recur many times
    return [t for t, _ in rows], [c for _, c in rows]


def test_scoring_each_distinct_text_once_is_the_same_as_scoring_every_row(monkeypatch):
    """Rows beyond the training sample are vectorized and predicted once per distinct text
    (real data repeats its texts): their probabilities are those of scoring every row."""
    texts, labels = _texts_with_copies(400)
    y = np.array([sorted(set(labels)).index(v) for v in labels])
    vec = _probe.Vectorizer()
    x = vec.fit_transform(texts[:200])
    model = _probe._Model(x, y[:200], 3, seed=0)
    idx = np.arange(200, 400)[::-1].copy()  # any order of rows
    want = np.zeros((400, 3))
    want[idx] = model.predict(vec.transform([texts[i] for i in idx.tolist()]))
    monkeypatch.setattr(_probe, "SCORE_CHUNK", 7)  # distinct texts span several chunks
    got = np.zeros((400, 3))
    _probe._score_distinct(model, vec, texts, idx, got)
    assert len({texts[i] for i in idx.tolist()}) > 7 * 3
    np.testing.assert_array_equal(got, want)
    assert not got[:200].any()


def test_confident_learning_in_row_chunks_equals_one_pass(monkeypatch):
    rng = np.random.default_rng(1)
    proba = rng.dirichlet(np.ones(4), 1000)
    given = rng.integers(0, 4, 1000)
    whole = _probe.confident_learning(proba, given)
    monkeypatch.setattr(_probe, "CL_CHUNK", 97)
    chunked = _probe.confident_learning(proba, given)
    for name in ("thresholds", "joint", "calibrated", "noise_rate", "issue", "suggested", "score"):
        np.testing.assert_array_equal(getattr(chunked, name), getattr(whole, name), name)
    assert whole.issue.any()


def test_fold_model_is_the_same_for_any_number_of_fit_threads(monkeypatch):
    texts, labels = _texts_with_copies(300, seed=2)
    y = np.array([sorted(set(labels)).index(v) for v in labels])
    x = _probe.vectorize(texts)
    monkeypatch.setattr(_probe, "_fit_threads", lambda: 1)
    one = _probe._Model(x, y, 3, seed=0).predict(x)
    monkeypatch.setattr(_probe, "_fit_threads", lambda: 2)
    two = _probe._Model(x, y, 3, seed=0)
    assert two.model.threads == 2
    np.testing.assert_array_equal(two.predict(x), one)


def test_fold_model_keeps_its_coefficients_column_major_and_predicts_the_same():
    """Column-major coefficients let predict's sparse product read them in place (row-major,
    scipy copied classes x n_features floats on every call); the probabilities are the same."""
    texts, labels = _texts_with_copies(300, seed=3)
    y = np.array([sorted(set(labels)).index(v) for v in labels])
    x = _probe.vectorize(texts)
    model = _probe._Model(x, y, 3, seed=0)
    assert model.model.coef_.flags.f_contiguous and not model.model.coef_.flags.c_contiguous
    fast = model.predict(x)
    model.model.coef_ = np.ascontiguousarray(model.model.coef_)
    np.testing.assert_array_equal(fast, model.predict(x))


def _topic_rows(flips: int) -> tuple[list[dict], set[int]]:
    """Rows whose label their words give away (a skilled probe), ``flips`` of them mislabeled."""
    rng = random.Random(7)
    vocab = {
        "food": ["bread", "butter", "oven", "flour", "sugar", "salt", "soup", "recipe", "bake"],
        "space": [
            "orbit",
            "rocket",
            "planet",
            "comet",
            "star",
            "moon",
            "launch",
            "galaxy",
            "probe",
        ],
        "law": [
            "court",
            "judge",
            "appeal",
            "statute",
            "contract",
            "verdict",
            "lawyer",
            "trial",
            "clause",
        ],
    }
    rows, flipped = [], set()
    for i in range(600):
        label = ("food", "space", "law")[i % 3]
        text = " ".join(rng.choice(vocab[label]) for _ in range(12))
        if i < 3 * flips and i % 3 == 0:
            flipped.add(i)
            label = "space"
        rows.append({"text": f"{text} {i}", "label": label})
    return rows, flipped


def test_a_skilled_probe_reports_at_the_rule_severity_a_weak_one_at_info():
    rows, flipped = _topic_rows(12)
    report = da.audit(rows, select=["LBL002"])
    res = report.result("LBL002")
    assert res["details"]["probe_skill"]["kappa"] > 0.9
    assert res["status"] == "warn"
    assert not any("kappa" in (f["data"] or {}) for f in res["findings"])
    assert len(set(report.flags()["row"].to_list()) & flipped) >= 0.8 * len(flipped)
    # the same rows with min_skill above the probe's kappa: the same flags, graded info
    weak = da.audit(rows, select=["LBL002"], rules={"LBL002": {"min_skill": 0.999}})
    res_w = weak.result("LBL002")
    assert res_w["status"] == "pass"
    assert any("kappa" in (f["data"] or {}) for f in res_w["findings"])
    assert weak.flags()["row"].to_list() == report.flags()["row"].to_list()
    assert set(weak.flags()["severity"].to_list()) == {"info"}


def test_smallest_selects_what_a_stable_argsort_selects():
    rng = np.random.default_rng(4)
    for size in (1, 7, 300):
        values = rng.integers(0, 5, size) / 4 - 0.5  # many ties, +0.0 and -0.0
        values[values == 0] *= rng.choice([-1.0, 1.0], int((values == 0).sum()))
        for num in (0, 1, 3, size - 1, size, size + 2):
            got = np.sort(_probe.smallest(values, num))
            want = np.sort(np.argsort(values, kind="stable")[: max(num, 0)])
            np.testing.assert_array_equal(got, want)


def test_confident_learning_flags_the_rows_the_sorting_version_flagged():
    """The per-class picks by partition equal the picks by stable sorts (the code before)."""
    rng = np.random.default_rng(5)
    proba = rng.dirichlet(np.ones(5) * 0.7, 3000).round(2)  # ties in the margins
    proba /= proba.sum(axis=1, keepdims=True)
    given = rng.integers(0, 5, 3000)
    cl = _probe.confident_learning(proba, given)
    p_given = proba[np.arange(3000), given]
    want = np.zeros(3000, bool)
    for i in range(5):
        rows = np.flatnonzero(given == i)
        chosen: set[int] = set()
        for j in range(5):
            num = int(round(cl.calibrated[i, j])) if j != i else 0
            if num > 0:
                margin = proba[rows, j] - proba[rows, i]
                chosen.update(rows[np.argsort(-margin, kind="stable")[:num]].tolist())
        cand = rows[proba[rows].argmax(axis=1) != i]
        want[cand[np.argsort(p_given[cand], kind="stable")[: len(chosen)]]] = True
    assert want.sum() > 100
    np.testing.assert_array_equal(cl.issue, want)


def test_fit_threads_follow_the_engine(monkeypatch):
    """Threads for the fold fits: the cores, at most OMP_NUM_THREADS (the engine sets it to
    cores / workers in its workers, 1 in Ray's tasks), one in a parallel-engine worker."""
    import multiprocessing
    import os

    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert _probe._fit_threads() == 4
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert _probe._fit_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    assert _probe._fit_threads() == 4
    monkeypatch.setenv("OMP_NUM_THREADS", "many")
    assert _probe._fit_threads() == 4
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())
    assert _probe._fit_threads() == 1

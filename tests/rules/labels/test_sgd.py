"""The label probe's compiled SGD: bit-identical to scikit-learn's SGDClassifier."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dataaudit.rules.labels import _probe, _sgd


def _data(classes: int, rows: int, seed: int) -> tuple[object, np.ndarray]:
    """Sparse tf-idf rows (the probe's own features) of texts whose words lean to their class,
    with shared words and a few copies, so the classes overlap."""
    rng = np.random.default_rng(seed)
    shared = [f"w{i}" for i in range(40)]
    own = [[f"c{c}w{i}" for i in range(25)] for c in range(classes)]
    y = rng.integers(0, classes, rows)
    texts = []
    for label in y.tolist():
        words = rng.choice(shared, rng.integers(2, 12)).tolist()
        words += rng.choice(own[label], rng.integers(0, 6)).tolist()
        words += rng.choice(own[(label + 1) % classes], rng.integers(0, 3)).tolist()
        texts.append(" ".join(rng.permutation(words).tolist()))
    texts[: rows // 10] = texts[rows // 10 : rows // 5]  # copies (with their own labels)
    return _probe.vectorize(texts), y


def _sklearn(x, y, seed: int):
    from sklearn.linear_model import SGDClassifier

    model = SGDClassifier(loss="log_loss", alpha=1e-5, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(x, y)


@pytest.mark.parametrize(("classes", "seed"), [(2, 0), (3, 0), (5, 7), (4, 2**32 - 1)])
def test_same_coefficients_and_probabilities_as_scikit_learn(classes, seed):
    x, y = _data(classes, 600, seed % 1000)
    want = _sklearn(x, y, seed)
    got = _sgd.OvRLogistic(alpha=1e-5, seed=seed).fit(x, y)
    np.testing.assert_array_equal(got.classes_, want.classes_)
    np.testing.assert_array_equal(got.coef_, want.coef_)  # bit for bit, not approximately
    np.testing.assert_array_equal(got.intercept_, want.intercept_)
    assert got.n_iter_ == want.n_iter_
    np.testing.assert_array_equal(got.predict_proba(x), want.predict_proba(x))
    assert got.coef_.flags.f_contiguous  # predict's x @ coef_.T reads it without a copy


def test_same_model_for_any_number_of_threads():
    x, y = _data(6, 500, 3)
    one = _sgd.OvRLogistic(seed=1, threads=1).fit(x, y)
    two = _sgd.OvRLogistic(seed=1, threads=2).fit(x, y)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.intercept_, two.intercept_)


def test_columns_no_row_uses_get_zero_weight_and_one_class_is_refused():
    x, y = _data(3, 300, 5)
    model = _sgd.OvRLogistic().fit(x, y)
    unused = np.setdiff1d(np.arange(x.shape[1]), x.indices)
    assert unused.size and not model.coef_[:, unused].any()
    with pytest.raises(ValueError, match="at least 2 classes"):
        _sgd.OvRLogistic().fit(x, np.zeros(x.shape[0], int))

"""A small seeded text probe and confident learning, shared by LBL002/LBL003/LBL004.

The probe: hashed word 1-2-gram tf-idf features and a logistic-loss linear model trained by SGD
(scikit-learn, imported lazily; seconds for tens of thousands of rows). The memorization probe
adds char 2-5-grams and fits an almost unregularized hinge-loss linear model. ``oof_proba`` gives k-fold
out-of-fold probabilities; the result is memoized for the same sample and parameters, so LBL002
and LBL003's per-class table run the probe once per audit.

Confident learning (Northcutt, Jiang & Chuang, JAIR 2021): a per-class threshold ``t_j`` =
mean predicted probability of class j over rows labeled j; a row labeled i "confidently belongs"
to class j when ``p_j >= t_j`` (the most probable such j). Counting these pairs gives the
confident joint; calibrated to the label counts it estimates the noise per class, and rows
labeled i that confidently belong to j != i are the likely label issues.
"""

from __future__ import annotations

import importlib.util
import re
import warnings
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import xxhash

if TYPE_CHECKING:
    from ._sample import Sampled

_CACHE: OrderedDict[str, Any] = OrderedDict()
_CACHE_SIZE = 4
_WORD = re.compile(r"\w")


def has_words(text: str) -> bool:
    """Whether the word probe can read anything in ``text``: it sees only ``\\w+`` tokens, so
    a row without one (empty, blank, only symbols) would be scored on the class prior alone."""
    return _WORD.search(text) is not None


def _digest(texts: list[str], labels: list[str], params: tuple) -> str:
    h = xxhash.xxh3_128()
    h.update(repr(params).encode())
    for t, y in zip(texts, labels):
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
        h.update(y.encode("utf-8", "surrogatepass"))
        h.update(b"\x01")
    return h.hexdigest()


def vectorize(texts: list[str], n_features: int = 2**18, char: bool = False):
    """Hashed word 1-2-grams (+ char_wb 2-5-grams), sublinear tf-idf, l2-normalized rows."""
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer

    word = HashingVectorizer(
        analyzer="word",
        ngram_range=(1, 2),
        n_features=n_features,
        alternate_sign=False,
        norm=None,
        token_pattern=r"(?u)\b\w+\b",
    )
    parts = [word.transform(texts)]
    if char:
        chars = HashingVectorizer(
            analyzer="char_wb",
            ngram_range=(2, 5),
            n_features=n_features,
            alternate_sign=False,
            norm=None,
        )
        parts.append(chars.transform(texts))
    x = hstack(parts).tocsr()
    return TfidfTransformer(sublinear_tf=True).fit_transform(x)


def _fit_predict(x_train, y_train, x_test, n_classes: int, seed: int) -> np.ndarray:
    from sklearn.linear_model import SGDClassifier

    proba = np.zeros((x_test.shape[0], n_classes))
    present = np.unique(y_train)
    if present.size == 1:
        proba[:, present[0]] = 1.0
        return proba
    model = SGDClassifier(loss="log_loss", alpha=1e-5, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x_train, y_train)
    proba[:, model.classes_] = model.predict_proba(x_test)
    return proba


def oof_proba(
    texts: list[str], labels: list[str], *, folds: int = 5, seed: int = 0
) -> tuple[list[str], np.ndarray]:
    """Out-of-fold class probabilities (rows x sorted classes), seeded stratified k-fold."""
    params = ("oof", folds, seed)
    key = _digest(texts, labels, params)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        classes, proba = _CACHE[key]
        return list(classes), proba.copy()
    from sklearn.model_selection import StratifiedKFold

    classes = sorted(set(labels))
    index = {c_: i for i, c_ in enumerate(classes)}
    y = np.array([index[v] for v in labels], np.int64)
    x = vectorize(texts)
    proba = np.zeros((len(texts), len(classes)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        splits = list(splitter.split(np.zeros(len(y)), y))
    for train_idx, test_idx in splits:
        proba[test_idx] = _fit_predict(x[train_idx], y[train_idx], x[test_idx], len(classes), seed)
    _CACHE[key] = (tuple(classes), proba)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return classes, proba.copy()


def fit_train_accuracy(texts: list[str], labels: list[str], *, seed: int = 0) -> np.ndarray | None:
    """Fit a high-capacity probe on the rows and predict the same rows (memorization test).

    Word + char n-grams restricted to the columns the sample uses, and an almost unregularized
    linear max-margin model (hinge loss, 50 epochs): anything separable gets memorized. None when
    no row has a single n-gram (all empty or blank): there is nothing to fit.
    """
    from sklearn.linear_model import SGDClassifier

    classes = sorted(set(labels))
    index = {c_: i for i, c_ in enumerate(classes)}
    y = np.array([index[v] for v in labels], np.int64)
    x = vectorize(texts, char=True)
    x = x[:, np.unique(x.indices)]
    if x.shape[1] == 0:
        return None
    model = SGDClassifier(loss="hinge", alpha=1e-7, max_iter=50, tol=None, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x, y)
    return model.predict(x)


@dataclass
class ConfidentLearning:
    thresholds: np.ndarray  # per class
    joint: np.ndarray  # confident joint counts [given, likely]
    calibrated: np.ndarray  # calibrated to the given-label counts
    noise_rate: np.ndarray  # per given class: estimated share of wrong labels
    issue: np.ndarray  # bool per row: flagged as a likely label issue
    suggested: np.ndarray  # int per row: most likely other class
    score: np.ndarray  # per row: normalized margin p_given - max other (lower = worse)


def confident_learning(proba: np.ndarray, given: np.ndarray) -> ConfidentLearning:
    """Confident joint, per-class noise and the flagged rows.

    How many rows labeled i to flag: the rows labeled i whose margin ``p_j - p_i`` is among the
    ``round(C[i, j])`` largest for some j != i (C = calibrated confident joint), counted once -
    cleanlab's prune-by-noise-rate count. Which rows: the rows labeled i with the lowest
    self-confidence ``p_i`` whose most probable class is not i. On the bench this picks the same
    number of rows as cleanlab with more true label errors among them.
    """
    n, k = proba.shape
    ar = np.arange(n)
    counts = np.bincount(given, minlength=k).astype(float)
    thresholds = np.array(
        [proba[given == j, j].mean() if counts[j] else 1.0 for j in range(k)], float
    )
    above = proba >= thresholds[None, :] - 1e-12
    has = above.any(axis=1)
    likely = np.where(above, proba, -1.0).argmax(axis=1)
    joint = np.zeros((k, k), np.int64)
    np.add.at(joint, (given[has], likely[has]), 1)
    row_sums = joint.sum(axis=1, keepdims=True).astype(float)
    calibrated = np.divide(
        joint * counts[:, None], row_sums, out=np.zeros((k, k)), where=row_sums > 0
    )
    totals = calibrated.sum(axis=1)
    noise = np.divide(totals - np.diag(calibrated), totals, out=np.zeros(k), where=totals > 0)
    p_given = proba[ar, given]
    others = proba.copy()
    others[ar, given] = -1.0
    suggested = others.argmax(axis=1)
    score = p_given - others.max(axis=1)
    disagrees = proba.argmax(axis=1) != given
    issue = np.zeros(n, bool)
    for i in range(k):
        rows = np.flatnonzero(given == i)
        if not rows.size:
            continue
        chosen: set[int] = set()
        for j in range(k):
            num = int(round(calibrated[i, j])) if j != i else 0
            if num <= 0:
                continue
            margin = proba[rows, j] - proba[rows, i]
            chosen.update(rows[np.argsort(-margin, kind="stable")[:num]].tolist())
        cand = rows[disagrees[rows]]
        pick = cand[np.argsort(p_given[cand], kind="stable")[: len(chosen)]]
        issue[pick] = True
    return ConfidentLearning(thresholds, joint, calibrated, noise, issue, suggested, score)


def sklearn_missing() -> bool:
    return importlib.util.find_spec("sklearn") is None


class ProbeRun:
    """The probe's verdict on a sample: LBL002's flags and LBL003's per-class table."""

    def __init__(self, items, classes, proba, cl, dropped, without_text):
        self.items = items
        self.classes = classes
        self.proba = proba
        self.cl = cl
        self.dropped = dropped  # classes left out: too few rows
        self.without_text = without_text  # sampled rows left out: nothing for the probe to read


def run_probe(
    items: list[Sampled],
    *,
    seed: int,
    folds: int,
    min_rows: int,
    min_class_rows: int,
    max_classes: int,
) -> ProbeRun | str:
    """Out-of-fold probe + confident learning on sampled items, or the reason it cannot run."""
    if sklearn_missing():
        return "scikit-learn is not installed (pip install scikit-learn)"
    # a row without text gives the probe nothing to read: it is never scored nor flagged (an
    # empty text is TXT001's finding, not a label error)
    readable = [it for it in items if has_words(it.text)]
    without_text = len(items) - len(readable)
    note = (
        f"; {without_text} sampled rows have no text for the probe to read and were left out"
        if without_text
        else ""
    )
    counts = Counter(it.label for it in readable)
    keep_classes = {c for c, n in counts.items() if n >= max(min_class_rows, folds)}
    dropped = sorted(set(counts) - keep_classes)
    kept = [it for it in readable if it.label in keep_classes]
    if len(keep_classes) < 2:
        return (
            f"needs at least 2 classes with >= {max(min_class_rows, folds)} rows each in the "
            f"sample; found {len(keep_classes)} (of {len(counts)} classes, {len(readable)} rows)"
            + note
        )
    if len(kept) < min_rows:
        return (
            f"too little data: {len(kept)} labeled rows in usable classes, needs >= {min_rows}"
            + note
        )
    if len(keep_classes) > max_classes:
        return (
            f"the label has {len(keep_classes)} classes, more than max_classes={max_classes}; "
            "the probe is meant for categorical labels (raise max_classes to run it anyway)"
        )
    texts = [it.text for it in kept]
    labels = [it.label for it in kept]
    classes, proba = oof_proba(texts, labels, folds=folds, seed=seed)
    index = {c: i for i, c in enumerate(classes)}
    given = np.array([index[v] for v in labels], np.int64)
    cl = confident_learning(proba, given)
    return ProbeRun(kept, classes, proba, cl, dropped, without_text)

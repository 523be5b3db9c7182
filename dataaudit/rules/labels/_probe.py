"""A small seeded text probe and confident learning, shared by LBL002/LBL003/LBL004.

The probe: hashed word 1-2-gram tf-idf features (scikit-learn, imported lazily) and a
logistic-loss linear model trained by SGD (``_sgd``: scikit-learn's SGDClassifier updates,
compiled, the same numbers; seconds for tens of thousands of rows). The memorization probe
adds char 2-5-grams and fits an almost unregularized hinge-loss linear model. ``oof_proba`` gives k-fold
out-of-fold probabilities; the result is memoized for the same sample and parameters, so LBL002
and LBL003's per-class table run the probe once per audit.

Folds are stratified by label and grouped by the normalized input's hash: copies of one text
are always in one fold, so no row is scored by a model that saw its twin (a duplicated row with
a wrong label would otherwise vouch for itself). Rows beyond the training sample are scored by
the fold model that left out their group (none of the fold models saw a row outside the
sample), so every row can be scored and flagged, not only the sampled ones. The cost is the
fold models' fits (one-vs-rest, one class per core); the scored rows cost little: each distinct
text is vectorized and predicted once per fold, however often it recurs.

Confident learning (Northcutt, Jiang & Chuang, JAIR 2021): a per-class threshold ``t_j`` =
mean predicted probability of class j over rows labeled j; a row labeled i "confidently belongs"
to class j when ``p_j >= t_j`` (the most probable such j). Counting these pairs gives the
confident joint; calibrated to the label counts it estimates the noise per class, and rows
labeled i that confidently belong to j != i are the likely label issues.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import re
import warnings
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import xxhash

from ...wording import noun, plural

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


class Vectorizer:
    """Hashed word 1-2-grams (+ char_wb 2-5-grams), sublinear tf-idf, l2-normalized rows; the
    idf is fit on the rows given to ``fit_transform`` and reused by ``transform``."""

    def __init__(self, n_features: int = 2**18, char: bool = False):
        from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer

        self.hashers = [
            HashingVectorizer(
                analyzer="word",
                ngram_range=(1, 2),
                n_features=n_features,
                alternate_sign=False,
                norm=None,
                token_pattern=r"(?u)\b\w+\b",
            )
        ]
        if char:
            self.hashers.append(
                HashingVectorizer(
                    analyzer="char_wb",
                    ngram_range=(2, 5),
                    n_features=n_features,
                    alternate_sign=False,
                    norm=None,
                )
            )
        self.tfidf = TfidfTransformer(sublinear_tf=True)

    def _counts(self, texts: list[str]):
        from scipy.sparse import hstack

        return hstack([h.transform(texts) for h in self.hashers]).tocsr()

    def fit_transform(self, texts: list[str]):
        return self.tfidf.fit_transform(self._counts(texts))

    def transform(self, texts: list[str]):
        return self.tfidf.transform(self._counts(texts))


def vectorize(texts: list[str], n_features: int = 2**18, char: bool = False):
    """Hashed word 1-2-grams (+ char_wb 2-5-grams), sublinear tf-idf, l2-normalized rows."""
    return Vectorizer(n_features, char).fit_transform(texts)


def group_ids(texts: list[str], groups: list[int] | None) -> np.ndarray:
    """Each row's group as uint64: the given normalized-input hash, or (where it is 0: not
    known) the hash of the row's normalized text."""
    from ...features.normalize import normalize_text

    out = np.zeros(len(texts), np.uint64)
    if groups is not None:
        out[:] = np.asarray(groups, np.uint64)
    for i in np.flatnonzero(out == 0).tolist():
        out[i] = xxhash.xxh3_64_intdigest(normalize_text(texts[i]).encode("utf-8", "surrogatepass"))
    return out


def _group_keys(groups: np.ndarray, seed: int) -> np.ndarray:
    from ...sketches.sampling import row_keys

    return row_keys(groups.view(np.int64), int(seed) * 0x9E3779B97F4A7C15 & (2**64 - 1))


def group_folds(y: np.ndarray, groups: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """Each row's fold: stratified by label, grouped (rows of one group share a fold), seeded.

    A group takes the label of its first row; the groups of a class, in a seeded order, are cut
    into ``folds`` runs of about equal row counts, so every fold holds about 1/folds of every
    class and copies of one text never straddle a training and a scored fold.
    """
    uniq, first, inv = np.unique(groups, return_index=True, return_inverse=True)
    size = np.bincount(inv, minlength=uniq.size)
    label = y[first]
    order = np.lexsort((_group_keys(uniq, seed), label))
    sizes, labels = size[order], label[order]
    before = np.cumsum(sizes) - sizes  # rows in groups before this one, over all classes
    totals = np.bincount(labels, weights=sizes).astype(np.int64)
    class_start = np.zeros_like(totals)
    class_start[1:] = np.cumsum(totals)[:-1]
    within = before - class_start[labels]
    fold = np.zeros(uniq.size, np.int64)
    fold[order] = (within * folds) // np.maximum(totals[labels], 1)
    return fold[inv]


def _fit_threads() -> int:
    """Threads for the one-vs-rest fits, as the engine decides for the libraries' own pools:
    one inside a worker process of the parallel engine (one worker per core already), at most
    ``OMP_NUM_THREADS`` when set (the engine sets it to cores / workers in its workers and to
    1 in Ray's tasks, which reserve one CPU each), else the machine's cores."""
    if multiprocessing.parent_process() is not None:
        return 1
    cores = max(1, os.cpu_count() or 1)
    try:
        return max(1, min(cores, int(os.environ.get("OMP_NUM_THREADS", cores))))
    except ValueError:  # not a number: the libraries ignore it too
        return cores


class _Model:
    """One fold's probe: predicts probabilities over all ``n_classes`` (0 for classes it did
    not see in training)."""

    def __init__(self, x_train, y_train, n_classes: int, seed: int):
        self.n_classes = n_classes
        self.present = np.unique(y_train)
        self.model = None
        if self.present.size > 1:
            from ._sgd import OvRLogistic

            # scikit-learn's SGDClassifier(loss="log_loss", alpha=1e-5) compiled, the same
            # numbers (see _sgd); one-vs-rest, one class per thread: each class has its own
            # seed (drawn up front), so the model is the same for any number of threads
            self.model = OvRLogistic(alpha=1e-5, seed=seed, threads=_fit_threads())
            self.model.fit(x_train, y_train)

    def predict(self, x) -> np.ndarray:
        proba = np.zeros((x.shape[0], self.n_classes))
        if self.model is None:
            proba[:, self.present[0]] = 1.0
        else:
            proba[:, self.model.classes_] = self.model.predict_proba(x)
        return proba


@dataclass
class OutOfFold:
    """The probe's probabilities: ``proba`` for the training rows (out of fold) and
    ``proba_scored`` for the rows scored beyond them; ``seen``/``seen_scored``: whether the
    model that scored a row was trained on the row's own class (a class all of whose rows sit
    in one fold, one duplicated text, cannot be judged there)."""

    classes: list[str]
    proba: np.ndarray
    seen: np.ndarray
    proba_scored: np.ndarray
    seen_scored: np.ndarray
    #: ``proba`` then ``proba_scored`` in one array (they are views of it), when computed
    combined: np.ndarray | None = None


TRAIN_ROWS = (
    50000  # the probe's default training sample, one value for LBL002 and LBL003 (memoized once)
)
SCORE_CHUNK = 20000  # rows beyond the training sample vectorized and scored at a time
CL_CHUNK = 65536  # rows of probabilities confident learning works on at a time


def _score_distinct(model: _Model, vec: Vectorizer, texts: list[str], idx: np.ndarray, out) -> None:
    """``out[idx] = model.predict(vec.transform(texts[idx]))``, vectorizing and predicting each
    distinct text once (in chunks of SCORE_CHUNK): a row's features and probabilities depend on
    its text alone, and real data repeats its popular texts thousands of times."""
    first: dict[str, int] = {}
    inv = np.fromiter(
        (first.setdefault(texts[i], len(first)) for i in idx.tolist()), np.int64, idx.size
    )
    distinct = list(first)
    del first
    order = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[order], np.arange(0, len(distinct) + SCORE_CHUNK, SCORE_CHUNK))
    for c, lo in enumerate(range(0, len(distinct), SCORE_CHUNK)):
        rows = order[bounds[c] : bounds[c + 1]]
        p = model.predict(vec.transform(distinct[lo : lo + SCORE_CHUNK]))
        out[idx[rows]] = p[inv[rows] - lo]


def oof_proba(
    texts: list[str],
    labels: list[str],
    *,
    folds: int = 5,
    seed: int = 0,
    groups: list[int] | None = None,
    score: tuple[list[str], list[str], list[int] | None] | None = None,
) -> OutOfFold:
    """Out-of-fold class probabilities (rows x sorted classes) with seeded folds stratified by
    label and grouped by ``groups`` (see :func:`group_folds`); ``score`` = (texts, labels,
    groups) of further rows, each scored by the fold model that left out its group (one the
    training rows do not have: a seeded fold)."""
    g = group_ids(texts, groups)
    params = ("oof-grouped", folds, seed, xxhash.xxh3_64_hexdigest(g.tobytes()))
    key = _digest(texts, labels, params)
    classes = sorted(set(labels))
    index = {c_: i for i, c_ in enumerate(classes)}
    y = np.array([index[v] for v in labels], np.int64)
    fold = group_folds(y, g, folds, seed)
    s_texts, s_labels, s_groups = score if score is not None else ([], [], None)
    sy = np.array([index[v] for v in s_labels], np.int64)
    if key in _CACHE and not s_texts:
        _CACHE.move_to_end(key)
        proba, seen = _CACHE[key]
        empty = np.zeros((0, len(classes)))
        return OutOfFold(list(classes), proba.copy(), seen.copy(), empty, np.zeros(0, bool))
    sg = group_ids(s_texts, s_groups)
    # a scored row whose group is in the training sample goes to that group's fold
    uniq, first = np.unique(g, return_index=True)
    at = np.minimum(np.searchsorted(uniq, sg), max(uniq.size - 1, 0))
    known = uniq[at] == sg if uniq.size else np.zeros(sg.size, bool)
    s_fold = (_group_keys(sg, seed + 1) % np.uint64(folds)).astype(np.int64)
    s_fold[known] = fold[first[at[known]]]
    vec = Vectorizer()
    x = vec.fit_transform(texts)
    # one array for both, so run_probe need not copy them into one (rows x classes of float64:
    # 250 MB for 500k rows of 60 classes)
    combined = np.zeros((len(texts) + len(s_texts), len(classes)))
    proba, proba_s = combined[: len(texts)], combined[len(texts) :]
    seen = np.zeros(len(texts), bool)
    seen_s = np.zeros(len(s_texts), bool)
    for f in range(folds):
        test_idx = np.flatnonzero(fold == f)
        score_idx = np.flatnonzero(s_fold == f)
        if not test_idx.size and not score_idx.size:
            continue
        train_idx = np.flatnonzero(fold != f)
        if not train_idx.size:
            continue
        model = _Model(x[train_idx], y[train_idx], len(classes), seed)
        if test_idx.size:
            proba[test_idx] = model.predict(x[test_idx])
            seen[test_idx] = np.isin(y[test_idx], model.present)
        if score_idx.size:
            _score_distinct(model, vec, s_texts, score_idx, proba_s)
            seen_s[score_idx] = np.isin(sy[score_idx], model.present)
        del model  # its coefficients are classes x n_features dense (130 MB for 60 classes)
    _CACHE[key] = (proba.copy(), seen.copy())
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return OutOfFold(list(classes), proba, seen, proba_s, seen_s, combined)


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
    p_given = proba[ar, given]
    has = np.zeros(n, bool)
    likely = np.zeros(n, np.int64)
    suggested = np.zeros(n, np.int64)
    score = np.zeros(n)
    disagrees = np.zeros(n, bool)
    # in row chunks: the temporaries are rows x classes each (proba can be 500k x 60)
    for lo in range(0, n, CL_CHUNK):
        p, g = proba[lo : lo + CL_CHUNK], given[lo : lo + CL_CHUNK]
        at = slice(lo, lo + p.shape[0])
        above = p >= thresholds[None, :] - 1e-12
        has[at] = above.any(axis=1)
        likely[at] = np.where(above, p, -1.0).argmax(axis=1)
        disagrees[at] = p.argmax(axis=1) != g
        others = p.copy()
        others[np.arange(p.shape[0]), g] = -1.0
        suggested[at] = others.argmax(axis=1)
        score[at] = p_given[at] - others.max(axis=1)
    joint = np.zeros((k, k), np.int64)
    np.add.at(joint, (given[has], likely[has]), 1)
    row_sums = joint.sum(axis=1, keepdims=True).astype(float)
    calibrated = np.divide(
        joint * counts[:, None], row_sums, out=np.zeros((k, k)), where=row_sums > 0
    )
    totals = calibrated.sum(axis=1)
    noise = np.divide(totals - np.diag(calibrated), totals, out=np.zeros(k), where=totals > 0)
    issue = np.zeros(n, bool)
    by_class = np.argsort(given, kind="stable")  # each class's rows, in row order
    ends = np.cumsum(counts.astype(np.int64))
    for i in range(k):
        rows = by_class[ends[i] - int(counts[i]) : ends[i]]
        if not rows.size:
            continue
        p_rows = proba[rows]
        chosen = np.zeros(rows.size, bool)
        for j in range(k):
            num = int(round(calibrated[i, j])) if j != i else 0
            if num <= 0:
                continue
            chosen[smallest(p_rows[:, i] - p_rows[:, j], num)] = True  # largest p_j - p_i
        cand = rows[disagrees[rows]]
        issue[cand[smallest(p_given[cand], int(chosen.sum()))]] = True
    return ConfidentLearning(thresholds, joint, calibrated, noise, issue, suggested, score)


def smallest(values: np.ndarray, num: int) -> np.ndarray:
    """Positions of the ``num`` smallest values, ties to the earlier position: the set
    ``argsort(values, kind="stable")[:num]`` selects, by a partition instead of a sort (confident
    learning picks them for every pair of classes: 60 x 60 sorts of up to 250k rows)."""
    if num >= values.size:
        return np.arange(values.size)
    if num <= 0:
        return np.zeros(0, np.int64)
    cut = np.partition(values, num - 1)[num - 1]
    below = np.flatnonzero(values < cut)
    return np.concatenate([below, np.flatnonzero(values == cut)[: num - below.size]])


def sklearn_missing() -> bool:
    return importlib.util.find_spec("sklearn") is None


class ProbeRun:
    """The probe's verdict: LBL002's flags and LBL003's per-class table.

    ``items``/``proba``/``cl``: every row the probe judged - the training sample's rows (out
    of fold) first, then the rows scored beyond it - and confident learning over all of them.
    """

    def __init__(self, items, classes, proba, cl, dropped, without_text, **counts):
        self.items = items
        self.classes = classes
        self.proba = proba
        self.cl = cl
        self.dropped = dropped  # classes left out: too few rows
        self.without_text = without_text  # rows left out: nothing for the probe to read
        self.trained = counts.get("trained", len(items))  # training rows judged (out of fold)
        self.scored = counts.get("scored", 0)  # rows beyond the training sample judged
        self.dropped_rows = counts.get("dropped_rows", 0)  # rows of the classes left out
        self.unjudged = counts.get("unjudged", 0)  # rows whose fold model never saw their class


def run_probe(
    items: list[Sampled],
    *,
    seed: int,
    folds: int,
    min_rows: int,
    min_class_rows: int,
    max_classes: int,
    score: list[Sampled] | None = None,
) -> ProbeRun | str:
    """Out-of-fold probe + confident learning on sampled items, or the reason it cannot run.

    ``items`` train the fold models (and are scored out of fold); ``score`` are further rows
    that the fold models score (none of them saw these rows) and that are judged with them.
    """
    if sklearn_missing():
        return "scikit-learn is not installed (pip install scikit-learn)"
    score = list(score or [])
    # a row without text gives the probe nothing to read: it is never scored nor flagged (an
    # empty text is TXT001's finding, not a label error)
    readable = [it for it in items if has_words(it.text)]
    readable_s = [it for it in score if has_words(it.text)]
    without_text = len(items) - len(readable) + len(score) - len(readable_s)
    note = (
        f"; {plural(without_text, 'sampled row')} {noun(without_text, 'has', 'have')} no text "
        f"for the probe to read and {noun(without_text, 'was', 'were')} left out"
        if without_text
        else ""
    )
    counts = Counter(it.label for it in readable)
    keep_classes = {c for c, n in counts.items() if n >= max(min_class_rows, folds)}
    dropped = sorted(set(counts) - keep_classes)
    kept = [it for it in readable if it.label in keep_classes]
    kept_s = [it for it in readable_s if it.label in keep_classes]
    dropped_rows = len(readable) - len(kept) + len(readable_s) - len(kept_s)
    if len(keep_classes) < 2:
        return (
            f"needs at least 2 classes with >= {max(min_class_rows, folds)} rows each in the "
            f"sample; found {len(keep_classes)} (of {plural(len(counts), 'class')}, "
            f"{plural(len(readable), 'row')})" + note
        )
    if len(kept) < min_rows:
        return (
            f"too little data: {plural(len(kept), 'labeled row')} in usable classes, needs "
            f">= {min_rows}" + note
        )
    if len(keep_classes) > max_classes:
        return (
            f"the label has {len(keep_classes)} classes, more than max_classes={max_classes}; "
            "the probe is meant for categorical labels (raise max_classes to run it anyway)"
        )
    oof = oof_proba(
        [it.text for it in kept],
        [it.label for it in kept],
        folds=folds,
        seed=seed,
        groups=[it.group for it in kept],
        score=(
            [it.text for it in kept_s],
            [it.label for it in kept_s],
            [it.group for it in kept_s],
        )
        if kept_s
        else None,
    )
    judged = [it for it, ok in zip(kept, oof.seen) if ok]
    judged_s = [it for it, ok in zip(kept_s, oof.seen_scored) if ok]
    if not judged and not judged_s:
        groups = len({it.group for it in kept})
        return (
            f"no row could be judged out of fold: the {plural(len(kept), 'row')} hold "
            f"{plural(groups, 'distinct text')}, and copies of a text share a fold, so no fold "
            "model saw the label of the rows it had to judge (needs more distinct texts per class)"
            + note
        )
    if oof.combined is not None and oof.seen.all() and oof.seen_scored.all():
        proba = oof.combined  # every row judged: no copy
    else:
        proba = np.concatenate([oof.proba[oof.seen], oof.proba_scored[oof.seen_scored]])
    classes = oof.classes
    del oof
    all_items = judged + judged_s
    index = {c: i for i, c in enumerate(classes)}
    given = np.array([index[it.label] for it in all_items], np.int64)
    cl = confident_learning(proba, given)
    return ProbeRun(
        all_items,
        classes,
        proba,
        cl,
        dropped,
        without_text,
        trained=len(judged),
        scored=len(judged_s),
        dropped_rows=dropped_rows,
        unjudged=len(kept) - len(judged) + len(kept_s) - len(judged_s),
    )

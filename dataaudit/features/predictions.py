"""The ``prediction`` feature: the audit's predictions joined to a batch's rows.

Reads ``batch.resources.predictions`` (see dataaudit/resources/predictions.py): by row position
or id for predictions given apart from the data, or the named column of the batch. Every EVAL
rule reads this one view, so "correct" means the same thing everywhere: the predicted class
equals the label's class key (labels, probabilities), or the given ``correct`` score.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..resources.predictions import ANY_SPLIT, id_strings
from .base import Batch, register_feature


@dataclass(frozen=True)
class BatchPredictions:
    """Per row: whether it has a prediction (``has``), the predicted class key (``pred``, None
    for ``correct`` predictions), the probability of the predicted class (``confidence``, nan
    without probabilities), the true class key (``gold``) and ``score``: 1 right, 0 wrong (or a
    ``correct`` score in between); nan where the row has no prediction or no label to judge it."""

    has: np.ndarray
    pred: list[str | None]
    confidence: np.ndarray
    gold: list[str | None]
    score: np.ndarray


@register_feature("prediction")
def prediction_feature(batch: Batch) -> BatchPredictions:
    preds = batch.resources.predictions
    n = batch.num_rows
    has = np.zeros(n, bool)
    pred: list[str | None] = [None] * n
    confidence = np.full(n, np.nan)
    given = np.full(n, np.nan)  # a `correct` score given with the predictions
    gold = batch.feature("label").values if batch.roles.label is not None else [None] * n
    if preds is None:
        return BatchPredictions(has, pred, confidence, list(gold), np.full(n, np.nan))
    if preds.column is not None:
        values = batch.column(preds.column).to_pylist()
        if preds.kind == "correct":
            for i, v in enumerate(values):
                if v is not None and not (isinstance(v, float) and v != v):
                    has[i], given[i] = True, float(v)
        else:
            from .labels import _key

            pred = [_key(v) for v in values]
            has = np.fromiter((p is not None for p in pred), bool, n)
    else:
        rows = batch.row_ids
        for name in (batch.split, ANY_SPLIT):
            sp = preds.splits.get(name)
            if sp is None:
                continue
            idx = sp.index_of_ids(id_strings(batch)) if sp.key == "id" else sp.index_of_rows(rows)
            at = np.flatnonzero(idx >= 0)
            if not at.size:
                continue
            src = idx[at]
            has[at] = True
            if sp.labels is not None:
                for i, j in zip(at.tolist(), src.tolist()):
                    pred[i] = sp.labels[j]
            elif sp.proba is not None:
                best = sp.proba[src].argmax(axis=1)
                confidence[at] = sp.proba[src, best]
                for i, b in zip(at.tolist(), best.tolist()):
                    pred[i] = preds.classes[b]
            elif sp.correct is not None:
                given[at] = sp.correct[src]
    if preds.kind == "correct":
        score = np.where(has, given, np.nan)
    else:
        score = np.full(n, np.nan)
        for i in np.flatnonzero(has).tolist():
            if gold[i] is not None and pred[i] is not None:
                score[i] = 1.0 if pred[i] == gold[i] else 0.0
    return BatchPredictions(has, pred, confidence, list(gold), score)

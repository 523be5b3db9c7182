"""Predictions on the classification fixture's validation split: a probe with a planted weak
class and a planted weak slice, and a balanced control.

- the probe: word 1-2-gram tf-idf + logistic regression (scikit-learn, seeded), trained on the
  train split;
- weak class: it sees only ``WEAK_CLASS_KEEP`` of the ``literature`` training rows, so it
  rarely predicts ``literature``;
- weak slice (one source): the text of ``glossary`` rows does not reach it (a broken field
  mapping in one source's pipeline: it predicts from an empty string);
- balanced control: the true label, replaced by another class for a seeded ``CONTROL_ERROR``
  share of the rows chosen independently of class, source, length or anything else.

Predictions are keyed by id, with a split column, as a model's evaluation would write them.
"""

from __future__ import annotations

import json
import random
from functools import cache

from tests import ROOT

FIXTURE = ROOT / "fixtures" / "classification"
WEAK_CLASS, WEAK_SOURCE, WEAK_CLASS_KEEP = "literature", "glossary", 6
EVAL_SPLIT = "validation"
CONTROL_ERROR = 0.2


def rows(split: str) -> list[dict]:
    with open(FIXTURE / f"{split}.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _text(r: dict) -> str:
    return r["text"] if isinstance(r["text"], str) else ""


@cache
def planted() -> tuple[tuple[str, str], ...]:
    """(id, predicted label) for every row of the eval split, from the planted probe."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    train, seen = [], 0
    for r in rows("train"):
        if r["label"] is None:
            continue
        if r["label"] == WEAK_CLASS:
            seen += 1
            if seen > WEAK_CLASS_KEEP:
                continue
        train.append(r)
    vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    model = LogisticRegression(C=10.0, max_iter=2000, random_state=0)
    model.fit(vec.fit_transform([_text(r) for r in train]), [r["label"] for r in train])
    ev = rows(EVAL_SPLIT)
    inputs = ["" if r["source"] == WEAK_SOURCE else _text(r) for r in ev]
    return tuple((r["id"], str(p)) for r, p in zip(ev, model.predict(vec.transform(inputs))))


@cache
def control(seed: int = 0) -> tuple[tuple[str, str], ...]:
    ev = rows(EVAL_SPLIT)
    classes = sorted({r["label"] for r in ev})
    rng = random.Random(seed)
    out = []
    for r in ev:
        p = r["label"]
        if rng.random() < CONTROL_ERROR:
            p = rng.choice([c for c in classes if c != p])
        out.append((r["id"], p))
    return tuple(out)


def write_csv(path, preds) -> None:
    lines = ["id,split,prediction"] + [f"{i},{EVAL_SPLIT},{p}" for i, p in preds]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

"""Sample corpora the conformance checks run on: small, seeded, with one planted case per rule.

The built-in rules each fire on :func:`sample_data` when given what they need (a tokenizer for
the unknown-token rule, ``max_seq_len`` for truncation, the rows of :func:`sample_contamination`
as a benchmark file), so the checks compare results that hold findings, not empty verdicts.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from ..corpus import Corpus, load_corpus

__all__ = ["sample_contamination", "sample_corpus", "sample_data", "sample_reference"]

_COMMON = [
    "the",
    "model",
    "reads",
    "every",
    "token",
    "of",
    "the",
    "corpus",
    "before",
    "training",
    "starts",
    "and",
    "a",
    "small",
    "error",
    "in",
    "the",
    "data",
    "becomes",
    "a",
    "large",
    "error",
    "in",
    "the",
    "weights",
    "because",
    "duplicated",
    "samples",
    "count",
    "twice",
    "while",
    "leaked",
    "test",
    "rows",
    "make",
    "evaluation",
    "scores",
    "look",
    "better",
    "than",
    "the",
    "model",
    "really",
    "is",
    "so",
    "engineers",
    "audit",
    "data",
    "early",
    "check",
    "labels",
    "sources",
    "lengths",
    "encodings",
    "and",
    "splits",
    "then",
    "fix",
    "the",
    "pipeline",
    "that",
    "produced",
    "the",
    "problem",
]
#: each class has its own words, so a label can be learned from the text (LBL002, LBL004)
_TOPICS = {
    "alpha": [
        "weather",
        "rain",
        "cloud",
        "storm",
        "wind",
        "forecast",
        "sunny",
        "snow",
        "thunder",
        "humid",
    ],
    "beta": [
        "market",
        "price",
        "stock",
        "trade",
        "profit",
        "bank",
        "budget",
        "sales",
        "invoice",
        "loan",
    ],
    "gamma": [
        "goal",
        "match",
        "team",
        "score",
        "player",
        "season",
        "coach",
        "league",
        "referee",
        "stadium",
    ],
}
#: the test split's own vocabulary: its rows drift from train (LEN003, TOK001, SHIFT001)
_SHIFTED = [
    "module",
    "function",
    "import",
    "class",
    "return",
    "argument",
    "keyword",
    "exception",
    "iterator",
]
#: letters a tokenizer trained on the train split has never seen (TOK002's unknown tokens)
_UNSEEN = ["ωμέγα", "λόγος", "☃", "δέλτα", "ψυχή", "ζωή"]
_MOJIBAKE = "the cafÃ© isnâ€™t open because the storm knocked the sign down"


def _sentence(rng: random.Random, n: int, topic: list[str], extra: Sequence[str] = ()) -> str:
    pool = list(_COMMON) * 2 + topic * 2 + list(extra) * 3
    return " ".join(rng.choice(pool) for _ in range(n))


def _classification(rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    labels = sorted(_TOPICS)
    splits: dict[str, list[dict[str, Any]]] = {}
    for name, n in (("train", 120), ("validation", 60), ("test", 60)):
        rows = []
        for i in range(n):
            label = labels[i % 3]
            if name == "test":  # longer rows, another vocabulary, mostly code
                text = _sentence(rng, rng.randint(30, 60), _TOPICS[label], _SHIFTED)
                source = "code" if i % 5 else "web"
            else:
                text = _sentence(rng, rng.randint(14, 40), _TOPICS[label])
                source = rng.choice(["web", "books", "code"])
            rows.append({"id": f"{name}-{i}", "text": text, "label": label, "source": source})
        splits[name] = rows
    train, test = splits["train"], splits["test"]
    train[5] = {**train[3], "id": "train-5"}  # exact duplicates (DUP001)
    train[7] = {**train[3], "id": "train-7"}
    other = "gamma" if train[4]["label"] != "gamma" else "beta"
    train[9] = {**train[4], "id": "train-9", "label": other}  # same text, other label (LBL001)
    long_text = _sentence(rng, 80, _TOPICS[train[10]["label"]])
    train[10] = {**train[10], "text": long_text}
    words = long_text.split()
    words[-1] = "changed"  # one word of 80 changed: a near duplicate (DUP002)
    train[11] = {**train[10], "id": "train-11", "text": " ".join(words)}
    train[12] = {**train[12], "text": "   "}  # whitespace only (TXT001)
    train[13] = {**train[13], "text": _MOJIBAKE}  # mojibake (TXT002)
    train[14] = {**train[14], "text": "ok"}  # too short (TXT003, LEN002)
    long_row = _sentence(rng, 1200, _TOPICS[train[15]["label"]])
    train[15] = {**train[15], "text": long_row}  # a whole document (LEN002, LEN001)
    train[16] = {**train[16], "text": train[16]["text"] + " \ud800"}  # lone surrogate (INPUT001)
    train[17] = {**train[17], "label": None}  # null label (FMT001, LBL003)
    for i in (30, 31, 32, 33):  # mislabeled rows (LBL002)
        wrong = labels[(labels.index(train[i]["label"]) + 1) % 3]
        train[i] = {**train[i], "label": wrong}
    test[2] = {**train[20], "id": "test-2"}  # a train row leaked into test (LEAK001, LEAK002)
    for i in (40, 41, 42):  # a class train never shows (LBL003)
        test[i] = {**test[i], "label": "delta"}
    for i in (50, 51):  # text the train tokenizer cannot spell (TOK002)
        test[i] = {**test[i], "text": test[i]["text"] + " " + " ".join(_UNSEEN * 2)}
    return splits


def _chat(rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    splits: dict[str, list[dict[str, Any]]] = {}
    for name, n in (("train", 64), ("validation", 20), ("test", 20)):
        rows = []
        for i in range(n):
            topic = _TOPICS[sorted(_TOPICS)[i % 3]]
            messages = [
                {"role": "user", "content": _sentence(rng, rng.randint(4, 12), topic)},
                {"role": "assistant", "content": _sentence(rng, rng.randint(14, 40), topic)},
            ]
            source = rng.choice(["web", "books"])
            rows.append({"id": f"{name}-{i}", "messages": messages, "source": source})
        splits[name] = rows
    train = splits["train"]
    train[5] = {**train[3], "id": "train-5"}
    train[7] = {**train[3], "id": "train-7"}
    splits["test"][2] = {**train[20], "id": "test-2"}
    return splits


def sample_data(kind: str = "classification", seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """Rows by split (train/validation/test), seeded, with planted issues.

    ``kind="classification"``: ``id``, ``text``, ``label``, ``source``; train holds exact and
    near duplicates, a conflicting label, empty, short, very long and mojibake text, a lone
    surrogate, a null label and mislabeled rows; test drifts (longer rows, another vocabulary,
    another source mix, a class train lacks, letters outside a train tokenizer) and holds a
    leaked train row. ``kind="chat"``: ``id``, ``messages``, ``source`` with duplicates and a
    leak.
    """
    if kind not in ("classification", "chat"):
        raise ValueError(f"kind={kind!r}: use 'classification' or 'chat'")
    rng = random.Random(seed)
    return _chat(rng) if kind == "chat" else _classification(rng)


def sample_corpus(kind: str = "classification", seed: int = 0) -> Corpus:
    return load_corpus(sample_data(kind, seed))


def sample_reference(seed: int = 1) -> dict[str, list[dict[str, Any]]]:
    """An older version of :func:`sample_data` (another seed) to audit against (``reference=``)."""
    data = sample_data("classification", seed)
    return {"train": data["train"], "validation": data["validation"]}


def sample_contamination(data: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Benchmark items for a ``contamination_ref`` file: one quotes a train row of ``data``."""
    quoted = next(r["text"] for r in data["train"][20:] if len(str(r["text"]).split()) >= 20)
    return [{"text": quoted}, {"text": "an unrelated benchmark question about prime numbers"}]

"""Text the rule tests share: a long sentence and its one-word edits (near duplicates), and seeded
sentences from two small vocabularies (a shift between splits is a change of vocabulary)."""

from __future__ import annotations

import random

WORDS_A = [
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
]
WORDS_B = [
    "cats",
    "dogs",
    "birds",
    "fish",
    "horses",
    "sing",
    "dance",
    "swim",
    "under",
    "bright",
    "blue",
    "skies",
    "over",
    "green",
    "hills",
    "while",
    "rivers",
    "flow",
    "quietly",
    "toward",
    "distant",
    "seas",
]


def sentences(rng: random.Random, n: int, words: list[str], lo: int = 8, hi: int = 30) -> list[str]:
    return [" ".join(rng.choice(words) for _ in range(rng.randint(lo, hi))) for _ in range(n)]


BASE = (
    "the quick brown fox jumps over the lazy dog while the farmer watches from the old red barn "
    "and thinks about the harvest that will come in the autumn months after a long dry summer "
    "of work in the fields where the wheat grew tall and golden under a wide open sky full of "
    "birds that sang every morning before the sun rose above the hills behind the small village"
)


def edit_word(text: str, k: int, word: str = "changed") -> str:
    """``text`` with its ``k``-th word replaced: a near duplicate of it."""
    w = text.split()
    w[k] = word
    return " ".join(w)

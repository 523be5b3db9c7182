"""Seeded text the rule tests generate: sentences from two small vocabularies (a shift between
splits is a change of vocabulary)."""

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

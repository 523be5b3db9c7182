"""Fixtures shared across the suite: the bundled fixtures and their ground truth, and a small BPE
tokenizer trained on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import FIXTURES


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def ground_truth() -> dict:
    return json.loads((FIXTURES / "ground_truth.json").read_text())


def _corpus_lines() -> list[str]:
    lines = []
    for split in ("train", "validation", "test"):
        for line in (FIXTURES / "classification" / f"{split}.jsonl").read_text().splitlines():
            text = json.loads(line).get("text")
            if isinstance(text, str) and text.strip():
                lines.append(text)
    return lines


@pytest.fixture(scope="session")
def bpe():
    """A tiny BPE with an [UNK] token, trained in-process on the fixture text (no downloads)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["[UNK]"], min_frequency=2)
    tok.train_from_iterator(_corpus_lines(), trainer)
    return tok


@pytest.fixture(scope="session")
def bpe_path(bpe, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    bpe.save(str(path))
    return path

"""Fixtures shared across the suite: the compiled kernels (once, first), the bundled fixtures and
their ground truth, and a small BPE tokenizer trained on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import FIXTURES


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels() -> dict[str, int]:
    """Compile (or load from numba's cache) the near-duplicate kernels once, before any test.

    numba compiles them on first use: ~10 s on a clean cache (a fresh CI checkout), which would
    land on whichever test runs first and could time it out; later sessions load the machine code
    cached beside the package (~1 s). Both kinds of text buffer are compiled: writable (text the
    features normalized) and read-only (memory-mapped files, batches unpickled in worker
    processes, which then load them from the cache). Returns each kernel's signature count right
    after, so a test can check that no kernel was left out."""
    import numba
    import numpy as np
    import pyarrow as pa

    import dataaudit
    from dataaudit.sketches import kernels
    from dataaudit.sketches.minhash import (
        minhash_signatures,
        pair_jaccard,
        shingle_auto,
        shingle_sets,
        text_hashes,
    )

    texts = [
        "Ｆｕｌｌｗｉｄｔｈ ﬁve words of text",
        "five words of plain text",
        "机器学习需要大量训练数据",
    ]
    dataaudit.audit([{"text": t} for t in texts], select=["DUP001", "DUP002"])
    raw = [t.encode() for t in texts]
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in raw])]).astype(np.int64)
    buffers = [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(raw))]
    frozen = pa.Array.from_buffers(pa.large_string(), len(texts), buffers)  # bytes: read-only
    sh, _ = shingle_auto(frozen)
    from dataaudit.features.normalize import lower_table, tokenizable_rows
    from dataaudit.sketches.minhash import sketch

    for arr in (frozen, pa.array(texts, pa.large_string())):  # the fused pass, both buffers
        sketch(arr, table=lower_table(), normalize=tokenizable_rows)
        sketch(arr, num_perm=0)
    text_hashes(frozen)
    sets, pairs = shingle_sets(sh), np.array([0, 1])
    pair_jaccard(sets, pairs, pairs[::-1], signatures=minhash_signatures(sh), threshold=0.8)
    pair_jaccard(sets.sorted(), pairs, pairs)  # sorted sets: merged as they are
    from dataaudit.sketches.lsh import components

    components(3, pairs, pairs[::-1])
    from dataaudit.sketches import native

    # the JSON Lines reader's bound on nesting (inputs/jsonl.py), on its read-only blocks
    native.line_opens(np.frombuffer(b'{"a": [1]}\n', np.uint8), np.zeros(2, np.int64))

    loaded = {  # kernels called through their cached machine code, without numba's dispatcher
        k.name: sum(v is not None for v in k._loaded.values())
        for k in vars(native).values()
        if isinstance(k, native.Kernel) and k.module == kernels.__name__
    }
    return {
        name: len(obj.signatures) + loaded.get(name, 0)
        for name, obj in vars(kernels).items()
        if isinstance(obj, numba.core.registry.CPUDispatcher)
    }


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

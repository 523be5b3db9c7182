"""MinHash / LSH sketches: agreement with datasketch, bad input, no quadratic blowup."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.sketches.lsh import (
    choose_bands,
    cross_candidates,
    near_duplicate_clusters,
    s_curve,
)
from dataaudit.sketches.minhash import (
    SENTINEL,
    empty_rows,
    jaccard_estimate,
    minhash_signatures,
    pair_jaccard,
    shingle,
    shingle_auto,
    shingle_sets,
)
from dataaudit.sketches.ngram_index import NgramIndex

VOCAB = [f"w{i}" for i in range(3000)]


def _docs(n_pairs: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    docs, true = [], []
    for _ in range(n_pairs):
        words = list(rng.choice(VOCAB, int(rng.integers(20, 200))))
        edited = list(words)
        for _ in range(int(rng.integers(0, len(words) // 3))):
            edited[int(rng.integers(0, len(words)))] = str(rng.choice(VOCAB))
        docs += [" ".join(words), " ".join(edited)]
        a, b = _set(words), _set(edited)
        true.append(len(a & b) / len(a | b))
    return docs, np.array(true)


def _set(words: list[str], n: int = 5) -> set[str]:
    return {" ".join(words[i : i + n]) for i in range(max(len(words) - n + 1, 1))}


def _sig(docs, **kw):
    sh = shingle(pa.array(docs, pa.large_string()), **kw)
    return sh, minhash_signatures(sh)


def test_exact_jaccard_matches_python_sets():
    docs, true = _docs(50)
    sh, _ = _sig(docs)
    i = np.arange(0, 100, 2)
    got = pair_jaccard(shingle_sets(sh), i, i + 1)
    np.testing.assert_allclose(got, true, atol=1e-12)


def test_estimate_agrees_with_datasketch_oracle():
    datasketch = pytest.importorskip("datasketch")
    docs, true = _docs(150, seed=1)
    _, sig = _sig(docs)
    i = np.arange(0, 300, 2)
    ours = jaccard_estimate(sig[i], sig[i + 1])
    theirs = []
    for k in i:
        m1, m2 = datasketch.MinHash(num_perm=128), datasketch.MinHash(num_perm=128)
        m1.update_batch([s.encode() for s in _set(docs[k].split())])
        m2.update_batch([s.encode() for s in _set(docs[k + 1].split())])
        theirs.append(m1.jaccard(m2))
    theirs = np.array(theirs)
    # both estimate the true Jaccard with ~sqrt(J(1-J)/128) error; means agree closely
    assert np.abs(ours - true).mean() < 0.04
    assert np.abs(ours - true).mean() < np.abs(theirs - true).mean() + 0.01
    assert np.abs(ours - theirs).max() < 0.2
    assert abs((ours - true).mean()) < 0.01  # unbiased


def test_empty_and_one_word_rows():
    docs = ["", None, "   ", "one", "one", "two words"]
    sh, sig = _sig(docs)
    assert sig.dtype == np.uint32 and sig.shape == (6, 128)
    assert empty_rows(sig).tolist() == [True, True, False, False, False, False] or empty_rows(
        sig
    ).tolist()[:2] == [True, True]
    labels = near_duplicate_clusters(sig, 0.8)
    assert labels[0] == labels[1] == -1  # sentinel rows are never clustered
    assert (sig[0] == SENTINEL).all()
    assert labels[3] == labels[4] == 3  # identical one-word texts: one shingle each, a cluster
    assert labels[5] == -1


def test_cjk_uses_character_shingles():
    text = "机器学习模型需要大量高质量的训练数据才能获得良好的泛化能力和稳定的表现"
    edited = text[:20] + "优" + text[21:]
    other = "今天天气很好我们一起去公园散步然后去图书馆看书学习新的知识"
    arr = pa.array([text, edited, other, "plain english words here"], pa.large_string())
    sh, unit = shingle_auto(arr, 5)
    assert unit.tolist() == [2, 2, 2, 1]
    sig = minhash_signatures(sh)
    labels = near_duplicate_clusters(
        sig, 0.7, verify=lambda a, b: pair_jaccard(shingle_sets(sh), a, b)
    )
    assert labels[0] == labels[1] == 0 and labels[2] == -1
    # with words, a space-less text is one token: every edit makes it a different document
    wsig = minhash_signatures(shingle(arr, 5, "word"))
    assert jaccard_estimate(wsig[0], wsig[1]) == 0.0


def test_auto_unit_gives_cjk_rows_the_same_shingles_as_the_char_unit():
    cjk = ["机器学习 模型需要大量 ABC 高质量的训练数据", "今天天气很好，我们一起去公园散步", "短"]
    arr = pa.array(cjk + ["plain english words here and there"], pa.large_string())
    auto, unit = shingle_auto(arr, 5)
    chars = shingle(arr.slice(0, 3), 5, "char")
    words = shingle(arr.slice(3), 5, "word")
    assert unit.tolist() == [2, 2, 2, 1]
    assert auto.hashes.tolist() == chars.hashes.tolist() + words.hashes.tolist()
    assert auto.tokens.tolist() == chars.tokens.tolist() + words.tokens.tolist()


def test_token_text_splits_into_the_normalized_texts_tokens():
    import random

    from dataaudit.features.normalize import normalize_array, tokenizable_array

    alphabet = list("abcXYZ  \t\n\x0b\x1c\x1f.,") + ["É", "ß", "\u3000", "\uff21", "\u00a0"]
    rng = random.Random(3)
    rows = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    arr = pa.array(rows + [None], pa.large_string())
    for unit in ("word", "char"):
        fast = shingle(tokenizable_array(arr), 3, unit)
        ref = shingle(normalize_array(arr), 3, unit)
        assert fast.tokens.tolist() == ref.tokens.tolist()
        assert fast.hashes.tolist() == ref.hashes.tolist()


def test_fifty_thousand_identical_rows_cluster_without_quadratic_work():
    docs = ["the same boilerplate footer text repeated everywhere on the site"] * 50_000
    docs += ["something else entirely different from the footer text here ok"]
    _, sig = _sig(docs)
    calls = []

    def verify(a, b):
        calls.append(len(a))
        return np.ones(len(a), bool)

    labels = near_duplicate_clusters(sig, 0.8, verify=verify)
    assert (labels[:50_000] == 0).all() and labels[-1] == -1
    assert sum(calls) == 0  # identical signatures are collapsed before LSH


def test_clusters_are_deterministic_and_use_smallest_row():
    docs, true = _docs(100, seed=3)
    sh, sig = _sig(docs)
    sets = shingle_sets(sh)
    labels = near_duplicate_clusters(sig, 0.8, verify=lambda a, b: pair_jaccard(sets, a, b))
    perm_labels = near_duplicate_clusters(sig, 0.8, verify=lambda a, b: pair_jaccard(sets, a, b))
    assert (labels == perm_labels).all()
    for k in range(100):
        if true[k] >= 0.8:
            assert labels[2 * k] == labels[2 * k + 1] == 2 * k
    member = labels >= 0
    assert (labels[member] <= np.flatnonzero(member)).all()


def test_choose_bands_reaches_recall_at_threshold():
    for t in (0.5, 0.7, 0.8, 0.9):
        b, r = choose_bands(t, 128)
        assert b * r <= 128
        assert s_curve(t, b, r) >= 0.98
    assert choose_bands(0.8, 128) == (18, 7)
    with pytest.raises(ValueError):
        choose_bands(0.0, 128)


def test_cross_candidates_only_pair_the_two_sides():
    docs = ["a b c d e f g h"] * 3 + ["x y z w v u t s"] * 2
    _, sig = _sig(docs)
    is_a = np.array([True, True, False, True, False])
    a, b = cross_candidates(sig, is_a, 18, 7)
    assert set(zip(a.tolist(), b.tolist())) == {(0, 2), (1, 2), (3, 4)}


def test_ngram_index_exact_and_bloom_merge_identically():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2**63, 5000, dtype=np.uint64)
    y = rng.integers(0, 2**63, 5000, dtype=np.uint64)
    one = NgramIndex(budget=6000, bloom_bits=1 << 16)
    one.add(x)
    one.add(y)
    a, b = NgramIndex(6000, 1 << 16), NgramIndex(6000, 1 << 16)
    a.add(x)
    b.add(y)
    merged = a.merge(b)
    assert one.size is None and merged.size is None  # both became Bloom filters
    assert (one.bloom == merged.bloom).all()
    assert merged.contains(x).all()
    small = NgramIndex(budget=20_000)
    small.add(x)
    assert small.size == 5000 and small.contains(x).all() and not small.contains(y).any()


def test_band_keys_of_all_bands_at_once_are_each_bands_own():
    """band_matrix hashes every band of each row in one compiled call; each column is that
    band's signature_keys (the LSH keys DUP002, LEAK001 and LBL001 meet on), and those are the
    hash written out here in numpy."""
    from dataaudit.sketches.hashing import GOLDEN, mix64
    from dataaudit.sketches.lsh import band_matrix, signature_keys

    sig = np.random.default_rng(3).integers(0, 2**32, (50, 128), dtype=np.uint32)
    rows = np.array([3, 7, 9, 49])

    def by_hand(start: int, stop: int, at: np.ndarray) -> np.ndarray:
        key = np.full(len(at), (start + 1) * int(GOLDEN) & (2**64 - 1), np.uint64)
        with np.errstate(over="ignore"):
            for c in range(start, stop):
                key = (key ^ sig[at, c].astype(np.uint64)) * GOLDEN
                key ^= key >> np.uint64(29)
        return mix64(key)

    keys = band_matrix(sig, 18, 7, rows)
    assert keys.shape == (4, 18)
    for b in range(18):
        assert (keys[:, b] == signature_keys(sig, b * 7, (b + 1) * 7, rows)).all()
        assert (keys[:, b] == by_hand(b * 7, (b + 1) * 7, rows)).all()
    assert (signature_keys(sig) == by_hand(0, 128, np.arange(50))).all()
    assert band_matrix(sig, 18, 7, np.zeros(0, np.int64)).shape == (0, 18)


def test_the_probe_table_is_kept_in_a_file_and_rebuilt_when_damaged(tmp_path, monkeypatch):
    """Densification's probe table comes from numpy's generator once; later processes read
    it from a file (no numpy.random import) and a damaged file is rebuilt, the same table."""
    from dataaudit import _cache
    from dataaudit.sketches import minhash

    monkeypatch.setattr(_cache, "cache_file", lambda beside, name: tmp_path / name)
    minhash._probe_table.cache_clear()
    try:
        built = minhash._probe_table(64, 9)
        (path,) = tmp_path.glob("probes-64-9-*.npy")
        minhash._probe_table.cache_clear()

        def no_generator(*args, **kwargs):
            raise AssertionError("built again")

        with monkeypatch.context() as m:
            m.setattr(np.random, "default_rng", no_generator)
            assert np.array_equal(minhash._probe_table(64, 9), built)
        path.write_bytes(b"damaged")
        minhash._probe_table.cache_clear()
        assert np.array_equal(minhash._probe_table(64, 9), built)
        assert np.load(path).shape == built.shape == (minhash._PROBES, 64)
        rng = np.random.default_rng([9, 64, minhash._PROBE_SALT])
        assert np.array_equal(built, rng.integers(0, 64, size=built.shape, dtype=np.int64))
    finally:
        minhash._probe_table.cache_clear()

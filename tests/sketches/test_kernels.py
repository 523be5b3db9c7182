"""The compiled kernels against plain-Python statements of what they compute.

The hashes are part of what a saved report means (cluster ids, exact-duplicate groups), so they
are pinned here by a reference written for reading, not speed.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dataaudit.sketches import kernels
from dataaudit.sketches.hashing import mix64
from dataaudit.sketches.minhash import (
    EMPTY_HASH,
    NULL_HASH,
    SENTINEL,
    _no_space_table,
    _probe_table,
    cjk_rows,
    minhash_signatures,
    shingle,
    shingle_rows,
    text_hashes,
)
from tests._fresh import run_python

M64 = (1 << 64) - 1


def _mix(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def ref_token_hash(token: bytes) -> int:
    """8-byte little-endian words; all full words but the last folded; the rest mixed with
    the length in the top byte."""
    h, words = 0, [token[i : i + 8] for i in range(0, len(token), 8)]
    for w in words[:-1]:
        h = _mix(h ^ int.from_bytes(w, "little"))
    last = int.from_bytes(words[-1], "little")
    return _mix(h ^ last ^ ((len(token) << 56) & M64) ^ 0x5EED)


ASCII_WS = "\t\n\v\f\r \x1c\x1d\x1e\x1f"


def _lower_ascii(s: str) -> str:
    return "".join(c.lower() if "A" <= c <= "Z" else c for c in s)


def ref_tokens(text: str, char: bool) -> list[bytes]:
    """Separated by ASCII whitespace, ASCII capitals lower-cased (nothing else changes)."""
    text = _lower_ascii(text)
    if char:
        return [c.encode() for c in text if c not in ASCII_WS]
    return [w.encode() for w in re.split(f"[{re.escape(ASCII_WS)}]+", text) if w]


def ref_shingles(text: str, ngram: int, seed: int, char: bool, whole: bool = True) -> list[int]:
    toks = [ref_token_hash(t) for t in ref_tokens(text, char)]
    if not toks or (len(toks) < ngram and not whole):
        return []
    seed_mix = int(mix64(np.array([seed], np.uint64))[0])
    out = []
    for s in range(max(len(toks) - ngram + 1, 1)):
        acc = 0
        for k in range(ngram):
            t = toks[s + k] if s + k < len(toks) else 0
            acc = (acc * 0x9E3779B97F4A7C15 + t) & M64
        out.append(_mix(acc ^ seed_mix))
    return out


def _rows(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    pieces = ["a", "bc", "Longer", "EXACTLY8", "ninechars", "a-very-long-Token-of-many-bytes" * 3]
    pieces += ["é", "É", "日本語", "中文文本", "😀", "ก", "x"]
    seps = [" ", "  ", "\t", "\n\n", " \x1f", "\r\n"]
    rows = []
    for _ in range(n):
        words = [rng.choice(pieces) for _ in range(rng.randint(0, 12))]
        rows.append(" " * rng.randint(0, 2) + rng.choice(seps).join(words))
    return rows


def test_token_and_shingle_hashes_match_the_reference():
    rows = _rows(1, 300)
    arr = pa.array(rows + [None], pa.large_string())
    for char in (False, True):
        for ngram, short in ((1, "whole"), (3, "whole"), (5, "none")):
            sh = shingle(arr, ngram, "char" if char else "word", seed=7, short=short)
            got = sh.hashes.tolist()
            want = [
                h for r in rows for h in ref_shingles(r, ngram, 7, char, whole=short == "whole")
            ]
            assert got == want, (char, ngram, short)
            assert sh.per_row.sum() == len(got) and sh.per_row[-1] == 0


def test_per_row_units_tokenize_each_row_as_asked():
    rows = _rows(2, 200)
    char_rows = np.array([i % 3 == 0 for i in range(len(rows))])
    sh = shingle_rows(pa.array(rows, pa.large_string()), char_rows, 4, seed=3)
    want = [h for r, c in zip(rows, char_rows) for h in ref_shingles(r, 4, 3, bool(c))]
    assert sh.hashes.tolist() == want


def test_exact_duplicate_keys_hash_the_word_sequence():
    rows = ["a b", "A\t\tb", " a b\n", "b a", "ab", "", " \r\n ", None, "日本 語", "日本語"]
    keys = text_hashes(pa.array(rows, pa.large_string())).tolist()
    assert keys[0] == keys[1] == keys[2] and len({keys[0], keys[3], keys[4]}) == 3
    assert keys[5] == keys[6] == EMPTY_HASH and keys[7] == NULL_HASH
    assert keys[8] != keys[9]  # the words differ even where the characters do not
    # shingling computes the same keys on the way, for word and char rows alike
    sh = shingle_rows(pa.array(rows, pa.large_string()), np.array([i % 2 == 0 for i in range(10)]))
    assert sh.text_hashes.tolist() == keys


def test_minhash_bins_and_densification_match_the_reference():
    rng = np.random.default_rng(4)
    rows = [
        " ".join(f"w{x}" for x in rng.integers(0, 500, rng.integers(0, 60))) for _ in range(300)
    ]
    sh = shingle(pa.array(rows, pa.large_string()), 3)
    k, seed = 64, 9
    sig = minhash_signatures(sh, k, seed)
    table = _probe_table(k, seed)
    start = 0
    for r in range(len(rows)):
        raw = np.full(k, SENTINEL, np.uint32)
        for h in sh.hashes[start : start + sh.per_row[r]].tolist():
            b = ((h >> 32) * k) >> 32
            raw[b] = min(raw[b], min(h & 0xFFFFFFFF, 0xFFFFFFFE))
        start += sh.per_row[r]
        want = raw.copy()
        if (raw != SENTINEL).any():
            for j in np.flatnonzero(raw == SENTINEL):
                probes = [t for t in table[:, j] if raw[t] != SENTINEL]
                src = (
                    probes[0]
                    if probes
                    else next((j + d) % k for d in range(1, k) if raw[(j + d) % k] != SENTINEL)
                )
                want[j] = raw[src]
        assert sig[r].tolist() == want.tolist(), r


def test_no_space_script_rows_match_a_regex_count():
    texts = [
        "机器学习模型需要大量数据",
        "tokyo 東京 is big and busy today",
        "ภาษาไทยไม่มีช่องว่าง",
        "plain",
        "ひらがな と カタカナ",
        "mixed 中 text with few",
        "",
        None,
    ]
    arr = pa.array(texts, pa.large_string())
    no_space = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u4e00-\u9fff]")
    want = [
        t is not None and len(t) > 0 and len(no_space.findall(t)) * 10 >= len(t) * 3 for t in texts
    ]
    assert cjk_rows(arr).tolist() == want
    assert _no_space_table()[[ord("中"), ord("あ"), ord("ア"), ord("ก"), ord("a")]].tolist() == [
        True,
        True,
        True,
        True,
        False,
    ]
    # code points are counted, not bytes: 4-byte emoji and 3-byte CJK alike
    chars, hits = kernels.script_share(
        np.frombuffer("😀中".encode(), np.uint8), np.array([0, 7]), np.array([0]), _no_space_table()
    )
    assert chars.tolist() == [2] and hits.tolist() == [1]
    assert pc.utf8_length(arr).to_pylist()[0] == 12


def test_the_session_warm_up_compiles_every_kernel(compiled_kernels):
    """tests/conftest.py compiles the kernels before any test; a kernel it misses would be
    compiled (~10 s on a clean cache) inside whichever test calls it first."""
    inlined = {n for n, k in vars(kernels).items() if getattr(k, "targetoptions", {}).get("inline")}
    assert inlined and set(compiled_kernels) > inlined  # the inlined helpers have no entry point
    missed = [n for n, count in compiled_kernels.items() if n not in inlined and not count]
    assert not missed, f"add a call that reaches {missed} to compiled_kernels"


def _fresh_kernel_call(cache_dir: str) -> str:
    """count_tokens in a fresh process whose numba cache is ``cache_dir``; what it loaded."""
    import os

    code = (
        "import sys, numpy as np\n"
        "from dataaudit.sketches import kernels\n"
        "n = kernels.count_tokens(np.frombuffer(b'a b', np.uint8), np.array([0, 3]),\n"
        "                         np.zeros(1, np.bool_))\n"
        "assert list(n) == [2], n\n"
        "assert 'scipy.linalg' not in sys.modules, 'scipy.linalg imported'\n"
        "assert 'scipy.linalg.cython_blas' not in sys.modules, 'probe left blocked'\n"
        "import importlib.util\n"
        "if importlib.util.find_spec('scipy'):\n"
        "    import scipy.linalg.cython_blas  # the block is lifted: SciPy imports as usual\n"
        "print(sorted(m for m in ('cffi', 'numba.typed.typeddict') if m in sys.modules))\n"
    )
    env = os.environ | {"NUMBA_CACHE_DIR": cache_dir}
    return run_python(code, env=env)


@pytest.mark.slow
def test_a_kernel_compiles_then_loads_from_its_cache_without_the_registries(tmp_path):
    """A cache miss compiles through numba's compiler, which loads every registry: its
    array-math one probes SciPy's BLAS and so imported all of scipy.linalg (~0.15 s per process,
    per worker); kernels.py answers the probe "absent" while it loads and lifts the block after.
    A cache hit loads no registry at all (kernels._lean_cache_load): no cffi, no typed dict."""
    compiled = _fresh_kernel_call(str(tmp_path))  # an empty cache: compiles and saves
    assert compiled == "['cffi', 'numba.typed.typeddict']"  # the compiler's refresh loads them
    assert _fresh_kernel_call(str(tmp_path)) == "[]"


def _fresh_kernel_with_nrt(nrt_file: str, compile_allowed: bool) -> str:
    """count_tokens in a fresh process whose numba runtime module is cached in ``nrt_file``;
    with ``compile_allowed=False`` compiling that module fails the process."""
    code = (
        "import numpy as np\n"
        "from pathlib import Path\n"
        "from dataaudit.sketches import kernels\n"
        f"kernels._nrt_cache = lambda codegen: Path({nrt_file!r})\n"
        + (
            ""
            if compile_allowed
            else "def no(*a):\n    raise AssertionError('compiled the runtime module')\n"
            "kernels._COMPILE_NRT = no\n"
            "import numba.core.runtime.nrtdynmod as m\n"
            "m.create_nrt_module = no\n"
        )
        + "n = kernels.count_tokens(np.frombuffer(b'a b c', np.uint8), np.array([0, 5]),\n"
        "                         np.zeros(1, np.bool_))\n"
        "print(n.tolist())\n"
    )
    return run_python(code)


@pytest.mark.parametrize("damage", [None, b"not a pickle", b""])
def test_numbas_runtime_module_is_loaded_from_its_cache(tmp_path, damage):
    """numba compiles its runtime module (reference counting the kernels link to) at the first
    kernel load of every process, ~0.02 s; kernels.py keeps it on disk as numba keeps a kernel.
    A damaged file is compiled again and rewritten, never an error."""
    nrt = tmp_path / "nrt.pkl"
    if damage is not None:
        nrt.write_bytes(damage)
    assert _fresh_kernel_with_nrt(str(nrt), compile_allowed=True) == "[3]"
    assert nrt.stat().st_size > 1000  # written (or rewritten) by the compile
    assert _fresh_kernel_with_nrt(str(nrt), compile_allowed=False) == "[3]"


@pytest.mark.parametrize("where", ["None", "(_ for _ in ()).throw(OSError('no home'))"])
def test_numbas_runtime_module_without_a_cache_folder_is_compiled_as_numba_does(where):
    # no writable folder (None), or finding one fails: numba's own compile, nothing written
    code = (
        "import numpy as np\n"
        "from dataaudit.sketches import kernels\n"
        f"kernels._nrt_cache = lambda codegen: {where}\n"
        "n = kernels.count_tokens(np.frombuffer(b'a b c', np.uint8), np.array([0, 5]),\n"
        "                         np.zeros(1, np.bool_))\n"
        "print(n.tolist())\n"
    )
    assert run_python(code) == "[3]"


SPECIALS = ["Straße", "ΣΑΣ", "ﬁne", "Ｆｕｌｌ", "İstanbul", "\u00a0", "\u1680", "e\u0301", "K\u212a",
            "𐐀", "\U00020000", "，", "²", "™", "Ⅸ", "\u3000", "…", "ǅ", "ẞ", "\u0130", "ß"]  # fmt: skip


def _separate_steps(arr, unit, num_perm, ngram, seed):
    """What the features computed before the fused pass: tokenizable text, then shingles,
    signatures, sets and keys, each its own pass."""
    from dataaudit.features.normalize import tokenizable_array
    from dataaudit.sketches.minhash import shingle_auto, shingle_sets

    tt = tokenizable_array(arr)
    if unit == "auto":
        sh, units = shingle_auto(tt, ngram, seed)
    else:
        sh = shingle(tt, ngram, unit, seed)
        units = np.where(sh.tokens > 0, 1 if unit == "word" else 2, 0)
    sig = minhash_signatures(sh, num_perm, seed) if num_perm else np.zeros((len(arr), 0))
    return sig, shingle_sets(sh), sh.tokens, units, sh.text_hashes


def test_the_fused_sketch_equals_the_separate_steps():
    """sketch(): one compiled pass per row over raw text (non-ASCII characters mapped by the
    lower-casing table, rows it cannot map normalized in Python) or tokenizable text, with
    the same signatures, shingle sets, token counts, units and exact-duplicate keys."""
    from dataaudit.features.normalize import lower_table, tokenizable_array, tokenizable_rows
    from dataaudit.sketches.minhash import sketch

    rng = random.Random(3)
    pieces = ["a", "Longer", "EXACTLY8", "a-very-long-Token" * 3, "é", "É", "日本語", "中文文本"]
    pieces += ["😀", "ก", *SPECIALS]
    rows = [
        rng.choice(["", " ", "\t"]).join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        for _ in range(1500)
    ] + [None, "", " \t "]
    arr = pa.array(rows, pa.large_string())
    for unit in ("auto", "word", "char"):
        for num_perm, ngram in ((64, 5), (16, 1), (0, 3)):
            want = _separate_steps(arr, unit, num_perm, ngram, 7)
            for got in (
                sketch(
                    arr, num_perm, ngram, unit, 7, table=lower_table(), normalize=tokenizable_rows
                ),
                sketch(tokenizable_array(arr), num_perm, ngram, unit, 7),
            ):
                assert got.signatures.shape == (len(rows), num_perm)
                if num_perm:
                    assert (got.signatures == want[0]).all(), (unit, ngram)
                assert got.sets.offsets.tolist() == want[1].offsets.tolist()
                assert got.sets.values.tolist() == want[1].values.tolist(), (unit, ngram)
                assert got.tokens.tolist() == want[2].tolist()
                assert got.unit.tolist() == want[3].tolist()
                assert got.text_hashes.tolist() == want[4].tolist()


def _aligned_rows(rng: random.Random) -> list[str]:
    """Rows that put every case of an 8-bytes-at-a-time reader at every offset of a word:
    words of 1-17 bytes, each separator, the bytes below 0x20 that are not separators,
    capitals and the bytes beside them, a non-ASCII character after 0-16 ASCII bytes."""
    ascii_ = "abcxyzAMZ@[`{09-" + "\x00\x01\x08\x0e\x1b\x7f"
    seps = [" ", "\t", "\n", "\v", "\f", "\r", "\x1c", "\x1f", "  ", " \n\t "]
    rows = []
    for _ in range(400):
        words = []
        for _ in range(rng.randint(0, 9)):
            word = "".join(rng.choice(ascii_) for _ in range(rng.randint(1, 17)))
            if rng.random() < 0.3:  # a non-ASCII character somewhere in it
                at = rng.randint(0, len(word))
                word = word[:at] + rng.choice(["é", "É", "日", "😀", "ß", "Σ", "Ｆ"]) + word[at:]
            words.append(word)
        lead = " " * rng.randint(0, 8)
        rows.append(lead + "".join(w + rng.choice(seps) for w in words)[: rng.randint(0, 200)])
    return rows


def test_the_fused_pass_reads_ascii_8_bytes_at_a_time_as_a_byte_at_a_time():
    """Word rows' ASCII bytes are read 8 at a time (word arithmetic for the separators and
    capitals, the row's end and the buffer's last bytes masked; UTF-8 bytes whose low 7 bits
    are a separator's, as in 😀 F0 9F 98 80, are not one): the same tokens, shingles, sets,
    signatures and keys as the byte-at-a-time reference, at every alignment, with the buffer
    ending at each of the last rows (a row's last 8 bytes are then its buffer's)."""
    from dataaudit.features.normalize import lower_table, tokenizable_rows
    from dataaudit.sketches.minhash import sketch

    rows = _aligned_rows(random.Random(11))
    arr = pa.array(rows, pa.large_string())
    for size in (len(rows), *range(1, 40)):
        part = arr.slice(0, size)
        want = _separate_steps(part, "word", 32, 3, 5)
        texts = tokenizable_rows(part).to_pylist()  # what the table maps, as the reference reads
        shingles = [h >> 32 for t in texts for h in ref_shingles(t, 3, 5, False)]
        words = [len(ref_tokens(t, False)) for t in texts]
        for got in (
            sketch(part, 32, 3, "word", 5, table=lower_table(), normalize=tokenizable_rows),
            sketch(tokenizable_rows(part), 32, 3, "word", 5),
        ):
            assert got.sets.values.tolist() == shingles, size
            assert got.tokens.tolist() == words, size
            assert (got.signatures == want[0]).all(), size
            assert got.text_hashes.tolist() == want[4].tolist(), size
        # the separate steps read words the same way (count_tokens, hash_tokens, text_hashes)
        tt = tokenizable_rows(part)
        sh = shingle(tt, 3, "word", 5)
        assert (sh.hashes >> np.uint64(32)).tolist() == shingles, size
        assert sh.tokens.tolist() == words, size
        assert sh.text_hashes.tolist() == text_hashes(tt).tolist() == want[4].tolist(), size


def test_the_fused_sketch_splits_a_large_batch_across_threads_identically(monkeypatch):
    from dataaudit.features.normalize import lower_table, tokenizable_rows
    from dataaudit.sketches import minhash

    # rows only Python can normalize, in each half: sketched from their own buffer, never
    # copied back into the batch's text (a copy of all of it, per batch)
    rows = SPECIALS + _rows(9, 300) + SPECIALS + _rows(10, 300) + SPECIALS * 5
    arr = pa.array(rows, pa.large_string())
    seen, text_bytes = [], minhash.text_bytes
    monkeypatch.setattr(minhash, "text_bytes", lambda a: seen.append(len(a)) or text_bytes(a))
    monkeypatch.setattr(minhash, "THREAD_ROWS", 10**9)
    one = minhash.sketch(arr, table=lower_table(), normalize=tokenizable_rows)
    assert seen.count(len(arr)) == 1 and 0 < min(seen) < len(arr)  # and rows were redone
    want = _separate_steps(arr, "auto", 128, 5, 1)
    assert (one.signatures == want[0]).all() and one.sets.values.tolist() == want[1].values.tolist()
    monkeypatch.setattr(minhash.os, "cpu_count", lambda: 2)
    offsets, _ = minhash.text_bytes(arr)
    for rows, size in ((10, 10**12), (10**9, 1000)):  # a batch large in rows, or in bytes
        monkeypatch.setattr(minhash, "THREAD_ROWS", rows)
        monkeypatch.setattr(minhash, "THREAD_BYTES", size)
        (a, cut), (_, b) = minhash._ranges(len(arr), offsets)
        assert a == 0 < cut < b == len(arr)
        if rows > len(arr):  # halves of the text, not of the rows
            assert abs(offsets[cut] - offsets[-1] / 2) <= max(np.diff(offsets))
        two = minhash.sketch(arr, table=lower_table(), normalize=tokenizable_rows)
        assert (one.signatures == two.signatures).all()
        assert (one.sets.values == two.sets.values).all()
        assert (one.text_hashes == two.text_hashes).all()


def test_a_worker_process_sketches_on_one_thread():
    """The parallel engine runs one spawned worker per core: a worker splitting its batches
    across two threads of its own would only contend for the same cores (issue 13)."""
    import multiprocessing as mp
    import os
    from concurrent.futures import ProcessPoolExecutor

    from dataaudit.sketches import minhash

    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: the fused pass never splits a batch")
    big = minhash.THREAD_ROWS
    assert len(minhash._ranges(big)) == 2
    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        assert pool.submit(minhash._ranges, big).result() == [(0, big)]


def test_the_fused_sketch_does_not_import_pandas():
    """pyarrow imports pandas on its first to_numpy(), pa.array() or Python scalar (~0.3 s a
    process, and a worker process sketches nothing else): the pass builds what it needs from
    buffers, nulls and rows normalized in Python included."""

    code = (
        "import sys\n"
        "from dataaudit._arrow import strings\n"
        "from dataaudit.features.normalize import lower_table, tokenizable_rows\n"
        "from dataaudit.sketches.minhash import sketch\n"
        "arr = strings(['Straße und schön', None, 'plain words here', 'Ｆｕｌｌ，', 'e\\u0301'])\n"
        "s = sketch(arr, table=lower_table(), normalize=tokenizable_rows)\n"
        "assert s.tokens.tolist() == [3, 0, 3, 1, 1], s.tokens\n"
        "assert 'pandas' not in sys.modules, 'pandas imported'\n"
        "print('ok')\n"
    )
    assert run_python(code) == "ok"

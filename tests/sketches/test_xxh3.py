"""The compiled XXH3-64 equals the ``xxhash`` package's, and the split content hash is the same
whichever loop computed it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import xxhash

from dataaudit import identity
from dataaudit.sketches.xxh3 import xxh3_64_rows

#: every length class of XXH3-64: 0, 1-3, 4-8, 9-16, 17-128 (its four sub-branches), 129-240,
#: and the long path around its stripe (64) and block (1024) boundaries
_CLASS_EDGES = [0, 1, 2, 3, 4, 5, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128]
_CLASS_EDGES += [129, 143, 144, 239, 240, 241, 255, 256, 257, 1023, 1024, 1025, 1088, 2048, 2049]


def _rows(blobs: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(blobs) + 1, np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    return offsets, np.frombuffer(b"".join(blobs), np.uint8)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_xxhash_on_every_length_class(seed):
    rng = np.random.default_rng(seed)
    lengths = _CLASS_EDGES + list(range(250)) + rng.integers(0, 5001, 1500).tolist()
    blobs = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in lengths]
    got = xxh3_64_rows(*_rows(blobs))
    want = np.array([xxhash.xxh3_64_intdigest(b) for b in blobs], np.uint64)
    bad = [lengths[i] for i in np.flatnonzero(got != want)]
    assert not bad, f"lengths that differ: {sorted(set(bad))[:20]}"


def test_rows_at_any_offset_and_empty_input():
    """A row's bytes hash the same wherever they start in the buffer (unaligned reads)."""
    text = bytes(range(256)) * 12
    blobs = [text[k : k + n] for k in range(9) for n in (3, 7, 16, 100, 200, 1500)]
    assert (xxh3_64_rows(*_rows(blobs)) == [xxhash.xxh3_64_intdigest(b) for b in blobs]).all()
    assert xxh3_64_rows(np.zeros(1, np.int64), np.zeros(0, np.uint8)).shape == (0,)


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string(), pa.string_view()])
def test_content_hash_is_the_same_from_either_loop(monkeypatch, kind):
    rng = np.random.default_rng(5)
    texts = ["", None, "Straße ﬁne 日本語", "x" * 300, "a"] + [
        "w" * int(n) for n in rng.integers(0, 400, 200)
    ]
    arr = pa.array(texts, kind).slice(1)  # an offset into the buffers
    monkeypatch.setattr(identity, "_use_compiled", lambda n: True)
    compiled = identity._string_hashes(arr)
    monkeypatch.setattr(identity, "_use_compiled", lambda n: False)
    loop = identity._string_hashes(arr)
    assert (compiled == loop).all()
    assert compiled[0] == identity._NULL
    assert compiled[1] == xxhash.xxh3_64_intdigest("Straße ﬁne 日本語".encode())


def test_the_loop_hands_over_after_enough_rows(monkeypatch):
    """Without numba loaded, the per-row loop runs until COMPILED_AFTER_ROWS rows were hashed
    in this process (loading the compiled loop would cost more than it saves before that)."""
    monkeypatch.setattr(identity, "COMPILED_AFTER_ROWS", 10)
    monkeypatch.setattr(identity, "_loop_rows", 0)
    monkeypatch.delitem(__import__("sys").modules, "dataaudit.sketches.kernels", raising=False)
    monkeypatch.setattr("dataaudit.sketches.native._JIT", [])
    monkeypatch.setattr("dataaudit.sketches.native._ELF", [])
    assert [identity._use_compiled(4) for _ in range(4)] == [False, False, False, True]


def test_the_kernels_files_count_as_loaded(monkeypatch):
    """A rule that ran its kernels from their files (no numba) has the JIT up: the content
    hash uses the compiled xxh3 from then on, not the per-row loop."""
    from dataaudit.sketches import native

    monkeypatch.setattr(identity, "COMPILED_AFTER_ROWS", 10**9)
    monkeypatch.setattr(identity, "_loop_rows", 0)
    monkeypatch.delitem(__import__("sys").modules, "dataaudit.sketches.kernels", raising=False)
    monkeypatch.setattr(native, "_JIT", [])
    monkeypatch.setattr(native, "_ELF", [])
    assert not identity._use_compiled(4)
    monkeypatch.setattr(native, "_JIT", ["llvmlite.binding", "engine"])
    assert identity._use_compiled(4)
    monkeypatch.setattr(native, "_JIT", [])
    monkeypatch.setattr(native, "_ELF", [0x7F00])  # loaded by sketches/elf.py
    assert identity._use_compiled(4)


def test_a_large_batch_uses_the_compiled_loop_from_its_file_without_llvm(monkeypatch):
    """Once FROM_FILE_ROWS rows were hashed, the content hash takes the compiled loop when its
    file loads without LLVM or numba; the values are the loop's either way."""
    from dataaudit.sketches import native

    monkeypatch.setattr(identity, "COMPILED_AFTER_ROWS", 10**9)
    monkeypatch.setattr(identity, "_loop_rows", 0)
    monkeypatch.setattr(identity, "FROM_FILE_ROWS", 10)
    monkeypatch.delitem(__import__("sys").modules, "dataaudit.sketches.kernels", raising=False)
    monkeypatch.setattr(native, "_JIT", [])
    monkeypatch.setattr(native, "_ELF", [])
    texts = pa.array([f"row {i} " * (i % 7) for i in range(50)] + [None])
    from dataaudit._arrow import string_parts

    native.xxh3_64_rows(*string_parts(texts))  # numba writes this signature's file if missing
    # as a later process: nothing loaded, nothing refused yet
    monkeypatch.setattr(native._xxh3_rows, "_loaded", {})
    monkeypatch.setattr(native._xxh3_rows, "_no_elf", set())
    asked = []
    real = native.xxh3_64_rows_from_file

    def spy(offsets, data):
        out = real(offsets, data)
        asked.append((len(offsets) - 1, out is not None))
        return out

    monkeypatch.setattr(native, "xxh3_64_rows_from_file", spy)
    got = identity._string_hashes(texts)
    import platform

    # elf.py loads the kernel's file on x86-64, on the processor it was compiled on
    assert asked == [(51, platform.machine() == "x86_64" and native._host() is not None)]
    monkeypatch.setattr(identity, "_from_file", lambda native, offsets, data: None)
    assert (identity._string_hashes(texts) == got).all()  # the per-row loop's values
    assert identity._string_hashes(texts.slice(0, 5)).tolist() == got[:5].tolist()

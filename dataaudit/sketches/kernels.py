"""Compiled loops (numba) for the per-byte and per-shingle work of near-duplicate detection
(and the NFKC table replacement of :func:`dataaudit.features.normalize.nfkc_array`).

Why compiled: splitting, token hashing, shingle hashing and MinHash binning touch every byte and
every shingle; in numpy/polars they cost many passes over temporaries (a Rust string per token in
polars' split, an int64 row id per shingle for ``np.minimum.at``) and ran at ~14k docs/s per core.
These loops do each of them in one pass and are ~3x faster (``bench/bench_dedup.py``). numba
compiles them on first use and caches the machine code next to this file (or in numba's user
cache directory), so later processes only load it; the kernels a near-duplicate audit runs are
called through ``sketches/native.py``, which then loads that machine code without numba.

Input text is tokenizable (``dataaudit.features.normalize.tokenizable_array`` or the normalized
text): tokens are separated by ASCII whitespace and their ASCII capitals are lower-cased here,
which is all normalization does to ASCII text; a "char" row's tokens are its code points except
whitespace.

Token hash: the token's (lower-cased) bytes as little-endian 64-bit words; each full word but the last is folded
into the state with the splitmix64 finalizer, the last (partial) word is xored with the length
(top byte) and mixed. It depends only on the bytes (no
library version in it), and a one-character word hashes like the same character as a char token.

Shingle hash: ``ngram`` consecutive token hashes combined as ``acc = acc * Q + t`` (zero-padded
to ``ngram`` for a row with fewer tokens), xor the seed, splitmix64.

Two rules keep the byte loops fast (each measured at 2-3x; see the git log of this file):
text is read 8 bytes at a time (:func:`_load8`, one unaligned load; separators, capitals and
word ends found by word arithmetic while the bytes are ASCII, characters decoded from the loaded
word), and a loop run per byte, token or shingle calls no inlined helper that takes an array and
branches: numba wraps such a call in an atomic reference count increment and decrement, which
cost more than the work. Helpers there take scalars (or run once per row).

And the kernels a near-duplicate audit runs allocate nothing: their outputs and scratch arrays
come from the caller. A cached kernel that calls ``np.empty``, ``np.zeros`` or ``np.sort`` is
loaded with an environment rebuilt from ``numba.np.arrayobj``, which imports it and nine more
of numba's modules (~0.02 s of every such process, 5% of a small audit's). ``tests/
test_startup.py`` checks a DUP002 audit never imports it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .charsets import LOWER, SEPARATOR
from .hashing import GOLDEN, M1, M2


@contextmanager
def _absent(module: str) -> Iterator[None]:
    """``import module`` fails inside the block (as if not installed) unless it is imported
    already; the block is lifted after, so later imports of it work as usual."""
    block = module not in sys.modules
    if block:
        sys.modules[module] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if block and sys.modules.get(module, 0) is None:
            del sys.modules[module]


# numba's import checks SciPy's version (>= 1.0; pyproject requires >= 1.9) by importing it:
# ~13 ms of each process (and worker) that no kernel uses
with _absent("scipy"):
    import numba
    from numba.cpython.unsafe.numbers import trailing_zeros as _trailing_zeros
    from numba.extending import intrinsic


def _block_blas_probe() -> None:
    """Load numba's array-math registry without letting it import SciPy's BLAS.

    The registry (imported by numba's context refresh before any compile) probes
    ``scipy.linalg.cython_blas`` at import, which imports all of ``scipy.linalg``: ~0.15 s that
    no kernel here uses. The probe is answered "not installed" while the registry loads; its only
    effect is that ``np.convolve`` and ``np.correlate`` in numba code use their own loop instead of
    BLAS (every linear-algebra function still imports SciPy itself when compiled, and the block is
    lifted right after).
    """
    with _absent("scipy.linalg.cython_blas"):
        import numba.np.arraymath  # noqa: F401


def _lean_cache_load(dispatcher: Any) -> None:
    """Load this kernel's cached machine code without numba's full context refresh.

    numba's ``Cache.load_overload`` first refreshes the typing and target contexts: it imports
    and installs every registry numba has (cffi and pycparser, typed containers, random, linalg,
    datetime...), ~0.12-0.15 CPU-s of each process's start-up, and the cached code needs none
    of it: it is linked machine code that needs the runtime (NRT) initialized, which is all done
    here. A cache miss still compiles through numba's compiler, which refreshes both contexts
    itself (the BLAS probe blocked first). Kept only where the numba internals it uses exist
    (numba 0.5x-0.6x); elsewhere numba loads as it always does.
    """
    cache = getattr(dispatcher, "_cache", None)
    load = getattr(cache, "_load_overload", None)
    guard = getattr(cache, "_guard_against_spurious_io_errors", None)
    if load is None or guard is None or _RUNTIME is None:
        return

    def load_overload(sig: Any, target_context: Any) -> Any:
        _RUNTIME.initialize(target_context)
        cres = None
        with guard():  # numba's own: a spurious I/O error on Windows is a miss
            cres = load(sig, target_context)
        if cres is None:  # numba compiles next, after loading every registry
            _block_blas_probe()
        return cres

    cache.load_overload = load_overload


def _runtime() -> Any:
    try:
        from numba.core.runtime import rtsys
    except ImportError:  # a numba without it: its own cache loading (with the refresh) is kept
        return None
    return rtsys if hasattr(rtsys, "initialize") else None


_RUNTIME = _runtime()


def _nrt_compiler() -> Any:
    try:
        from numba.core.runtime import nrtdynmod
    except ImportError:
        return None
    return getattr(nrtdynmod, "compile_nrt_functions", None)


#: numba's own compile of its runtime module (what the cached one stands for)
_COMPILE_NRT = _nrt_compiler()


def _nrt_cache(codegen: Any) -> Any:
    """The file of the runtime module's compiled library: keyed by numba's, llvmlite's and
    Python's versions and the machine code numba targets (``codegen.magic_tuple()``)."""
    import hashlib
    from pathlib import Path

    import llvmlite

    from .._cache import cache_file

    key = repr((numba.__version__, llvmlite.__version__, sys.version, codegen.magic_tuple()))
    name = f"nrt-{hashlib.sha256(key.encode()).hexdigest()[:20]}.pkl"
    return cache_file(Path(__file__).resolve().parent, name)


def _cached_nrt_functions(ctx: Any) -> Any:
    """numba's runtime module (atomic reference counts, ``NRT_incref``/``NRT_decref``, the
    cached kernels link to it), loaded as numba loads a cached kernel (object code and bitcode:
    ``serialize_using_object_code``) instead of compiled in every process: numba compiles it at
    the first kernel load, ~0.02 of its ~0.025 s. Missing or unreadable, it is compiled as numba
    does and written for the next process."""
    import pickle

    codegen = ctx.codegen()
    try:
        path = _nrt_cache(codegen)
    except Exception:  # noqa: BLE001 - a numba without magic_tuple: compiled, not cached
        path = None
    if path is not None and path.is_file():
        try:
            with open(path, "rb") as f:
                state = pickle.load(f)
            return codegen.unserialize_library(state)
        except Exception:  # noqa: BLE001 - damaged or unreadable: compiled below
            pass
    from numba.core.runtime import nrtdynmod

    create = getattr(nrtdynmod, "create_nrt_module", None)
    if path is None or create is None or not hasattr(codegen, "unserialize_library"):
        return _COMPILE_NRT(ctx)  # numba's own way, uncached
    ir_mod, library = create(ctx)  # what numba's compile does, keeping the object code
    library.enable_object_caching()
    library.add_ir_module(ir_mod)
    library.finalize()
    from .._cache import write_quietly

    state = library.serialize_using_object_code()
    write_quietly(path, lambda f: pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL))
    return library


if _COMPILE_NRT is not None and _RUNTIME is not None:
    from numba.core.runtime import nrtdynmod as _nrtdynmod

    _nrtdynmod.compile_nrt_functions = _cached_nrt_functions


def kernel(**options: Any) -> Any:
    """``numba.njit(nogil=True)`` with the machine code cached on disk where numba can write
    (beside this file, else its user cache directory), loaded without numba's context refresh
    (:func:`_lean_cache_load`); compiled per process where it cannot be cached."""

    def wrap(fn: Any) -> Any:
        try:
            dispatcher = numba.njit(cache=True, nogil=True, **options)(fn)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            _block_blas_probe()
            return numba.njit(nogil=True, **options)(fn)
        _lean_cache_load(dispatcher)
        return dispatcher

    return wrap


U64 = np.uint64
TOKEN_SEED = U64(0x5EED)
ROW_SEED = U64(0x2545F4914F6CDD1D)
_NO_TABLE = np.full(1, -1, np.int64)  #: ``table`` of a kernel reading tokenizable text
#: the top bit of each byte of a 64-bit word
HIGH = U64(0x8080808080808080)
#: 8 bytes are read as one little-endian word only on a little-endian machine
WIDE = sys.byteorder == "little"


@intrinsic
def _load8_raw(typingctx, arr, i):
    """The 8 bytes of ``arr`` (uint8) from ``i`` as one unaligned native 64-bit load: what a
    loop of 8 byte loads and shifts computes, which LLVM does not fuse (0.19 vs 0.49 ns per byte
    for a word count)."""
    from llvmlite import ir

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        ptr = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)

    return numba.core.types.uint64(arr, numba.core.types.intp), codegen


@kernel(inline="always")
def _load8(buf, i):
    """Bytes ``i:i+8`` of ``buf`` as a little-endian 64-bit word (``i + 8 <= len(buf)``)."""
    if WIDE:
        return _load8_raw(buf, i)
    x = U64(0)
    for q in range(8):
        x |= U64(buf[i + q]) << U64(8 * q)
    return x


@kernel(inline="always")
def _tail8(buf, i):
    """The bytes of ``buf`` from ``i`` (fewer than 8 left) as a little-endian word, zero-padded:
    :func:`_load8` at the buffer's end."""
    x = U64(0)
    for q in range(len(buf) - i):
        x |= U64(buf[i + q]) << U64(8 * q)
    return x


@kernel(inline="always")
def _separators(x):
    """The top bit of each byte of ``x`` (8 ASCII bytes) that is in :data:`SEPARATOR`
    (9-13 and 28-32): each byte compared by an add that sets its top bit, no carry between
    bytes below 0x80."""
    le32 = ~(x + U64(0x5F5F5F5F5F5F5F5F))
    ge28 = x + U64(0x6464646464646464)
    ge9 = x + U64(0x7777777777777777)
    ge14 = x + U64(0x7272727272727272)
    return le32 & (ge28 | (ge9 & ~ge14)) & HIGH


@kernel(inline="always")
def _lower8(x):
    """:data:`LOWER` of each byte of ``x`` (8 ASCII bytes): +0x20 where 'A' <= b <= 'Z'."""
    upper = ((x + U64(0x3F3F3F3F3F3F3F3F)) ^ (x + U64(0x2525252525252525))) & HIGH
    return x | (upper >> U64(2))


@kernel(inline="always")
def _count_high(m):
    """How many bytes of ``m`` have their top bit set (``m`` has no other bit)."""
    return np.int64(((m >> U64(7)) * U64(0x0101010101010101)) >> U64(56))


@kernel(inline="always")
def _low_byte(m):
    """Index of the lowest byte of ``m`` with its top bit set (``m != 0``, no other bit)."""
    return np.int64(_trailing_zeros(m)) >> 3


@kernel(inline="always")
def _valid(rem):
    """A mask of the first ``rem`` bytes of a word (all 8 when ``rem >= 8``; ``rem >= 1``)."""
    return ~U64(0) if rem >= 8 else (U64(1) << U64(8 * rem)) - U64(1)


@kernel(inline="always")
def _mix(x):
    """:func:`dataaudit.sketches.hashing.mix64` of one value (numba freezes the constants)."""
    x ^= x >> U64(30)
    x *= M1
    x ^= x >> U64(27)
    x *= M2
    x ^= x >> U64(31)
    return x


@kernel()
def count_tokens(buf, offsets, char_rows):
    """Tokens per row (branch-free byte scan; word rows 8 bytes at a time)."""
    n = len(offsets) - 1
    counts = np.zeros(n, np.int64)
    for r in range(n):
        lo, hi = offsets[r], offsets[r + 1]
        c = 0
        if char_rows[r]:
            for i in range(lo, hi):
                b = buf[i]
                c += (not SEPARATOR[b]) & ((b & 0xC0) != 0x80)
        else:
            prev = True
            i = lo
            while i + 8 <= hi:  # 8 bytes at a time (their top bits kept out of the arithmetic)
                x = _load8(buf, i)
                sep = _separators(x & ~HIGH) & ~x
                word = ~sep & HIGH
                c += _count_high(word & ((sep << U64(8)) | (U64(0x80) if prev else U64(0))))
                prev = (sep >> U64(63)) != U64(0)
                i += 8
            for q in range(i, hi):
                space = SEPARATOR[buf[q]]
                c += (not space) & prev
                prev = space
        counts[r] = c
    return counts


@kernel(inline="always")
def _row_key(h, words, empty):
    """A row's exact-duplicate key from its folded word hashes (``ROW_SEED``, then
    ``h = mix(h ^ token)`` per word) and its word count."""
    return _mix(h ^ U64(words)) if words else empty


@kernel()
def hash_tokens(buf, offsets, char_rows, counts, row_hashes, empty):
    """64-bit hash of every token, row by row (``counts`` from :func:`count_tokens`). For each
    word row it also writes ``row_hashes[r]``, the hash of its word sequence (see
    :func:`hash_word_rows`), from the same token hashes; char rows are left to the caller."""
    out = np.empty(counts.sum(), U64)
    nbuf = len(buf)
    j = 0
    for r in range(len(offsets) - 1):
        i, hi = offsets[r], offsets[r + 1]
        if not char_rows[r]:
            end = word_tokens(buf, i, hi, False, _NO_TABLE, out, j)
            h = ROW_SEED
            for q in range(j, end):
                h = _mix(h ^ out[q])
            row_hashes[r] = _row_key(h, counts[r], empty)
            j = end
            continue
        while i < hi:  # a token per character: its lead byte and continuation bytes
            x = _load8(buf, i) if i + 8 <= nbuf else _tail8(buf, i)
            b = x & U64(0xFF)
            if SEPARATOR[b]:
                i += 1
                continue
            packed, n = _raw_char(x, hi - i)
            out[j] = _word_hash(U64(0), (packed & ~U64(0xFF)) | U64(LOWER[b]), n)
            j += 1
            i += n
    return out


@kernel()
def hash_word_rows(buf, offsets, rows, empty, out):
    """For each listed row, a 64-bit hash of its word sequence into ``out[row]`` (``empty`` for
    a row without words): equal for two rows exactly when their normalized texts are equal (up
    to hash collisions)."""
    most = 0
    for r in rows:
        most = max(most, offsets[r + 1] - offsets[r])
    tokens = np.empty(most // 2 + 1, U64)  # a row's word tokens (one takes 2 bytes or more)
    for r in rows:
        c = word_tokens(buf, offsets[r], offsets[r + 1], False, _NO_TABLE, tokens, 0)
        h = ROW_SEED
        for q in range(c):
            h = _mix(h ^ tokens[q])
        out[r] = _row_key(h, c, empty)
    return out


@kernel()
def hash_shingles(tokens, counts, ngram, seed_mix, whole_short):
    """(shingle hashes row by row, shingles per row). A row with fewer than ``ngram`` tokens
    gets one shingle of all of them if ``whole_short``, else none."""
    n = len(counts)
    per_row = np.zeros(n, np.int64)
    for r in range(n):
        c = counts[r]
        if c >= ngram:
            per_row[r] = c - ngram + 1
        elif c > 0 and whole_short:
            per_row[r] = 1
    out = np.empty(per_row.sum(), U64)
    gn = U64(1)  # GOLDEN**ngram: the weight the oldest token leaves with (a rolling hash)
    for _ in range(ngram):
        gn *= GOLDEN
    first = 0
    j = 0
    for r in range(n):
        c = counts[r]
        if per_row[r]:
            acc = U64(0)
            for k in range(ngram):
                acc = acc * GOLDEN + (tokens[first + k] if k < c else U64(0))
            out[j] = _mix(acc ^ seed_mix)
            j += 1
            for s in range(1, per_row[r]):  # the next shingle: one token in, one out
                acc = acc * GOLDEN + tokens[first + s + ngram - 1] - tokens[first + s - 1] * gn
                out[j] = _mix(acc ^ seed_mix)
                j += 1
        first += c
    return out, per_row


@kernel()
def minhash_bins(hashes, per_row, num_perm, sentinel):
    """One-permutation MinHash before densification: the top 32 bits of a shingle hash pick its
    bin, the low 32 bits are its value, a bin keeps its minimum; empty bins stay ``sentinel``."""
    n = len(per_row)
    sig = np.full((n, num_perm), sentinel, np.uint32)
    k = U64(num_perm)
    top = U64(0xFFFFFFFE)
    j = 0
    for r in range(n):
        for _ in range(per_row[r]):
            h = hashes[j]
            j += 1
            b = ((h >> U64(32)) * k) >> U64(32)
            v = np.uint32(min(h & U64(0xFFFFFFFF), top))
            if v < sig[r, b]:
                sig[r, b] = v
    return sig


@kernel()
def densify(sig, table, sentinel):
    """Optimal densification in place: an empty bin ``j`` of a non-empty row takes the value of
    the first originally filled bin among ``table[0, j], table[1, j], ...``, else of the next
    originally filled bin to its right (cyclically)."""
    n, k = sig.shape
    orig = np.empty(k, np.uint32)
    for r in range(n):
        _densify_row(sig[r], orig, table, sentinel)
    return sig


@kernel()
def script_share(buf, offsets, rows, in_script):
    """(code points, code points with ``in_script[cp]``) of each listed row (valid UTF-8).
    8 ASCII bytes at a time where no ASCII character is in the script; characters decoded from
    the 8 bytes loaded at them (no call taking ``buf``: see :func:`word_tokens`)."""
    total = np.zeros(len(rows), np.int64)
    hits = np.zeros(len(rows), np.int64)
    size = len(in_script)
    ascii_in = False
    for q in range(min(size, 128)):
        ascii_in |= in_script[q]
    nbuf = len(buf)
    for x in range(len(rows)):
        r = rows[x]
        i, hi = offsets[r], offsets[r + 1]
        c = 0
        h = 0
        while i < hi:
            b8 = _load8(buf, i) if i + 8 <= nbuf else _tail8(buf, i)
            if not ascii_in and i + 8 <= hi and (b8 & HIGH) == U64(0):
                c += 8
                i += 8
                continue
            cp, step = _decode8(b8, hi - i)
            c += 1
            if cp < size and in_script[cp]:
                h += 1
            i += step
        total[x] = c
        hits[x] = h
    return total, hits


@kernel()
def replace_chars(buf, offsets, index, rep_offsets, rep_bytes, flagged):
    """Each character ``c`` with ``index[c] >= 0`` replaced by its entry of ``rep_bytes``; also,
    per row, whether it holds a ``flagged`` character that was not replaced.
    Returns (offsets, bytes, flagged rows). 8 ASCII bytes at a time where no ASCII character is
    replaced or flagged; characters decoded from the 8 bytes loaded at them."""
    n = len(offsets) - 1
    out_offsets = np.zeros(n + 1, np.int64)
    left = np.zeros(n, np.bool_)
    n_index, n_flag = len(index), len(flagged)
    plain = True  # ASCII stays as it is
    for q in range(min(n_index, 128)):
        plain &= index[q] < 0
    for q in range(min(n_flag, 128)):
        plain &= not flagged[q]
    nbuf = len(buf)
    for r in range(n):
        i, hi = offsets[r], offsets[r + 1]
        size = 0
        while i < hi:
            x = _load8(buf, i) if i + 8 <= nbuf else _tail8(buf, i)
            if plain and i + 8 <= hi and (x & HIGH) == U64(0):
                size += 8
                i += 8
                continue
            cp, step = _decode8(x, hi - i)
            k = index[cp] if cp < n_index else -1
            if k >= 0:
                size += rep_offsets[k + 1] - rep_offsets[k]
            else:
                size += step
                if cp < n_flag and flagged[cp]:
                    left[r] = True
            i += step
        out_offsets[r + 1] = out_offsets[r] + size
    out = np.empty(out_offsets[n], np.uint8)
    for r in range(n):
        i, hi, o = offsets[r], offsets[r + 1], out_offsets[r]
        while i < hi:
            x = _load8(buf, i) if i + 8 <= nbuf else _tail8(buf, i)
            if plain and i + 8 <= hi and (x & HIGH) == U64(0):
                for q in range(8):
                    out[o + q] = np.uint8((x >> U64(8 * q)) & U64(0xFF))
                o += 8
                i += 8
                continue
            cp, step = _decode8(x, hi - i)
            k = index[cp] if cp < n_index else -1
            if k >= 0:
                for q in range(rep_offsets[k], rep_offsets[k + 1]):
                    out[o] = rep_bytes[q]
                    o += 1
            else:
                for q in range(step):
                    out[o] = buf[i + q]
                    o += 1
            i += step
    return out_offsets, out, left


@kernel()
def sort_set_rows(offsets, values, rows, new, out, tmp, count):
    """The listed rows' values, each sorted and distinct, as a CSR into ``new`` (rows + 1,
    zeros) and ``out`` (the rows' total size); returns how many of ``out`` are used. ``tmp``
    (the longest row) and ``count`` (256) are scratch: each row is sorted in place by an 8-bit
    LSD radix sort (insertion sort for short rows), not ``np.sort``, so that no kernel of a
    near-duplicate audit allocates (see the module docstring)."""
    o = 0
    for x in range(len(rows)):
        lo, hi = offsets[rows[x]], offsets[rows[x] + 1]
        m = hi - lo
        for k in range(m):
            out[o + k] = values[lo + k]
        if m <= 48:
            for k in range(1, m):
                v = out[o + k]
                j = k - 1
                while j >= 0 and out[o + j] > v:
                    out[o + j + 1] = out[o + j]
                    j -= 1
                out[o + j + 1] = v
        else:
            for shift in range(0, 32, 8):
                sh = U64(shift)
                for d in range(256):
                    count[d] = 0
                into_tmp = shift % 16 == 0  # passes alternate out -> tmp -> out
                for k in range(m):
                    v = out[o + k] if into_tmp else tmp[k]
                    count[(U64(v) >> sh) & U64(255)] += 1
                total = 0
                for d in range(256):
                    c = count[d]
                    count[d] = total
                    total += c
                for k in range(m):
                    v = out[o + k] if into_tmp else tmp[k]
                    d = (U64(v) >> sh) & U64(255)
                    if into_tmp:
                        tmp[count[d]] = v
                    else:
                        out[o + count[d]] = v
                    count[d] += 1
        if m > 0:
            w = o
            for k in range(o + 1, o + m):
                if out[k] != out[w]:
                    w += 1
                    out[w] = out[k]
            o = w + 1
        new[x + 1] = o
    return o


@kernel()
def jaccard_pairs(offsets, values, a, b, sig, threshold, z, sentinel, out):
    """Exact Jaccard of the sorted sets of rows ``a[p]`` and ``b[p]`` into ``out[p]`` (a merge
    intersection, no temporaries). With signatures (``sig.shape[1] > 0``), a pair whose MinHash
    estimate ``e`` is clearly below ``threshold`` is not merged: ``out[p] = e`` when
    ``e < threshold - z * sqrt(threshold * (1 - threshold) / m)``, ``m`` the signature length or
    the smaller set's size if smaller (a small set fills fewer independent bins). Returns the
    number of pairs merged."""
    k = sig.shape[1]
    margin_base = z * np.sqrt(threshold * (1.0 - threshold))
    merged = 0
    for p in range(len(a)):
        i, j = a[p], b[p]
        lo_i, hi_i = offsets[i], offsets[i + 1]
        lo_j, hi_j = offsets[j], offsets[j + 1]
        ni, nj = hi_i - lo_i, hi_j - lo_j
        if k > 0 and ni > 0 and nj > 0:
            agree = 0
            for c in range(k):
                v = sig[i, c]
                agree += (v == sig[j, c]) & (v != sentinel)
            est = agree / k
            m = min(k, min(ni, nj))
            if est < threshold - margin_base / np.sqrt(m):
                out[p] = est
                continue
        merged += 1
        inter = 0
        x, y = lo_i, lo_j
        while x < hi_i and y < hi_j:
            vx, vy = values[x], values[y]
            if vx == vy:
                inter += 1
                x += 1
                y += 1
            elif vx < vy:
                x += 1
            else:
                y += 1
        union = ni + nj - inter
        out[p] = inter / union if union > 0 else 0.0
    return merged


@kernel()
def band_keys(sig, idx, start, width, out):
    """:func:`dataaudit.sketches.lsh.signature_keys` of the rows ``idx`` into ``out`` (rows,
    bands): band ``b`` hashes columns ``start + b * width`` to ``start + (b + 1) * width`` (one
    pass over each row, no temporaries): ``key = (key ^ v) * GOLDEN; key ^= key >> 29`` per
    value from ``(first column + 1) * GOLDEN``, then the splitmix64 finalizer."""
    for x in range(len(idx)):
        r = idx[x]
        for b in range(out.shape[1]):
            lo = start + b * width
            key = U64(lo + 1) * GOLDEN
            for c in range(lo, lo + width):
                key = (key ^ U64(sig[r, c])) * GOLDEN
                key ^= key >> U64(29)
            out[x, b] = _mix(key)
    return out


@kernel(inline="always")
def _has_byte(x, c):
    """Whether a byte of ``x`` is ``c`` (the classic zero-byte test on ``x ^ c``: exact for
    "any", though not for which)."""
    v = x ^ (U64(c) * U64(0x0101010101010101))
    return ((v - U64(0x0101010101010101)) & ~v & HIGH) != U64(0)


@kernel()
def line_opens(buf, out):
    """``out[0]``: the most ``[`` and ``{`` on one line of ``buf`` (a bound on its nesting);
    ``out[1]``: its newlines. Words of 8 bytes without either are stepped over whole."""
    n = len(buf)
    cur = 0
    most = 0
    lines = 0
    i = 0
    while i < n:
        if i + 8 <= n:
            x = _load8(buf, i)
            if not (_has_byte(x, 0x0A) or _has_byte(x, 0x5B) or _has_byte(x, 0x7B)):
                i += 8
                continue
            stop = i + 8
        else:
            stop = n
        while i < stop:
            b = buf[i]
            if b == 0x0A:
                lines += 1
                most = max(most, cur)
                cur = 0
            elif b == 0x5B or b == 0x7B:
                cur += 1
            i += 1
    out[0] = max(most, cur)
    out[1] = lines
    return out


@kernel()
def mark_shared(keys, shift, slots, shared):
    """``shared[i] = True`` for every key that occurs more than once: each key goes into an
    open-addressing table ``slots`` (int32 positions, -1 empty; ``2**(64 - shift)`` of them,
    probed linearly from the key's top bits, as the keys are hashes whose low bits may all be
    alike: a partition is ``key % parts``); a key found there marks itself and the first."""
    mask = len(slots) - 1
    for q in range(len(slots)):
        slots[q] = -1
    for i in range(len(keys)):
        k = keys[i]
        h = np.int64(k >> U64(shift))
        while True:
            j = slots[h]
            if j < 0:
                slots[h] = i
                break
            if keys[j] == k:
                shared[i] = True
                shared[j] = True
                break
            h = (h + 1) & mask
    return shared


@kernel(inline="always")
def _root(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@kernel()
def component_labels(n, a, b, parent, size, out):
    """Connected components of the edges ``(a[k], b[k])`` by union-find, always linking the
    larger root under the smaller, so a component's root is its smallest row: that row per row,
    or -1 for a row alone, into ``out`` (-1s). ``parent`` (0..n-1) and ``size`` (zeros) are the
    caller's scratch (no kernel of a near-duplicate audit allocates: the module docstring)."""
    for k in range(len(a)):
        x = _root(parent, a[k])
        y = _root(parent, b[k])
        if x < y:
            parent[y] = x
        elif y < x:
            parent[x] = y
    for i in range(n):
        parent[i] = _root(parent, i)
        size[parent[i]] += 1
    for i in range(n):
        if size[parent[i]] > 1:
            out[i] = parent[i]
    return out


# -- the fused pass: raw text -> tokens -> shingles -> MinHash + shingle sets, one row at a time --
# (the passes above, with no per-token or per-shingle arrays between them; the same hashes)


@kernel()
def scan_rows(buf, offsets, lo, hi, mapped, table, in_script, words, chars, cps, hits, status):
    """For rows ``lo:hi``: word tokens, character tokens (non-separator code points), code
    points, code points with ``in_script``, and the row's status: 0 ASCII, 1 not ASCII, 2 (if
    ``mapped``) a character without a mapping in ``table`` (``< 0``: the caller normalizes
    such rows itself). With ``mapped``, each character counts as the characters it maps to
    (UTF-8 bytes packed in ``table``), as in the normalized text."""
    size = len(in_script)
    tsize = len(table)
    nbuf = len(buf)
    for r in range(lo, hi):
        i, end = offsets[r], offsets[r + 1]
        w = 0
        c = 0
        n = 0
        s = 0
        st = 0
        prev = True
        while i < end:
            if i + 8 <= end:  # 8 ASCII bytes at a time: word starts, non-separators
                x = _load8(buf, i)
                if (x & HIGH) == U64(0):
                    sep = _separators(x)
                    word = ~sep & HIGH
                    w += _count_high(word & ((sep << U64(8)) | (U64(0x80) if prev else U64(0))))
                    c += _count_high(word)
                    n += 8
                    prev = (sep >> U64(63)) != U64(0)
                    i += 8
                    continue
            b = buf[i]
            if b < 0x80:
                space = SEPARATOR[b]
                w += (not space) & prev
                c += not space
                prev = space
                n += 1
                i += 1
                continue
            # the character's bytes (no call taking ``buf`` and branching: see word_tokens)
            x = _load8(buf, i) if i + 8 <= nbuf else _tail8(buf, i)
            cp, step = _decode8(x, end - i)
            w += prev
            prev = False
            c += 1
            n += 1
            if not mapped:
                st = max(st, 1)
                if cp < size and in_script[cp]:
                    s += 1
            else:
                v = table[cp] if cp < tsize else -1
                if v < 0:
                    st = 2
                else:
                    st = max(st, 1)
                    packed = U64(v)
                    nb = v >> 56
                    pos = 0
                    first = True
                    while pos < nb:  # the code points it maps to
                        lead = np.int64((packed >> U64(8 * pos)) & U64(0xFF))
                        width = _width(lead)
                        m, _ = _decode_packed(packed, pos, width)
                        if m < size and in_script[m]:
                            s += 1
                        if not first:
                            c += 1
                            n += 1
                        first = False
                        pos += width
            i += step
        words[r] = w
        chars[r] = c
        cps[r] = n
        hits[r] = s
        status[r] = st


@kernel(inline="always")
def _width(lead):
    """Bytes of the UTF-8 character whose first byte is ``lead``."""
    if lead < 0xC0:
        return 1
    if lead < 0xE0:
        return 2
    if lead < 0xF0:
        return 3
    return 4


@kernel(inline="always")
def _decode_packed(packed, pos, width):
    """(code point, its bytes packed) of the ``width``-byte character at byte ``pos``."""
    bytes_ = (packed >> U64(8 * pos)) & ((U64(1) << U64(8 * width)) - U64(1))
    b0 = np.int64(bytes_ & U64(0xFF))
    if width == 1:
        return b0, bytes_
    cp = b0 & (0x3F >> (width - 1))
    for q in range(1, width):
        cp = (cp << 6) | (np.int64((bytes_ >> U64(8 * q)) & U64(0xFF)) & 0x3F)
    return cp, bytes_


@kernel(inline="always")
def _feed(h, w, shift, b):
    """One byte into a token hash's state (h: folded words, w: the word being filled)."""
    if shift == U64(64):
        h = _mix(h ^ w)
        w = U64(0)
        shift = U64(0)
    w |= U64(b) << shift
    return h, w, shift + U64(8)


@kernel(inline="always")
def _decode8(x, rem):
    """(code point, byte length) of the UTF-8 character starting ``x`` (8 bytes from its
    first; ``rem``: bytes left in the row, the only ones read; valid UTF-8)."""
    b = np.int64(x & U64(0xFF))
    if b < 0x80:
        return b, 1
    if b < 0xE0:
        cp, step = b & 0x1F, 2
    elif b < 0xF0:
        cp, step = b & 0x0F, 3
    else:
        cp, step = b & 0x07, 4
    for q in range(1, step):
        if q < rem:
            cp = (cp << 6) | (np.int64((x >> U64(8 * q)) & U64(0xFF)) & 0x3F)
    return cp, step


@kernel(inline="always")
def _raw_char(x, rem):
    """(bytes, their count) of the character starting ``x`` as it is: the lead byte and the
    continuation bytes after it (``rem``: bytes left in the row)."""
    n = 1
    while n < 8 and n < rem and ((x >> U64(8 * n)) & U64(0xC0)) == U64(0x80):
        n += 1
    return x & _valid(n), n


@kernel(inline="always")
def _emit(h, r, k, sig, values, o, top):
    """A shingle hash into its row's MinHash bin (``k`` bins; none if ``k == 0``) and into the
    shingle set (its top 32 bits)."""
    values[o] = np.uint32(h >> U64(32))
    if k > 0:
        b = ((h >> U64(32)) * U64(k)) >> U64(32)
        v = np.uint32(min(h & U64(0xFFFFFFFF), top))
        sig[r, b] = min(v, sig[r, b])  # a store each time, no branch to mispredict


@kernel(inline="always")
def _word_hash(wh, ww, wn):
    """A token's hash from its state (:func:`_feed`) and byte count."""
    return _mix(wh ^ ww ^ (U64(wn) << U64(56)) ^ TOKEN_SEED)


@kernel(inline="always")
def word_tokens(buf, i, end, raw, table, out, j):
    """The hashes of the word tokens of the row ``buf[i:end]`` into ``out`` from ``j``; returns
    the new ``j``. ``raw``: non-ASCII characters are mapped by ``table`` (as in
    :func:`sketch_rows`), else read as they are (tokenizable text).

    ASCII bytes are read 8 at a time (:func:`_separators`, :func:`_lower8`, the word's end by
    trailing zeros), others a character at a time. Called once per row, not per word: numba
    wraps an inlined call that takes an array and branches in an atomic reference count
    increment and decrement, which per word or per character cost more than the hashing."""
    nbuf = len(buf)
    wh = U64(0)
    ww = U64(0)
    wshift = U64(0)
    wn = 0
    while i < end or wn > 0:
        done = i >= end  # a word ends (wn > 0 then)
        x = U64(0)
        valid = U64(0)
        if not done and i + 8 <= nbuf:  # bytes past the row count as separators
            x = _load8(buf, i)
            valid = _valid(end - i)
        if done:
            pass
        elif wn == 0 and valid != U64(0) and (x & HIGH & valid) == U64(0):
            sep = (_separators(x) | ~valid) & HIGH
            if sep & U64(0x80):  # separators: to the next word's first byte
                word = ~sep & HIGH
                i += _low_byte(word) if word != U64(0) else 8
                continue
            while True:  # an ASCII word, 8 bytes at a time
                if sep != U64(0):  # it ends in these 8 bytes
                    cut = _low_byte(sep)
                    keep = (U64(1) << U64(8 * cut)) - U64(1)
                    nxt = ~sep & HIGH & ~keep  # the next word's first byte, if here
                    ww = _lower8(x) & keep
                    wn += cut
                    i += _low_byte(nxt) if nxt != U64(0) else 8
                    done = True
                    break
                ww = _lower8(x)
                wn += 8
                i += 8
                wshift = U64(64)  # a full word pending
                if i >= end:
                    done = True
                    break
                if i + 8 > nbuf:
                    break
                x = _load8(buf, i)
                valid = _valid(end - i)
                if (x & HIGH & valid) != U64(0):
                    break  # a non-ASCII byte: the word goes on a character at a time
                sep = (_separators(x) | ~valid) & HIGH
                if sep & U64(0x80):
                    done = True
                    break
                wh = _mix(wh ^ ww)
        else:  # a character
            if valid == U64(0):  # the buffer's last bytes
                x = _tail8(buf, i)
            b = x & U64(0xFF)
            if b < U64(0x80) and SEPARATOR[b]:
                i += 1
                done = wn > 0
            else:
                if b < U64(0x80):
                    packed, n, step = U64(LOWER[b]), 1, 1
                elif raw:
                    cp, step = _decode8(x, end - i)
                    v = table[cp]
                    packed, n = U64(v) & U64(0x00FFFFFFFFFFFFFF), v >> 56
                else:
                    packed, n = _raw_char(x, end - i)
                    step = n
                for q in range(n):
                    wh, ww, wshift = _feed(wh, ww, wshift, (packed >> U64(8 * q)) & U64(0xFF))
                wn += n
                i += step
        if done:
            out[j] = _word_hash(wh, ww, wn)
            j += 1
            wh = U64(0)
            ww = U64(0)
            wshift = U64(0)
            wn = 0
    return j


@kernel()
def sketch_rows(buf, offsets, rows, outs, lo, hi, raw, char_rows, table, ngram, seed_mix,
                whole_short, gn, set_offsets, sig, probes, sentinel, empty, keys, values,
                ring, orig, toks):  # fmt: skip
    """Rows ``rows[lo:hi]`` of ``buf`` into output rows ``outs[lo:hi]`` (so a few rows can
    come from another buffer, without a copy of this one), raw (``raw[r]``: map non-ASCII
    characters by ``table``) or tokenizable text (``r``: the output row), in one pass: the
    token hashes of :func:`hash_tokens`, the shingle hashes
    of :func:`hash_shingles` (a rolling form of the same polynomial: ``gn = GOLDEN**ngram``),
    each shingle's top 32 bits into ``values`` from ``set_offsets[r]`` (in order, as
    ``shingle_sets``), its MinHash bin into ``sig`` (:func:`minhash_bins`, then
    :func:`densify` of the row; ``sig``'s rows are written whole), and the row's
    exact-duplicate key (the word sequence's hash, for char rows too) into ``keys``.

    A word row's tokens come from :func:`word_tokens` (into a scratch array, one call per
    row), a char row's a character at a time. The per-token work is written out here, not in
    inlined helpers taking arrays (see :func:`word_tokens`: 0.39 -> 0.20 CPU-s on 88 MB).
    Scratch from the caller: ``ring`` (ngram), ``orig`` (num_perm) and ``toks`` (a row's
    tokens: :func:`max_row_tokens`)."""
    k = sig.shape[1]
    top = U64(0xFFFFFFFE)
    nbuf = len(buf)
    for j in range(lo, hi):
        r = outs[j]
        i, end = offsets[rows[j]], offsets[rows[j] + 1]
        is_raw = raw[r]
        char = char_rows[r]
        o = set_offsets[r]
        for q in range(k):  # the row's bins start empty (written here, while in cache)
            sig[r, q] = sentinel
        for q in range(ngram):
            ring[q] = U64(0)
        p = 0
        acc = U64(0)
        c = 0
        rowh = ROW_SEED
        words = 0
        # a char row's word being read (its key is its word sequence's)
        wh = U64(0)
        ww = U64(0)
        wshift = U64(0)
        wn = 0
        if not char:
            nt = word_tokens(buf, i, end, is_raw, table, toks, 0)
            words = nt
        else:
            nt = 0
        while char and (i < end or wn > 0):  # a token per code point; the key from words
            if i < end:
                x = _load8(buf, i) if i + 8 <= nbuf else _tail8(buf, i)
                b = x & U64(0xFF)
                if b >= U64(0x80) or not SEPARATOR[b]:
                    if b < U64(0x80):
                        packed, n, step = U64(LOWER[b]), 1, 1
                    elif is_raw:
                        cp, step = _decode8(x, end - i)
                        v = table[cp]
                        packed, n = U64(v) & U64(0x00FFFFFFFFFFFFFF), v >> 56
                    else:
                        packed, n = _raw_char(x, end - i)
                        step = n
                    for q in range(n):
                        wh, ww, wshift = _feed(wh, ww, wshift, (packed >> U64(8 * q)) & U64(0xFF))
                    wn += n
                    i += step
                    pos = 0
                    while pos < n:
                        width = _width(np.int64((packed >> U64(8 * pos)) & U64(0xFF)))
                        _, one = _decode_packed(packed, pos, width)
                        pos += width
                        toks[nt] = _mix(one ^ (U64(width) << U64(56)) ^ TOKEN_SEED)
                        nt += 1
                    continue
                i += 1
                if wn == 0:
                    continue
            rowh = _mix(rowh ^ _word_hash(wh, ww, wn))  # a word ends: a separator, or the end
            words += 1
            wh = U64(0)
            ww = U64(0)
            wshift = U64(0)
            wn = 0
        for q in range(nt):  # each token into the rolling shingle hash
            t = toks[q]
            if not char:
                rowh = _mix(rowh ^ t)
            acc = acc * GOLDEN + t - ring[p] * gn
            ring[p] = t
            p = p + 1 if p + 1 < ngram else 0
            c += 1
            if c >= ngram:  # _emit, inline
                sh = _mix(acc ^ seed_mix)
                values[o] = np.uint32(sh >> U64(32))
                o += 1
                if k > 0:
                    bin_ = ((sh >> U64(32)) * U64(k)) >> U64(32)
                    m = np.uint32(min(sh & U64(0xFFFFFFFF), top))
                    sig[r, bin_] = min(m, sig[r, bin_])  # a store, not a branch
        if 0 < c < ngram and whole_short:  # one shingle of all tokens, zero-padded
            for _ in range(ngram - c):
                acc = acc * GOLDEN
            _emit(_mix(acc ^ seed_mix), r, k, sig, values, o, top)
            o += 1
        keys[r] = _row_key(rowh, words, empty)
        if k > 0:
            _densify_row(sig[r], orig, probes, sentinel)
    return keys


@kernel(inline="always")
def _densify_row(row, orig, table, sentinel):
    """:func:`densify` of one row."""
    k = len(row)
    empty = 0
    for j in range(k):
        empty += row[j] == sentinel
    if empty == 0 or empty == k:
        return
    for j in range(k):  # not orig[:] = row: a slice assignment's shape check loads arrayobj
        orig[j] = row[j]
    for j in range(k):
        if orig[j] != sentinel:
            continue
        src = -1
        for t in range(table.shape[0]):
            if orig[table[t, j]] != sentinel:
                src = table[t, j]
                break
        d = 1
        while src < 0:
            if orig[(j + d) % k] != sentinel:
                src = (j + d) % k
            d += 1
        row[j] = orig[src]

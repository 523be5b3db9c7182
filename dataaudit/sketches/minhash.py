"""Shingling and MinHash signatures over Arrow string arrays, a whole batch at a time.

There is no per-document or per-shingle Python loop: the per-byte and per-shingle work runs in
compiled loops (:mod:`dataaudit.sketches.kernels`), the rest in numpy.

Tokens
    ``unit="word"``: the space-separated words of tokenizable text (normalized, or
    ``tokenizable_array``: same tokens). ``unit="char"``: every non-space character (code
    point), for scripts without spaces. Each token gets a 64-bit hash of its bytes.

Shingles
    ``ngram`` consecutive tokens of one document, combined into a 64-bit hash seeded by ``seed``.
    A document with at least one token but fewer than ``ngram`` gets ONE shingle made of all its
    tokens (``short="whole"``, used for near-duplicates, so short identical texts still match), or
    none (``short="none"``, used for n-gram contamination). A document with no token (empty, null
    or whitespace) has no shingle.

MinHash
    One-permutation hashing with optimal densification (Li, Owen & Zhang 2012; Shrivastava 2017):
    each shingle hash is hashed once; its top 32 bits pick one of ``num_perm`` bins, its low 32 bits
    are the value; a bin keeps its minimum. Empty bins borrow the value of a bin chosen by a fixed,
    seeded probe sequence (the same for every document), with a cyclic "next non-empty bin" fallback
    after 32 probes. ``P(sig_a[k] == sig_b[k]) = Jaccard(a, b)`` as for ``num_perm`` independent
    permutations, but the cost is O(shingles) instead of O(shingles * num_perm).
    Signatures are ``uint32`` of shape (rows, num_perm); a row with no shingle is all
    :data:`SENTINEL` (see :func:`empty_rows`), which LSH never groups.

Exact sets
    :func:`shingle_sets` keeps each document's 32-bit shingle hashes (CSR: offsets + values,
    ~4 bytes per shingle), and :func:`pair_jaccard` computes the exact Jaccard of many pairs at
    once: it sorts the rows it compares once, then merges each pair (compiled), skipping the
    pairs whose signature estimate is clearly below the threshold; this is the verification
    step of near-duplicate detection.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa

from .._arrow import bools, nulls_to, one_chunk, string_array, string_parts, take
from .._compute import call, cast
from ..memory import concatenate
from .hashing import GOLDEN, mix64

__all__ = [
    "SENTINEL",
    "ShingleSets",
    "Shingles",
    "empty_rows",
    "jaccard_estimate",
    "minhash_signatures",
    "pair_jaccard",
    "shingle",
    "shingle_sets",
    "text_hashes",
]

SENTINEL = np.uint32(0xFFFFFFFF)  #: every bin of a row without shingles
U64 = np.uint64
NULL_HASH = U64(0)  #: :func:`text_hashes` of a null row
EMPTY_HASH = U64(0x9E3779B97F4A7C15)  #: :func:`text_hashes` of a row without words
_PROBES = 32


def text_bytes(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(row offsets into the bytes, the rows' UTF-8 bytes); nulls are empty rows."""
    arr = cast(one_chunk(arr), pa.large_string())
    if arr.null_count:  # a null row may still own bytes (a Python "" would import pandas)
        arr = call("coalesce", arr, string_array(np.zeros(len(arr) + 1, np.int64), b""))
    return string_parts(arr)


@dataclass
class Shingles:
    """Shingle hashes of a batch, row by row: ``per_row[r]`` of them belong to row ``r``."""

    num_rows: int
    hashes: np.ndarray  # uint64
    per_row: np.ndarray  # int64 shingles per row
    tokens: np.ndarray  # int64 tokens per row
    text_hashes: np.ndarray | None = None  # uint64 per row: see text_hashes()

    @property
    def row(self) -> np.ndarray:
        """The row of each shingle."""
        return np.repeat(np.arange(self.num_rows, dtype=np.int64), self.per_row)

    def offsets(self) -> np.ndarray:
        """Where each row's shingles start in ``hashes`` (CSR, rows + 1 entries)."""
        offsets = np.zeros(self.num_rows + 1, np.int64)
        np.cumsum(self.per_row, out=offsets[1:])
        return offsets


def text_hashes(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Per row of tokenizable text, a 64-bit hash of its words: the exact-duplicate key
    (:data:`NULL_HASH` for null, :data:`EMPTY_HASH` for a row without words). :func:`shingle`
    computes the same keys on the way (``Shingles.text_hashes``)."""
    from .kernels import hash_word_rows

    arr = one_chunk(arr)
    offsets, data = text_bytes(arr)
    out = np.empty(len(arr), U64)
    hash_word_rows(data, offsets, np.arange(len(arr)), EMPTY_HASH, out)
    return nulls_to(out, arr, NULL_HASH)


def shingle(
    arr: pa.Array, ngram: int = 5, unit: str = "word", seed: int = 1, short: str = "whole"
) -> Shingles:
    """Hash every ``ngram``-token shingle of every row of a tokenizable string array."""
    if unit not in ("word", "char"):
        raise ValueError(f"unit={unit!r}: use 'word' or 'char'")
    return shingle_rows(arr, np.full(len(arr), unit == "char"), ngram, seed, short)


#: rows of a batch from which the compiled passes run on two threads (the kernels release the
#: GIL); below it the threads' hand-off costs more than they save (bench/bench_dedup.py)
THREAD_ROWS = 2048
#: or text bytes (the fused pass): JSON Lines come in batches of ~1 MB (a few hundred long
#: documents), which take ~5 ms of compiled work, where a hand-off to a thread costs ~0.1 ms
THREAD_BYTES = 128 << 10
_POOL: list = []


def _ranges(n: int, offsets: np.ndarray | None = None) -> list[tuple[int, int]]:
    """Row ranges to process on separate threads: two halves of a large batch (``THREAD_ROWS``
    rows, or ``THREAD_BYTES`` of text when its row ``offsets`` are given: then halves of the
    bytes) on a machine with two or more cores, when not already in a worker process of the
    parallel engine."""
    import multiprocessing

    big = n >= THREAD_ROWS or (
        offsets is not None and n >= 2 and offsets[n] - offsets[0] >= THREAD_BYTES
    )
    if not big or (os.cpu_count() or 1) < 2 or multiprocessing.parent_process():
        return [(0, n)]
    if offsets is None:
        return [(0, n // 2), (n // 2, n)]
    cut = int(np.searchsorted(offsets, (offsets[0] + offsets[n]) // 2))
    cut = min(max(cut, 1), n - 1)
    return [(0, cut), (cut, n)]


def own_lines(n: int, dtype: type | np.dtype) -> np.ndarray:
    """A zeroed scratch array of ``n`` items on cache lines of its own: a kernel running on
    two threads writes its scratch for every token or value, and two small arrays allocated
    side by side share a line, which the cores then pass back and forth on every write. The
    sketch of one 8 MB block, alone in a process: two threads took 42 CPU-ms (22 ms wall)
    where one took 25; with the ring and bins on their own lines, 26 CPU-ms (14 ms wall). In
    an audit's scan the allocations happened not to share lines (its sketch CPU unchanged),
    but whether they do is up to the allocator."""
    pad = -(-64 // np.dtype(dtype).itemsize)
    return np.zeros(n + 2 * pad, dtype)[pad : pad + n]


def _map(fn, ranges: list[tuple[int, int]]) -> list:
    if len(ranges) == 1:
        return [fn(*ranges[0])]
    if not _POOL:
        from concurrent.futures import ThreadPoolExecutor

        _POOL.append(ThreadPoolExecutor(2, thread_name_prefix="dataaudit-minhash"))
    return list(_POOL[0].map(lambda r: fn(*r), ranges))


def shingle_rows(
    arr: pa.Array, char_rows: np.ndarray, ngram: int = 5, seed: int = 1, short: str = "whole"
) -> Shingles:
    """Like :func:`shingle`, with the unit chosen per row (``char_rows``: character tokens)."""
    if ngram < 1:
        raise ValueError(f"ngram={ngram}: must be >= 1")
    if short not in ("whole", "none"):
        raise ValueError(f"short={short!r}: use 'whole' or 'none'")
    arr = one_chunk(arr)
    char_rows = np.ascontiguousarray(char_rows, dtype=np.bool_)
    ranges = _ranges(len(arr))
    parts = _map(
        lambda lo, hi: _shingle_rows(arr.slice(lo, hi - lo), char_rows[lo:hi], ngram, seed, short),
        ranges,
    )
    if len(parts) == 1:
        return parts[0]
    return Shingles(
        len(arr),
        np.concatenate([p.hashes for p in parts]),
        np.concatenate([p.per_row for p in parts]),
        np.concatenate([p.tokens for p in parts]),
        np.concatenate([p.text_hashes for p in parts]),
    )


def _shingle_rows(
    arr: pa.Array, char_rows: np.ndarray, ngram: int, seed: int, short: str
) -> Shingles:
    from . import kernels

    offsets, data = text_bytes(arr)
    char_rows = np.ascontiguousarray(char_rows, dtype=np.bool_)
    ntok = kernels.count_tokens(data, offsets, char_rows)
    keys = np.empty(len(arr), U64)  # the exact-duplicate keys, from the same word tokens
    tokens = kernels.hash_tokens(data, offsets, char_rows, ntok, keys, EMPTY_HASH)
    if char_rows.any():
        kernels.hash_word_rows(data, offsets, np.flatnonzero(char_rows), EMPTY_HASH, keys)
    seed_mix = mix64(np.array([seed & 0xFFFFFFFFFFFFFFFF], U64))[0]
    hashes, per_row = kernels.hash_shingles(tokens, ntok, ngram, seed_mix, short == "whole")
    return Shingles(len(offsets) - 1, hashes, per_row, ntok, nulls_to(keys, arr, NULL_HASH))


#: mixed into the probe table's seed (and its file's name: a new salt never reads an old table)
_PROBE_SALT = 0x0D5


@lru_cache(maxsize=8)
def _probe_table(num_perm: int, seed: int) -> np.ndarray:
    """Densification's probe order (shared, not to be written): kept per process, as building
    it (~0.2 ms) cost 2% of the fused pass's CPU on ~1 MB batches, and in a file (building it
    imports numpy.random, ~0.006 s of a process's start-up). The file is numpy's version's:
    its generator's streams may change between versions."""
    from .._cache import cache_file, write_quietly

    name = f"probes-{num_perm}-{seed & 0xFFFFFFFF}-{_PROBES}-{_PROBE_SALT}-np{np.__version__}.npy"
    path = cache_file(Path(__file__).resolve().parent, name)
    shape = (_PROBES, num_perm)
    if path is not None:
        try:
            table = np.load(path, allow_pickle=False)
            if table.dtype == np.int64 and table.shape == shape:
                return table
        except (OSError, ValueError, EOFError):  # missing or damaged: built again
            pass
    rng = np.random.default_rng([seed & 0xFFFFFFFF, num_perm, _PROBE_SALT])
    table = rng.integers(0, num_perm, size=shape, dtype=np.int64)
    if path is not None:
        write_quietly(path, lambda f: np.save(f, table, allow_pickle=False))
    return table


def minhash_signatures(sh: Shingles, num_perm: int = 128, seed: int = 1) -> np.ndarray:
    """One-permutation MinHash with optimal densification: uint32 array (rows, num_perm)."""
    if num_perm < 1:
        raise ValueError(f"num_perm={num_perm}: must be >= 1")
    from .kernels import densify, minhash_bins

    k = num_perm
    table = _probe_table(k, seed)
    ranges = _ranges(sh.num_rows)
    if len(ranges) == 1:
        return densify(minhash_bins(sh.hashes, sh.per_row, k, SENTINEL), table, SENTINEL)
    offsets = sh.offsets()
    sig = np.empty((sh.num_rows, k), np.uint32)

    def part(lo: int, hi: int) -> None:
        h = sh.hashes[offsets[lo] : offsets[hi]]
        sig[lo:hi] = densify(minhash_bins(h, sh.per_row[lo:hi], k, SENTINEL), table, SENTINEL)

    _map(part, ranges)
    return sig


def empty_rows(signatures: np.ndarray) -> np.ndarray:
    """Rows without any shingle (all bins are :data:`SENTINEL`)."""
    return (signatures == SENTINEL).all(axis=1)


def jaccard_estimate(sig_a: np.ndarray, sig_b: np.ndarray) -> np.ndarray:
    """Fraction of agreeing bins (rows of two signature arrays, or two signatures)."""
    same = (sig_a == sig_b) & (sig_a != SENTINEL)
    return same.mean(axis=-1)


@dataclass
class ShingleSets:
    """Per row, its 32-bit shingle hashes (CSR); ``distinct``: each row's values are sorted and
    distinct (what :func:`shingle_sets` builds and :func:`pair_jaccard` merges)."""

    offsets: np.ndarray  # int64, len rows + 1
    values: np.ndarray  # uint32
    distinct: bool = False

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def row(self, i: int) -> np.ndarray:
        return self.values[self.offsets[i] : self.offsets[i + 1]]

    def sorted(self, rows: np.ndarray | None = None) -> ShingleSets:
        """The sets of ``rows`` (default all, in order), each sorted and distinct."""
        if rows is None and self.distinct:
            return self
        from .native import sort_set_rows

        rows = np.ascontiguousarray(
            np.arange(len(self), dtype=np.int64) if rows is None else rows, np.int64
        )
        offsets = np.ascontiguousarray(self.offsets, np.int64)
        sizes = offsets[rows + 1] - offsets[rows]
        new = np.zeros(len(rows) + 1, np.int64)
        out = np.empty(int(sizes.sum()), np.uint32)
        used = sort_set_rows(
            offsets,
            np.ascontiguousarray(self.values, np.uint32),
            rows,
            new,
            out,
            own_lines(int(sizes.max(initial=0)), np.uint32),  # scratch: the longest row
            own_lines(256, np.int64),  # scratch: radix counts (threads sort side by side)
        )
        return ShingleSets(new, out[:used].copy() if used < len(out) else out, True)

    @staticmethod
    def concat(parts: list[ShingleSets], *, consume: bool = False) -> ShingleSets:
        """The parts as one; ``consume`` empties the list and frees each part once copied."""
        sizes = np.concatenate([p.sizes() for p in parts]) if parts else np.zeros(0, np.int64)
        offsets = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        distinct = all(p.distinct for p in parts)
        values = [p.values for p in parts]
        if consume:
            parts.clear()
        out = concatenate(values, np.empty(int(offsets[-1]), np.uint32), consume=consume)
        return ShingleSets(offsets, out, distinct)


def shingle_sets(sh: Shingles) -> ShingleSets:
    """Each row's 32-bit shingle hashes (CSR, ~4 bytes per shingle; not sorted: most rows are
    never compared, so :func:`pair_jaccard` sorts only the rows it compares, once per call)."""
    return ShingleSets(sh.offsets(), (sh.hashes >> U64(32)).astype(np.uint32))


#: how many standard errors below the threshold a pair's MinHash estimate must be for
#: :func:`pair_jaccard` to skip the exact comparison (a pair at the threshold falls that low with
#: probability ~3e-5; bench/bench_dedup.py measures recall with and without the cut)
PRUNE_SE = 4.0


def pair_jaccard(
    sets: ShingleSets,
    i: np.ndarray,
    j: np.ndarray,
    *,
    signatures: np.ndarray | None = None,
    threshold: float | None = None,
) -> np.ndarray:
    """Exact Jaccard of the shingle sets of rows ``i[k]`` and ``j[k]`` for all k (a compiled
    merge of the sorted sets). Two empty sets have Jaccard 0 (nothing to compare).

    With ``signatures`` (the rows' MinHash values) and ``threshold``, a pair whose signature
    estimate is more than :data:`PRUNE_SE` standard errors below the threshold is not compared:
    its value is the estimate (below the threshold), so only the accept/reject decision of such
    pairs is computed, not their exact similarity.
    """
    from .native import jaccard_pairs

    i = np.ascontiguousarray(i, np.int64)
    j = np.ascontiguousarray(j, np.int64)
    out = np.zeros(len(i), np.float64)
    if not len(i):
        return out
    rows = None
    if not sets.distinct:  # sort the rows compared, once, and address them in the sorted copy
        rows, inv = np.unique(np.concatenate([i, j]), return_inverse=True)
        sets = sets.sorted(rows)
        i, j = inv[: len(i)].astype(np.int64), inv[len(i) :].astype(np.int64)
    if signatures is None or threshold is None:
        sig = np.zeros((0, 0), np.uint32)
        t = 1.0
    else:
        sig = np.ascontiguousarray(signatures if rows is None else signatures[rows], np.uint32)
        t = float(threshold)
    # numba releases the GIL: two halves on two threads when there is enough work
    cores = os.cpu_count() or 1
    if len(i) >= 200_000 and cores > 1:
        from concurrent.futures import ThreadPoolExecutor

        cut = np.linspace(0, len(i), min(cores, 4) + 1).astype(np.int64)
        with ThreadPoolExecutor(len(cut) - 1) as pool:
            list(
                pool.map(
                    lambda k: jaccard_pairs(
                        sets.offsets,
                        sets.values,
                        i[cut[k] : cut[k + 1]],
                        j[cut[k] : cut[k + 1]],
                        sig,
                        t,
                        PRUNE_SE,
                        SENTINEL,
                        out[cut[k] : cut[k + 1]],
                    ),
                    range(len(cut) - 1),
                )
            )
    else:
        jaccard_pairs(sets.offsets, sets.values, i, j, sig, t, PRUNE_SE, SENTINEL, out)
    return out


# Code points of the scripts written without spaces between words: Han, Hiragana, Katakana,
# Thai, Lao, Khmer, Myanmar, Tibetan (as RE2's \p{...} classes in pyarrow 26 define them; kept
# here so the choice of shingle unit does not change with a library's Unicode tables).
_NO_SPACE_RANGES = """
e01-e3a e40-e5b e81-e82 e84 e86-e8a e8c-ea3 ea5 ea7-ebd ec0-ec4 ec6 ec8-ece ed0-ed9 edc-edf
f00-f47 f49-f6c f71-f97 f99-fbc fbe-fcc fce-fd4 fd9-fda 1000-109f 1780-17dd 17e0-17e9
17f0-17f9 19e0-19ff 2e80-2e99 2e9b-2ef3 2f00-2fd5 3005 3007 3021-3029 3038-303b 3041-3096
309d-309f 30a1-30fa 30fd-30ff 31f0-31ff 32d0-32fe 3300-3357 3400-4dbf 4e00-9fff a9e0-a9fe
aa60-aa7f f900-fa6d fa70-fad9 ff66-ff6f ff71-ff9d 16fe2-16fe3 16ff0-16ff1 1aff0-1aff3
1aff5-1affb 1affd-1affe 1b000-1b122 1b132 1b150-1b152 1b155 1b164-1b167 1f200 20000-2a6df
2a700-2b739 2b740-2b81d 2b820-2cea1 2ceb0-2ebe0 2ebf0-2ee5d 2f800-2fa1d 30000-3134a
31350-323af
"""


@lru_cache(maxsize=1)
def _no_space_table() -> np.ndarray:
    """A bool per code point (up to plane 3): is it in a script written without spaces?"""
    table = np.zeros(0x40000, np.bool_)
    for tok in _NO_SPACE_RANGES.split():
        lo, _, hi = tok.partition("-")
        table[int(lo, 16) : int(hi or lo, 16) + 1] = True
    return table


def cjk_rows(arr: pa.Array) -> np.ndarray:
    """Rows written mostly (>= 30% of characters) in a script without spaces between words."""
    from .kernels import script_share

    n = len(arr)
    out = np.zeros(n, bool)
    non_ascii = np.flatnonzero(~bools(call("string_is_ascii", arr), null=True))
    if not non_ascii.size:  # ASCII rows cannot be in such a script: most batches stop here
        return out
    offsets, data = text_bytes(arr)
    chars, count = script_share(data, offsets, non_ascii, _no_space_table())
    out[non_ascii] = (count > 0) & (count * 10 >= chars * 3)
    return out


def shingle_auto(
    arr: pa.Array, ngram: int = 5, seed: int = 1, cjk: np.ndarray | None = None
) -> tuple[Shingles, np.ndarray]:
    """Word shingles, but character shingles for rows in scripts without spaces.

    Returns the shingles and the unit per row (0 no shingle, 1 word, 2 char). The choice is made
    per row from the row's own text, so it does not depend on batching.
    """
    if cjk is None:
        cjk = cjk_rows(arr)
    sh = shingle_rows(arr, cjk, ngram, seed)
    unit = np.where(sh.tokens > 0, np.where(cjk, 2, 1), 0).astype(np.uint8)
    return sh, unit


@dataclass
class Sketch:
    """A batch's near-duplicate features from one fused pass (:func:`sketch`): the same values
    as :func:`shingle_auto` / :func:`shingle_rows`, :func:`minhash_signatures` and
    :func:`shingle_sets` give, without the per-token and per-shingle arrays between them."""

    signatures: np.ndarray  # uint32 (rows, num_perm); (rows, 0) when num_perm == 0
    sets: ShingleSets
    tokens: np.ndarray  # int64 tokens per row
    unit: np.ndarray  # uint8 per row: 0 no shingle, 1 word shingles, 2 character shingles
    text_hashes: np.ndarray  # uint64 per row, as text_hashes()
    params: tuple  # (ngram, unit, seed): what the shingles depend on (not num_perm)


def _max_row_tokens(
    offsets: np.ndarray, rows: np.ndarray, outs: np.ndarray, lo: int, hi: int, char_rows: np.ndarray
) -> int:
    """Room for the tokens of any of rows ``rows[lo:hi]`` (the kernel ``sketch_rows``'
    ``toks``): a word and its separator take at least 2 bytes; a character at least 1, and a
    mapped one of 2 or more bytes maps to at most 7 code points."""
    if hi <= lo:
        return 0
    at = rows[lo:hi]
    size = offsets[at + 1] - offsets[at]
    return int(np.max(np.where(char_rows[outs[lo:hi]], 4 * size, size // 2 + 1)))


def _row_stats(arr: pa.Array, table: np.ndarray | None) -> tuple:
    from .native import scan_rows

    offsets, data = text_bytes(arr)
    n = len(arr)
    words, chars, cps, hits = (np.empty(n, np.int64) for _ in range(4))
    status = np.empty(n, np.uint8)
    mapped = table is not None
    table = table if mapped else np.zeros(0, np.int64)
    script = _no_space_table()
    _map(
        lambda lo, hi: scan_rows(
            data, offsets, lo, hi, mapped, table, script, words, chars, cps, hits, status
        ),
        _ranges(n, offsets),
    )
    return offsets, data, words, chars, (hits > 0) & (hits * 10 >= cps * 3), status


def sketch(
    arr: pa.Array | pa.ChunkedArray,
    num_perm: int = 128,
    ngram: int = 5,
    unit: str = "auto",
    seed: int = 1,
    *,
    table: np.ndarray | None = None,
    normalize=None,
) -> Sketch:
    """Shingles, MinHash signatures, shingle sets and exact-duplicate keys of a batch in one
    compiled pass per row (two threads on a large batch), equal to what the separate steps give
    on the tokenizable text.

    ``arr`` is tokenizable text (``table=None``), or raw text with ``table`` (int64 per code
    point: the UTF-8 bytes tokenizable text has for it, packed, their count in the top byte;
    ``-1`` where more than a mapping is needed: NFKC, casefold specials; see
    ``dataaudit.features.normalize.lower_table``) and ``normalize`` (raw text -> tokenizable
    text), which is applied only to the rows holding a character without a mapping. ASCII rows
    are never copied. ``unit``: "word", "char" or "auto" (as :func:`shingle_auto`).
    """
    from .native import sketch_rows

    if unit not in ("word", "char", "auto"):
        raise ValueError(f"unit={unit!r}: use 'word', 'char' or 'auto'")
    if ngram < 1 or num_perm < 0:
        raise ValueError(f"ngram={ngram}, num_perm={num_perm}: must be >= 1 and >= 0")
    arr = cast(one_chunk(arr), pa.large_string())
    n = len(arr)
    offsets, data, words, chars, cjk, status = _row_stats(arr, table)
    raw = np.full(n, table is not None)
    redo = np.flatnonzero(status == 2) if table is not None else np.zeros(0, np.int64)
    rows = np.arange(n, dtype=np.int64)
    fixed = None
    if len(redo):  # rows needing more than a mapping: their tokenizable text, scanned as such
        fixed = cast(normalize(take(arr, redo)), pa.large_string())
        _, _, w2, c2, cjk2, _ = _row_stats(fixed, None)
        words[redo], chars[redo], cjk[redo], raw[redo] = w2, c2, cjk2, False
        keep = np.ones(n, bool)
        keep[redo] = False
        rows = rows[keep]  # the others are sketched from ``fixed``, not copied into the batch
    if unit != "auto":
        cjk = np.full(n, unit == "char")
    tokens = np.where(cjk, chars, words)
    per_row = np.where(tokens >= ngram, tokens - ngram + 1, (tokens > 0).astype(np.int64))
    set_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(per_row, out=set_offsets[1:])
    sig = np.empty((n, num_perm), np.uint32)  # each row set by the pass, while in cache
    values = np.empty(int(set_offsets[-1]), np.uint32)
    keys = np.empty(n, U64)
    seed_mix = mix64(np.array([seed & 0xFFFFFFFFFFFFFFFF], U64))[0]
    gn = U64(pow(int(GOLDEN), ngram, 1 << 64))  # the rolling shingle hash drops t * GOLDEN**ngram
    probes = _probe_table(max(num_perm, 1), seed)
    table = table if table is not None else np.full(1, -1, np.int64)
    rest = (raw, cjk, table, ngram, seed_mix, True, gn, set_offsets, sig, probes, SENTINEL)
    rest += (EMPTY_HASH, keys, values)

    def run(buf, offs, rows, outs, lo: int, hi: int) -> None:  # the kernel allocates nothing
        toks = np.empty(_max_row_tokens(offs, rows, outs, lo, hi, cjk), U64)
        scratch = (own_lines(ngram, U64), own_lines(num_perm, np.uint32), toks)
        sketch_rows(buf, offs, rows, outs, lo, hi, *rest, *scratch)

    ranges = [  # the threads' halves of the text, in the rows sketched from it
        (int(np.searchsorted(rows, lo)), int(np.searchsorted(rows, hi)))
        for lo, hi in _ranges(n, offsets)
    ]
    _map(lambda lo, hi: run(data, offsets, rows, rows, lo, hi), ranges)
    if fixed is not None:
        fixed_offsets, fixed_data = text_bytes(fixed)
        run(fixed_data, fixed_offsets, np.arange(len(redo)), redo, 0, len(redo))
    code = np.where(cjk, 2, 1).astype(np.uint8)
    return Sketch(
        sig,
        ShingleSets(set_offsets, values),
        tokens,
        np.where(tokens > 0, code, 0).astype(np.uint8),
        nulls_to(keys, arr, NULL_HASH),
        (ngram, unit, seed),
    )

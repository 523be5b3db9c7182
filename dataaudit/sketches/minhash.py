"""Vectorized shingling and MinHash signatures over Arrow string arrays (numpy only).

Everything here works on a whole batch at once; there is no per-document or per-shingle Python
loop.

Tokens
    ``unit="word"``: the space-separated words of the (already normalized) text.
    ``unit="char"``: every non-space character (code point), for scripts without spaces.
    Splitting and token hashing run in polars (Rust, no Python per token); the 64-bit token
    hashes are mixed (splitmix64) and combined into shingles with numpy.

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
    :func:`shingle_sets` keeps each document's sorted, de-duplicated 32-bit shingle hashes (CSR:
    offsets + values, ~4 bytes per shingle), and :func:`pair_jaccard` computes the exact Jaccard of
    many pairs at once; this is the verification step of near-duplicate detection.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
]

SENTINEL = np.uint32(0xFFFFFFFF)  #: every bin of a row without shingles
U64 = np.uint64
_Q = U64(0x9E3779B97F4A7C15)  # multiplier combining token hashes into a shingle hash
_PROBES = 32


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer (a bijection on uint64), vectorized; returns a new array."""
    return _mix64_inplace(np.array(x, dtype=U64))


_BLOCK = 1 << 15  # elements per block of the chained uint64 ops: the block stays in L2 cache


def _mix64_inplace(x: np.ndarray, xor: np.uint64 | None = None) -> np.ndarray:
    """splitmix64 finalizer of ``x ^ xor`` in place, block by block (~4x faster than whole-array
    passes on large arrays: the five chained ops run on cache-resident blocks)."""
    tmp = np.empty(min(len(x), _BLOCK), U64)
    for lo in range(0, len(x), _BLOCK):
        b = x[lo : lo + _BLOCK]
        t = tmp[: len(b)]
        if xor is not None:
            b ^= xor
        np.right_shift(b, U64(30), out=t)
        b ^= t
        b *= U64(0xBF58476D1CE4E5B9)
        np.right_shift(b, U64(27), out=t)
        b ^= t
        b *= U64(0x94D049BB133111EB)
        np.right_shift(b, U64(31), out=t)
        b ^= t
    return x


def _tokens(arr: pa.Array, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """(row, 64-bit hash) of every token, in order: polars splits and hashes in Rust."""
    import polars as pl

    if unit not in ("word", "char"):
        raise ValueError(f"unit={unit!r}: use 'word' or 'char'")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    s = pl.Series("t", arr.cast(pa.large_string()))
    parts = s.str.split(" " if unit == "word" else "")
    lens = parts.list.len().fill_null(0).to_numpy().astype(np.int64, copy=False)
    tok = parts.explode(empty_as_null=False, keep_nulls=False)
    # polars' string hash is deterministic for a given seed within one polars version
    hashes = tok.hash(seed=0x5EED).to_numpy()
    rows = np.repeat(np.arange(len(lens), dtype=np.int64), lens)
    drop = (tok.str.len_bytes() == 0) if unit == "word" else (tok == " ")
    drop = drop.to_numpy()
    if drop.any():
        keep = ~drop
        rows, hashes = rows[keep], hashes[keep]
    hashes = _mix64_inplace(np.array(hashes, dtype=U64))
    return rows, hashes


@dataclass
class Shingles:
    """Shingle hashes of a batch: ``row[i]`` is the row of ``hashes[i]``; ``unit`` per row."""

    num_rows: int
    row: np.ndarray  # int64
    hashes: np.ndarray  # uint64
    tokens: np.ndarray  # int64 tokens per row

    def counts(self) -> np.ndarray:
        return np.bincount(self.row, minlength=self.num_rows)


def shingle(
    arr: pa.Array, ngram: int = 5, unit: str = "word", seed: int = 1, short: str = "whole"
) -> Shingles:
    """Hash every ``ngram``-token shingle of every row of an (already normalized) string array."""
    if ngram < 1:
        raise ValueError(f"ngram={ngram}: must be >= 1")
    nrows = len(arr)
    tok_row, th = _tokens(arr, unit)
    ntok = np.bincount(tok_row, minlength=nrows).astype(np.int64)
    first = np.zeros(nrows, np.int64)
    if nrows > 1:
        np.cumsum(ntok[:-1], out=first[1:])
    if short == "whole":
        nsh = np.where(ntok > 0, np.maximum(ntok - ngram + 1, 1), 0)
    elif short == "none":
        nsh = np.maximum(ntok - ngram + 1, 0)
    else:
        raise ValueError(f"short={short!r}: use 'whole' or 'none'")
    total = int(nsh.sum())
    row = np.repeat(np.arange(nrows, dtype=np.int64), nsh)
    sh_first = np.zeros(nrows, np.int64)
    if nrows > 1:
        np.cumsum(nsh[:-1], out=sh_first[1:])
    start = np.repeat(first - sh_first, nsh) + np.arange(total, dtype=np.int64)
    # full-length shingles: combine shifted views of the token hashes (no gathers in the loop)
    t = len(th)
    padded = np.concatenate([th, np.zeros(ngram, U64)])
    full = np.empty(t + 1, U64)
    for lo in range(0, t + 1, _BLOCK):  # block by block: the chained ops stay in cache
        hi = min(lo + _BLOCK, t + 1)
        f = full[lo:hi]
        f[:] = padded[lo:hi]
        for k in range(1, ngram):
            f *= _Q
            f += padded[lo + k : hi + k]
    acc = full[start]
    short_rows = np.flatnonzero((ntok > 0) & (ntok < ngram)) if short == "whole" else []
    if len(short_rows):  # one shingle of all tokens, zero-padded to ngram
        pos = sh_first[short_rows]
        sacc = np.zeros(len(short_rows), U64)
        for k in range(ngram):
            tok = np.where(k < ntok[short_rows], padded[first[short_rows] + k], U64(0))
            sacc = sacc * _Q + tok
        acc[pos] = sacc
    seed_mix = mix64(np.array([seed & 0xFFFFFFFFFFFFFFFF], U64))[0]
    hashes = _mix64_inplace(acc, seed_mix)
    return Shingles(nrows, row, hashes, ntok)


def _probe_table(num_perm: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed & 0xFFFFFFFF, num_perm, 0x0D5])
    return rng.integers(0, num_perm, size=(_PROBES, num_perm), dtype=np.int64)


def minhash_signatures(sh: Shingles, num_perm: int = 128, seed: int = 1) -> np.ndarray:
    """One-permutation MinHash with optimal densification: uint32 array (rows, num_perm)."""
    if num_perm < 1:
        raise ValueError(f"num_perm={num_perm}: must be >= 1")
    n, k = sh.num_rows, num_perm
    sig = np.full(n * k, SENTINEL, np.uint32)
    if len(sh.hashes):
        h = sh.hashes  # already mixed
        bins = ((h >> U64(32)) * U64(k)) >> U64(32)
        vals = np.minimum(h & U64(0xFFFFFFFF), U64(0xFFFFFFFE)).astype(np.uint32)
        np.minimum.at(sig, sh.row * k + bins.astype(np.int64), vals)
    sig = sig.reshape(n, k)
    filled = sig != SENTINEL
    nonempty_rows = filled.any(axis=1)
    n_empty = k - filled.sum(axis=1)
    table = _probe_table(k, seed)  # (probes, k): bin j probes table[0, j], table[1, j], ...
    # rows with a few empty bins: probe rounds over just those bins (reads only filled bins)
    few = nonempty_rows & (n_empty > 0) & (n_empty <= k // 4)
    todo_r, todo_c = np.nonzero(~filled & few[:, None])
    for t in range(_PROBES):
        if not len(todo_r):
            break
        src = table[t, todo_c]
        ok = filled[todo_r, src]
        sig[todo_r[ok], todo_c[ok]] = sig[todo_r[ok], src[ok]]
        todo_r, todo_c = todo_r[~ok], todo_c[~ok]
    # rows with many empty bins (short texts), and leftovers: all probes at once, per chunk
    need = np.union1d(np.flatnonzero(nonempty_rows & (n_empty > k // 4)), todo_r)
    if len(need):
        cols = np.arange(k)
        step = max(1, (1 << 22) // (_PROBES * k))
        for lo in range(0, len(need), step):
            rows = need[lo : lo + step]
            f = filled[rows]
            orig = sig[rows]
            probed = f[:, table]  # (rows, probes, k): is the t-th probe of bin j non-empty?
            found = probed.any(axis=1)
            src = table[probed.argmax(axis=1), cols]
            # fallback after the probes: next originally non-empty bin to the right, cyclically
            pos = np.where(np.concatenate([f, f], axis=1), np.arange(2 * k), 4 * k)
            nxt = np.minimum.accumulate(pos[:, ::-1], axis=1)[:, ::-1][:, :k] % k
            src = np.where(found, src, nxt)
            dense = np.take_along_axis(orig, src, axis=1)
            sig[rows] = np.where(f, orig, dense)
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
    """Per row, its sorted distinct 32-bit shingle hashes (CSR)."""

    offsets: np.ndarray  # int64, len rows + 1
    values: np.ndarray  # uint32

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def row(self, i: int) -> np.ndarray:
        return self.values[self.offsets[i] : self.offsets[i + 1]]

    @staticmethod
    def concat(parts: list[ShingleSets]) -> ShingleSets:
        if not parts:
            return ShingleSets(np.zeros(1, np.int64), np.empty(0, np.uint32))
        sizes = np.concatenate([p.sizes() for p in parts])
        offsets = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return ShingleSets(offsets, np.concatenate([p.values for p in parts]))


def shingle_sets(sh: Shingles) -> ShingleSets:
    """Each row's 32-bit shingle hashes (CSR, ~4 bytes per shingle; repeats kept, no sorting:
    :func:`pair_jaccard` de-duplicates only the rows it compares)."""
    offsets = np.zeros(sh.num_rows + 1, np.int64)
    np.cumsum(np.bincount(sh.row, minlength=sh.num_rows), out=offsets[1:])
    return ShingleSets(offsets, (sh.hashes >> U64(32)).astype(np.uint32))


def pair_jaccard(
    sets: ShingleSets, i: np.ndarray, j: np.ndarray, *, chunk_elems: int = 1 << 23
) -> np.ndarray:
    """Exact Jaccard of the shingle sets of rows ``i[k]`` and ``j[k]`` for all k (vectorized).

    Pairs are processed in chunks of about ``chunk_elems`` set elements to bound memory.
    Two empty sets have Jaccard 0 (nothing to compare).
    """
    i = np.asarray(i, np.int64)
    j = np.asarray(j, np.int64)
    out = np.zeros(len(i), np.float64)
    if not len(i):
        return out
    sizes = sets.sizes()
    cum = np.cumsum(sizes[i] + sizes[j])
    lo = 0
    while lo < len(i):
        hi = int(np.searchsorted(cum, (cum[lo - 1] if lo else 0) + chunk_elems, side="right"))
        hi = max(hi, lo + 1)
        npairs = hi - lo
        ka, na = _distinct_keys(sets, i[lo:hi])
        kb, nb = _distinct_keys(sets, j[lo:hi])
        keys = np.concatenate([ka, kb])
        keys.sort()
        dup = keys[1:] == keys[:-1]
        inter = np.bincount((keys[1:][dup] >> U64(32)).astype(np.int64), minlength=npairs)
        union = na + nb - inter
        out[lo:hi] = np.where(union > 0, inter / np.maximum(union, 1), 0.0)
        lo = hi
    return out


def _distinct_keys(sets: ShingleSets, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct (position-in-rows << 32 | value) keys, and the distinct count per row."""
    sizes = sets.sizes()[rows]
    total = int(sizes.sum())
    owner = np.repeat(np.arange(len(rows), dtype=U64), sizes)
    first = np.zeros(len(rows), np.int64)
    if len(rows) > 1:
        np.cumsum(sizes[:-1], out=first[1:])
    idx = np.repeat(sets.offsets[rows] - first, sizes) + np.arange(total, dtype=np.int64)
    keys = (owner << U64(32)) | sets.values[idx].astype(U64)
    keys.sort()
    if len(keys):
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    count = np.bincount((keys >> U64(32)).astype(np.int64), minlength=len(rows))
    return keys, count


_NO_SPACE = r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\p{Tibetan}]"


def cjk_rows(arr: pa.Array) -> np.ndarray:
    """Rows written mostly (>= 30% of characters) in a script without spaces between words."""
    n = len(arr)
    out = np.zeros(n, bool)
    non_ascii = np.flatnonzero(
        ~np.asarray(
            pc.fill_null(pc.string_is_ascii(arr), True).to_numpy(zero_copy_only=False), bool
        )
    )
    if not non_ascii.size:
        return out
    sub = arr.take(pa.array(non_ascii))  # the script regex is costly: ASCII rows cannot match
    # finding one such character is cheap; counting them one match at a time is not: count the
    # rows that have one, as the characters removed by deleting whole runs of them
    hit = pc.fill_null(pc.match_substring_regex(sub, _NO_SPACE), False)
    hit = np.asarray(hit.to_numpy(zero_copy_only=False), bool)
    if not hit.any():
        return out
    rows = non_ascii[hit]
    sub = sub.filter(pa.array(hit))
    length = np.asarray(pc.utf8_length(sub).to_numpy(zero_copy_only=False), np.int64)
    rest = pc.replace_substring_regex(sub, _NO_SPACE + "+", "")
    count = length - np.asarray(pc.utf8_length(rest).to_numpy(zero_copy_only=False), np.int64)
    out[rows] = (count > 0) & (count * 10 >= length * 3)
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
    if not cjk.any():
        words = shingle(arr, ngram, "word", seed)
        unit = np.where(words.tokens > 0, 1, 0).astype(np.uint8)
        return words, unit
    n = len(arr)
    idx = np.flatnonzero(cjk)
    widx = np.flatnonzero(~cjk)
    words = shingle(arr.take(pa.array(widx)), ngram, "word", seed)
    chars = shingle(arr.take(pa.array(idx)), ngram, "char", seed)
    wrow, crow = widx[words.row], idx[chars.row]
    # merge the two row-sorted parts (their rows are disjoint): each element moves right by the
    # number of the other part's elements in earlier rows (what a stable sort by row would do)
    wcount = np.bincount(wrow, minlength=n)
    ccount = np.bincount(crow, minlength=n)
    row = np.repeat(np.arange(n, dtype=np.int64), wcount + ccount)
    hashes = np.empty(len(row), U64)
    hashes[np.arange(len(wrow)) + (np.cumsum(ccount) - ccount)[wrow]] = words.hashes
    hashes[np.arange(len(crow)) + (np.cumsum(wcount) - wcount)[crow]] = chars.hashes
    tokens = np.zeros(n, np.int64)
    tokens[widx] = words.tokens
    tokens[idx] = chars.tokens
    out = Shingles(n, row, hashes, tokens)
    unit = np.where(tokens > 0, np.where(cjk, 2, 1), 0).astype(np.uint8)
    return out, unit

"""LEAK001's broadcast join: the eval side indexed once, the reference (train) side streamed.

An eval split is small and train is huge, so LEAK001 keeps no train row it does not match:
:func:`build_index` indexes the eval rows (exact keys, LSH band buckets, signatures and shingle
sets to verify with) from a prepass; :func:`probe` matches one train batch against it; the
matches (:class:`Matches`, numpy and Arrow arrays) merge in any order to the same value.

The near-copy cap of the in-process search (:func:`dataaudit.sketches.lsh.cross_candidates`:
each eval row meets at most ``CAP`` train rows per band bucket, the smallest rows) is kept as a
mergeable top-``CAP`` per bucket: a batch's rows that do not enter a bucket's top are never
verified, and a verified pair is dropped once its train row has left the top of every bucket
it shared with its eval row. Rows enter and leave the top by row number only, so the result is
the in-process one whatever the batches, workers or merge order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from ...sketches.lsh import signature_keys
from ...sketches.minhash import ShingleSets, empty_rows, jaccard_estimate, pair_jaccard

__all__ = ["CAP", "EvalIndex", "Matches", "band_matrix", "build_index", "merge_matches", "probe"]

CAP = 10  #: train rows per eval band bucket, as cross_candidates' max_per_bucket
#: bits of a row number in a (bucket, row) key: 2.7e11 rows a split; buckets < 2**26
ROW_BITS = 38
MAX_BUCKETS = 1 << (64 - ROW_BITS)
_I64 = np.int64
_U64 = np.uint64


@dataclass
class EvalIndex:
    """One eval split, ready to be probed (picklable: it is broadcast to the workers)."""

    rows: np.ndarray  # int64 row numbers, ascending; a position in them is an "eval position"
    hash: np.ndarray  # uint64 exact keys (0: never a copy)
    sig: np.ndarray  # uint32 (rows, num_perm)
    sets: ShingleSets | None  # sorted, distinct (verify="exact"), else None
    bands: int
    rows_per_band: int
    exact_keys: np.ndarray  # uint64 distinct nonzero keys, ascending
    exact_first: np.ndarray  # int64: the first eval position holding each key
    band_keys: list[np.ndarray]  # per band: the distinct band keys of eval rows, ascending
    band_seen: list[np.ndarray]  # per band: a bitmap of the keys' top bits (most misses stop)
    shift: int  # the bits a key is shifted right by to index band_seen
    band_start: np.ndarray  # int64 (bands + 1): global bucket id of each band's first key
    members: np.ndarray  # int64 eval positions, bucket by bucket, ascending in each
    member_start: np.ndarray  # int64 (buckets + 1): CSR offsets into members
    buckets_of: np.ndarray  # int32 (eval rows, bands): each row's bucket, -1 (no shingle)

    def __len__(self) -> int:
        return len(self.rows)


def band_matrix(sig: np.ndarray, bands: int, rows_per_band: int) -> np.ndarray:
    """(rows, bands) uint64: each row's band keys (compiled; the prepass computes them where
    the batch is, so the process that builds the index runs no compiled kernel)."""
    out = np.empty((len(sig), bands), _U64)
    for band in range(bands):
        out[:, band] = signature_keys(sig, band * rows_per_band, (band + 1) * rows_per_band)
    return out


def build_index(
    rows: np.ndarray,
    hashes: np.ndarray,
    sig: np.ndarray,
    sets: ShingleSets | None,
    bands: int,
    rows_per_band: int,
    keys: np.ndarray | None = None,
) -> EvalIndex:
    """The index of one eval split's rows (any order: they are sorted by row here); ``keys``:
    their :func:`band_matrix`, if computed already."""
    order = np.argsort(np.asarray(rows, _I64), kind="stable")
    in_order = bool(np.all(order == np.arange(len(order))))
    rows = np.asarray(rows, _I64)[order]
    hashes = np.asarray(hashes, np.uint64)[order]
    sig = np.ascontiguousarray(np.asarray(sig, np.uint32)[order])
    if sets is not None and not (in_order and sets.distinct):
        sets = sets.sorted(order.astype(_I64))
    keys = band_matrix(sig, bands, rows_per_band) if keys is None else keys[order]
    n = len(rows)
    # exact: each distinct nonzero key and its first eval position
    eo = np.lexsort((np.arange(n), hashes))
    eh = hashes[eo]
    first = np.ones(n, bool)
    first[1:] = eh[1:] != eh[:-1]
    keep = first & (eh != 0)
    exact_keys, exact_first = eh[keep], eo[keep].astype(_I64)
    # near: per band, its distinct keys are buckets; a bucket lists its eval positions
    valid = np.flatnonzero(~empty_rows(sig)) if n else np.zeros(0, _I64)
    buckets_of = np.full((n, bands), -1, np.int32)
    band_keys, members, sizes = [], [], []
    band_start = np.zeros(bands + 1, _I64)
    bits = int(min(24, max(8, np.ceil(np.log2(len(valid) * 16 + 1)))))  # ~1/16 of it set
    shift, band_seen = 64 - bits, []
    for band in range(bands):
        distinct, inverse = np.unique(keys[valid, band], return_inverse=True)
        band_keys.append(distinct)
        seen = np.zeros(1 << bits, bool)
        seen[(distinct >> np.uint64(shift)).astype(_I64)] = True
        band_seen.append(np.packbits(seen, bitorder="little"))  # 2 bytes a row and band
        band_start[band + 1] = band_start[band] + len(distinct)
        buckets_of[valid, band] = band_start[band] + inverse
        o = np.lexsort((valid, inverse))
        members.append(valid[o])
        sizes.append(np.bincount(inverse, minlength=len(distinct)))
    if band_start[-1] >= MAX_BUCKETS:
        raise ValueError(f"{int(band_start[-1])} band buckets: at most {MAX_BUCKETS}")
    member_start = np.zeros(int(band_start[-1]) + 1, _I64)
    if sizes:
        np.cumsum(np.concatenate(sizes), out=member_start[1:])
    return EvalIndex(
        rows,
        hashes,
        sig,
        sets,
        bands,
        rows_per_band,
        exact_keys,
        exact_first,
        band_keys,
        band_seen,
        shift,
        band_start,
        np.concatenate(members) if members else np.zeros(0, _I64),
        member_start,
        buckets_of,
    )


def _no_strings(n: int = 0) -> pa.Array:
    return pa.nulls(n, pa.large_string())


@dataclass
class Matches:
    """What a reference split matched of one eval index: every exact copy, the near copies of
    the capped candidates, and the ids and snippets the report shows of them."""

    # every exact pair (ref row, the key's first eval position, id), in chunks: they only add
    # up (a train split of copies of one eval row is all flagged), so they are not re-sorted
    # batch by batch; exact() joins them in row order
    ex_r: list[np.ndarray] = field(default_factory=list)
    ex_e: list[np.ndarray] = field(default_factory=list)
    ex_id: list[pa.Array] = field(default_factory=list)
    # each eval key's smallest ref row and its snippet (the finding's example)
    best_e: np.ndarray = field(default_factory=lambda: np.zeros(0, _I64))
    best_r: np.ndarray = field(default_factory=lambda: np.zeros(0, _I64))
    best_snip: pa.Array = field(default_factory=_no_strings)
    # the top-CAP ref rows of each bucket: (bucket << ROW_BITS) | row, ascending
    top: np.ndarray = field(default_factory=lambda: np.zeros(0, _U64))
    # verified near pairs at or above the threshold, by (ref row, eval pos)
    nr_r: np.ndarray = field(default_factory=lambda: np.zeros(0, _I64))
    nr_e: np.ndarray = field(default_factory=lambda: np.zeros(0, _I64))
    nr_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    nr_bk: np.ndarray | None = None  # int32 (pairs, bands): the eval row's buckets
    nr_id: pa.Array = field(default_factory=_no_strings)
    nr_snip: pa.Array = field(default_factory=_no_strings)

    def nbytes(self) -> int:
        """Bytes held (what a test checks does not grow with unmatched train rows)."""
        arrays = [*self.ex_r, *self.ex_e, self.best_e, self.best_r, self.top]
        arrays += [self.nr_r, self.nr_e, self.nr_s]
        total = sum(a.nbytes for a in arrays) + (0 if self.nr_bk is None else self.nr_bk.nbytes)
        strings = [*self.ex_id, self.best_snip, self.nr_id, self.nr_snip]
        return total + sum(a.nbytes for a in strings)

    @property
    def top_b(self) -> np.ndarray:
        return (self.top >> _U64(ROW_BITS)).astype(_I64)

    @property
    def top_r(self) -> np.ndarray:
        return (self.top & _U64((1 << ROW_BITS) - 1)).astype(_I64)

    def exact(self) -> tuple[np.ndarray, np.ndarray, pa.Array]:
        """The exact pairs by ref row: rows, eval positions, ids."""
        r = np.concatenate(self.ex_r) if self.ex_r else np.zeros(0, _I64)
        e = np.concatenate(self.ex_e) if self.ex_e else np.zeros(0, _I64)
        ids = pa.concat_arrays(self.ex_id) if self.ex_id else _no_strings()
        o = np.argsort(r, kind="stable")
        return r[o], e[o], _take(ids, o)


def _take(arr: pa.Array, idx: np.ndarray) -> pa.Array:
    return arr.take(positions(idx))


def positions(idx: np.ndarray) -> pa.Array:
    """Int64 positions as Arrow from their buffer (``pa.array(ndarray)`` imports pandas)."""
    idx = np.ascontiguousarray(idx, _I64)
    return pa.Array.from_buffers(pa.int64(), len(idx), [None, pa.py_buffer(idx)])


def _cat(a: pa.Array, b: pa.Array) -> pa.Array:
    return pa.concat_arrays([a.cast(pa.large_string()), b.cast(pa.large_string())])


def _key(b: np.ndarray, r: np.ndarray) -> np.ndarray:
    """(bucket, row) as one sortable uint64."""
    if len(r) and int(r.max()) >> ROW_BITS:
        raise ValueError(f"LEAK001: row {int(r.max())} is past the {ROW_BITS}-bit row numbers")
    return (np.asarray(b, _I64).astype(_U64) << _U64(ROW_BITS)) | np.asarray(r, _I64).astype(_U64)


def _in_top_mask(keys: np.ndarray) -> np.ndarray:
    """Of sorted (bucket, row) keys, those among the CAP smallest rows of their bucket."""
    b = keys >> _U64(ROW_BITS)
    new = np.ones(len(keys), bool)
    new[1:] = b[1:] != b[:-1]
    at = np.arange(len(keys))
    return at - np.maximum.accumulate(np.where(new, at, 0)) < CAP


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The positions ``lo[i] .. hi[i] - 1`` of every range, concatenated."""
    counts = hi - lo
    starts = np.cumsum(counts) - counts
    return np.repeat(lo, counts) + (
        np.arange(int(counts.sum()), dtype=_I64) - np.repeat(starts, counts)
    )


def _union(top: np.ndarray, more: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tops of two sorted key arrays (``more`` the smaller), which of ``more`` stay, and
    the keys of both that are not in the tops (rows pushed out, or never in). Only the buckets
    ``more`` touches are recomputed and the rest of ``top`` is copied as it is: a batch costs
    its own size and one copy of ``top``, not a pass of sorts and scans over every bucket
    (at 900k train rows against 100k eval rows that pass was most of LEAK001's time)."""
    if not len(more):
        return top, np.zeros(0, bool), more
    shift = _U64(ROW_BITS)
    b = more >> shift  # ascending
    first = np.ones(len(b), bool)
    first[1:] = b[1:] != b[:-1]
    buckets = b[first]
    # each touched bucket's entries in top: from its first key, at most CAP of them
    lo = np.searchsorted(top, buckets << shift)
    win = lo[:, None] + np.arange(CAP)
    inside = win < len(top)
    window = top[np.minimum(win, max(len(top) - 1, 0))] >> shift if len(top) else win
    count = ((window == buckets[:, None]) & inside).sum(axis=1)
    at = _ranges(lo, lo + count)
    old = top[at]
    pos = np.searchsorted(old, more)
    both = np.insert(old, pos, more)
    keep = _in_top_mask(both)
    fresh = both[keep]
    rest = np.delete(top, at) if len(at) else top
    # where each bucket's entries go in ``rest``: its first position less the entries removed
    # before it (no search of the whole array)
    slot = lo - (np.cumsum(count) - count)
    out = np.insert(rest, slot[np.searchsorted(buckets, fresh >> shift)], fresh)
    return out, keep[pos + np.arange(len(more))], both[~keep]


def _alive(m: Matches, pairs: np.ndarray) -> np.ndarray:
    """Of the near pairs at ``pairs``, those whose ref row is still in the top of a bucket
    it shares with the eval row."""
    keep = np.zeros(len(pairs), bool)
    if m.nr_bk is None or not len(keep) or not len(m.top):
        return keep
    rows = m.nr_r[pairs]
    for band in range(m.nr_bk.shape[1]):
        bk = m.nr_bk[pairs, band].astype(_I64)
        q = _key(np.maximum(bk, 0), rows)
        at = np.minimum(np.searchsorted(m.top, q), len(m.top) - 1)
        keep |= (bk >= 0) & (m.top[at] == q)
    return keep


def merge_matches(
    a: Matches, b: Matches, union: tuple[np.ndarray, np.ndarray] | None = None
) -> Matches:
    """The matches of both shards' rows: the same whatever the order or the grouping.
    ``union``: the tops' union and its dropped keys, when the caller has them (:func:`probe`
    computed them to choose the batch's entries, and they are what merging would compute)."""
    # exact: every pair; per key, the smallest ref row's snippet
    best_e = np.concatenate([a.best_e, b.best_e])
    best_r = np.concatenate([a.best_r, b.best_r])
    bo = np.lexsort((best_r, best_e))
    first = np.ones(len(bo), bool)
    first[1:] = best_e[bo][1:] != best_e[bo][:-1]
    bo = bo[first]
    # near: the buckets' tops, then the pairs still in one
    if union is None:
        small, large = (a.top, b.top) if len(a.top) <= len(b.top) else (b.top, a.top)
        top, _, dropped = _union(large, small)
    else:
        top, dropped = union
    bk = [x.nr_bk for x in (a, b) if x.nr_bk is not None]
    out = Matches(
        a.ex_r + b.ex_r,
        a.ex_e + b.ex_e,
        a.ex_id + b.ex_id,
        best_e[bo],
        best_r[bo],
        _take(_cat(a.best_snip, b.best_snip), bo),
        top,
        np.concatenate([a.nr_r, b.nr_r]),
        np.concatenate([a.nr_e, b.nr_e]),
        np.concatenate([a.nr_s, b.nr_s]),
        np.concatenate(bk) if bk else None,
        _cat(a.nr_id, b.nr_id),
        _cat(a.nr_snip, b.nr_snip),
    )
    # a pair leaves only with a row pushed out of a top
    return _prune(out, dropped)


def _prune(m: Matches, dropped: np.ndarray) -> Matches:
    """Drop the near pairs no bucket's top supports any more (only pairs of a row with a
    ``dropped`` key can be among them: both sides' pairs were supported by their own tops);
    pairs by (ref row, eval pos), sorted only if the two sides interleave."""
    r, e = m.nr_r, m.nr_e
    keep = np.ones(len(r), bool)
    if len(dropped) and len(r):
        gone = np.unique((dropped & _U64((1 << ROW_BITS) - 1)).astype(_I64))
        at = np.minimum(np.searchsorted(gone, r), len(gone) - 1)
        risk = np.flatnonzero(gone[at] == r)
        keep[risk] = _alive(m, risk)
    ordered = bool(np.all((r[1:] > r[:-1]) | ((r[1:] == r[:-1]) & (e[1:] >= e[:-1]))))
    if ordered and keep.all():
        return m
    idx = np.flatnonzero(keep)
    if not ordered:
        idx = idx[np.lexsort((e[idx], r[idx]))]
    m.nr_r, m.nr_e, m.nr_s = r[idx], e[idx], m.nr_s[idx]
    m.nr_bk = None if m.nr_bk is None else m.nr_bk[idx]
    m.nr_id, m.nr_snip = _take(m.nr_id, idx), _take(m.nr_snip, idx)
    return m


def probe(
    index: EvalIndex,
    current: Matches,
    rows: np.ndarray,
    hashes: np.ndarray,
    sig: np.ndarray,
    sets: ShingleSets | None,
    ids: pa.Array | None,
    snips: pa.Array,
    threshold: float,
) -> Matches:
    """One reference batch (row numbers ``rows``, their keys, signatures, sets, ids and
    snippets) against the index: ``current`` (the matches so far) merged with the batch's."""
    rows = np.asarray(rows, _I64)
    n = len(rows)
    ids = _no_strings(n) if ids is None else ids.cast(pa.large_string())
    snips = snips.cast(pa.large_string())
    part = Matches()
    # exact: each row whose key an eval row holds, with the first such eval position
    hashes = np.asarray(hashes, np.uint64)
    if len(index.exact_keys) and n:
        at = np.minimum(np.searchsorted(index.exact_keys, hashes), len(index.exact_keys) - 1)
        hit = np.flatnonzero((index.exact_keys[at] == hashes) & (hashes != 0))
        ex_r, ex_e = rows[hit], index.exact_first[at[hit]]
        if len(hit):
            part.ex_r, part.ex_e, part.ex_id = [ex_r], [ex_e], [_take(ids, hit)]
        o = np.lexsort((ex_r, ex_e))
        first = np.ones(len(o), bool)
        first[1:] = ex_e[o][1:] != ex_e[o][:-1]
        o = o[first]
        part.best_e, part.best_r = ex_e[o], ex_r[o]
        part.best_snip = _take(snips, hit[o])
    # near: the batch's rows in eval buckets, kept where they enter a bucket's top
    valid = np.flatnonzero(~empty_rows(sig)) if n and len(index.members) else np.zeros(0, _I64)
    got_b, got_p = [], []
    union: tuple[np.ndarray, np.ndarray] | None = None
    for band in range(index.bands if len(valid) else 0):
        keys = signature_keys(
            sig, band * index.rows_per_band, (band + 1) * index.rows_per_band, valid
        )
        bk = index.band_keys[band]
        if not len(bk):
            continue
        top = (keys >> np.uint64(index.shift)).astype(_I64)
        maybe = np.flatnonzero((index.band_seen[band][top >> 3] >> (top & 7).astype(np.uint8)) & 1)
        at = np.minimum(np.searchsorted(bk, keys[maybe]), len(bk) - 1)
        hit = bk[at] == keys[maybe]
        got_b.append(index.band_start[band] + at[hit])
        got_p.append(valid[maybe[hit]])
    if got_b:
        gb, gp = np.concatenate(got_b), np.concatenate(got_p)
        key = _key(gb, rows[gp])
        o = np.argsort(key)
        o = o[_in_top_mask(key[o])]
        # the batch's entries that stay in the tops with the rows seen so far; the union of
        # the tops is the merged state's (entries that do not stay change no bucket's top)
        top, stay, dropped = _union(current.top, key[o])
        union = (top, dropped)
        o = o[stay]
        gb, gp = gb[o], gp[o]
        part.top = key[o]
        # candidate pairs: each kept (bucket, row) with every eval row of the bucket
        lo, hi = index.member_start[gb], index.member_start[gb + 1]
        cp = np.repeat(gp, hi - lo)
        ce = index.members[_ranges(lo, hi)]
        o = np.lexsort((ce, cp))
        cp, ce = cp[o], ce[o]
        first = np.ones(len(o), bool)
        first[1:] = (cp[1:] != cp[:-1]) | (ce[1:] != ce[:-1])
        cp, ce = cp[first], ce[first]
        sim = _verify(index, sig, sets, cp, ce, threshold)
        ok = sim >= threshold
        cp, ce = cp[ok], ce[ok]
        part.nr_r, part.nr_e, part.nr_s = rows[cp], ce, np.asarray(sim[ok], float)
        part.nr_bk = index.buckets_of[ce]
        part.nr_id, part.nr_snip = _take(ids, cp), _take(snips, cp)
    return merge_matches(current, part, union)


def _verify(
    index: EvalIndex,
    sig: np.ndarray,
    sets: ShingleSets | None,
    cp: np.ndarray,
    ce: np.ndarray,
    threshold: float,
) -> np.ndarray:
    """Similarity of the pairs (batch position, eval position): exact Jaccard when both sides
    have shingle sets (the in-process search's pair_jaccard, same pruning), else the estimate."""
    if not len(cp):
        return np.zeros(0)
    if sets is None or index.sets is None:
        return np.asarray(jaccard_estimate(sig[cp], index.sig[ce]), float)
    rp, ip = np.unique(cp, return_inverse=True)
    re, ie = np.unique(ce, return_inverse=True)
    both = ShingleSets.concat([sets.sorted(rp), index.sets.sorted(re)])
    both_sig = np.concatenate([sig[rp], index.sig[re]])
    i = ip.astype(_I64)
    j = (ie + len(rp)).astype(_I64)
    return pair_jaccard(both, i, j, signatures=both_sig, threshold=threshold)

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
from typing import Any

import numpy as np
import pyarrow as pa

from ..._arrow import indices
from ...sketches.lsh import band_matrix, signature_keys
from ...sketches.minhash import ShingleSets, empty_rows, jaccard_estimate, pair_jaccard

__all__ = [
    "CAP",
    "Best",
    "EvalIndex",
    "Matches",
    "Pairs",
    "build_index",
    "merge_matches",
    "probe",
]

CAP = 10  #: train rows per eval band bucket, as cross_candidates' max_per_bucket
#: bits of a row number in a (bucket, row) key: 2.7e11 rows a split; buckets < 2**26
ROW_BITS = 38
MAX_BUCKETS = 1 << (64 - ROW_BITS)
_I64 = np.int64
_U64 = np.uint64
_ROW_MASK = _U64((1 << ROW_BITS) - 1)  # a key's row bits


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
    their band keys (``sketches.lsh.band_matrix``), if computed already."""
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


def _strings(parts: list[pa.Array]) -> pa.Array:
    if len(parts) == 1:
        return parts[0].cast(pa.large_string())
    return pa.concat_arrays([p.cast(pa.large_string()) for p in parts]) if parts else _no_strings()


@dataclass
class Pairs:
    """Verified near pairs at or above the threshold, by (ref row, eval pos): one batch's, or
    the join of several."""

    r: np.ndarray  # int64 ref rows
    e: np.ndarray  # int64 eval positions
    s: np.ndarray  # float similarities
    bk: np.ndarray  # int32 (pairs, bands): the eval row's buckets
    id: pa.Array  # large_string
    snip: pa.Array  # large_string

    def __len__(self) -> int:
        return len(self.r)

    def nbytes(self) -> int:
        arrays = (self.r, self.e, self.s, self.bk, self.id, self.snip)
        return sum(a.nbytes for a in arrays)

    def take(self, idx: np.ndarray) -> Pairs:
        return Pairs(
            self.r[idx],
            self.e[idx],
            self.s[idx],
            self.bk[idx],
            _take(self.id, idx),
            _take(self.snip, idx),
        )

    def in_order(self) -> Pairs:
        """The pairs by (ref row, eval pos) (a batch's rows usually are already)."""
        r, e = self.r, self.e
        if bool(np.all((r[1:] > r[:-1]) | ((r[1:] == r[:-1]) & (e[1:] > e[:-1])))):
            return self
        return self.take(np.lexsort((e, r)))

    @staticmethod
    def join(chunks: list[Pairs]) -> Pairs:
        """The chunks (each in order) as one, in order: concatenated, and sorted only if two
        of them interleave (chunks of a sequential scan follow each other)."""
        if len(chunks) == 1:
            return chunks[0]
        joined = Pairs(
            np.concatenate([c.r for c in chunks]),
            np.concatenate([c.e for c in chunks]),
            np.concatenate([c.s for c in chunks]),
            np.concatenate([c.bk for c in chunks]),
            _strings([c.id for c in chunks]),
            _strings([c.snip for c in chunks]),
        )
        ends = [(int(c.r[-1]), int(c.e[-1])) for c in chunks]
        starts = [(int(c.r[0]), int(c.e[0])) for c in chunks]
        if all(end < start for end, start in zip(ends, starts[1:])):
            return joined
        return joined.take(np.lexsort((joined.e, joined.r)))


@dataclass
class Best:
    """Per eval key (its first eval position, ascending), the smallest ref row holding it and
    that row's snippet (the finding's example)."""

    e: np.ndarray  # int64 eval positions
    r: np.ndarray  # int64 ref rows
    snip: pa.Array  # large_string

    def __len__(self) -> int:
        return len(self.e)

    def take(self, idx: np.ndarray) -> Best:
        return Best(self.e[idx], self.r[idx], _take(self.snip, idx))

    @staticmethod
    def join(chunks: list[Best]) -> Best:
        """The chunks (keys distinct across them) as one, by eval position."""
        if len(chunks) == 1:
            return chunks[0]
        e = np.concatenate([c.e for c in chunks])
        joined = Best(e, np.concatenate([c.r for c in chunks]), _strings([c.snip for c in chunks]))
        return joined.take(np.argsort(e, kind="stable"))


@dataclass
class Matches:
    """What a reference split matched of one eval index: every exact copy, the near copies of
    the capped candidates, and the ids and snippets the report shows of them.

    What grows with the reference split is kept in chunks a batch appends to (the exact pairs,
    the tops' entries, the near pairs), joined once when read: a batch costs its own size, not
    a copy of everything matched before it (which made a long scan quadratic in its matches).
    """

    # every exact pair (ref row, the key's first eval position, id), in chunks: they only add
    # up (a train split of copies of one eval row is all flagged), so they are not re-sorted
    # batch by batch; exact() joins them in row order
    ex_r: list[np.ndarray] = field(default_factory=list)
    ex_e: list[np.ndarray] = field(default_factory=list)
    ex_id: list[pa.Array] = field(default_factory=list)
    # each eval key's smallest ref row and its snippet, in chunks of keys not held before
    # (a batch after the rows held adds only its new keys); which keys are held (a bitmap by
    # eval position) and the smallest and largest row among them
    bests: list[Best] = field(default_factory=list)
    best_seen: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    best_lo: int = 1 << ROW_BITS
    best_hi: int = -1
    # the top-CAP ref rows of each bucket as (bucket << ROW_BITS) | row keys, in chunks of
    # ascending keys (a batch whose rows all come after the rows held only fills the buckets'
    # room, so its entries are a chunk of their own); ``top`` joins them
    tops: list[np.ndarray] = field(default_factory=list)
    fill: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))  # entries a bucket
    lo: int = 1 << ROW_BITS  # the smallest ref row in the tops
    hi: int = -1  # the largest
    # verified near pairs whose ref row is in the top of a bucket shared with the eval row
    near: list[Pairs] = field(default_factory=list)

    def nbytes(self) -> int:
        """Bytes held (what a test checks does not grow with unmatched train rows)."""
        arrays = [*self.ex_r, *self.ex_e, self.best_seen, *self.tops, self.fill]
        arrays += [a for b in self.bests for a in (b.e, b.r, b.snip)]
        total = sum(a.nbytes for a in arrays) + sum(p.nbytes() for p in self.near)
        return total + sum(a.nbytes for a in self.ex_id)

    def best(self) -> Best:
        """Each eval key's smallest ref row and its snippet, joined once (as ``top``)."""
        if len(self.bests) > 1:
            self.bests = [Best.join(self.bests)]
        return (
            self.bests[0]
            if self.bests
            else Best(np.zeros(0, _I64), np.zeros(0, _I64), _no_strings())
        )

    @property
    def best_e(self) -> np.ndarray:
        return self.best().e

    @property
    def best_r(self) -> np.ndarray:
        return self.best().r

    @property
    def best_snip(self) -> pa.Array:
        return self.best().snip

    @property
    def top(self) -> np.ndarray:
        """The tops' entries, ascending (joined once: the chunks are replaced by the join)."""
        if len(self.tops) > 1:
            self.tops = [np.sort(np.concatenate(self.tops))]
        return self.tops[0] if self.tops else np.zeros(0, _U64)

    @property
    def top_b(self) -> np.ndarray:
        return (self.top >> _U64(ROW_BITS)).astype(_I64)

    @property
    def top_r(self) -> np.ndarray:
        return (self.top & _ROW_MASK).astype(_I64)

    def pairs(self) -> Pairs | None:
        """The near pairs by (ref row, eval pos), joined once (as ``top``)."""
        if len(self.near) > 1:
            self.near = [Pairs.join(self.near)]
        return self.near[0] if self.near else None

    @property
    def nr_r(self) -> np.ndarray:
        p = self.pairs()
        return np.zeros(0, _I64) if p is None else p.r

    @property
    def nr_e(self) -> np.ndarray:
        p = self.pairs()
        return np.zeros(0, _I64) if p is None else p.e

    @property
    def nr_s(self) -> np.ndarray:
        p = self.pairs()
        return np.zeros(0) if p is None else p.s

    @property
    def nr_id(self) -> pa.Array:
        p = self.pairs()
        return _no_strings() if p is None else p.id

    @property
    def nr_snip(self) -> pa.Array:
        p = self.pairs()
        return _no_strings() if p is None else p.snip

    def exact(self) -> tuple[np.ndarray, np.ndarray, pa.Array]:
        """The exact pairs by ref row: rows, eval positions, ids."""
        r = np.concatenate(self.ex_r) if self.ex_r else np.zeros(0, _I64)
        e = np.concatenate(self.ex_e) if self.ex_e else np.zeros(0, _I64)
        ids = pa.concat_arrays(self.ex_id) if self.ex_id else _no_strings()
        o = np.argsort(r, kind="stable")
        return r[o], e[o], _take(ids, o)


def _take(arr: pa.Array, idx: np.ndarray) -> pa.Array:
    return arr.take(indices(idx))


def _key(b: np.ndarray, r: np.ndarray) -> np.ndarray:
    """(bucket, row) as one sortable uint64."""
    if len(r) and int(r.max()) >> ROW_BITS:
        raise ValueError(f"LEAK001: row {int(r.max())} is past the {ROW_BITS}-bit row numbers")
    return (np.asarray(b, _I64).astype(_U64) << _U64(ROW_BITS)) | np.asarray(r, _I64).astype(_U64)


def _ranks(keys: np.ndarray) -> np.ndarray:
    """Of sorted (bucket, row) keys, each one's place in its bucket (0: its smallest row)."""
    b = keys >> _U64(ROW_BITS)
    new = np.ones(len(keys), bool)
    new[1:] = b[1:] != b[:-1]
    at = np.arange(len(keys))
    return at - np.maximum.accumulate(np.where(new, at, 0))


def _in_top_mask(keys: np.ndarray) -> np.ndarray:
    """Of sorted (bucket, row) keys, those among the CAP smallest rows of their bucket."""
    return _ranks(keys) < CAP


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
    ``more`` touches are recomputed and the rest of ``top`` is copied as it is (the merge of
    two sides whose rows interleave: a sequential scan's batches take :func:`_tops`' append)."""
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


@dataclass
class _Tops:
    """The tops of a merge: the state's fields, which of the added keys stay, the keys that
    left or never entered (``dropped``), the sorted keys a pair of a row with a dropped key is
    checked against (``support``), and whether the added rows all came after the held ones."""

    tops: list[np.ndarray]
    fill: np.ndarray
    lo: int
    hi: int
    stay: np.ndarray
    dropped: np.ndarray
    support: np.ndarray
    after: bool


def _counted(fill: np.ndarray, buckets: np.ndarray) -> np.ndarray:
    """``fill`` plus one entry for each of the ascending ``buckets`` (a new array)."""
    out = np.zeros(max(len(fill), int(buckets[-1]) + 1 if len(buckets) else 0), np.uint8)
    out[: len(fill)] = fill
    if len(buckets):
        first = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
        out[buckets[first]] += np.diff(np.r_[first, len(buckets)]).astype(np.uint8)
    return out


def _whole(top: np.ndarray, fill_len: int) -> tuple[list[np.ndarray], np.ndarray, int, int]:
    """A joined top as the state's fields: its one chunk, fill and row range."""
    if not len(top):
        return [], np.zeros(fill_len, np.uint8), 1 << ROW_BITS, -1
    rows = top & _ROW_MASK
    fill = _counted(np.zeros(fill_len, np.uint8), (top >> _U64(ROW_BITS)).astype(np.intp))
    return [top], fill, int(rows.min()), int(rows.max())


def _tops(m: Matches, more: np.ndarray) -> _Tops:
    """``m``'s tops with the ascending keys ``more`` (at most CAP a bucket). When every row of
    ``more`` comes after ``m``'s (a sequential scan's next batch, or the next shard), none of
    ``m``'s entries leaves: ``more``'s enter while their bucket has room and are appended as a
    chunk. Otherwise the tops are joined and recomputed where ``more`` touches them."""
    none = np.zeros(0, bool)
    if not len(more):
        return _Tops(m.tops, m.fill, m.lo, m.hi, none, more, more, True)
    rows = more & _ROW_MASK
    if m.hi < int(rows.min()):
        b = (more >> _U64(ROW_BITS)).astype(np.intp)
        have = np.zeros(len(b), _I64)
        inside = b < len(m.fill)
        have[inside] = m.fill[b[inside]]
        stay = _ranks(more) + have < CAP
        kept = more[stay]
        if not len(kept):
            return _Tops(m.tops, m.fill, m.lo, m.hi, stay, more, kept, True)
        fill, kr = _counted(m.fill, b[stay]), rows[stay]
        lo, hi = min(m.lo, int(kr.min())), max(m.hi, int(kr.max()))
        return _Tops([*m.tops, kept], fill, lo, hi, stay, more[~stay], kept, True)
    top, stay, dropped = _union(m.top, more)
    return _Tops(*_whole(top, len(m.fill)), stay, dropped, top, False)


def _alive(p: Pairs, idx: np.ndarray, support: np.ndarray) -> np.ndarray:
    """Of the near pairs at ``idx``, those whose ref row is in the top (``support``: sorted
    keys) of a bucket it shares with the eval row."""
    keep = np.zeros(len(idx), bool)
    if not len(idx) or not len(support):
        return keep
    rows = p.r[idx]
    for band in range(p.bk.shape[1]):
        bk = p.bk[idx, band].astype(_I64)
        q = _key(np.maximum(bk, 0), rows)
        at = np.minimum(np.searchsorted(support, q), len(support) - 1)
        keep |= (bk >= 0) & (support[at] == q)
    return keep


def _prune(p: Pairs | None, dropped: np.ndarray, support: np.ndarray) -> list[Pairs]:
    """``p`` (in order) without the pairs no bucket's top supports any more, as a list of
    chunks: only a row with a ``dropped`` key can have lost its support, and its pairs are
    found by searching ``p``'s rows for the dropped ones (not the other way round)."""
    if p is None or not len(p):
        return []
    if not len(dropped):
        return [p]
    gone = np.unique((dropped & _ROW_MASK).astype(_I64))
    risk = _ranges(np.searchsorted(p.r, gone), np.searchsorted(p.r, gone, "right"))
    if not len(risk):
        return [p]
    keep = np.ones(len(p), bool)
    keep[risk] = _alive(p, risk, support)
    if keep.all():
        return [p]
    kept = p.take(np.flatnonzero(keep))
    return [kept] if len(kept) else []


def _marked(seen: np.ndarray, at: np.ndarray) -> np.ndarray:
    """A copy of the bitmap ``seen`` (grown as needed) with the positions ``at`` set."""
    out = np.zeros(max(len(seen), int(at.max()) + 1 if len(at) else 0), bool)
    out[: len(seen)] = seen
    out[at] = True
    return out


def _best_fields(m: Matches) -> dict[str, Any]:
    return {"bests": m.bests, "best_seen": m.best_seen, "best_lo": m.best_lo, "best_hi": m.best_hi}


def _best(a: Matches, b: Matches) -> dict[str, Any]:
    """The best fields of both sides: per eval key, the smaller ref row and its snippet. When
    one side's rows all come after the other's, it adds only the keys the other lacks, as a
    chunk; otherwise both are joined and each key's smallest row picked."""
    if not b.bests or not a.bests:
        return _best_fields(a if a.bests else b)
    first, then = (b, a) if b.best_hi < a.best_lo else (a, b)
    if first.best_hi < then.best_lo:
        add = then.best()
        new = np.ones(len(add), bool)
        inside = add.e < len(first.best_seen)
        new[inside] = ~first.best_seen[add.e[inside]]
        if not new.any():
            return _best_fields(first)
        add = add if new.all() else add.take(np.flatnonzero(new))
        return {
            "bests": [*first.bests, add],
            "best_seen": _marked(first.best_seen, add.e),
            "best_lo": min(first.best_lo, int(add.r.min())),
            "best_hi": max(first.best_hi, int(add.r.max())),
        }
    x, y = a.best(), b.best()
    e, r = np.concatenate([x.e, y.e]), np.concatenate([x.r, y.r])
    o = np.lexsort((r, e))
    keep = np.ones(len(o), bool)
    keep[1:] = e[o][1:] != e[o][:-1]
    o = o[keep]
    best = Best(e[o], r[o], _take(_strings([x.snip, y.snip]), o))
    seen = _marked(np.zeros(max(len(a.best_seen), len(b.best_seen)), bool), best.e)
    return {
        "bests": [best],
        "best_seen": seen,
        "best_lo": int(best.r.min()),
        "best_hi": int(best.r.max()),
    }


def merge_matches(a: Matches, b: Matches) -> Matches:
    """The matches of both shards' rows: the same whatever the order or the grouping. When
    one side's rows all come after the other's (the engine merges shards in input order), the
    later side's entries and pairs are appended; otherwise both are joined and recomputed."""
    first, then = (b, a) if b.hi < a.lo and len(b.tops) else (a, b)
    t = _tops(first, then.top)
    if t.after:
        # the earlier side's entries all stay: only the later side's pairs can lose support
        near = first.near + _prune(then.pairs(), t.dropped, t.support)
    else:
        near = _prune(
            Pairs.join(a.near + b.near) if a.near or b.near else None, t.dropped, t.support
        )
    ex = (a.ex_r + b.ex_r, a.ex_e + b.ex_e, a.ex_id + b.ex_id)
    return Matches(*ex, **_best(a, b), tops=t.tops, fill=t.fill, lo=t.lo, hi=t.hi, near=near)


def _search(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``np.searchsorted(keys, queries)``, the queries looked up in ascending order: each
    search starts where the last one ended, in memory just read (2.3x faster than in row
    order on the band keys of bench_pack's 200k corpus, the argsort included)."""
    order = np.argsort(queries)
    out = np.empty(len(queries), np.intp)
    out[order] = np.searchsorted(keys, queries[order])
    return out


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
        at = np.minimum(_search(index.exact_keys, hashes), len(index.exact_keys) - 1)
        hit = np.flatnonzero((index.exact_keys[at] == hashes) & (hashes != 0))
        ex_r, ex_e = rows[hit], index.exact_first[at[hit]]
        if len(hit):
            part.ex_r, part.ex_e, part.ex_id = [ex_r], [ex_e], [_take(ids, hit)]
        o = np.lexsort((ex_r, ex_e))
        first = np.ones(len(o), bool)
        first[1:] = ex_e[o][1:] != ex_e[o][:-1]
        o = o[first]
        if len(o):
            best = Best(ex_e[o], ex_r[o], _take(snips, hit[o]))
            part.bests, part.best_seen = [best], _marked(np.zeros(0, bool), best.e)
            part.best_lo, part.best_hi = int(best.r.min()), int(best.r.max())
    # near: the batch's rows in eval buckets, kept where they enter a bucket's top
    valid = np.flatnonzero(~empty_rows(sig)) if n and len(index.members) else np.zeros(0, _I64)
    got_b, got_p = [], []
    for band in range(index.bands if len(valid) else 0):
        keys = signature_keys(
            sig, band * index.rows_per_band, (band + 1) * index.rows_per_band, valid
        )
        bk = index.band_keys[band]
        if not len(bk):
            continue
        top = (keys >> np.uint64(index.shift)).astype(_I64)
        maybe = np.flatnonzero((index.band_seen[band][top >> 3] >> (top & 7).astype(np.uint8)) & 1)
        at = np.minimum(_search(bk, keys[maybe]), len(bk) - 1)
        hit = bk[at] == keys[maybe]
        got_b.append(index.band_start[band] + at[hit])
        got_p.append(valid[maybe[hit]])
    gb = np.concatenate(got_b) if got_b else np.zeros(0, _I64)
    gp = np.concatenate(got_p) if got_p else np.zeros(0, _I64)
    key = _key(gb, rows[gp])
    o = np.argsort(key)
    o = o[_in_top_mask(key[o])]
    # the batch's entries that stay in the tops with the rows seen so far (entries that do not
    # stay change no bucket's top, and their rows are not compared through them)
    t = _tops(current, key[o])
    o = o[t.stay]
    gb, gp = gb[o], gp[o]
    # candidate pairs: each kept (bucket, row) with every eval row of the bucket
    lo, hi = index.member_start[gb], index.member_start[gb + 1]
    # as distinct (batch position, eval position) numbers, ascending: one sort of one int64
    # array (a lexsort of the two columns took twice as long)
    ne = _I64(max(len(index), 1))
    pair = np.unique(np.repeat(gp, hi - lo) * ne + index.members[_ranges(lo, hi)])
    cp, ce = pair // ne, pair % ne
    sim = _verify(index, sig, sets, cp, ce, threshold)
    ok = sim >= threshold
    cp, ce = cp[ok], ce[ok]
    # every pair of the batch has a bucket whose top its row stays in: only the pairs held
    # before can lose their support, and only when the batch's rows do not all come after
    held = current.near if t.after else _prune(current.pairs(), t.dropped, t.support)
    near = held
    if len(cp):
        p = Pairs(
            rows[cp],
            ce,
            np.asarray(sim[ok], float),
            index.buckets_of[ce],
            _take(ids, cp),
            _take(snips, cp),
        )
        near = [*held, p.in_order()]
    ex = (current.ex_r + part.ex_r, current.ex_e + part.ex_e, current.ex_id + part.ex_id)
    best = _best(current, part)
    return Matches(*ex, **best, tops=t.tops, fill=t.fill, lo=t.lo, hi=t.hi, near=near)


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

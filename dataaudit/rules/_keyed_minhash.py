"""MinHash rows through the engine's keyed stage (DUP002, LEAK001): one key per LSH band, and
each row's signature and shingle set as Arrow columns of its verification payload (stored once
per row, partitioned by row, joined to candidate pairs where they are verified)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .._compute import cast, take
from ..sketches.lsh import band_matrix
from ..sketches.minhash import ShingleSets

__all__ = ["band_rows", "bucket_pairs", "set_column", "sets_of", "sig_column", "signatures_of"]


def band_rows(
    sig: np.ndarray, idx: np.ndarray, bands: int, rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``idx`` and band: the band's key (:func:`signature_keys`, seeded by the band's
    first column, as the in-process LSH), the position in ``idx`` and the band index; rows
    first, bands inside (``len(idx) * bands`` each)."""
    n = len(idx)
    keys = band_matrix(sig, bands, rows, idx)
    at = np.repeat(np.arange(n, dtype=np.int64), bands)
    band = np.tile(np.arange(bands, dtype=np.uint8), n)
    return keys.reshape(-1), at, band


def bucket_pairs(
    new_bucket: np.ndarray, full: np.ndarray, band: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """Candidate pairs of LSH band buckets, as the in-process LSH takes them
    (:func:`dataaudit.sketches.lsh.near_duplicate_pairs`). The rows come in buckets (runs;
    ``new_bucket`` marks each run's first row), each in row order; ``full`` is the hash of a
    row's whole signature and ``band`` its band. Rows with identical signatures join the first
    of them unverified (from band 0 only, where every row is); the others chain to their
    bucket's first and previous one. Returns positions ``a``, ``b`` and how many leading pairs
    are those identical-signature copies."""
    n = len(full)
    bucket = np.cumsum(new_bucket) - 1
    pos = np.arange(n, dtype=np.int64)
    g = np.lexsort((pos, full, bucket))
    first = np.ones(n, bool)
    first[1:] = (bucket[g][1:] != bucket[g][:-1]) | (full[g][1:] != full[g][:-1])
    lead = g[np.maximum.accumulate(np.where(first, pos, 0))]
    copy, copy_of = g[~first], lead[~first]
    zero = band[copy] == 0
    rep = np.zeros(n, bool)
    rep[g[first]] = True
    reps = np.flatnonzero(rep)  # by bucket, then row
    start = np.ones(len(reps), bool)
    start[1:] = bucket[reps][1:] != bucket[reps][:-1]
    firsts = reps[np.maximum.accumulate(np.where(start, np.arange(len(reps)), 0))]
    m = np.flatnonzero(~start)
    a = np.concatenate([copy_of[zero], firsts[m], reps[m - 1]])
    b = np.concatenate([copy[zero], reps[m], reps[m]])
    return a, b, int(zero.sum())


def sig_column(sig: np.ndarray) -> pa.Array:
    """(n, k) uint32 signatures as one fixed-size binary value per row."""
    data = np.ascontiguousarray(sig, np.uint32)
    n, k = data.shape
    return pa.Array.from_buffers(
        pa.binary(4 * k), n, [None, pa.py_buffer(data.reshape(-1).view(np.uint8))]
    )


def signatures_of(col: pa.Array | pa.ChunkedArray, k: int) -> np.ndarray:
    """Back from :func:`sig_column`: (n, k) uint32."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    n = len(arr)
    if n == 0:
        return np.empty((0, k), np.uint32)
    width = arr.type.byte_width
    if width != 4 * k or arr.null_count:
        raise ValueError(f"a signature column of {width} bytes a row, expected {4 * k}")
    data = np.frombuffer(arr.buffers()[1], np.uint8, n * width, arr.offset * width)
    if data.ctypes.data % 4:
        data = data.copy()
    return data.view(np.uint32).reshape(n, k)


def set_column(sets: ShingleSets, idx: np.ndarray) -> pa.Array:
    """The shingle sets of rows ``idx`` as one binary value (their uint32 hashes) per row
    (every row's: the sets' buffers, not a copy)."""
    offsets = np.ascontiguousarray(sets.offsets, np.int64) * 4
    values = np.ascontiguousarray(sets.values, np.uint32).view(np.uint8)
    whole = pa.Array.from_buffers(
        pa.large_binary(),
        len(sets),
        [None, pa.py_buffer(offsets), pa.py_buffer(values)],
    )
    idx = np.asarray(idx, np.int64)
    if len(idx) == len(sets) and np.array_equal(idx, np.arange(len(sets))):
        return whole
    return take(whole, idx)


def sets_of(col: pa.Array | pa.ChunkedArray) -> ShingleSets:
    """Back from :func:`set_column`: the rows' sets (CSR, as :func:`shingle_sets` keeps them)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not pa.types.is_large_binary(arr.type):
        arr = cast(arr, pa.large_binary())
    n = len(arr)
    if n == 0:
        return ShingleSets(np.zeros(1, np.int64), np.zeros(0, np.uint32))
    offsets = np.frombuffer(arr.buffers()[1], np.int64, n + 1, arr.offset * 8)
    lo, hi = int(offsets[0]), int(offsets[-1])
    data = arr.buffers()[2]
    values = (
        np.frombuffer(data, np.uint8, hi - lo, lo).view(np.uint32)
        if hi > lo
        else np.zeros(0, np.uint32)
    )
    if values.ctypes.data % 4:  # the compiled merges want aligned values
        values = values.copy()
    return ShingleSets((offsets - lo) // 4, values)

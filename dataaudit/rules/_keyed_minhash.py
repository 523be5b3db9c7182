"""MinHash rows through the engine's keyed stage (DUP002, LEAK001): one key per LSH band, and
each row's signature and shingle set as Arrow columns of its verification payload (stored once
per row, partitioned by row, joined to candidate pairs where they are verified)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..sketches.lsh import signature_keys
from ..sketches.minhash import ShingleSets

__all__ = ["band_rows", "set_column", "sets_of", "sig_column", "signatures_of"]


def band_rows(
    sig: np.ndarray, idx: np.ndarray, bands: int, rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``idx`` and band: the band's key (:func:`signature_keys`, seeded by the band's
    first column, as the in-process LSH), the position in ``idx`` and the band index; rows
    first, bands inside (``len(idx) * bands`` each)."""
    n = len(idx)
    keys = np.empty((n, bands), np.uint64)
    for band in range(bands):
        keys[:, band] = signature_keys(sig, band * rows, (band + 1) * rows, idx)
    at = np.repeat(np.arange(n, dtype=np.int64), bands)
    band = np.tile(np.arange(bands, dtype=np.uint8), n)
    return keys.reshape(-1), at, band


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
    """The shingle sets of rows ``idx`` as one binary value (their uint32 hashes) per row."""
    offsets = np.ascontiguousarray(sets.offsets, np.int64) * 4
    values = np.ascontiguousarray(sets.values, np.uint32).view(np.uint8)
    whole = pa.Array.from_buffers(
        pa.large_binary(),
        len(sets),
        [None, pa.py_buffer(offsets), pa.py_buffer(values)],
    )
    return whole.take(pa.array(np.asarray(idx, np.int64)))


def sets_of(col: pa.Array | pa.ChunkedArray) -> ShingleSets:
    """Back from :func:`set_column`: the rows' sets (CSR, as :func:`shingle_sets` keeps them)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())
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

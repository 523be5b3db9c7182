"""Arrow arrays to numpy and back through their buffers.

pyarrow's own conversions (``Array.to_numpy``, ``np.asarray(array)``, ``pa.array(ndarray)``,
``pa.scalar``) import pandas on first use when it is installed: 0.35-0.7 s, more than the cheap
rules cost on a million rows. These read and build the buffers directly, so a scan that uses
only them never imports it.

Top level and importing nothing of dataaudit, so every layer shares one copy: the sketches
(which must not import ``features``) as well as the features, rules and report.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._compute import call, indices
from ._compute import take as _take

__all__ = [
    "bools",
    "fixed",
    "indices",
    "mask_array",
    "nulls_like",
    "nulls_to",
    "numeric_array",
    "one_chunk",
    "string_array",
    "string_parts",
    "strings",
    "take",
    "validity",
]

_LARGE_STRING = pa.large_string()


def one_chunk(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``arr`` as one Array: a ChunkedArray's only chunk as it is, its chunks combined if more
    (none: an empty array, as ``combine_chunks`` would give through ``pa.array([])``, which
    imports pandas)."""
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 0:
            return pa.nulls(0, arr.type)
        return arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    return arr


def _bits(buf: pa.Buffer, offset: int, n: int) -> np.ndarray:
    raw = np.frombuffer(buf, np.uint8)
    return np.unpackbits(raw, count=offset + n, bitorder="little")[offset:].view(bool)


def validity(arr: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """True where the value is not null; None when no value is null."""
    arr = one_chunk(arr)
    t = arr.type
    if pa.types.is_union(t) or pa.types.is_run_end_encoded(t):  # nulls are in their children
        valid = bools(call("is_valid", arr))
        return None if valid.all() else valid
    if not arr.null_count:
        return None
    if pa.types.is_null(t):
        return np.zeros(len(arr), bool)
    return _bits(arr.buffers()[0], arr.offset, len(arr))


def bools(arr: pa.Array | pa.ChunkedArray, null: bool = False) -> np.ndarray:
    """A boolean array as numpy bools, ``null`` where it is null."""
    arr = one_chunk(arr)
    n = len(arr)
    if pa.types.is_null(arr.type):
        return np.full(n, null, bool)
    if not pa.types.is_boolean(arr.type):
        raise TypeError(f"expected a boolean array, got {arr.type}")
    out = _bits(arr.buffers()[1], arr.offset, n) if n else np.zeros(0, bool)
    valid = validity(arr)
    if valid is not None:
        out = np.where(valid, out, null)
    return out


def fixed(arr: pa.Array | pa.ChunkedArray, null: int | float = 0) -> np.ndarray:
    """An integer or float array as numpy (a view when it has no nulls), ``null`` where null."""
    arr = one_chunk(arr)
    t = arr.type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
        raise TypeError(f"expected an integer or float array, got {t}")
    name = str(t)  # int8 ... uint64; float, double and halffloat for the floats
    dtype = np.dtype(
        {"float": "float32", "double": "float64", "halffloat": "float16"}.get(name, name)
    )
    n = len(arr)
    buf = arr.buffers()[1]
    out = np.frombuffer(buf, dtype)[arr.offset : arr.offset + n] if n else np.zeros(0, dtype)
    valid = validity(arr)
    if valid is not None:
        out = np.where(valid, out, np.asarray(null, dtype))
    return out


def mask_array(mask: np.ndarray) -> pa.Array:
    """Numpy bools as an Arrow boolean array (for ``filter`` and ``replace_with_mask``)."""
    mask = np.asarray(mask, bool)
    bits = pa.py_buffer(np.packbits(mask, bitorder="little"))
    return pa.Array.from_buffers(pa.bool_(), len(mask), [None, bits])


def numeric_array(values: np.ndarray) -> pa.Array:
    """A 1-d numeric numpy array as an Arrow array of its dtype (zero-copy when contiguous)."""
    values = np.ascontiguousarray(values)
    if values.ndim != 1 or values.dtype.kind not in "iuf":
        raise TypeError(f"expected a 1-d integer or float array, got {values.dtype} {values.shape}")
    kind = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def nulls_to(values: np.ndarray, arr: pa.Array | pa.ChunkedArray, value: object) -> np.ndarray:
    """``values`` (a writable numpy array, one per row of ``arr``) set to ``value`` in place
    where ``arr`` is null, and returned."""
    valid = validity(arr)
    if valid is not None:
        values[~valid] = value
    return values


def nulls_like(arr: pa.Array) -> pa.Array:
    """All-null values of ``arr``'s type and length (the ``pa.scalar(None, type)`` operand of
    ``if_else`` without the scalar)."""
    return pa.nulls(len(arr), arr.type)


def strings(texts: list[str | None], kind: pa.DataType = _LARGE_STRING) -> pa.Array:
    """Python strings (or None) as a ``kind`` (large_string or string) array, built from its
    buffers: ``pa.array(texts, kind)``. A string that is not valid Unicode (a lone surrogate),
    or more text than int32 offsets hold, goes to ``pa.array``, which reports or chunks it."""
    try:
        blobs = [b"" if t is None else t.encode() for t in texts]
    except (UnicodeEncodeError, AttributeError):  # a surrogate; not a str (pa.array says so)
        return pa.array(texts, kind)
    offsets = np.zeros(len(blobs) + 1, np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    if pa.types.is_string(kind):
        if offsets[-1] >= 1 << 31:
            return pa.array(texts, kind)
        offsets = offsets.astype(np.int32)
    elif not pa.types.is_large_string(kind):
        raise TypeError(f"strings() builds string or large_string arrays, not {kind}")
    valid = None
    if any(t is None for t in texts):
        valid = np.array([t is not None for t in texts])
    return string_array(offsets, b"".join(blobs), kind, valid)


def string_array(
    offsets: np.ndarray,
    data: bytes | np.ndarray | pa.Buffer,
    kind: pa.DataType = _LARGE_STRING,
    valid: np.ndarray | None = None,
) -> pa.Array:
    """A ``kind`` (string, binary or their large types) array of the values ``data[offsets[i] :
    offsets[i + 1]]``, null where ``valid`` is False, without copying the bytes: the inverse of
    :func:`string_parts`. ``offsets`` (rows + 1) are int64 for the large types, else int32."""
    large = pa.types.is_large_string(kind) or pa.types.is_large_binary(kind)
    if not (large or pa.types.is_string(kind) or pa.types.is_binary(kind)):
        raise TypeError(f"string_array() builds string or binary arrays, not {kind}")
    offsets = np.ascontiguousarray(offsets)
    want = np.dtype(np.int64 if large else np.int32)
    if offsets.dtype != want or offsets.ndim != 1 or not len(offsets):
        raise TypeError(f"{kind} offsets are a non-empty 1-d {want} array, got {offsets.dtype}")
    bits = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    buffers = [bits, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(kind, len(offsets) - 1, buffers)


def take(arr: pa.Array | pa.ChunkedArray, idx: np.ndarray) -> pa.Array:
    """``arr.take(idx)`` for numpy positions."""
    return _take(one_chunk(arr), idx)


def string_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """(offsets relative to the first value, int64, one more than the rows; the values' UTF-8
    bytes) of a string or large_string array without copying the bytes; None for other types.
    A null's slot usually has no bytes but may have some: mask the results with
    :func:`validity`."""
    t = arr.type
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        otype = np.int64
    elif pa.types.is_string(t) or pa.types.is_binary(t):
        otype = np.int32
    else:
        return None
    n = len(arr)
    bufs = arr.buffers()
    if n == 0 or bufs[1] is None:
        return np.zeros(n + 1, np.int64), np.zeros(0, np.uint8)
    offs = np.frombuffer(bufs[1], otype)[arr.offset : arr.offset + n + 1]
    offs = offs.astype(np.int64, copy=False)  # one copy below, offs - lo
    lo, hi = int(offs[0]), int(offs[-1])
    data = np.frombuffer(bufs[2], np.uint8)[lo:hi] if bufs[2] is not None and hi > lo else None
    return offs - lo, data if data is not None else np.zeros(0, np.uint8)

"""Order-independent content hashes of splits, streamed and mergeable.

Each row hashes to 64 bits (xxh3 of each cell, mixed per column); a split's hash is the sum of its
row hashes modulo 2**64, so the same rows in any order, batching or sharding give the same hash,
while a duplicated, dropped or edited row changes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import xxhash

from ._arrow import nulls_to, string_parts, validity
from ._compute import cast
from ._json_text import json_texts
from .rule import TYPE_MARKER_PREFIX
from .sketches.hashing import mix64

_MASK = (1 << 64) - 1
_NULL = np.uint64(0x9E3779B97F4A7C15)


#: rows this process hashes with the Python loop before it loads the compiled one even though
#: no rule did (numba's import and registries, ~0.45 CPU-s, against ~0.13 s saved per 1M rows)
COMPILED_AFTER_ROWS = 3_000_000
_loop_rows = 0


def _use_compiled(n: int) -> bool:
    """The compiled xxh3 when a MinHash or exact-duplicate rule loaded the compiled kernels
    already (numba's, or their machine code from ``sketches/native.py``'s files: without this,
    a DUP002 audit of 40k long documents hashed them with the loop, ~0.03 s of its ~0.95 s),
    or this process has hashed enough rows to repay loading them."""
    global _loop_rows
    from .sketches import native

    if native.running() or _loop_rows >= COMPILED_AFTER_ROWS:
        return True
    _loop_rows += n
    return False


#: rows hashed in this process (this batch's included), or text bytes in one batch, from which
#: the compiled loop is tried from its file
FROM_FILE_ROWS, FROM_FILE_BYTES = 20_000, 4 << 20


def _from_file(native, offsets: np.ndarray, data: np.ndarray) -> np.ndarray | None:
    """The compiled loop when its machine code loads from its file without LLVM or numba
    (~1 ms, plus ~3 ms of imports and keys once: sketches/elf.py), once enough text was
    hashed to repay that: the per-row loop hashed the cheap rules' benchmark (1M short rows)
    in 0.16-0.19 s of its ~0.45 s scan. None: the loop."""
    if _loop_rows < FROM_FILE_ROWS and len(data) < FROM_FILE_BYTES or not native.enabled():
        return None
    return native.xxh3_64_rows_from_file(offsets, data)


def _string_hashes(arr: pa.Array) -> np.ndarray:
    """xxh3 of each string's UTF-8 bytes.

    Same values as hashing ``str.encode("utf-8")`` of ``to_pylist()``: the Arrow strings
    (already UTF-8) are hashed from their buffers by a compiled loop (``sketches/xxh3.py``,
    ~0.03 s per million short rows), or viewed as binary and hashed per row by ``xxhash``
    (~0.16 s) until loading the compiled loop pays.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_string_view(arr.type):
        arr = cast(arr, pa.large_string())  # string_view → offsets and bytes
    from .sketches import native

    offsets, data = string_parts(arr)
    if _use_compiled(len(arr)):
        out = native.xxh3_64_rows(offsets, data)
    else:
        out = _from_file(native, offsets, data)
    if out is not None:
        valid = validity(arr)
        if valid is not None:
            out[~valid] = _NULL
        return out
    # zero-copy: the same offsets and bytes; int32 offsets (JSON Lines' strings) are viewed as
    # they are, not cast to large_string, which rewrote every offset (~0.1 s per million rows)
    binary = arr.view(pa.binary() if pa.types.is_string(arr.type) else pa.large_binary())
    valid = validity(arr)
    if valid is not None:  # nulls as their slots' bytes (set to _NULL below); no pa.scalar,
        # which imports pandas (when installed) on first use
        _, offsets, data = binary.buffers()
        binary = pa.Array.from_buffers(
            binary.type, len(binary), [None, offsets, data], 0, binary.offset
        )
    values = binary.to_pylist()
    out = np.fromiter(map(xxhash.xxh3_64_intdigest, values), dtype=np.uint64, count=len(values))
    if valid is not None:
        out[~valid] = _NULL
    return out


def _cell_hashes(arr: pa.Array) -> np.ndarray:
    t = arr.type
    h = xxhash.xxh3_64_intdigest
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return _string_hashes(arr)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        return _cell_hashes(cast(arr, pa.string()))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_struct(t):
        texts = json_texts(arr)  # the JSON text below, from Arrow kernels (chats: 4-7x faster)
        if texts is not None:
            return nulls_to(_string_hashes(texts), arr, _NULL)
    values = arr.to_pylist()
    return np.fromiter(
        (
            _NULL
            if v is None
            else h(json.dumps(v, sort_keys=True, default=str, ensure_ascii=False).encode())
            for v in values
        ),
        dtype=np.uint64,
        count=len(values),
    )


def row_hashes(batch: pa.RecordBatch) -> np.ndarray:
    """One 64-bit hash per row, from every column except the reader's type markers."""
    acc = np.zeros(batch.num_rows, dtype=np.uint64)
    for i, name in enumerate(batch.schema.names):
        if name.startswith(TYPE_MARKER_PREFIX):
            continue
        salt = np.uint64(xxhash.xxh3_64_intdigest(name.encode()))
        with np.errstate(over="ignore"):
            acc = acc + mix64(_cell_hashes(batch.column(i)) ^ salt)
    return mix64(acc)


@dataclass
class SplitIdentity:
    rows: int = 0
    total: int = 0  # sum of row hashes mod 2**64
    columns: dict[str, str] = field(default_factory=dict)  # name -> arrow type

    def update(self, batch: pa.RecordBatch) -> None:
        self.rows += batch.num_rows
        for f in batch.schema:
            if not f.name.startswith(TYPE_MARKER_PREFIX):
                self.columns.setdefault(f.name, str(f.type))
        if batch.num_rows:
            s = int(row_hashes(batch).sum(dtype=np.uint64))
            self.total = (self.total + s) & _MASK

    def merge(self, other: SplitIdentity) -> SplitIdentity:
        return SplitIdentity(
            self.rows + other.rows,
            (self.total + other.total) & _MASK,
            {**self.columns, **{k: v for k, v in other.columns.items() if k not in self.columns}},
        )

    def content_hash(self) -> str:
        names = ",".join(sorted(self.columns))
        return "xxh3:" + xxhash.xxh3_64_hexdigest(f"{self.total}|{self.rows}|{names}".encode())

    def to_dict(self) -> dict:
        return {
            "rows": self.rows,
            "columns": [{"name": k, "type": v} for k, v in self.columns.items()],
            "content_hash": self.content_hash(),
        }

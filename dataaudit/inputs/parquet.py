"""Parquet files → Arrow record batches, one row group at a time; columns and row count from the
footer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from ..errors import InputError
from .location import pyarrow_source

__all__ = ["iter_parquet", "parquet_num_rows", "parquet_schema"]


def _unreadable(path: Path, exc: Exception) -> InputError:
    return InputError(
        f"{path}: cannot read as Parquet ({exc}). The file may be truncated or not Parquet."
    )


def iter_parquet(path: Path, batch_size: int) -> Iterator[pa.RecordBatch]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(pyarrow_source(path))
        # pyarrow's threads decode columns in parallel: one column gains nothing from them, and
        # on a busy machine its hand-offs cost wall time (1M short texts, load ~3: read median
        # 0.50 -> 0.14 s in the same CPU)
        threads = pf.metadata.num_columns > 1
        # one row group at a time: over a whole file, the reader keeps every row group it
        # pre-buffered until the iteration ends (1.4 GB of RSS for a 1.4 GB file, measured)
        for group in range(pf.num_row_groups):
            yield from pf.iter_batches(
                batch_size=batch_size, row_groups=[group], use_threads=threads
            )
    except (pa.ArrowInvalid, OSError) as exc:
        raise _unreadable(path, exc) from None


def parquet_schema(path: Path) -> tuple[pa.Schema, bool]:
    """The footer's schema, which is whole."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(pyarrow_source(path)).schema_arrow, True
    except (pa.ArrowInvalid, OSError) as exc:
        raise _unreadable(path, exc) from None


def parquet_num_rows(path: Path) -> int | None:
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(pyarrow_source(path)).metadata.num_rows
    except (pa.ArrowInvalid, OSError):
        return None  # the read names the problem

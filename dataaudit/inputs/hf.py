"""Hugging Face ``datasets`` inputs: Dataset, IterableDataset, DatasetDict, streamed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from .frames import repair_sink
from .notes import InputLog
from .source import SplitSource

__all__ = ["hf_split"]


def hf_split(name: str, ds: Any, log: InputLog) -> SplitSource:
    """A datasets.Dataset (respecting select/shuffle indices) or IterableDataset, streamed."""
    cls = type(ds).__name__
    if cls == "IterableDataset":
        from .records import records_to_batch

        sink = repair_sink(log, f"IterableDataset[{name}]")

        def iterable_source(batch_size: int) -> Iterator[pa.RecordBatch]:
            for chunk in ds.iter(batch_size=batch_size):
                yield records_to_batch(columns_to_records(chunk), on_repair=sink)

        return SplitSource(
            name, iterable_source, None, None, f"IterableDataset[{name}]", complete=False
        )

    def dataset_source(batch_size: int) -> Iterator[pa.RecordBatch]:
        arrow_ds = ds.with_format("arrow")
        for table in arrow_ds.iter(batch_size=batch_size):
            yield from table.to_batches()

    schema = ds.features.arrow_schema if hasattr(ds.features, "arrow_schema") else None
    return SplitSource(name, dataset_source, ds.num_rows, schema, f"Dataset[{name}]")


def columns_to_records(chunk: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    keys = list(chunk)
    if not keys:
        return []
    return [dict(zip(keys, row)) for row in zip(*(chunk[k] for k in keys))]

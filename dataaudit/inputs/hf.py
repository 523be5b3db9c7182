"""Hugging Face ``datasets`` inputs: Dataset, IterableDataset, DatasetDict, streamed.

* A Dataset after ``shuffle``/``select``/``filter``/``train_test_split`` carries an indices
  mapping; reading it in Arrow gives tables of one-row chunks (8,192 record batches of one row
  per batch), which every rule then folds one row at a time. The chunks are combined per batch.
* ``ClassLabel`` columns are read as their names ("positive"), not their integer codes; -1 (the
  "no label" of unlabeled test splits) is null.
* A ``save_to_disk`` folder is loaded with ``datasets.load_from_disk``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from .._compute import pc
from .notes import InputLog
from .probes import is_hf_dataset_dict, is_hf_iterable
from .records import columns_to_batch, repair_sink
from .source import SplitSource

__all__ = ["hf_split", "hf_splits"]


def hf_splits(obj: Any, name: str, log: InputLog) -> dict[str, SplitSource]:
    """A DatasetDict: a split per key; a Dataset or IterableDataset: one split, ``name``."""
    if is_hf_dataset_dict(obj) or isinstance(obj, Mapping):
        return {str(k): hf_split(str(k), v, log) for k, v in obj.items()}
    return {name: hf_split(name, obj, log)}


def hf_split(name: str, ds: Any, log: InputLog) -> SplitSource:
    """A datasets.Dataset (respecting select/shuffle indices) or IterableDataset, streamed."""
    if is_hf_iterable(ds):
        sink = repair_sink(log, f"IterableDataset[{name}]")

        labels = class_labels(getattr(ds, "features", None))

        def iterable_source(batch_size: int) -> Iterator[pa.RecordBatch]:
            for chunk in ds.iter(batch_size=batch_size):
                rb = columns_to_batch(chunk, on_repair=sink)
                yield named_labels(rb, labels)

        return SplitSource(
            name, iterable_source, None, None, f"IterableDataset[{name}]", complete=False
        )

    labels = class_labels(ds.features)

    def dataset_source(batch_size: int) -> Iterator[pa.RecordBatch]:
        arrow_ds = ds.with_format("arrow")
        for table in arrow_ds.iter(batch_size=batch_size):
            if table.num_columns and table.column(0).num_chunks > 1:
                table = table.combine_chunks()  # an indices mapping gives one-row chunks
            for rb in table.to_batches():
                yield named_labels(rb, labels)

    schema = ds.features.arrow_schema if hasattr(ds.features, "arrow_schema") else None
    if schema is not None:
        schema = pa.schema(
            [f.with_type(pa.string()) if f.name in labels else f for f in schema],
            metadata=schema.metadata,
        )
    return SplitSource(name, dataset_source, ds.num_rows, schema, f"Dataset[{name}]")


def class_labels(features: Any) -> dict[str, list[str]]:
    """{column: class names} of the top-level ClassLabel features."""
    if not features:
        return {}
    return {
        str(column): list(feature.names)
        for column, feature in features.items()
        if type(feature).__name__ == "ClassLabel"
    }


def named_labels(rb: pa.RecordBatch, labels: dict[str, list[str]]) -> pa.RecordBatch:
    """ClassLabel codes → names; -1 (no label) → null; a code outside the names keeps its
    number as text, so FMT001/LBL003 show it rather than hiding it."""
    if not labels:
        return rb
    columns = list(rb.columns)
    fields = list(rb.schema)
    for i, field in enumerate(fields):
        names = labels.get(field.name)
        if names is None or not pa.types.is_integer(field.type):
            continue
        codes = pc.cast(columns[i], pa.int64())
        n = len(names)
        index = pc.if_else(pc.and_(pc.greater_equal(codes, 0), pc.less(codes, n)), codes, n)
        named = pa.array([*names, None], pa.string()).take(pc.fill_null(index, n))
        unknown = pc.fill_null(pc.greater_equal(codes, n), False)
        columns[i] = pc.if_else(unknown, pc.cast(codes, pa.string()), named)
        fields[i] = pa.field(field.name, pa.string())
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))

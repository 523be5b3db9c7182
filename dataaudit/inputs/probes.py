"""What kind of object the user passed, without importing optional libraries.

A library the user has not imported cannot have made their object, so each probe looks in
``sys.modules`` first (as narwhals' ``is_polars_dataframe`` does); ``import dataaudit`` and
``audit(list_of_dicts)`` never pay for importing pandas, polars or datasets.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = [
    "is_hf_dataset",
    "is_hf_dataset_dict",
    "is_hf_iterable",
    "is_pandas_frame",
    "is_polars_frame",
    "is_polars_lazy",
]


def _isinstance(obj: Any, module: str, *names: str) -> bool:
    mod = sys.modules.get(module)
    if mod is None:
        return False
    classes = tuple(c for c in (getattr(mod, n, None) for n in names) if isinstance(c, type))
    return bool(classes) and isinstance(obj, classes)


def is_polars_frame(obj: Any) -> bool:
    return _isinstance(obj, "polars", "DataFrame")


def is_polars_lazy(obj: Any) -> bool:
    return _isinstance(obj, "polars", "LazyFrame")


def is_pandas_frame(obj: Any) -> bool:
    return _isinstance(obj, "pandas", "DataFrame")


def is_hf_dataset(obj: Any) -> bool:
    """A ``datasets.Dataset`` or ``IterableDataset`` (one split)."""
    return _isinstance(obj, "datasets", "Dataset", "IterableDataset")


def is_hf_iterable(obj: Any) -> bool:
    return _isinstance(obj, "datasets", "IterableDataset")


def is_hf_dataset_dict(obj: Any) -> bool:
    return _isinstance(obj, "datasets", "DatasetDict", "IterableDatasetDict")

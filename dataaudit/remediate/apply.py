"""``Report.apply(data)``: the data without the dropped rows, in its own type."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..inputs.probes import (
    is_hf_dataset,
    is_hf_dataset_dict,
    is_hf_iterable,
    is_pandas_frame,
    is_polars_frame,
    is_polars_lazy,
)
from ..rule import Severity
from .plan import BATCH_ROWS, check_same_data, keep_masks, load_audited, plan

if TYPE_CHECKING:
    from ..corpus import Corpus
    from ..report import Report

__all__ = ["apply", "split_column_keep"]


def apply(
    report: Report,
    data: Any,
    *,
    drop: list[str] | str | None = None,
    severity: str | Severity = "info",
    action: list[str] | str = "drop",
    splits: list[str] | str | None = None,
) -> Any:
    """``data`` without the rows the report's selected flags drop, in ``data``'s own type."""
    if isinstance(data, (str, os.PathLike)) or (
        isinstance(data, (list, tuple)) and data and isinstance(data[0], (str, os.PathLike))
    ):
        raise InputError(
            "apply() returns the data in its own type, and a path is not data: for files, write a "
            "cleaned copy with `dataaudit clean PATH --report REPORT.json --out DIR` (Python: "
            "dataaudit.remediate.clean(report, PATH, DIR))."
        )
    p = plan(report, drop=drop, severity=severity, action=action, splits=splits)
    corpus = load_audited(report, data)
    check_same_data(report, corpus)
    keep = keep_masks(report, p)
    if corpus.split_column is not None:
        return _take(data, split_column_keep(corpus, keep))
    if _is_multi_split(data):
        return _take_splits(data, keep)
    (name,) = corpus.splits
    return _take(data, keep[name])


def _is_multi_split(obj: Any) -> bool:
    from ..corpus import looks_like_columns

    return is_hf_dataset_dict(obj) or (isinstance(obj, Mapping) and not looks_like_columns(obj))


def _take_splits(data: Any, keep: dict[str, np.ndarray]) -> Any:
    """A dict of splits (or DatasetDict) with each split's rows taken; names as load_corpus
    gives them (a dict value with several splits: ``key/split``)."""
    out = {}
    for key, value in data.items():
        if is_hf_dataset_dict(value) and len(value) > 1:
            out[key] = type(value)({k: _take(v, keep[f"{key}/{k}"]) for k, v in value.items()})
        elif is_hf_dataset_dict(value):
            out[key] = type(value)({k: _take(v, keep[str(key)]) for k, v in value.items()})
        else:
            out[key] = _take(value, keep[str(key)])
    return type(data)(out) if is_hf_dataset_dict(data) else out


def _take(obj: Any, keep: np.ndarray) -> Any:
    """``obj``'s rows where ``keep``, in ``obj``'s type."""
    import pyarrow as pa

    name = type(obj).__name__
    if is_polars_frame(obj):
        import polars as pl

        return obj.filter(pl.Series(keep))
    if is_polars_lazy(obj):
        import polars as pl

        index = "__dataaudit_row__"
        gone = pl.Series(np.flatnonzero(~keep), dtype=pl.UInt32).implode()
        return obj.with_row_index(index).filter(~pl.col(index).is_in(gone)).drop(index)
    if is_pandas_frame(obj):
        return obj[keep]
    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        return obj.filter(pa.array(keep))
    if is_hf_iterable(obj):
        return obj.filter(lambda _, i: bool(keep[i]), with_indices=True)
    if is_hf_dataset(obj):
        return obj.select(np.flatnonzero(keep))
    if isinstance(obj, list):
        return [row for row, k in zip(obj, keep) if k]
    if isinstance(obj, Mapping):  # a table of columns: {"text": [...], "label": [...]}
        return {k: [v for v, kk in zip(col, keep) if kk] for k, col in obj.items()}
    raise InputError(
        f"apply() cannot return a {type(obj).__module__}.{name}; pass a Dataset/DatasetDict, a "
        "polars or pandas DataFrame, a pyarrow Table, a list of dicts or a dict of splits, or "
        "write a cleaned copy of files with `dataaudit clean`."
    )


def split_column_keep(corpus: Corpus, keep: dict[str, np.ndarray]) -> np.ndarray:
    """One input partitioned by a split column: the rows to keep, over the input's rows."""
    import pyarrow as pa

    from ..inputs.arrow import plain_batch

    column = corpus.split_column
    source = next(iter(corpus.splits.values()))
    seen: dict[str, int] = {}
    out: list[bool] = []
    for _, batches in source.iter_parts():
        for rb in batches(BATCH_ROWS):
            rb = plain_batch(rb)
            idx = rb.schema.get_field_index(column)
            values = (
                [None] * rb.num_rows if idx < 0 else rb.column(idx).cast(pa.string()).to_pylist()
            )
            for v in values:
                name = "null" if v is None else v
                i = seen.get(name, 0)
                seen[name] = i + 1
                out.append(bool(keep[name][i]))
    return np.asarray(out, bool)

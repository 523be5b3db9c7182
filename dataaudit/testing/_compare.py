"""Field-by-field comparison of results, features and states, naming the first difference.

``a == b`` is not enough: on numpy arrays (and dataclasses holding them, such as the shared
``Tokens`` and ``Shingles`` features) it is ambiguous and raises, and a comparison that cannot
be made must count as a difference, never as "equal".
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["first_difference"]

_MAX_DEPTH = 64


def first_difference(a: Any, b: Any, path: str = "value", *, rel_tol: float = 0.0) -> str | None:
    """Where ``a`` and ``b`` differ (``"path: why"``), or None when they are equal.

    Floats are compared with ``rel_tol`` (NaN equals NaN); numpy and Arrow arrays by type,
    shape and values; dataclasses, dicts, sequences and plain objects field by field.
    """
    return _diff(a, b, path, rel_tol, 0)


def _diff(a: Any, b: Any, path: str, rel_tol: float, depth: int) -> str | None:
    if a is b:
        return None
    if depth > _MAX_DEPTH:
        return f"{path}: nested deeper than {_MAX_DEPTH} levels; cannot compare"
    if isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating)):
        return _diff_float(a, b, path, rel_tol)
    if isinstance(a, (bool, int, str, bytes, enum.Enum, type(None), np.integer, np.bool_)):
        return None if type(a) is type(b) and a == b else f"{path}: {a!r} != {b!r}"
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        return _diff_ndarray(a, b, path, rel_tol, depth)
    if isinstance(a, (pa.Array, pa.ChunkedArray, pa.RecordBatch, pa.Table, pa.Scalar)):
        if not a.equals(b):
            return f"{path}: Arrow {type(a).__name__} values differ"
        return None
    if dataclasses.is_dataclass(a):
        fields = [f.name for f in dataclasses.fields(a)]
        return _diff_attrs(a, b, fields, path, rel_tol, depth)
    if isinstance(a, dict):
        if a.keys() != b.keys():
            missing = sorted(map(repr, a.keys() - b.keys()))
            extra = sorted(map(repr, b.keys() - a.keys()))
            return f"{path}: keys differ (only left: {missing}, only right: {extra})"
        for k in a:
            d = _diff(a[k], b[k], f"{path}[{k!r}]", rel_tol, depth + 1)
            if d:
                return d
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = _diff(x, y, f"{path}[{i}]", rel_tol, depth + 1)
            if d:
                return d
        return None
    if isinstance(a, (set, frozenset)):
        return None if a == b else f"{path}: sets differ ({len(a ^ b)} items in one only)"
    attrs = _attributes(a)
    if attrs is not None:
        return _diff_attrs(a, b, attrs, path, rel_tol, depth)
    return _diff_eq(a, b, path)


def _diff_float(a: Any, b: Any, path: str, rel_tol: float) -> str | None:
    numbers = (int, float, np.integer, np.floating)
    if not isinstance(a, numbers) or not isinstance(b, numbers) or isinstance(a, bool):
        return f"{path}: {a!r} != {b!r}"
    fa, fb = float(a), float(b)
    if math.isnan(fa) and math.isnan(fb):
        return None
    if fa == fb or math.isclose(fa, fb, rel_tol=rel_tol, abs_tol=rel_tol * 1e-3):
        return None
    return f"{path}: {a!r} != {b!r}"


def _diff_ndarray(a: np.ndarray, b: np.ndarray, path: str, rel_tol: float, depth: int):
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"{path}: array {a.dtype}{list(a.shape)} != {b.dtype}{list(b.shape)}"
    if a.dtype.kind == "O":
        return _diff(a.tolist(), b.tolist(), path, rel_tol, depth + 1)
    if a.dtype.kind in "fc":
        same = np.isclose(a, b, rtol=rel_tol, atol=0.0, equal_nan=True) if rel_tol else None
        if same is None:
            same = (a == b) | (np.isnan(a) & np.isnan(b))
    else:
        same = a == b
    bad = np.flatnonzero(~np.asarray(same).reshape(-1))
    if bad.size:
        i = tuple(int(x) for x in np.unravel_index(int(bad[0]), a.shape)) if a.ndim else ()
        x, y = a[i].item(), b[i].item()
        return f"{path}: {bad.size} array values differ, first at {list(i)}: {x!r} != {y!r}"
    return None


def _attributes(obj: Any) -> list[str] | None:
    """The instance attributes of a plain object (``__dict__`` and ``__slots__``), or None."""
    names: list[str] = []
    for klass in type(obj).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    has_dict = hasattr(obj, "__dict__")
    if not names and not has_dict:
        return None
    if has_dict:
        names.extend(vars(obj))
    return [n for n in dict.fromkeys(names) if n != "__dict__" and n != "__weakref__"]


def _diff_attrs(a: Any, b: Any, names: list[str], path: str, rel_tol: float, depth: int):
    for name in names:
        missing = object()
        x, y = getattr(a, name, missing), getattr(b, name, missing)
        if x is missing or y is missing:
            if x is not y:
                return f"{path}.{name}: set on one side only"
            continue
        d = _diff(x, y, f"{path}.{name}", rel_tol, depth + 1)
        if d:
            return d
    return None


def _diff_eq(a: Any, b: Any, path: str) -> str | None:
    try:
        same = a == b
        if isinstance(same, (bool, np.bool_)):
            return None if same else f"{path}: {type(a).__name__} values differ"
        kind = type(same).__name__
        return f"{path}: cannot compare {type(a).__name__} values (== gave a {kind})"
    except Exception as exc:
        return f"{path}: cannot compare {type(a).__name__} values ({type(exc).__name__}: {exc})"

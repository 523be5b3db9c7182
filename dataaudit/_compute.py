"""Arrow's compute functions without importing ``pyarrow.compute`` before one is needed.

Importing ``pyarrow.compute`` builds a Python wrapper, signature and docstring for each of
Arrow's ~300 compute functions: ~30 ms of every process's start-up, on the one core nothing
else can use then (a 40k-document DUP002 audit takes ~0.7 s in all). ``pc`` here is that
module, imported at the first use of one of its names. The kernels a scan and the keyed
finish call on every batch (:func:`take`, :func:`cast`, :func:`is_in_positions`,
:func:`slice_codeunits`) go straight to ``pyarrow._compute.call_function``, which those
wrappers call: the same kernels, with the same options. pyarrow's own methods that run a
kernel (``Array.take``, ``.cast``, ``.filter``, ``Table.take``...) import the module: code on
those paths calls these instead (``tests/test_startup.py`` checks an audit of the near-
duplicate rule never imports it).

Top level and importing nothing of dataaudit, like :mod:`dataaudit._arrow`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

try:  # what pyarrow.compute's wrappers call (and re-export); the module itself as a fallback
    import pyarrow._compute as _kernels
except ImportError:  # pragma: no cover - a pyarrow that moved its private module
    import pyarrow.compute as _kernels  # type: ignore[no-redef]

call_function = _kernels.call_function

__all__ = [
    "call",
    "cast",
    "indices",
    "is_in_positions",
    "matches_regex",
    "pc",
    "replace_substring",
    "slice_codeunits",
    "take",
]


class _Compute:
    """``pyarrow.compute``, imported when one of its names is first looked up (the import
    system's lock makes that safe from any thread); each name is then kept here."""

    def __getattr__(self, name: str) -> Any:
        import pyarrow.compute

        value = getattr(pyarrow.compute, name)
        setattr(self, name, value)
        return value


pc: Any = _Compute()

_TAKE = _kernels.TakeOptions(boundscheck=True)


def call(name: str, *args: Any, options: Any = None) -> Any:
    """Arrow's compute function ``name`` on ``args`` (its default options unless given), as
    ``pyarrow.compute.<name>(*args)``: for the few other kernels on a scan's path."""
    return call_function(name, list(args), options)


def take(data: Any, positions: Any) -> Any:
    """``data.take(positions)`` (an Array, ChunkedArray, RecordBatch or Table; ``positions``
    integer positions: Arrow, numpy or a list; bounds checked), as ``pyarrow.compute.take``."""
    if not isinstance(positions, (pa.Array, pa.ChunkedArray)):
        positions = indices(positions)
    return call_function("take", [data, positions], _TAKE)


def indices(idx: Any) -> pa.Array:
    """Row positions (numpy or a list) as an Arrow int64 array over their buffer (``pa.array``
    of a list imports pyarrow.compute, of numpy data pandas)."""
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(idx), [None, pa.py_buffer(idx)])


def cast(arr: Any, target: pa.DataType) -> Any:
    """``arr.cast(target)``: a safe cast (an overflow or a truncation raises), as
    ``pyarrow.compute.cast``; ``arr`` itself when it already has that type."""
    if arr.type == target:
        return arr
    return call_function("cast", [arr], _kernels.CastOptions.safe(target))


def is_in_positions(values: Any, value_set: pa.Array) -> Any:
    """Each value's position in ``value_set`` (null where absent, and for a null value unless
    the set holds one), as ``pyarrow.compute.index_in``."""
    return call_function(
        "index_in", [values], _kernels.SetLookupOptions(value_set, skip_nulls=False)
    )


def slice_codeunits(strings: Any, start: int, stop: int) -> Any:
    """Each string's code units ``start:stop``, as ``pyarrow.compute.utf8_slice_codeunits``."""
    return call_function("utf8_slice_codeunits", [strings], _kernels.SliceOptions(start, stop, 1))


def replace_substring(strings: Any, pattern: str, replacement: str) -> Any:
    """Every ``pattern`` (plain text) in each string replaced, as
    ``pyarrow.compute.replace_substring``."""
    options = _kernels.ReplaceSubstringOptions(pattern, replacement)
    return call_function("replace_substring", [strings], options)


def matches_regex(strings: Any, pattern: str) -> Any:
    """Whether each string holds a match of ``pattern`` (RE2), as
    ``pyarrow.compute.match_substring_regex``."""
    return call_function(
        "match_substring_regex", [strings], _kernels.MatchSubstringOptions(pattern)
    )

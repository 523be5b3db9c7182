"""The JSON text ``json.dumps(value, sort_keys=True, ensure_ascii=False)`` writes for each value of
a nested Arrow array, built by Arrow kernels instead of one Python object per row.

The split content hash (``dataaudit.identity``) hashes a nested cell (a chat's messages: a list of
structs of strings) as that text, and reports, baselines and ``clean`` manifests persist it, so
the text must be byte for byte what Python writes: ``, `` and ``: `` separators, keys sorted by
code point, ``"`` and ``\\`` escaped, control characters as ``\\n``-style or ``\\u00XX`` escapes,
other characters as they are. Python did it at ~4 s per million two-turn chats (``to_pylist``
and ``json.dumps`` per row); these kernels take 0.6-1.0 s. Types whose text Python
writes differently from Arrow's casts (floats, dates, binary, maps, dictionaries) return None,
and the caller takes the Python path.
"""

from __future__ import annotations

import json

import pyarrow as pa

from ._arrays import sorted_unique
from ._arrow import one_chunk, string_parts, strings
from ._compute import pc

__all__ = ["json_texts"]

_TEXT = pa.large_string()
#: json.dumps' escapes of control characters (the others are \\u00XX)
_SHORT = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"}


def _scalar(text: str) -> pa.Scalar:
    """A large_string scalar built from buffers (``pa.scalar`` imports pandas)."""
    return strings([text])[0]


def _with_null(text: pa.Array, valid: pa.Array | None) -> pa.Array:
    """``text`` where the value is valid, ``null`` (JSON's) elsewhere."""
    if valid is None:
        return pc.fill_null(text, _scalar("null"))
    return pc.if_else(valid, pc.fill_null(text, _scalar("null")), _scalar("null"))


def _escaped(arr: pa.Array) -> pa.Array:
    """Strings as JSON string literals (quoted and escaped; nulls stay null)."""
    arr = arr.cast(_TEXT)
    _, data = string_parts(arr)  # a large_string array: never None
    # only the characters present are replaced (a pass over the bytes each; most have none)
    escapes = [(0x5C, "\\\\"), (0x22, '\\"')]  # the backslash first: the others add some
    escapes += [
        (b, _SHORT.get(b, f"\\u{b:04x}"))
        for b in sorted_unique(data[data < 0x20], in_place=True).tolist()
    ]
    for byte, escape in escapes:
        if byte >= 0x20 and not (data == byte).any():
            continue
        arr = pc.replace_substring(arr, chr(byte), escape)
    quote = _scalar('"')
    return pc.binary_join_element_wise(quote, arr, quote, _scalar(""))


def _text(arr: pa.Array) -> pa.Array | None:
    """JSON text per value, ``null`` for nulls; None for a type this does not write."""
    t = arr.type
    if pa.types.is_null(t):
        return strings(["null"] * len(arr))
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        out = _escaped(arr)
    elif pa.types.is_integer(t) or pa.types.is_boolean(t):  # Arrow writes them as Python does
        out = arr.cast(_TEXT)
    elif pa.types.is_struct(t):
        names = [t.field(i).name for i in range(t.num_fields)]
        if len(set(names)) != len(names):
            return None  # to_pylist keeps one of the duplicates
        children = arr.flatten()
        order = sorted(range(len(names)), key=lambda i: names[i])
        pieces: list = []
        for k, i in enumerate(order):
            child = _text(children[i])
            if child is None:
                return None
            key = json.dumps(names[i], ensure_ascii=False)
            pieces += [_scalar(("{" if k == 0 else ", ") + key + ": "), child]
        if not pieces:
            out = strings(["{}"] * len(arr))
        else:
            out = pc.binary_join_element_wise(*pieces, _scalar("}"), _scalar(""))
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        values = _text(arr.values)
        if values is None:
            return None
        kind = pa.large_list(_TEXT) if pa.types.is_large_list(t) else pa.list_(_TEXT)
        listed = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
        joined = pc.binary_join(listed.from_arrays(arr.offsets, values, type=kind), _scalar(", "))
        out = pc.binary_join_element_wise(_scalar("["), joined, _scalar("]"), _scalar(""))
    else:
        return None
    valid = pc.is_valid(arr) if arr.null_count else None
    return _with_null(out, valid)


def json_texts(arr: pa.Array | pa.ChunkedArray) -> pa.Array | None:
    """Per value of ``arr``, the UTF-8 text ``json.dumps(value, sort_keys=True,
    ensure_ascii=False)`` gives for its ``to_pylist()`` value (``null`` for a null); None when
    the array holds a type whose text this does not write (take the Python path)."""
    return _text(one_chunk(arr))

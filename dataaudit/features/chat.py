"""Chat rows as flat per-turn lists, for the rules that walk every turn (FMT002, FMT003).

Converting a ``list<struct>`` messages column to Python dicts costs more than parsing its JSON;
reading its ``role`` and ``content`` fields as flat string arrays costs a fraction of that. So
``batch.feature("chat_turns")`` gives, for every row, the slice ``offsets[i]:offsets[i + 1]`` of
flat per-turn lists (role, content, tool calls, tool-call id), read column-wise from Arrow when
the column is a list of structs with string role and content fields, and from the parsed
``messages`` feature otherwise (JSON text, lists of JSON strings, mixed types). A row that is
null has ``status`` None; a row that cannot be read as turns has a status saying why; the rest
``"ok"``. Tool calls are kept as given (a list of OpenAI call objects, or a ``function_call``
object) and only for the turns that have them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .._arrow import bools, fixed, one_chunk, take
from .._compute import pc
from .base import Batch, register_feature

OK = "ok"


@dataclass(frozen=True)
class ChatTurns:
    offsets: np.ndarray  # int64, rows + 1
    status: list[str | None]  # per row: "ok", None (null row) or why it cannot be read
    roles: list[Any]
    contents: list[Any]
    calls: list[Any]  # per turn: None, a list of OpenAI tool calls, or a function_call dict
    call_ids: list[Any]  # per turn: the tool_call_id of a tool result, or None

    def turns(self, row: int) -> range:
        return range(int(self.offsets[row]), int(self.offsets[row + 1]))


def _field(struct: pa.StructArray, *names: str) -> pa.Array | None:
    found = [struct.field(n) for n in names if struct.type.get_field_index(n) >= 0]
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    if found[0].type != found[1].type:
        return None
    return pc.coalesce(*found)


def _is_text(arr: pa.Array | None) -> bool:
    return arr is not None and (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type))


def _columnar(col: pa.Array) -> ChatTurns | None:
    """The fast path: a list<struct> column with string role and content fields."""
    t = col.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not pa.types.is_struct(
        t.value_type
    ):
        return None
    flat = col.flatten()
    roles, contents = _field(flat, "role", "from"), _field(flat, "content", "value")
    if not _is_text(roles) or not (_is_text(contents) or pa.types.is_null(contents.type)):
        return None
    n = len(col)
    lengths = fixed(pc.list_value_length(col), null=0).astype(np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    valid = bools(col.is_valid())
    status: list[str | None] = [OK if v else None for v in valid]
    role_list = roles.to_pylist()
    # a null turn, a null role or an empty one (no bytes)
    bad = bools(flat.is_null()) | (fixed(pc.binary_length(roles), null=0) == 0)
    for turn in np.flatnonzero(bad):
        row = int(np.searchsorted(offsets, turn, side="right") - 1)
        if status[row] == OK:
            n_turn = int(turn - offsets[row]) + 1
            what = "is null" if not flat[int(turn)].is_valid else "has no role"
            status[row] = f"turn {n_turn} {what}"
    for row in np.flatnonzero(valid & (lengths == 0)):
        status[int(row)] = "no messages"
    calls: list[Any] = [None] * len(flat)
    if flat.type.get_field_index("tool_calls") >= 0:
        tc = flat.field("tool_calls")
        if pa.types.is_list(tc.type) or pa.types.is_large_list(tc.type):
            idx = np.flatnonzero(fixed(pc.list_value_length(tc), null=0) > 0)
            for i, value in zip(idx, take(tc, idx).to_pylist()):
                calls[int(i)] = value
    if flat.type.get_field_index("function_call") >= 0:
        fc = flat.field("function_call")
        idx = np.flatnonzero(bools(fc.is_valid()))
        for i, value in zip(idx, take(fc, idx).to_pylist()):
            if calls[int(i)] is None:
                calls[int(i)] = value
    if flat.type.get_field_index("tool_call_id") >= 0:
        call_ids = flat.field("tool_call_id").cast(pa.large_string()).to_pylist()
    else:
        call_ids = [None] * len(flat)
    content_list = contents.to_pylist() if _is_text(contents) else [None] * len(flat)
    return ChatTurns(offsets, status, role_list, content_list, calls, call_ids)


def _parsed(batch: Batch, col: pa.Array) -> ChatTurns:
    """The general path, from the parsed ``messages`` feature."""
    parsed = batch.feature("messages")
    offsets = [0]
    status: list[str | None] = []
    roles: list[Any] = []
    contents: list[Any] = []
    calls: list[Any] = []
    call_ids: list[Any] = []
    for i, messages in enumerate(parsed):
        row_status: str | None = OK
        if messages is None:
            raw = col[i].as_py() if col[i].is_valid else None
            if raw is None:
                row_status = None
            elif isinstance(raw, str):
                row_status = "JSON text that does not parse as a list of messages"
            else:
                row_status = f"a {type(raw).__name__}, not a list of messages"
        elif not messages:
            row_status = "no messages"
        else:
            start = len(roles)
            for n, msg in enumerate(messages, 1):
                if not isinstance(msg, dict):
                    row_status = f"turn {n} is a {type(msg).__name__}, not an object"
                    break
                role = msg.get("role")
                role = msg.get("from") if role is None else role
                if not isinstance(role, str) or not role:
                    row_status = f"turn {n} has no role"
                    break
                content = msg.get("content")
                roles.append(role)
                contents.append(msg.get("value") if content is None else content)
                tc = msg.get("tool_calls")
                fc = msg.get("function_call")
                calls.append(
                    tc if isinstance(tc, list) and tc else fc if isinstance(fc, dict) else None
                )
                call_ids.append(msg.get("tool_call_id"))
            if row_status != OK:
                del roles[start:], contents[start:], calls[start:], call_ids[start:]
        status.append(row_status)
        offsets.append(len(roles))
    return ChatTurns(np.asarray(offsets, dtype=np.int64), status, roles, contents, calls, call_ids)


@register_feature("chat_turns")
def chat_turns_feature(batch: Batch) -> ChatTurns:
    col = batch.role("messages")
    if col is None:
        return ChatTurns(
            np.zeros(batch.num_rows + 1, np.int64), [None] * batch.num_rows, [], [], [], []
        )
    col = one_chunk(col)
    fast = _columnar(col)
    return fast if fast is not None else _parsed(batch, col)

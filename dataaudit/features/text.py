"""Text views of a row and their normalized form."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from .._arrow import nulls_like, one_chunk, strings
from .._compute import call, cast
from .base import Batch, register_feature
from .normalize import normalize_array, tokenizable_array
from .textscan import blank_mask

STRING = pa.large_string()


def _as_text(arr: pa.Array | pa.ChunkedArray, markers: pa.Array | None = None) -> pa.Array:
    """A role column as strings; values that are not strings become null (FMT001 reports them)."""
    arr = one_chunk(arr)
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        out = cast(arr, STRING)
        if markers is not None and markers.null_count < len(markers):
            out = call("if_else", call("is_null", markers), out, nulls_like(out))
        return out
    return pa.nulls(len(arr), STRING)


def _message_parts(msg: Any) -> tuple[str, str | None]:
    if not isinstance(msg, dict):
        return "", None if msg is None else str(msg)
    role = msg.get("role", msg.get("from", "")) or ""
    content = msg.get("content", msg.get("value"))
    if isinstance(content, list):  # multimodal parts: keep the text ones
        content = "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("text")
        )
    return str(role), content if content is None or isinstance(content, str) else str(content)


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None


def parse_messages(value: Any) -> list[Any] | None:
    """A chat as a list of message dicts, however it was stored: a list of structs, a JSON
    string, or a list of JSON strings (``datasets`` types messages whose keys differ, such as
    OpenAI's optional ``name``, as ``list<Json>``). A value that is none of these stays as it
    is, for FMT001 to report."""
    if value is None:
        return None
    if isinstance(value, str):
        value = _json_or_none(value)
    if not isinstance(value, list):
        return None
    return [
        _json_or_none(m) if isinstance(m, str) and m.lstrip().startswith("{") else m for m in value
    ]


#: role names of the model's turns (OpenAI, ShareGPT, Gemini spellings)
ASSISTANT_ROLES = ("assistant", "gpt", "bot", "model")


def render_chat(messages: list[Any] | None, *, drop_last_reply: bool = False) -> str | None:
    if messages is None:
        return None
    parts = [_message_parts(m) for m in messages]
    if drop_last_reply and parts and parts[-1][0] in ASSISTANT_ROLES:
        parts = parts[:-1]
    lines = [
        f"{role}: {content}" if role else content for role, content in parts if content is not None
    ]
    return "\n".join(lines)


def _messages(batch: Batch) -> list[list[Any] | None]:
    return batch.feature("messages")


@register_feature("messages")
def messages_feature(batch: Batch) -> list[list[Any] | None]:
    col = batch.role("messages")
    if col is None:
        return [None] * batch.num_rows
    return [parse_messages(v) for v in col.to_pylist()]


def _role_text(batch: Batch, role: str) -> pa.Array | None:
    name = getattr(batch.roles, role)
    if not batch.has_column(name):
        return None
    return _as_text(batch.column(name), batch.type_markers(name))


def _join(parts: list[pa.Array], n: int) -> pa.Array:
    parts = [p for p in parts if p is not None]
    if not parts:
        return pa.nulls(n, STRING)
    if len(parts) == 1:
        return parts[0]
    joined = [
        "\n\n".join(v for v in row if v is not None) if any(v is not None for v in row) else None
        for row in zip(*(p.to_pylist() for p in parts))
    ]
    return strings(joined)


@register_feature("text")
def text_feature(batch: Batch) -> pa.Array:
    roles = batch.roles
    if roles.text:
        return _role_text(batch, "text")
    if roles.messages:
        return strings([render_chat(m) for m in _messages(batch)])
    return _join(
        [_role_text(batch, "prompt"), _role_text(batch, "input"), _role_text(batch, "response")],
        batch.num_rows,
    )


@register_feature("input_text")
def input_text_feature(batch: Batch) -> pa.Array:
    roles = batch.roles
    if roles.text:
        return _role_text(batch, "text")
    if roles.messages:
        return strings([render_chat(m, drop_last_reply=True) for m in _messages(batch)])
    return _join([_role_text(batch, "prompt"), _role_text(batch, "input")], batch.num_rows)


@register_feature("response_text")
def response_text_feature(batch: Batch) -> pa.Array:
    """The trained-on reply: the response column, or the last assistant turn of a chat."""
    roles = batch.roles
    if roles.response:
        return _role_text(batch, "response")
    if roles.messages:
        out = []
        for msgs in _messages(batch):
            parts = [_message_parts(m) for m in msgs or []]
            out.append(parts[-1][1] if parts and parts[-1][0] in ASSISTANT_ROLES else None)
        return strings(out)
    return pa.nulls(batch.num_rows, STRING)


@register_feature("normalized")
def normalized_feature(batch: Batch, view: str = "text") -> pa.Array:
    return normalize_array(batch.feature(view))


@register_feature("token_text")
def token_text_feature(batch: Batch, view: str = "text") -> pa.Array:
    """Text to split into word tokens: the same tokens as the normalized text (see
    ``tokenizable_array``); the normalized text itself when another rule already made it."""
    normalized = batch.cached("normalized", view=view)
    return normalized if normalized is not None else tokenizable_array(batch.feature(view))


@register_feature("char_length")
def char_length_feature(batch: Batch, view: str = "text") -> np.ndarray:
    """Characters per row (code points); -1 for null (from the view's byte scan)."""
    return batch.feature("text_scan", view=view).char_length


@register_feature("blank")
def blank_feature(batch: Batch, view: str = "text") -> np.ndarray:
    """True where the view is empty or only invisible characters; False for null."""
    return blank_mask(batch.feature(view))


@register_feature("normalized_hash")
def normalized_hash_feature(batch: Batch, view: str = "text") -> np.ndarray:
    """The exact-duplicate key: a 64-bit hash of the normalized text's words (uint64; equal
    normalized texts, equal keys; 0 for null, ``EMPTY_HASH`` for no words). Hashed from
    ``token_text``, so ASCII rows are never normalized for it."""
    from ..sketches.minhash import text_hashes

    if view == "text":  # shingling computes the same keys from the same tokens: reuse them
        for done in batch.cached_any("_sketch"):
            return done.text_hashes
        for shingles, _ in batch.cached_any("_shingles"):
            return shingles.text_hashes
    return text_hashes(batch.feature("token_text", view=view))

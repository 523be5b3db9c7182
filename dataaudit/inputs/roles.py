"""Column roles: which column is the text, the label, the chat, the source...

Detected from column names (and types) unless the user names them; ``split_kind`` reads a split's
kind (train / validation / test) from its name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pyarrow as pa

from ..errors import InputError, close_matches
from ..rule import ROLE_NAMES, TEXT_ROLES, TYPE_MARKER_PREFIX, Roles

__all__ = ["ROLE_HINTS", "Roles", "column_names", "detect_roles", "require_text", "split_kind"]

# Column names that reveal a role, in order of preference.
ROLE_HINTS: dict[str, tuple[str, ...]] = {
    "messages": ("messages", "conversations", "conversation", "chat", "dialog", "dialogue"),
    "prompt": ("prompt", "instruction", "question", "query"),
    "input": ("input", "context"),
    "response": ("response", "output", "completion", "answer", "chosen", "target_text"),
    "label": ("label", "labels", "class", "category", "target", "y", "intent", "sentiment"),
    "source": ("source", "origin", "dataset", "domain", "subset", "data_source", "corpus"),
    "id": ("id", "idx", "uid", "uuid", "_id", "example_id", "row_id", "doc_id"),
    "text": ("text", "content", "document", "sentence", "body", "raw_text", "passage", "doc"),
}


_KIND_PATTERNS = (
    ("train", re.compile(r"(^|[^a-z])(train|training)([^a-z]|$)")),
    ("validation", re.compile(r"(^|[^a-z])(valid|validation|val|dev)([^a-z]|$)")),
    ("test", re.compile(r"(^|[^a-z])(test|eval|evaluation|holdout)([^a-z]|$)")),
)


def split_kind(name: str) -> str:
    """train / validation / test / other, from a split or file name."""
    lowered = name.lower()
    for kind, pattern in _KIND_PATTERNS:
        if pattern.search(lowered):
            return kind
    return "other"


def column_names(schema: pa.Schema) -> list[str]:
    return [n for n in schema.names if not n.startswith(TYPE_MARKER_PREFIX)]


def detect_roles(
    schema: pa.Schema, given: Mapping[str, str | None], *, deferred: bool = False
) -> Roles:
    """Column roles from names (and types). ``deferred``: a named column the schema lacks may
    still turn up in later records (JSON Lines); the stream checks that it does."""
    names = column_names(schema)
    lowered = {n.lower(): n for n in names}
    roles = Roles()
    taken: set[str] = set()
    for role, column in given.items():
        if column is None:
            continue
        if role not in ROLE_NAMES:
            raise InputError(f"unknown column role {role!r}; roles are {', '.join(ROLE_NAMES)}.")
        if column not in names and (not deferred or close_matches(column, names)):
            # a near miss is a typo; otherwise the column may start after the first records
            raise InputError(
                f"{role}={column!r}: no such column. Available columns: {', '.join(names) or '(none)'}."
                + close_matches(column, names)
            )
        setattr(roles, role, column)
        roles.detected[role] = False
        taken.add(column)
    for role, hints in ROLE_HINTS.items():
        if getattr(roles, role) is not None or role in given:
            continue
        for hint in hints:
            column = lowered.get(hint)
            if (
                column is not None
                and column not in taken
                and _fits(role, schema.field(column).type)
            ):
                setattr(roles, role, column)
                roles.detected[role] = True
                taken.add(column)
                break
    if not roles.has("text") and "text" not in given:
        strings = [n for n in names if n not in taken and _is_stringish(schema.field(n).type)]
        if strings:
            roles.text = strings[0]
            roles.detected["text"] = True
    return roles


def _is_stringish(t: pa.DataType) -> bool:
    t = t.value_type if pa.types.is_dictionary(t) else t
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _fits(role: str, t: pa.DataType) -> bool:
    if role == "messages":
        return pa.types.is_list(t) or pa.types.is_large_list(t) or _is_stringish(t)
    if role in TEXT_ROLES:
        return _is_stringish(t) or pa.types.is_null(t)
    if role == "label":  # per-token labels (SFT loss labels, NER tags) are not a row's class
        is_list = pa.types.is_list(t) or pa.types.is_large_list(t)
        return not (is_list and pa.types.is_integer(t.value_type))
    return True


def require_text(roles: Roles, schema: pa.Schema) -> None:
    """An error naming the columns when there is no text (nor label) to audit."""
    if roles.has("text") or roles.label:
        return
    if "input_ids" in schema.names:  # pre-tokenized rows: FMT004 reads the token columns
        return
    names = column_names(schema)
    typed = [  # a column named like text whose values are not strings
        f"{n!r} holds {schema.field(n).type} values, not strings"
        for n in names
        if n.lower() in ROLE_HINTS["text"] + ROLE_HINTS["messages"]
    ]
    raise InputError(
        "found no text column to audit (looked for "
        + ", ".join(ROLE_HINTS["text"][:4])
        + ", messages, prompt/response)"
        + (f": {'; '.join(typed)}" if typed else "")
        + ". Available columns: "
        + ", ".join(f"{n} ({schema.field(n).type})" for n in names)
        + ". Name it with text=COLUMN (CLI: --text COLUMN)."
    )

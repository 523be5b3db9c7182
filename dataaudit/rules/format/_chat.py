"""What the chat rules share: role spellings, a message's parts, its tool calls."""

from __future__ import annotations

import json
from typing import Any

#: role spellings of the OpenAI and ShareGPT formats, by what they mean (FMT002's default)
DEFAULT_ROLES: dict[str, list[str]] = {
    "system": ["system", "developer"],
    "user": ["user", "human"],
    "assistant": ["assistant", "gpt", "bot", "model", "function_call"],
    "tool": ["tool", "function", "observation", "ipython"],
}
KINDS = ("system", "user", "assistant", "tool")


def role_table(roles: dict[str, list[str]] | None) -> dict[str, str]:
    """Spelling -> kind (system, user, assistant, tool)."""
    table = {}
    for kind, spellings in (roles or DEFAULT_ROLES).items():
        for spelling in spellings:
            table[spelling] = kind
    return table


def check_roles_option(roles: Any) -> None:
    if roles is None:
        return
    if not isinstance(roles, dict) or not roles:
        raise ValueError(
            "roles: a mapping from system/user/assistant/tool to the spellings that mean it, "
            'e.g. {"user": ["user", "human"], "assistant": ["assistant", "gpt"]}'
        )
    for kind, spellings in roles.items():
        if kind not in KINDS:
            raise ValueError(f"roles: {kind!r} is not one of {', '.join(KINDS)}")
        if not isinstance(spellings, list) or not all(isinstance(s, str) for s in spellings):
            raise ValueError(f"roles.{kind}: a list of role names (strings)")


def role_of(msg: dict[str, Any]) -> Any:
    """The role (OpenAI ``role``, ShareGPT ``from``; a column of both kinds of rows has both
    keys, one of them null)."""
    role = msg.get("role")
    return msg.get("from") if role is None else role


def content_of(msg: dict[str, Any]) -> Any:
    content = msg.get("content")
    return msg.get("value") if content is None else content


def text_of(content: Any) -> str | None:
    """The text of a content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return None


def tool_calls(msg: dict[str, Any], kind: str | None) -> list[dict[str, Any]] | None:
    """The calls an assistant message makes (see :func:`calls_of`)."""
    tc = msg.get("tool_calls")
    fc = msg.get("function_call")
    raw = tc if isinstance(tc, list) and tc else fc if isinstance(fc, dict) else None
    return calls_of(role_of(msg), kind, content_of(msg), raw)


def calls_of(role: Any, kind: str | None, content: Any, raw: Any) -> list[dict[str, Any]] | None:
    """The calls an assistant turn makes, as {"id", "name", "arguments"} (arguments as given:
    a JSON string or an object); None when the turn calls nothing. ``raw``: OpenAI
    ``tool_calls`` (a list) or ``function_call`` (an object); a ShareGPT ``function_call``
    turn's call is its content (the call's JSON)."""
    if kind != "assistant":
        return None
    if isinstance(raw, list) and raw:
        out = []
        for call in raw:
            fn = call.get("function") if isinstance(call, dict) else None
            fn = fn if isinstance(fn, dict) else (call if isinstance(call, dict) else {})
            out.append(
                {
                    "id": call.get("id") if isinstance(call, dict) else None,
                    "name": fn.get("name"),
                    "arguments": fn.get("arguments"),
                }
            )
        return out
    if isinstance(raw, dict):
        return [{"id": None, "name": raw.get("name"), "arguments": raw.get("arguments")}]
    if role == "function_call":
        try:
            call = json.loads(content) if isinstance(content, str) else content
        except ValueError:
            call = None
        if isinstance(call, dict):
            return [{"id": None, "name": call.get("name"), "arguments": call.get("arguments")}]
        return [{"id": None, "name": None, "arguments": content, "unparsed": True}]
    return None

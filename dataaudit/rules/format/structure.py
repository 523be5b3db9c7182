"""FMT002: conversation structure of chat rows."""

from __future__ import annotations

from typing import Any

from ...context import AuditContext
from ...features import Batch
from ...rowcheck import Category
from ...rule import Severity
from ._chat import check_roles_option, content_of, role_of, role_table, text_of, tool_calls
from ._detail import DetailRowCheck, cut

CATEGORIES = (
    Category(
        "unreadable",
        "could not be read as a chat (not a list of messages with roles)",
        action="drop",
    ),
    Category(
        "bad_content", "have a message whose content is missing, null or not text", action="drop"
    ),
    Category(
        "content_parts",
        "have content as a list of parts (only their text parts are checked)",
        severity=Severity.INFO,
    ),
    Category("oversized", "are larger than max_chars and were not checked"),
    Category("unknown_role", "have a message with a role that is not a known role"),
    Category("system_not_first", "have a system message after the first turn"),
    Category("not_alternating", "do not alternate user and assistant turns"),
    Category("no_final_assistant", "do not end with an assistant turn"),
    Category("empty_assistant", "have an empty assistant turn", action="drop"),
    Category("orphan_tool_result", "have a tool result without a matching earlier tool call"),
    Category("repeated_turn", "repeat an earlier turn verbatim"),
)


class ConversationStructure(DetailRowCheck):
    """Chat rows whose turns are not a conversation a trainer can learn from.

    What it does:
        Reads each row of the ``messages`` column (OpenAI ``{"role", "content"}`` or ShareGPT
        ``{"from", "value"}`` turns, stored as a list or as JSON text) and counts, per problem,
        the rows that have it, with examples that name the turn: rows that cannot be read as a
        chat (not a list, a message that is not an object or has no role), messages whose
        content is missing, null or not text (an assistant turn calling tools may have no
        content), content given as a list of parts (noted: only the text parts are read), roles
        outside ``roles``, a system message after the first turn, user and assistant turns
        that do not alternate (two user turns in a row, a conversation opened by the
        assistant, an assistant answering itself, a user turn right after a tool result), rows
        that do not end with an assistant turn, empty assistant turns, tool results with no
        earlier matching tool call (by ``tool_call_id`` when the result has one), and turns
        that repeat an earlier turn of the row verbatim. Rows larger than ``max_chars`` are
        flagged and not checked.

    Why it matters:
        Chat templates render whatever they are given or raise on it, so a trainer either
        crashes or learns from conversations that never happen at inference: replies to
        nobody, empty replies (the model learns to stop), tool results it never asked for,
        loops of repeated turns.

    Example:
        ``[{"role": "user", "content": "Hi"}, {"role": "user", "content": "Hello?"}]`` is
        flagged twice: not alternating (turns 1, 2) and no final assistant turn.

    Options:
        roles: the role spellings by kind, ``{"system": [...], "user": [...], "assistant":
            [...], "tool": [...]}`` (default: OpenAI and ShareGPT spellings: system/developer,
            user/human, assistant/gpt/bot/model/function_call, tool/function/observation/
            ipython).
        alternation: check that user and assistant turns alternate (default true).
        final_assistant: check that the last turn is the assistant's (default true).
        repeat_min_chars: turns shorter than this are never called repeats ("Yes.",
            default 20).
        max_chars: rows with more characters of content are flagged and not checked
            (default 1,000,000).
    """

    code = "FMT002"
    name = "format.conversation-structure"
    groups = ("sft", "format")
    severity = Severity.WARN
    requires = ("messages",)
    categories = CATEGORIES

    def __init__(
        self,
        roles: dict[str, list[str]] | None = None,
        alternation: bool = True,
        final_assistant: bool = True,
        repeat_min_chars: int = 20,
        max_chars: int = 1_000_000,
    ):
        self.roles = roles
        self.alternation = alternation
        self.final_assistant = final_assistant
        self.repeat_min_chars = repeat_min_chars
        self.max_chars = max_chars

    def check_options(self) -> None:
        check_roles_option(self.roles)
        for name in ("repeat_min_chars", "max_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: a positive integer, not {value!r}")

    def active_categories(self, ctx: AuditContext) -> tuple[Category, ...]:
        skip = set()
        if not self.alternation:
            skip.add("not_alternating")
        if not self.final_assistant:
            skip.add("no_final_assistant")
        return tuple(c for c in CATEGORIES if c.key not in skip)

    def thresholds(self) -> dict[str, Any]:
        return {"repeat_min_chars": self.repeat_min_chars, "max_chars": self.max_chars}

    def check_rows(self, batch: Batch) -> dict[str, dict[int, str]]:
        out: dict[str, dict[int, str]] = {c.key: {} for c in self.active_categories(None)}
        table = role_table(self.roles)
        raw = batch.role("messages")
        raw_values = raw.to_pylist() if raw is not None else [None] * batch.num_rows
        for i, messages in enumerate(batch.feature("messages")):
            if raw_values[i] is None:
                continue  # a null row: FMT001 reports it
            for key, detail in self._problems(messages, raw_values[i], table):
                out[key].setdefault(i, detail)
        return out

    def _problems(self, messages: Any, raw: Any, table: dict[str, str]) -> list[tuple[str, str]]:
        if not isinstance(messages, list):
            if isinstance(raw, str):
                what = "JSON text that does not parse as a list of messages"
                if len(raw) > self.max_chars:
                    return [("oversized", f"{len(raw):,} characters of JSON text")]
            else:
                what = f"a {type(raw).__name__}, not a list of messages"
            return [("unreadable", what)]
        if not messages:
            return [("unreadable", "no messages")]
        found: list[tuple[str, str]] = []
        turns: list[tuple[str | None, str | None, dict[str, Any]]] = []  # (kind, text, msg)
        size = 0
        for n, msg in enumerate(messages, 1):
            if not isinstance(msg, dict):
                return [("unreadable", f"turn {n} is a {type(msg).__name__}, not an object")]
            role = role_of(msg)
            if not isinstance(role, str) or not role:
                return [("unreadable", f"turn {n} has no role")]
            kind = table.get(role)
            if kind is None:
                found.append(("unknown_role", f"turn {n}: role {cut(role, 40)!r}"))
            content = content_of(msg)
            if isinstance(content, list):
                found.append(("content_parts", f"turn {n}: content is a list of parts"))
            elif content is None and tool_calls(msg, kind):
                pass
            elif not isinstance(content, str):
                what = "missing or null" if content is None else type(content).__name__
                found.append(("bad_content", f"turn {n} ({cut(role, 40)}): content is {what}"))
            text = text_of(content)
            size += len(text) if text else 0
            turns.append((kind, text, msg))
        if size > self.max_chars:
            return [("oversized", f"{size:,} characters of content")]
        found.extend(self._sequence(turns))
        return found

    def _sequence(self, turns: list[tuple[str | None, str | None, dict[str, Any]]]):
        found: list[tuple[str, str]] = []
        pending: list[Any] = []  # ids of tool calls not answered yet (None: a call without id)
        seen: dict[str, int] = {}
        prev: str | None = None
        prev_calls = False
        for n, (kind, text, msg) in enumerate(turns, 1):
            calls = tool_calls(msg, kind)
            if kind == "system" and n > 1:
                found.append(("system_not_first", f"turn {n} is a system message"))
            if kind == "assistant" and not calls and text is not None and not text.strip():
                found.append(("empty_assistant", f"turn {n} is empty"))
            if kind == "tool":
                call_id = msg.get("tool_call_id")
                if call_id is not None and call_id in pending:
                    pending.remove(call_id)
                elif call_id is None and pending:
                    pending.pop(0)
                else:
                    why = f"id {cut(call_id, 40)!r}" if call_id is not None else "no id"
                    found.append(
                        ("orphan_tool_result", f"turn {n}: tool result ({why}) answers no call")
                    )
            if calls:
                pending.extend(c["id"] for c in calls)
            if self.alternation and kind in ("user", "assistant"):
                problem = None
                if kind == "user" and prev == "user":
                    problem = f"turns {n - 1} and {n} are both user turns"
                elif kind == "user" and prev == "tool":
                    problem = f"turn {n} is a user turn right after a tool result"
                elif kind == "assistant" and prev is None:
                    problem = f"turn {n}: the assistant speaks first"
                elif kind == "assistant" and prev == "assistant" and not prev_calls:
                    problem = f"turns {n - 1} and {n} are both assistant turns"
                if problem:
                    found.append(("not_alternating", problem))
            if kind not in (None, "system"):
                prev, prev_calls = kind, bool(calls)
            stripped = (text or "").strip()
            if kind != "system" and len(stripped) >= self.repeat_min_chars:
                if stripped in seen:
                    found.append(
                        ("repeated_turn", f"turn {n} repeats turn {seen[stripped]} verbatim")
                    )
                else:
                    seen[stripped] = n
        if self.final_assistant and turns and turns[-1][0] != "assistant":
            last = role_of(turns[-1][2])
            found.append(
                ("no_final_assistant", f"the last turn ({cut(last, 40)}) is not the assistant's")
            )
        return found

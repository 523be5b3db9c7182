"""FMT002: conversation structure of chat rows."""

from __future__ import annotations

from typing import Any

from ...context import AuditContext
from ...features import Batch
from ...features.chat import OK
from ...rowcheck import Category
from ...rule import Severity
from ._chat import calls_of, check_roles_option, role_table, text_of
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
        chat = batch.feature("chat_turns")
        bounds = chat.offsets.tolist()
        for i, status in enumerate(chat.status):
            if status is None:
                continue  # a null row: FMT001 reports it
            if status != OK:
                out["unreadable"][i] = status
                continue
            found = self._problems(chat, bounds[i], bounds[i + 1], table)
            if found:
                for key, detail in found:
                    out[key].setdefault(i, detail)
        return out

    def _problems(self, chat: Any, a: int, b: int, table: dict[str, str]) -> list[tuple[str, str]]:
        """The row's problems, in one pass over its turns ``a:b`` of the flat lists."""
        roles, contents, raw_calls, call_ids = chat.roles, chat.contents, chat.calls, chat.call_ids
        alternation, min_repeat = self.alternation, self.repeat_min_chars
        found: list[tuple[str, str]] = []
        size = 0
        pending: list[Any] = []  # ids of tool calls not answered yet (None: a call without id)
        seen: dict[str, int] = {}
        prev: str | None = None
        prev_calls = False
        kind: str | None = None
        for n, t in enumerate(range(a, b), 1):
            role, content, raw = roles[t], contents[t], raw_calls[t]
            kind = table.get(role)
            if kind is None:
                found.append(("unknown_role", f"turn {n}: role {cut(role, 40)!r}"))
            calls = (
                calls_of(role, kind, content, raw)
                if raw is not None or role == "function_call"
                else None
            )
            if content.__class__ is str:
                text = content
            elif isinstance(content, list):
                found.append(("content_parts", f"turn {n}: content is a list of parts"))
                text = text_of(content)
            else:
                text = None
                if not (content is None and calls):
                    what = "missing or null" if content is None else type(content).__name__
                    found.append(("bad_content", f"turn {n} ({cut(role, 40)}): content is {what}"))
            if text:
                size += len(text)
            if kind == "system":
                if n > 1:
                    found.append(("system_not_first", f"turn {n} is a system message"))
                continue
            if kind == "assistant":
                if not calls and text is not None and not text.strip():
                    found.append(("empty_assistant", f"turn {n} is empty"))
                if alternation:
                    if prev is None:
                        found.append(("not_alternating", f"turn {n}: the assistant speaks first"))
                    elif prev == "assistant" and not prev_calls:
                        found.append(
                            ("not_alternating", f"turns {n - 1} and {n} are both assistant turns")
                        )
            elif kind == "user":
                if alternation and prev == "user":
                    found.append(("not_alternating", f"turns {n - 1} and {n} are both user turns"))
                elif alternation and prev == "tool":
                    found.append(
                        ("not_alternating", f"turn {n} is a user turn right after a tool result")
                    )
            elif kind == "tool":
                call_id = call_ids[t]
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
            if kind is not None:
                prev, prev_calls = kind, bool(calls)
            if text and len(text) >= min_repeat:
                stripped = text.strip()
                if len(stripped) >= min_repeat:
                    first = seen.get(stripped)
                    if first is not None:
                        found.append(("repeated_turn", f"turn {n} repeats turn {first} verbatim"))
                    else:
                        seen[stripped] = n
        if size > self.max_chars:
            return [("oversized", f"{size:,} characters of content")]
        if self.final_assistant and b > a and kind != "assistant":
            found.append(
                (
                    "no_final_assistant",
                    f"the last turn ({cut(roles[b - 1], 40)}) is not the assistant's",
                )
            )
        return found

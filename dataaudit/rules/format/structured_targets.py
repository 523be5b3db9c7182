"""FMT003: JSON targets and tool calls that do not parse or do not fit their schema."""

from __future__ import annotations

import json
import re
from typing import Any

from ..._arrow import one_chunk
from ...context import AuditContext
from ...features import Batch
from ...features.chat import OK
from ...resources.schemas import (
    SchemaError,
    compiled,
    first_error,
    load_json_option,
    quick_checker,
    tool_table,
)
from ...rowcheck import Category
from ...rule import Severity
from ._chat import DEFAULT_ROLES, calls_of, role_table
from ._detail import DetailRowCheck, cut

#: a prompt that mentions JSON as a format: "as a JSON object", "in JSON", ... A reply to it is
#: a JSON target only when it looks like JSON (prose that quotes documentation, "serialize obj
#: as a JSON formatted stream", is not a request)
ASKS_FOR_JSON = re.compile(
    r"\b(?:in|as|with|only|return|output|respond|reply|answer|format)\s+"
    r"(?:(?:valid|strict|plain|a|an|the|only|raw|pure)\s+)*JSON\b"
    r"|\bJSON\s+(?:object|array|format|only|response|output)\b",
    re.IGNORECASE,
)
#: a prompt that tells the model to answer in JSON: an answering verb before "JSON" in the same
#: sentence ("Reply in JSON", "Always answer with a JSON object", "Return valid JSON"), or
#: "JSON only" / "only JSON": every reply to it is a JSON target, prose included
DEMANDS_JSON = re.compile(
    r"\b(?:respond|reply|answer|return|output|format|write|give|provide|produce|generate|emit)"
    r"\b[^.!?\n]{0,40}?\bJSON\b"
    r"|\bJSON\s+only\b|\bonly\s+(?:(?:valid|strict|raw|pure)\s+)?JSON\b",
    re.IGNORECASE,
)
_LOOKS_LIKE_JSON = re.compile(r"\s*(?:[\[{]|```)")
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL | re.IGNORECASE)

CATEGORIES = (
    Category("json_parse_error", "have a JSON target that does not parse", action="drop"),
    Category("schema_violation", "have a JSON target that violates the schema"),
    Category("oversized", "have a JSON target larger than max_chars (not parsed)"),
    Category("unknown_tool", "call a tool that is not declared", action="drop"),
    Category(
        "arguments_parse_error", "have tool-call arguments that do not parse as JSON", action="drop"
    ),
    Category("missing_argument", "have a tool call without a required argument"),
    Category("invalid_arguments", "have tool-call arguments that violate the tool's schema"),
    Category("bad_tools", "declare tools that cannot be read (not a list of named tools)"),
)


def _asks(prompt: str) -> int:
    """2 when the prompt demands a JSON answer, 1 when it only mentions JSON as a format."""
    if "json" not in prompt.lower():
        return 0
    if DEMANDS_JSON.search(prompt):
        return 2
    return 1 if ASKS_FOR_JSON.search(prompt) else 0


def _parse_detail(exc: json.JSONDecodeError) -> str:
    return f"{exc.msg} at line {exc.lineno} column {exc.colno} (char {exc.pos})"


class StructuredTargets(DetailRowCheck):
    """JSON targets that do not parse or validate, and tool calls a model could not make.

    What it does:
        JSON targets are the turns of the ``json_roles`` roles, the ``json_fields`` columns and,
        with ``detect``, every assistant reply to a prompt (the system message or the last user
        turn) that demands JSON ("respond in JSON", "answer with a JSON object", "JSON only"),
        and the replies that look like JSON (start with ``{``, ``[`` or a code fence) to a prompt
        that only mentions it as a format ("serialize obj as a JSON formatted stream" quoted
        from documentation asks for nothing); a reply wrapped in one fenced code block is read
        without the fence. Each must parse (the finding gives the
        parser's message and position) and, with ``schema``, validate against it (the first
        violation with its path). Every tool call (OpenAI ``tool_calls`` and ``function_call``,
        ShareGPT ``function_call`` turns) must name a tool declared in the row's ``tools``
        column or the ``tools`` option, and its arguments must parse and validate against that
        tool's parameter schema: a missing required argument is counted apart from other
        violations. Errors are grouped by type, with examples naming the turn.

    Why it matters:
        A model trained on broken JSON or on calls to tools that do not exist learns to emit
        them; low training loss on such targets means the model copies the mistakes.

    Example:
        ``{"role": "assistant", "tool_calls": [{"function": {"name": "get_wether", ...}}]}``
        with only ``get_weather`` declared is an unknown tool.

    Options:
        json_roles: roles whose turns are JSON (e.g. ``["assistant"]``; default none).
        json_fields: columns whose values are JSON (e.g. ``["response"]``; default none).
        detect: treat replies to prompts that demand JSON (and JSON-looking replies to prompts
            that mention it) as JSON targets (default true).
        schema: a JSON Schema (an object, or the path of a JSON file) JSON targets must fit.
        tools: tool declarations used when a row has none: OpenAI ``tools`` list, legacy
            ``functions`` list, or ``{name: parameter schema}``; inline or a JSON file path.
        tools_column: the column holding each row's tool declarations (default ``tools``).
        max_chars: JSON targets longer than this are flagged and not parsed (default
            1,000,000).
    """

    code = "FMT003"
    name = "format.structured-targets"
    groups = ("sft", "format")
    severity = Severity.WARN
    requires = ()
    categories = CATEGORIES

    def __init__(
        self,
        json_roles: list[str] | None = None,
        json_fields: list[str] | None = None,
        detect: bool = True,
        schema: dict[str, Any] | str | None = None,
        tools: list[Any] | dict[str, Any] | str | None = None,
        tools_column: str = "tools",
        max_chars: int = 1_000_000,
    ):
        self.json_roles = json_roles
        self.json_fields = json_fields
        self.detect = detect
        self.schema = schema
        self.tools = tools
        self.tools_column = tools_column
        self.max_chars = max_chars

    def check_options(self) -> None:
        schema = load_json_option(self.schema, "schema")
        if schema is not None:
            try:
                compiled(schema)
            except SchemaError as exc:
                where = f" ({self.schema})" if isinstance(self.schema, str) else ""
                raise ValueError(f"schema{where}: {exc}; fix the schema") from None
        tools = load_json_option(self.tools, "tools")
        if tools is not None:
            where = f" ({self.tools})" if isinstance(self.tools, str) else ""
            try:
                table = tool_table(tools)
            except ValueError as exc:
                raise ValueError(f"tools{where}: {exc}") from None
            for name, params in table.items():
                try:
                    compiled(params)
                except SchemaError as exc:
                    raise ValueError(
                        f"tools{where}: the parameters of {name!r} are {exc}; fix the schema"
                    ) from None
        if isinstance(self.max_chars, bool) or not isinstance(self.max_chars, int):
            raise ValueError(f"max_chars: a positive integer, not {self.max_chars!r}")

    def skip_reason(self, ctx: AuditContext) -> str | None:
        roles = ctx.roles
        if roles.messages or self.json_fields:
            return None
        return (
            "needs a messages column (chat rows) or json_fields (the columns holding JSON); "
            "set messages=COLUMN or the json_fields option"
        )

    def thresholds(self) -> dict[str, Any]:
        return {"max_chars": self.max_chars}

    # -- the check --------------------------------------------------------------------------------
    def check_rows(self, batch: Batch) -> dict[str, dict[int, str]]:
        out: dict[str, dict[int, str]] = {c.key: {} for c in CATEGORIES}
        schema = load_json_option(self.schema, "schema")
        validator = compiled(schema) if schema is not None else None
        config_tools = load_json_option(self.tools, "tools")
        config_table = tool_table(config_tools) if config_tools is not None else None
        for field in self.json_fields or []:
            if not batch.has_column(field):
                raise ValueError(
                    f"json_fields: the dataset has no column {field!r}; name one of "
                    f"{', '.join(batch.data.schema.names)}"
                )
            for i, value in enumerate(batch.column(field).to_pylist()):
                if value is not None:
                    self._target(out, i, field, value, validator)
        if batch.roles.messages and batch.has_column(batch.roles.messages):
            self._chats(out, batch, config_table, validator)
        return out

    def _chats(self, out, batch: Batch, config_table, validator) -> None:
        chat = batch.feature("chat_turns")
        table = role_table(DEFAULT_ROLES)
        json_roles = set(self.json_roles or ())
        roles, contents, raw_calls = chat.roles, chat.contents, chat.calls
        kinds = [table.get(r) for r in roles]
        status = chat.status
        offs = chat.offsets
        call_turns = [
            t
            for t, (k, raw, r) in enumerate(zip(kinds, raw_calls, roles))
            if k == "assistant" and (raw is not None or r == "function_call")
        ]
        calling = sorted(
            {int(i) for i in offs.searchsorted(call_turns, side="right") - 1} if call_turns else ()
        )
        calling = [i for i in calling if status[i] == OK]
        tools_col = None
        if calling and batch.has_column(self.tools_column):
            tools_col = one_chunk(batch.column(self.tools_column))
        #: (a row's tools as an Arrow scalar, its table or why it cannot be read): rows mostly
        #: share their tools, and comparing Arrow scalars costs far less than converting them
        seen_tools: list[tuple[Any, Any]] = []
        # rows worth a walk: those calling tools, with declared JSON roles, or whose system or
        # user turns mention JSON (ASKS_FOR_JSON needs the word; a substring test is cheap)
        walk = set(calling)
        if json_roles:
            walk.update(i for i, st in enumerate(status) if st == OK)
        elif self.detect:
            hits = [
                t
                for t, (k, c) in enumerate(zip(kinds, contents))
                if (k == "user" or k == "system")
                and c.__class__ is str
                and ("JSON" in c or "json" in c.lower())
            ]
            if hits:
                found = chat.offsets.searchsorted(hits, side="right") - 1
                walk.update(int(i) for i in found)
        bounds = offs.tolist()
        for i in sorted(walk):
            if status[i] != OK:
                continue  # FMT002 reports unreadable rows
            tools: Any = None
            tools_read = False
            system_asks = prompt_asks = 0  # 0: no, 1: mentions JSON, 2: demands it
            for n, t in enumerate(range(bounds[i], bounds[i + 1]), 1):
                kind, content = kinds[t], contents[t]
                if kind == "system" and isinstance(content, str):
                    system_asks = max(system_asks, _asks(content))
                elif kind == "user" and isinstance(content, str):
                    prompt_asks = _asks(content)
                raw = raw_calls[t]
                calls = (
                    calls_of(roles[t], kind, content, raw)
                    if raw is not None or roles[t] == "function_call"
                    else None
                )
                if calls:
                    if not tools_read:
                        tools_read = True
                        tools = self._tools_for(out, i, tools_col, config_table, seen_tools)
                    for call in calls:
                        self._call(out, i, n, call, tools)
                    continue
                if not isinstance(content, str):
                    continue
                wanted = roles[t] in json_roles or kind in json_roles
                if not wanted and self.detect and kind == "assistant":
                    asks = max(system_asks, prompt_asks)
                    wanted = asks == 2 or (asks == 1 and bool(_LOOKS_LIKE_JSON.match(content)))
                if wanted:
                    self._target(out, i, f"turn {n}", content, validator)

    def _tools_for(self, out, i, tools_col, config_table, seen_tools) -> Any:
        if tools_col is None:
            return config_table
        scalar = tools_col[i]
        if not scalar.is_valid:
            return config_table
        for known, table in seen_tools:
            if known.equals(scalar):
                if isinstance(table, str):
                    out["bad_tools"].setdefault(i, table)
                    return config_table
                return table
        table = self._declared(out, i, scalar.as_py(), config_table)
        if len(seen_tools) < 64:
            seen_tools.append((scalar, out["bad_tools"].get(i, table)))
        return table

    def _declared(self, out, i, declared, config_table) -> dict[str, Any] | None:
        if declared is None or declared == [] or declared == "":
            return config_table
        try:
            return tool_table(declared)
        except (ValueError, TypeError) as exc:
            out["bad_tools"].setdefault(i, cut(str(exc)))
            return config_table

    def _target(self, out, i, where: str, text: str, validator) -> None:
        if len(text) > self.max_chars:
            out["oversized"].setdefault(i, f"{where}: {len(text):,} characters")
            return
        fenced = _FENCE.match(text)
        try:
            value = json.loads(fenced.group(1) if fenced else text)
        except json.JSONDecodeError as exc:
            out["json_parse_error"].setdefault(i, f"{where}: {_parse_detail(exc)}")
            return
        except RecursionError:
            out["json_parse_error"].setdefault(i, f"{where}: nested too deeply to parse")
            return
        if validator is not None and quick_checker(validator.schema)(value) is not True:
            error = first_error(validator, value)
            if error is not None:
                out["schema_violation"].setdefault(i, f"{where}: {error[1]}")

    def _call(self, out, i, n, call, tools) -> None:
        name = call.get("name")
        if tools is None or name not in tools:
            declared = ", ".join(sorted(tools)[:5]) if tools else "no tools declared"
            out["unknown_tool"].setdefault(
                i, f"turn {n}: {cut(name, 60)!r} is not declared ({declared})"
            )
            return
        args = call.get("arguments")
        if call.get("unparsed") or isinstance(args, str) or args is None:
            text = "" if args is None else args
            if len(text) > self.max_chars:
                out["oversized"].setdefault(i, f"turn {n}: arguments of {len(text):,} characters")
                return
            try:
                args = json.loads(text)
            except json.JSONDecodeError as exc:
                out["arguments_parse_error"].setdefault(
                    i, f"turn {n}: {name}: {_parse_detail(exc)}"
                )
                return
        params = tools[name]
        if quick_checker(params)(args) is True:
            return
        try:
            validator = compiled(params)
        except SchemaError as exc:
            out["bad_tools"].setdefault(i, f"the parameters of {cut(name, 60)!r} are {exc}")
            return
        error = first_error(validator, args)
        if error is None:
            return
        keyword, detail = error
        key = "missing_argument" if keyword == "required" else "invalid_arguments"
        out[key].setdefault(i, f"turn {n}: {name}: {detail}")

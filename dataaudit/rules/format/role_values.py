"""FMT001: null or wrongly typed values in the columns the audit reads."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa

from ..._arrow import bools, validity
from ..._compute import pc
from ...context import AuditContext
from ...features import Batch
from ...features.text import ASSISTANT_ROLES
from ...rowcheck import Category, RowCheckRule
from ...rule import ROLE_NAMES, TEXT_ROLES, RuleResult, Severity


def _is_string_type(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _calls_tools(msg: dict[str, Any]) -> bool:
    """An OpenAI tool-call turn: ``tool_calls`` (a non-empty list) or the older
    ``function_call`` (an object) stand in for the content, which is then null or absent."""
    calls = msg.get("tool_calls")
    return (isinstance(calls, list) and bool(calls)) or isinstance(msg.get("function_call"), dict)


def _bad_message(msg: Any) -> bool:
    if not isinstance(msg, dict):
        return True
    role = msg.get("role", msg.get("from"))
    content = msg.get("content", msg.get("value"))
    if not isinstance(role, str) or not role:
        return True
    if content is None and role in ASSISTANT_ROLES and _calls_tools(msg):
        return False
    return not isinstance(content, (str, list))


class RoleValues(RowCheckRule):
    """Nulls and non-string values in role columns, and malformed chat rows.

    What it does:
        For each column with a role (text, prompt, input, response, messages, label, source, id)
        flags null values; for text columns also values that are not strings (a number or a list
        where text belongs; readers keep these as their JSON text and mark them); for a chat
        ``messages`` column, rows that are not a list of ``{"role": ..., "content": ...}``
        objects, with a missing role or a missing/null content (an assistant turn that calls
        tools, OpenAI's ``content: null`` with ``tool_calls``, is not malformed). Flagged rows
        have the action ``drop`` for the columns a model reads (text, prompt, input, response,
        messages: the row would train on "None" or crash) and ``review`` for label, source and
        id values; a finding raised to an error (no row readable) raises its flags with it.

    Why it matters:
        Tokenizers and chat templates either crash on these rows mid-training or, worse,
        stringify them ("None", "42") into the training text.

        When no row of a split can be read in a role column (every chat malformed, every text
        value a number), that is an error, not a warning: the rules that read the column would
        otherwise pass having audited nothing.

    Example:
        ``{"text": null}``, ``{"text": 42}``, ``{"messages": [{"role": "user"}]}`` are flagged.

    Options:
        roles: the roles to check (default: all that the dataset has).
    """

    code = "FMT001"
    name = "format.role-values"
    groups = ("default", "format")
    severity = Severity.WARN
    requires = ()

    def __init__(self, roles: list[str] | None = None):
        self.roles = roles

    def check_options(self) -> None:
        for role in self.roles or []:
            if role not in ROLE_NAMES:
                raise ValueError(f"roles: {role!r} is not a role; use {', '.join(ROLE_NAMES)}")

    def _checked(self, ctx_roles) -> list[tuple[str, str]]:
        wanted = self.roles or list(ROLE_NAMES)
        return [(r, getattr(ctx_roles, r)) for r in wanted if getattr(ctx_roles, r, None)]

    def active_categories(self, ctx: AuditContext) -> tuple[Category, ...]:
        cats = []
        for role, column in self._checked(ctx.roles):
            action = "drop" if role in TEXT_ROLES or role == "messages" else "review"
            cats.append(
                Category(f"{column}:null", f"have a null {column!r} ({role})", action=action)
            )
            if role in TEXT_ROLES:
                cats.append(
                    Category(
                        f"{column}:not_string",
                        f"have a non-string {column!r} ({role})",
                        action=action,
                    )
                )
            if role == "messages":
                cats.append(
                    Category(
                        f"{column}:malformed", f"have a malformed chat in {column!r}", action=action
                    )
                )
        return tuple(cats)

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        result = super().finish(state, ctx)
        raised: set[tuple[str | None, str]] = set()
        for finding in result.findings:
            category = finding.data.get("category", "")
            if category.endswith((":malformed", ":not_string")) and finding.data.get("rate") == 1:
                column = category.rsplit(":", 1)[0]
                finding.severity = Severity.ERROR
                raised.add((finding.split, category))
                finding.message += (
                    f": no row of {column!r} could be read, so the rules that read it audited "
                    "nothing. Check the column's format or name the right column"
                )
        if raised:
            result.flags = [
                replace(f, severity=Severity.ERROR) if (f.split, f.detail) in raised else f
                for f in result.flags
            ]
        return result

    def check(self, batch: Batch) -> dict[str, np.ndarray]:
        masks: dict[str, np.ndarray] = {}
        for role, column in self._checked(batch.roles):
            if not batch.has_column(column):
                continue
            arr = batch.column(column)
            valid = validity(arr)
            null = np.zeros(batch.num_rows, bool) if valid is None else ~valid
            masks[f"{column}:null"] = null
            if role in TEXT_ROLES:
                if _is_string_type(arr.type) or pa.types.is_null(arr.type):
                    markers = batch.type_markers(column)
                    bad = (
                        np.zeros(batch.num_rows, bool)
                        if markers is None
                        else bools(pc.is_valid(markers))
                    )
                else:
                    bad = ~null
                masks[f"{column}:not_string"] = bad
            if role == "messages":
                parsed = batch.feature("messages")
                raw = arr.to_pylist()
                masks[f"{column}:malformed"] = np.array(
                    [
                        raw[i] is not None
                        and (m is None or not m or any(_bad_message(x) for x in m))
                        for i, m in enumerate(parsed)
                    ],
                    dtype=bool,
                )
        return masks

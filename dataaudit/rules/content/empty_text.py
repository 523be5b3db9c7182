"""TXT001: empty or whitespace-only text."""

from __future__ import annotations

import numpy as np

from ...context import AuditContext
from ...features import Batch
from ...rowcheck import Category, RowCheckRule
from ...rule import Severity


class EmptyText(RowCheckRule):
    """Rows whose text is empty or only whitespace / invisible characters.

    What it does:
        Flags rows whose text view (the text column, or the rendered chat / prompt+response) is
        empty or holds only whitespace, separators or zero-width characters; for chat and
        prompt/response data it also flags rows whose trained-on reply is empty. Flagged rows
        have the action ``drop``: there is nothing in them to train or evaluate on.

    Why it matters:
        Empty samples waste compute, and empty replies teach a model to answer with nothing.
        They usually come from a broken extraction or join step upstream.

    Example:
        ``{"text": "   "}`` and ``{"messages": [{"role": "user", "content": "hi"},
        {"role": "assistant", "content": ""}]}`` are both flagged.

    Options:
        check_response: also flag empty replies (response column or last assistant turn).
    """

    code = "TXT001"
    name = "content.empty-text"
    groups = ("default", "content")
    severity = Severity.WARN
    requires = ("text",)
    categories = (
        Category("empty_text", "have empty or whitespace-only text", action="drop"),
        Category("empty_response", "have an empty reply to train on", action="drop"),
    )

    def __init__(self, check_response: bool = True):
        self.check_response = check_response

    def active_categories(self, ctx: AuditContext) -> tuple[Category, ...]:
        has_reply = bool(ctx.roles.response or ctx.roles.messages)
        if self.check_response and has_reply:
            return self.categories
        return self.categories[:1]

    def check(self, batch: Batch) -> dict[str, np.ndarray]:
        masks = {"empty_text": batch.feature("blank")}
        if self.check_response and (batch.roles.response or batch.roles.messages):
            masks["empty_response"] = batch.feature("blank", view="response_text")
        return masks

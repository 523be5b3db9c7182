"""A tokenizer's chat template: how a conversation becomes the text the model is trained on.

Chat rows are measured (LEN001) as the template renders them, special tokens and role headers
included, because that is what a trainer tokenizes; the plain ``role: content`` rendering
undercounts. Templates are Jinja, rendered as ``transformers`` renders them (a sandboxed
environment, ``trim_blocks``/``lstrip_blocks``, ``raise_exception``, ``tojson``,
``strftime_now``), with two differences that keep reports reproducible: ``strftime_now`` returns
a fixed date, and nothing is executed outside the sandbox. A row the template rejects (its
``raise_exception``: "roles must alternate", say) is reported: a trainer would crash or skip it.

Where a template comes from: a transformers tokenizer object's ``chat_template``; beside a
``tokenizer.json``, the ``chat_template`` of ``tokenizer_config.json`` or a ``chat_template.jinja``
file (as ``save_pretrained`` writes them).
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

__all__ = ["ChatTemplate", "TemplateRejected", "find_template", "template_from_object"]

# reproducible "today" for templates that print a date (Llama 3: "Today Date: ...")
FIXED_NOW = _dt.datetime(2024, 1, 1)
_ROLE_ALIASES = {"human": "user", "gpt": "assistant", "bot": "assistant", "model": "assistant"}


class TemplateRejected(Exception):
    """The template raised for this conversation (``raise_exception`` or a rendering error)."""


@dataclass
class ChatTemplate:
    source: str  # where it was found, for the report
    text: str
    special_tokens: dict[str, str] = field(default_factory=dict)  # bos_token, eos_token, ...

    @property
    def hash(self) -> str:
        import xxhash

        return xxhash.xxh3_64_hexdigest(self.text.encode("utf-8", "surrogatepass"))

    def describe(self) -> dict[str, Any]:
        return {"source": self.source, "hash": self.hash}

    def __getstate__(self) -> dict[str, Any]:  # the compiled template does not pickle
        state = dict(self.__dict__)
        state.pop("_compiled", None)
        return state

    @cached_property
    def _compiled(self) -> Any:
        from jinja2 import TemplateError, nodes
        from jinja2.ext import Extension, loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        class Generation(Extension):
            """``{% generation %}`` marks the trained reply in some templates: render its body."""

            tags = {"generation"}

            def parse(self, parser: Any) -> Any:
                lineno = next(parser.stream).lineno
                body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
                return nodes.Scope(body, lineno=lineno)

        def raise_exception(message: str) -> None:
            raise TemplateError(message)

        def tojson(value: Any, ensure_ascii: bool = False, indent: Any = None, **kw: Any) -> str:
            return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, **kw)

        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols]
        )
        env.filters["tojson"] = tojson
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = FIXED_NOW.strftime
        return env.from_string(self.text)

    def check(self) -> None:
        """Compile now: a template that does not compile is a usage error, named once."""
        from jinja2 import TemplateError

        try:
            self._compiled  # noqa: B018
        except TemplateError as exc:
            raise ValueError(
                f"the chat template from {self.source} does not compile: {exc}"
            ) from None

    def render(self, messages: list[Any], *, add_generation_prompt: bool = False) -> str:
        """The conversation as the trainer sees it; TemplateRejected when the template refuses."""
        from jinja2 import TemplateError

        chat = [_as_message(m) for m in messages]
        try:
            return self._compiled.render(
                messages=chat, add_generation_prompt=add_generation_prompt, **self.special_tokens
            )
        except TemplateError as exc:
            raise TemplateRejected(str(exc) or type(exc).__name__) from None
        except (TypeError, KeyError, AttributeError, IndexError, ValueError) as exc:
            raise TemplateRejected(f"{type(exc).__name__}: {exc}") from None


def _as_message(message: Any) -> Any:
    """ShareGPT's {"from", "value"} as {"role", "content"}: templates read role and content."""
    if isinstance(message, dict) and "role" not in message and "from" in message:
        out = {k: v for k, v in message.items() if k not in ("from", "value")}
        role = str(message.get("from") or "")
        out["role"] = _ROLE_ALIASES.get(role, role)
        out["content"] = message.get("value")
        return out
    return message


def _token_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]  # {"content": "<s>", "lstrip": false, ...}
    return None


def _special_tokens(config: dict[str, Any]) -> dict[str, str]:
    out = {}
    for key in ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token"):
        text = _token_text(config.get(key))
        if text is not None:
            out[key] = text
    return out


def _pick(template: Any) -> str | None:
    """A template string; a list of named templates gives its "default"."""
    if isinstance(template, str):
        return template
    if isinstance(template, list):
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        chosen = named.get("default")
        return chosen if isinstance(chosen, str) else None
    return None


def find_template(tokenizer_json: Path) -> ChatTemplate | None:
    """The chat template saved beside a tokenizer.json, if any."""
    folder = tokenizer_json.parent
    config: dict[str, Any] = {}
    config_path = folder / "tokenizer_config.json"
    if config_path.is_file():
        try:
            loaded = json.loads(config_path.read_text(encoding="utf-8"))
            config = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            config = {}
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return ChatTemplate(str(jinja), jinja.read_text(encoding="utf-8"), _special_tokens(config))
    text = _pick(config.get("chat_template"))
    if text is not None:
        return ChatTemplate(f"{config_path} (chat_template)", text, _special_tokens(config))
    return None


def template_from_object(tokenizer: Any) -> ChatTemplate | None:
    """A transformers tokenizer's own chat template."""
    text = _pick(getattr(tokenizer, "chat_template", None))
    if text is None:
        return None
    tokens = {
        k: v
        for k in ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token")
        if isinstance(v := getattr(tokenizer, k, None), str)
    }
    name = getattr(tokenizer, "name_or_path", None) or type(tokenizer).__name__
    return ChatTemplate(f"{name} (chat_template)", text, tokens)

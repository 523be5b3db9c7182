"""Errors a user can fix. Each message names the column, row, file or option, and the fix."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "ConfigError",
    "DataAuditError",
    "GateFailed",
    "InputError",
    "PluginError",
    "close_matches",
]


class DataAuditError(Exception):
    """Base class: the CLI prints the message and exits with code 2."""


class InputError(DataAuditError):
    """The dataset cannot be read or is not what the audit needs."""


class ConfigError(DataAuditError):
    """An unknown rule, option or value in the configuration."""


class PluginError(DataAuditError):
    """A third-party rule could not be loaded or collides with another rule."""


class GateFailed(DataAuditError):
    """Raised by ``Report.raise_for_status()`` when the gate did not pass."""


def close_matches(word: str, choices: Iterable[str], *, prefix: str = " Did you mean ") -> str:
    """A ' Did you mean X?' hint, or '' when nothing is close."""
    choices = list(choices)
    lowered = {c.lower(): c for c in choices}
    matches = difflib.get_close_matches(word.lower(), list(lowered), n=3, cutoff=0.6)
    if not matches:
        return ""
    return prefix + " or ".join(repr(lowered[m]) for m in matches) + "?"

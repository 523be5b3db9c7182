"""An example dataaudit plugin: one rule, written only against dataaudit's public API."""

from .rules import ShoutingText

__all__ = ["ShoutingText"]

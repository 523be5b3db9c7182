"""``python -m dataaudit``: the ``dataaudit`` command."""

from .cli import run

run()

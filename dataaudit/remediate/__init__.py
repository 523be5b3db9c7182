"""Act on a report: remove the rows its flags say to drop, from the data the report audited.

``Report.apply(data)`` returns ``data`` without those rows in its own type (Hugging Face Dataset /
DatasetDict, polars, pandas, Arrow, list of dicts, a dict of splits); ``clean(report, paths, out)``
(``dataaudit clean``) writes a cleaned copy of files, one file per split in the input's format,
and a manifest of what was removed and why.

Which rows go: the flags of the selected rules (``drop``: codes, prefixes, names or groups, as
``select``) whose action is selected (``drop`` by default) and whose severity reaches
``severity``. A row goes if any selected flag says so; a rule's ``keep`` flag (a duplicate
cluster's representative, the eval side of a leak) never removes it. The data must be the data
the report audited: the splits, their row counts and their content hashes are checked first,
because a flag names a row by its position.
"""

from __future__ import annotations

from .apply import apply
from .clean import MANIFEST_NAME, clean
from .plan import Plan, plan

__all__ = ["MANIFEST_NAME", "Plan", "apply", "clean", "plan"]

"""HTML renderings: the report page, the diff page and the notebook summary.

Each is one self-contained file: inline CSS and SVG charts drawn in Python, one small inline
script (the filters) whose hash is the only script the page's Content-Security-Policy allows, no
external assets. Every string from a report may come from the dataset, so all of it is escaped
and bounded (``report/escape.py``); see ``_base.py`` for the rules.
"""

from __future__ import annotations

from ._compact import render_compact
from ._diff import render_diff_html
from ._report import MAX_BYTES, render_html

__all__ = ["MAX_BYTES", "render_compact", "render_diff_html", "render_html"]

"""Moved to :mod:`dataaudit.inputs`: ``inputs/files.py`` (formats, file sources, schemas, row
counts) and one module per format (``jsonl``, ``delimited``, ``parquet``, ``ipc``, ``text``).

Only names, no logic: code written against this module while the input layer moved (the Ray
engine, the predictions resource) keeps importing until it imports from ``dataaudit.inputs``;
then this file goes.
"""

from .inputs.files import FILE_FORMATS, file_batches, file_format, file_num_rows, file_schema
from .inputs.ipc import iter_arrow
from .inputs.location import is_remote
from .inputs.parquet import iter_parquet
from .inputs.text import iter_text_lines
from .rule import TYPE_MARKER_PREFIX

__all__ = [
    "FILE_FORMATS",
    "TYPE_MARKER_PREFIX",
    "file_batches",
    "file_format",
    "file_num_rows",
    "file_schema",
    "is_remote",
    "iter_arrow",
    "iter_parquet",
    "iter_text_lines",
]

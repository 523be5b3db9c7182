"""What the cheap content rules need from a text view, from a few numpy passes over its bytes.

TXT002 asked RE2 whether each row holds a control character or U+FFFD, whether it is ASCII, and
(the length features) how many code points it has: a regex kernel costs ~100 ns per row before it
reads a byte, and the control/U+FFFD class ran at ~450 MB/s. In UTF-8 every one of these questions
is about bytes: a control character is one byte below 0x20 (or 0x7F), which no multi-byte
sequence contains; U+FFFD is the bytes EF BF BD; a row is ASCII when no byte is 0x80 or above;
its code points are its bytes less its continuation bytes. So one comparison over the whole
batch's bytes (numpy, >5 GB/s) finds the few positions worth a look, and ``searchsorted`` on
the offsets names their rows. Text with many non-ASCII bytes (most scripts but Latin) takes
Arrow's per-row ASCII and length kernels instead, which cost the same whatever the script.

The results are the regexes' exactly: ``tests/features/test_textscan.py`` compares them.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from .._arrow import bools, fixed, string_parts, take, validity
from .._compute import pc
from .base import Batch, register_feature

__all__ = ["TextScan", "blank_mask", "scan_text"]

#: the control characters TXT002 reports: C0 but tab, newline and carriage return; and DEL
CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
_ALLOWED_LOW = np.array([9, 10, 13], np.uint8)  # tab, newline, carriage return

#: whitespace, separators and invisible characters that render as nothing (RE2 syntax)
BLANK = r"^[\s\x0b\pZ\x{200b}-\x{200d}\x{2060}\x{feff}\x{ad}]*$"
# the first UTF-8 byte of every character in BLANK's class: \t-\r and space; C2 (U+00A0, U+00AD);
# E1 (U+1680); E2 (U+2000-U+206F); E3 (U+3000); EF (U+FEFF). A blank row starts with one of them
_BLANK_LEADS = np.zeros(256, bool)
_BLANK_LEADS[[9, 10, 11, 12, 13, 32, 0xC2, 0xE1, 0xE2, 0xE3, 0xEF]] = True

#: above this share of non-ASCII bytes, per-row Arrow kernels beat locating each byte's row
_DENSE = 1 / 16


@dataclasses.dataclass(frozen=True)
class TextScan:
    """Per row of a text view (nulls: False, and -1 characters)."""

    char_length: np.ndarray  # int64 code points
    non_ascii: np.ndarray  # bool: some character is not ASCII
    control: np.ndarray  # bool: a control character (CONTROL)
    replacement: np.ndarray  # bool: U+FFFD


def _rows(offsets: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The rows holding these byte positions (offsets relative to the first value)."""
    return np.searchsorted(offsets, positions, side="right") - 1


def _strings(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())  # one layout of offsets and bytes
    return arr


def scan_text(arr: pa.Array | pa.ChunkedArray) -> TextScan:
    """One text array's :class:`TextScan` (string, large_string or string_view)."""
    arr = _strings(arr)
    n = len(arr)
    if pa.types.is_null(arr.type):
        no = np.zeros(n, bool)
        return TextScan(np.full(n, -1, np.int64), no, no.copy(), no.copy())
    parts = string_parts(arr)
    if parts is None:
        raise TypeError(f"scan_text reads strings, not {arr.type}")
    offsets, data = parts
    char_length = np.diff(offsets)
    control = np.zeros(n, bool)
    replacement = np.zeros(n, bool)
    non_ascii = np.zeros(n, bool)
    if data.size:
        low = data < 0x20
        if low.any():
            at = np.flatnonzero(low)
            at = at[~np.isin(data[at], _ALLOWED_LOW)]
            control[_rows(offsets, at)] = True
        high = data >= 0x7F  # DEL, and every byte of a non-ASCII character
        if high.any():
            at = np.flatnonzero(high)
            if at.size <= data.size * _DENSE:
                values = data[at]
                control[_rows(offsets, at[values == 0x7F])] = True
                non_ascii[_rows(offsets, at[values >= 0x80])] = True
                leads = at[values == 0xEF]
            else:
                control[_rows(offsets, np.flatnonzero(data == 0x7F))] = True
                non_ascii = ~bools(pc.string_is_ascii(arr), null=True)
                leads = np.flatnonzero(data == 0xEF)
            # U+FFFD is EF BF BD; 0xEF is only ever a lead byte, its sequence within its row
            leads = leads[leads + 2 < data.size]
            hit = leads[(data[leads + 1] == 0xBF) & (data[leads + 2] == 0xBD)]
            replacement[_rows(offsets, hit)] = True
    valid = validity(arr)
    if valid is not None:
        non_ascii &= valid
        control &= valid
        replacement &= valid
    if non_ascii.any():
        wide = np.flatnonzero(non_ascii)
        sub = arr if wide.size == n else take(arr, wide)
        char_length[wide] = fixed(pc.utf8_length(sub), -1)
    if valid is not None:
        char_length[~valid] = -1
    return TextScan(char_length, non_ascii, control, replacement)


def blank_mask(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """True where the text is empty or only BLANK characters; False for null. The regex runs
    only on the rows that are empty or start with a byte one of BLANK's characters starts with."""
    arr = _strings(arr)
    parts = string_parts(arr)
    if parts is None:
        return bools(pc.match_substring_regex(arr, BLANK))
    offsets, data = parts
    n = len(arr)
    starts = offsets[:-1]
    nonempty = offsets[1:] > starts
    candidate = ~nonempty
    if data.size:
        at = np.flatnonzero(nonempty)
        candidate[at] = _BLANK_LEADS[data[starts[at]]]
    valid = validity(arr)
    if valid is not None:
        candidate &= valid
    out = np.zeros(n, bool)
    rows = np.flatnonzero(candidate)
    if rows.size:
        out[rows] = bools(pc.match_substring_regex(take(arr, rows), BLANK))
    return out


@register_feature("text_scan")
def text_scan_feature(batch: Batch, view: str = "text") -> TextScan:
    """The view's :class:`TextScan`: character lengths, and which rows hold non-ASCII,
    control characters or U+FFFD."""
    return scan_text(batch.feature(view))

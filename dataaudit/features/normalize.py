"""Text normalization: the identity exact-duplicate rules compare, computed a batch at a time.

:func:`normalize_text` is the definition (NFKC, casefold, whitespace collapsed);
:func:`normalize_array` computes it for an Arrow array with identical output, but in Arrow and
compiled loops for almost every row: NFKC only runs where a character could change, as an exact
table replacement where that is provably the same (see :func:`nfkc_array`), and Python handles
only the rows left. :func:`tokenizable_array` is the cheaper form that shingling needs.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa

from .._arrow import bools, mask_array, nulls_like, one_chunk, string_array, string_parts, strings
from .._compute import pc

STRING = pa.large_string()


def normalize_text(s: str) -> str:
    """NFKC, casefold, whitespace collapsed: the identity used by exact-duplicate rules."""
    return " ".join(unicodedata.normalize("NFKC", s).casefold().split())


# Characters that can make NFKC change a text (for unicodedata 14.0.0): NFKC(c) != c, a nonzero
# combining class (reordering), or a character that can compose with the one before it (the
# second character of a canonical decomposition; Hangul medial vowels and final consonants).
# A text holding none of them passes CPython's NFKC quick check unchanged, so NFKC is skipped.
_NFKC_UNICODE = "14.0.0"
_NFKC_RANGES = (
    "a0 a8 aa af b2-b5 b8-ba bc-be 132-133 13f-140 149 17f 1c4-1cc 1f1-1f3 2b0-2b8 2d8-2dd "
    "2e0-2e4 300-34e 350-36f 374 37a 37e 384-385 387 3d0-3d6 3f0-3f2 3f4-3f5 3f9 483-487 587 "
    "591-5bd 5bf 5c1-5c2 5c4-5c5 5c7 610-61a 64b-65f 670 675-678 6d6-6dc 6df-6e4 6e7-6e8 "
    "6ea-6ed 711 730-74a 7eb-7f3 7fd 816-819 81b-823 825-827 829-82d 859-85b 898-89f 8ca-8e1 "
    "8e3-8ff 93c 94d 951-954 958-95f 9bc 9be 9cd 9d7 9dc-9dd 9df 9fe a33 a36 a3c a4d a59-a5b "
    "a5e abc acd b3c b3e b4d b56-b57 b5c-b5d bbe bcd bd7 c3c c4d c55-c56 cbc cc2 ccd cd5-cd6 "
    "d3b-d3c d3e d4d d57 dca dcf ddf e33 e38-e3a e48-e4b eb3 eb8-eba ec8-ecb edc-edd f0c "
    "f18-f19 f35 f37 f39 f43 f4d f52 f57 f5c f69 f71-f7d f80-f84 f86-f87 f93 f9d fa2 fa7 fac "
    "fb5 fb7 fb9 fc6 102e 1037 1039-103a 108d 10fc 1161-1175 11a8-11c2 135d-135f 1714-1715 "
    "1734 17d2 17dd 18a9 1939-193b 1a17-1a18 1a60 1a75-1a7c 1a7f 1ab0-1abd 1abf-1ace "
    "1b34-1b35 1b44 1b6b-1b73 1baa-1bab 1be6 1bf2-1bf3 1c37 1cd0-1cd2 1cd4-1ce0 1ce2-1ce8 "
    "1ced 1cf4 1cf8-1cf9 1d2c-1d2e 1d30-1d3a 1d3c-1d4d 1d4f-1d6a 1d78 1d9b-1dff 1e9a-1e9b "
    "1f71 1f73 1f75 1f77 1f79 1f7b 1f7d 1fbb 1fbd-1fc1 1fc9 1fcb 1fcd-1fcf 1fd3 1fdb "
    "1fdd-1fdf 1fe3 1feb 1fed-1fef 1ff9 1ffb 1ffd-1ffe 2000-200a 2011 2017 2024-2026 202f "
    "2033-2034 2036-2037 203c 203e 2047-2049 2057 205f 2070-2071 2074-208e 2090-209c 20a8 "
    "20d0-20dc 20e1 20e5-20f0 2100-2103 2105-2107 2109-2113 2115-2116 2119-211d 2120-2122 "
    "2124 2126 2128 212a-212d 212f-2131 2133-2139 213b-2140 2145-2149 2150-217f 2189 "
    "222c-222d 222f-2230 2329-232a 2460-24ea 2a0c 2a74-2a76 2adc 2c7c-2c7d 2cef-2cf1 2d6f "
    "2d7f 2de0-2dff 2e9f 2ef3 2f00-2fd5 3000 302a-302f 3036 3038-303a 3099-309c 309f 30ff "
    "3131-318e 3192-319f 3200-321e 3220-3247 3250-327e 3280-33ff a66f a674-a67d a69c-a69f "
    "a6f0-a6f1 a770 a7f2-a7f4 a7f8-a7f9 a806 a82c a8c4 a8e0-a8f1 a92b-a92d a953 a9b3 a9c0 "
    "aab0 aab2-aab4 aab7-aab8 aabe-aabf aac1 aaf6 ab5c-ab5f ab69 abed f900-fa0d fa10 fa12 "
    "fa15-fa1e fa20 fa22 fa25-fa26 fa2a-fa6d fa70-fad9 fb00-fb06 fb13-fb17 fb1d-fb36 "
    "fb38-fb3c fb3e fb40-fb41 fb43-fb44 fb46-fbb1 fbd3-fd3d fd50-fd8f fd92-fdc7 fdf0-fdfc "
    "fe10-fe19 fe20-fe44 fe47-fe52 fe54-fe66 fe68-fe6b fe70-fe72 fe74 fe76-fefc ff01-ffbe "
    "ffc2-ffc7 ffca-ffcf ffd2-ffd7 ffda-ffdc ffe0-ffe6 ffe8-ffee 101fd 102e0 10376-1037a "
    "10781-10785 10787-107b0 107b2-107ba 10a0d 10a0f 10a38-10a3a 10a3f 10ae5-10ae6 "
    "10d24-10d27 10eab-10eac 10f46-10f50 10f82-10f85 11046 11070 1107f 110b9-110ba "
    "11100-11102 11127 11133-11134 11173 111c0 111ca 11235-11236 112e9-112ea 1133b-1133c "
    "1133e 1134d 11357 11366-1136c 11370-11374 11442 11446 1145e 114b0 114ba 114bd "
    "114c2-114c3 115af 115bf-115c0 1163f 116b6-116b7 1172b 11839-1183a 11930 1193d-1193e "
    "11943 119e0 11a34 11a47 11a99 11c3f 11d42 11d44-11d45 11d97 16af0-16af4 16b30-16b36 "
    "16ff0-16ff1 1bc9e 1d15e-1d169 1d16d-1d172 1d17b-1d182 1d185-1d18b 1d1aa-1d1ad "
    "1d1bb-1d1c0 1d242-1d244 1d400-1d454 1d456-1d49c 1d49e-1d49f 1d4a2 1d4a5-1d4a6 "
    "1d4a9-1d4ac 1d4ae-1d4b9 1d4bb 1d4bd-1d4c3 1d4c5-1d505 1d507-1d50a 1d50d-1d514 "
    "1d516-1d51c 1d51e-1d539 1d53b-1d53e 1d540-1d544 1d546 1d54a-1d550 1d552-1d6a5 "
    "1d6a8-1d7cb 1d7ce-1d7ff 1e000-1e006 1e008-1e018 1e01b-1e021 1e023-1e024 1e026-1e02a "
    "1e130-1e136 1e2ae 1e2ec-1e2ef 1e8d0-1e8d6 1e944-1e94a 1ee00-1ee03 1ee05-1ee1f "
    "1ee21-1ee22 1ee24 1ee27 1ee29-1ee32 1ee34-1ee37 1ee39 1ee3b 1ee42 1ee47 1ee49 1ee4b "
    "1ee4d-1ee4f 1ee51-1ee52 1ee54 1ee57 1ee59 1ee5b 1ee5d 1ee5f 1ee61-1ee62 1ee64 "
    "1ee67-1ee6a 1ee6c-1ee72 1ee74-1ee77 1ee79-1ee7c 1ee7e 1ee80-1ee89 1ee8b-1ee9b "
    "1eea1-1eea3 1eea5-1eea9 1eeab-1eebb 1f100-1f10a 1f110-1f12e 1f130-1f14f 1f16a-1f16c "
    "1f190 1f200-1f202 1f210-1f23b 1f240-1f248 1f250-1f251 1fbf0-1fbf9 2f800-2fa1d "
)


@lru_cache(maxsize=1)
def _nfkc_unstable_ranges() -> tuple[tuple[int, int], ...]:
    """Code point ranges of every character that can make NFKC change a text."""
    if unicodedata.unidata_version != _NFKC_UNICODE:
        return tuple(_build_nfkc_ranges())
    ranges = []
    for tok in "".join(_NFKC_RANGES).split():
        lo, _, hi = tok.partition("-")
        ranges.append((int(lo, 16), int(hi or lo, 16)))
    return tuple(ranges)


@lru_cache(maxsize=1)
def _nfkc_unstable_class() -> str:
    """RE2 character class of every character that can make NFKC change a text."""
    ranges = _nfkc_unstable_ranges()
    parts = [f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges]
    return "[" + "".join(parts) + "]"


def _build_nfkc_ranges() -> list[tuple[int, int]]:
    """Build the ranges of :data:`_NFKC_RANGES` for this Python (about 0.6 s)."""
    norm, comb, dec = unicodedata.normalize, unicodedata.combining, unicodedata.decomposition
    cps = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
    for cp in range(0x80, 0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        if comb(c) or norm("NFKC", c) != c:
            cps.add(cp)
        d = dec(c)
        if d and d[0] != "<":
            cps.update(int(h, 16) for h in d.split()[1:])
    ranges: list[list[int]] = []
    for cp in sorted(cps):
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return [(a, b) for a, b in ranges]


@lru_cache(maxsize=1)
def _nfkc_replacements() -> tuple[list[str], list[str]]:
    """Characters whose NFKC form holds no character of the unstable class, and that form."""
    chars, forms = [], []
    ranges = _nfkc_unstable_ranges()
    unstable = {cp for lo, hi in ranges for cp in range(lo, hi + 1)}
    for cp in sorted(unstable):
        c = chr(cp)
        form = unicodedata.normalize("NFKC", c)
        if form != c and not any(ord(x) in unstable for x in form):
            chars.append(c)
            forms.append(form)
    return chars, forms


@lru_cache(maxsize=1)
def _nfkc_table() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_nfkc_replacements` as arrays for the kernel: (index per code point, replacement
    offsets, replacement UTF-8 bytes, is the code point in the unstable class)."""
    chars, forms = _nfkc_replacements()
    cps = np.array([ord(c) for c in chars], np.int64)
    index = np.full(int(cps.max()) + 1 if len(cps) else 0, -1, np.int64)
    index[cps] = np.arange(len(cps))
    blobs = [f.encode("utf-8") for f in forms]
    offsets = np.zeros(len(blobs) + 1, np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    ranges = _nfkc_unstable_ranges()
    unstable = np.zeros(max(hi for _, hi in ranges) + 1, np.bool_)
    for lo, hi in ranges:
        unstable[lo : hi + 1] = True
    return index, offsets, np.frombuffer(b"".join(blobs), np.uint8), unstable


def nfkc_array(arr: pa.Array) -> pa.Array:
    """NFKC of every row, exactly as ``unicodedata.normalize("NFKC", ...)``, mostly compiled.

    Each character of the table (:func:`_nfkc_replacements`: fullwidth punctuation, ligatures,
    compatibility ideographs...) is replaced by its NFKC form in one pass over the bytes. That
    keeps the text compatibility-equivalent to the row, so both have the same NFKC; where the
    result holds no character of the unstable class (the same pass checks), CPython's quick
    check proves it normalized, hence it *is* the row's NFKC. Rows where such a character is left
    (combining marks, Hangul jamo...) are normalized by Python. On CJK text this is ~10x faster
    than Python alone, as fast as polars' Aho-Corasick ``replace_many`` and without importing
    polars in worker processes.
    """
    from ..sketches.kernels import replace_chars
    from ..sketches.minhash import text_bytes

    arr = arr.cast(STRING)
    if not len(arr):
        return arr
    offsets, data = text_bytes(arr)
    index, rep_offsets, rep_bytes, unstable = _nfkc_table()
    out_offsets, out, left = replace_chars(data, offsets, index, rep_offsets, rep_bytes, unstable)
    replaced = string_array(out_offsets, out, STRING)
    if arr.null_count:
        valid = pc.is_valid(arr)
        left &= bools(valid)
        replaced = pc.if_else(valid, replaced, nulls_like(replaced))
    if not left.any():
        return replaced
    redo = [unicodedata.normalize("NFKC", s) for s in arr.filter(mask_array(left)).to_pylist()]
    return pc.replace_with_mask(replaced, mask_array(left), strings(redo))


_ASCII_WS_RUNS = r"[\t\n\v\f\r \x1c-\x1f]*[\t\n\v\f\r\x1c-\x1f][\t\n\v\f\r \x1c-\x1f]*| {2,}"


def _arrow_normalize(arr: pa.Array) -> pa.Array:
    """Lower, ASCII whitespace runs → one space, trimmed (the input is already NFKC)."""
    # only runs that are not already a single space: replacing every space is ~15x slower
    collapsed = pc.replace_substring_regex(pc.utf8_lower(arr), _ASCII_WS_RUNS, " ")
    return pc.utf8_trim(collapsed, " ")


def normalize_array(arr: pa.Array) -> pa.Array:
    """Vectorized normalize_text with identical output.

    NFKC runs only on rows holding a character that can make NFKC change the text (found by one
    Arrow regex; see :func:`nfkc_array`); lower-casing and whitespace collapsing run in Arrow on
    all rows; rows whose NFKC text holds a character where Arrow's lower differs from casefold
    (see unicode_table) are redone fully in Python.
    """
    return _normalize(arr, collapse=True)


def _normalize(arr: pa.Array, *, collapse: bool) -> pa.Array:
    from .unicode_table import special_class

    arr = arr.cast(STRING)
    non_ascii = ~bools(pc.string_is_ascii(arr), null=True)
    if not non_ascii.any():
        return _arrow_normalize(arr) if collapse else arr
    where = mask_array(non_ascii)
    sub = arr.filter(where)
    # rows where NFKC can change something (CPython's quick check would return them as is) or
    # Arrow's lower differs from casefold; every other row takes the Arrow path as it is
    unstable_cls = _nfkc_unstable_class()
    union = "[" + unstable_cls[1:-1] + special_class()[1:-1] + "]"
    cand = bools(pc.match_substring_regex(sub, union))
    special = np.zeros(len(sub), bool)
    if cand.any():
        # NFKC of the candidates (one compiled pass; rows without a table character come back
        # unchanged, so no second regex is needed to pick the ones NFKC can change)
        cnfkc = nfkc_array(sub.filter(mask_array(cand)))
        sub = pc.replace_with_mask(sub, mask_array(cand), cnfkc)
        special[cand] = bools(pc.match_substring_regex(cnfkc, special_class()))
    if collapse:
        out = _arrow_normalize(pc.replace_with_mask(arr, where, sub))
    else:  # tokens only: ASCII rows as they are, the others lower-cased by Arrow
        out = pc.replace_with_mask(arr, where, pc.utf8_lower(sub))
    if special.any():
        originals = arr.filter(where).filter(mask_array(special)).to_pylist()
        redo = strings([normalize_text(s) for s in originals])
        mask = np.zeros(len(arr), dtype=bool)
        mask[np.flatnonzero(non_ascii)[special]] = True
        out = pc.replace_with_mask(out, mask_array(mask), redo)
    return out


CASED_LIMIT = 0x20000  #: no character from here has a lower-case mapping (Unicode 15)


@lru_cache(maxsize=1)
def lower_table() -> np.ndarray:
    """:func:`build_lower_table`, loaded from a file cached on disk when one was written for
    the same code, Unicode data and pyarrow (:func:`_table_cache`): building it takes pyarrow's
    first case-mapping call, which fills Arrow's own tables (~0.09 s of a process's start, where
    loading the file takes ~1 ms). Rebuilt, and the file rewritten, when it is missing, stale or
    unreadable; built without a file where nothing can be written."""
    path = _table_cache()
    if path is not None:
        try:
            table = np.load(path, allow_pickle=False)
            if table.dtype == np.int64 and table.shape == (_raw_limit(),):
                return table
        except (OSError, ValueError, EOFError):  # missing, truncated, not an .npy: rebuild
            pass
    table = build_lower_table()
    if path is not None:
        _save_quietly(path, table)
    return table


def _raw_limit() -> int:
    from ..sketches.charsets import RAW_LIMIT

    return RAW_LIMIT


def _table_cache() -> Path | None:
    """Where :func:`lower_table` keeps its table (:func:`dataaudit._cache.cache_file`); the
    name holds a hash of what the table depends on (this module and its Unicode ranges, the
    kernels' separators, the Unicode data, pyarrow's version), so a changed input never reads
    an old table. None if no folder is writable."""
    import hashlib

    from .._cache import cache_file

    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in (
        here / "normalize.py",
        here / "unicode_table.py",
        here.parent / "sketches" / "charsets.py",
    ):
        try:
            digest.update(name.read_bytes())
        except OSError:
            return None
    digest.update(
        f"{unicodedata.unidata_version}|{pa.__version__}|{np.dtype(np.int64).str}".encode()
    )
    return cache_file(here, f"lower_table-{digest.hexdigest()[:20]}.npy")


def _save_quietly(path: Path, table: np.ndarray) -> None:
    from .._cache import write_quietly

    write_quietly(path, lambda f: np.save(f, table, allow_pickle=False))


def build_lower_table() -> np.ndarray:
    """What :func:`tokenizable_array` does to each character that is not ASCII, as a table for
    the fused shingling pass (``dataaudit.sketches.minhash.sketch``): int64 per code point below
    ``RAW_LIMIT``, the UTF-8 bytes the character becomes (little-endian, at most 7) with their
    count in the top byte, or -1.

    A character becomes Arrow's lower-case of itself, or of its NFKC form if it is in the NFKC
    replacement table (:func:`_nfkc_replacements`: fullwidth punctuation, ligatures,
    superscripts...). -1 marks the characters that take another path there: the rest of those
    NFKC can change (or that NFKC can combine with a neighbour), casefold specials and Unicode
    whitespace (Python's path), results longer than 7 bytes or holding an ASCII separator, and
    surrogates. Both mappings are context-free, so mapping each character is the same as
    normalizing the row. Built once per process from Arrow itself (~10 ms); code points from
    ``CASED_LIMIT`` (CJK ideographs of planes 2 and 3) have no case and map to themselves
    (tests/features check that Arrow agrees).
    """
    from ..sketches.charsets import RAW_LIMIT, SEPARATOR
    from .unicode_table import special_ranges

    cps = np.arange(0x80, CASED_LIMIT, dtype=np.int64)
    cps = cps[(cps < 0xD800) | (cps > 0xDFFF)]
    chars, forms = _nfkc_replacements()
    special = _special_re()
    kept = [(ord(c), f) for c, f in zip(chars, forms) if not special.search(f)]
    sources = np.concatenate([cps, np.array([c for c, _ in kept], np.int64)])
    texts = cps.astype("<u4").tobytes().decode("utf-32-le") + "".join(f for _, f in kept)
    lengths = np.concatenate([np.ones(len(cps), np.int64), [len(f) for _, f in kept]])
    # each string's UTF-8 offsets, from its characters' code points
    points = np.frombuffer(texts.encode("utf-32-le"), "<u4").astype(np.int64)
    sizes = 1 + (points >= 0x80) + (points >= 0x800) + (points >= 0x10000)
    char_ends = np.cumsum(np.concatenate([[0], sizes]))
    offsets = char_ends[np.concatenate([[0], np.cumsum(lengths)])]
    lowered = pc.utf8_lower(string_array(offsets, texts.encode(), STRING))
    n_out, data = string_parts(lowered)
    data = np.concatenate([data, np.zeros(8, np.uint8)]).astype(np.uint64)
    start, count = n_out[:-1], np.diff(n_out)
    packed = np.zeros(len(sources), np.uint64)
    separator = np.zeros(len(sources), bool)
    for q in range(7):
        byte = np.where(q < count, data[start + q], 0)
        packed |= byte << np.uint64(8 * q)
        separator |= (q < count) & SEPARATOR[byte.astype(np.int64)]
    ok = (count > 0) & (count <= 7) & ~separator
    value = (packed | (count.astype(np.uint64) << np.uint64(56))).view(np.int64)
    table = np.full(RAW_LIMIT, -1, np.int64)
    simple = ok[: len(cps)]
    table[cps[simple]] = value[: len(cps)][simple]
    # no case mappings from CASED_LIMIT: each character is its own 4 UTF-8 bytes
    high = np.arange(CASED_LIMIT, RAW_LIMIT, dtype=np.int64)
    utf8 = (
        (0xF0 | (high >> 18))
        | ((0x80 | ((high >> 12) & 0x3F)) << 8)
        | ((0x80 | ((high >> 6) & 0x3F)) << 16)
        | ((0x80 | (high & 0x3F)) << 24)
    )
    table[CASED_LIMIT:] = utf8 | (4 << 56)
    for lo, hi in (*_nfkc_unstable_ranges(), *special_ranges()):
        table[lo : hi + 1] = -1
    replaced = ok[len(cps) :]
    table[sources[len(cps) :][replaced]] = value[len(cps) :][replaced]
    return table


@lru_cache(maxsize=1)
def _special_re():  # noqa: ANN202
    import re

    from .unicode_table import special_ranges

    parts = (f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in special_ranges())
    return re.compile("[" + "".join(parts) + "]")


def tokenizable_text(s: str) -> str:
    """:func:`tokenizable_array` of one row, in Python: NFKC, then Arrow's lower-casing (the
    same as casefold on every character but the specials), or :func:`normalize_text` if the
    NFKC text holds a casefold special."""
    t = unicodedata.normalize("NFKC", s)
    return normalize_text(s) if _special_re().search(t) else t.casefold()


def tokenizable_rows(arr: pa.Array) -> pa.Array:
    """:func:`tokenizable_array` of a few rows, in Python (no per-call regex compilation):
    what the fused shingling pass applies to the rows its lower-casing table cannot map."""
    return strings([None if t is None else tokenizable_text(t) for t in arr.to_pylist()])


def tokenizable_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Text with the same tokens as :func:`normalize_array`, for less work.

    On ASCII text, NFKC and casefold are lower-casing, and whitespace collapsing only matters to
    a tokenizer that splits on single spaces; the shingling kernels split on any ASCII
    whitespace and lower-case ASCII capitals themselves. So ASCII rows are returned as they are
    (no copy); rows with other characters get NFKC where it can change them and Arrow's
    lower-casing (no whitespace regex), and rows holding a casefold special the full Python
    normalization: several times cheaper than :func:`normalize_array`, with identical tokens.
    """
    arr = one_chunk(arr)
    from ..sketches.minhash import _map, _ranges

    ranges = _ranges(len(arr))  # a large batch: two halves on two threads (Arrow frees the GIL)
    parts = _map(lambda lo, hi: _normalize(arr.slice(lo, hi - lo), collapse=False), ranges)
    return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)

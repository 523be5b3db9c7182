"""Which non-ASCII characters Arrow's lower-casing handles differently from Python's casefold.

``normalize_text`` (NFKC, casefold, whitespace collapsed) is the identity exact-duplicate rules
use. After Python's NFKC (fast: it has a quick-check path; Arrow's utf8_normalize is ~10x slower),
Arrow's ``utf8_lower`` + an ASCII whitespace regex give the same result for every character except
a few hundred (casefold specials such as ß and ς, Unicode whitespace, characters whose Unicode
version differs between Arrow and Python). Both mappings are context-free, so checking each
character of the NFKC text is exact; rows holding one of them take the full Python path. The table depends on both libraries' versions, so it is
shipped for the versions below and rebuilt (about 4 s, once per process) when they differ.

Regenerate the shipped table: ``python -m dataaudit.features.unicode_table``.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

# generated: (pyarrow version, unicodedata version) -> code point ranges
VERSIONS = ("26.0.1", "14.0.0")
RANGES: tuple[tuple[int, int], ...] = (
    (0x85, 0x85),
    (0xA0, 0xA0),
    (0xB5, 0xB5),
    (0xDF, 0xDF),
    (0x130, 0x130),
    (0x149, 0x149),
    (0x17F, 0x17F),
    (0x1F0, 0x1F0),
    (0x345, 0x345),
    (0x390, 0x390),
    (0x3B0, 0x3B0),
    (0x3C2, 0x3C2),
    (0x3D0, 0x3D1),
    (0x3D5, 0x3D6),
    (0x3F0, 0x3F1),
    (0x3F5, 0x3F5),
    (0x587, 0x587),
    (0x13A0, 0x13F5),
    (0x13F8, 0x13FD),
    (0x1680, 0x1680),
    (0x1C80, 0x1C89),
    (0x1E96, 0x1E9B),
    (0x1E9E, 0x1E9E),
    (0x1F50, 0x1F50),
    (0x1F52, 0x1F52),
    (0x1F54, 0x1F54),
    (0x1F56, 0x1F56),
    (0x1F80, 0x1FAF),
    (0x1FB2, 0x1FB4),
    (0x1FB6, 0x1FB7),
    (0x1FBC, 0x1FBC),
    (0x1FBE, 0x1FBE),
    (0x1FC2, 0x1FC4),
    (0x1FC6, 0x1FC7),
    (0x1FCC, 0x1FCC),
    (0x1FD2, 0x1FD3),
    (0x1FD6, 0x1FD7),
    (0x1FE2, 0x1FE4),
    (0x1FE6, 0x1FE7),
    (0x1FF2, 0x1FF4),
    (0x1FF6, 0x1FF7),
    (0x1FFC, 0x1FFC),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xA7CB, 0xA7CC),
    (0xA7CE, 0xA7CE),
    (0xA7D2, 0xA7D2),
    (0xA7D4, 0xA7D4),
    (0xA7DA, 0xA7DA),
    (0xA7DC, 0xA7DD),
    (0xA7E2, 0xA7E2),
    (0xAB6C, 0xAB6D),
    (0xAB70, 0xABBF),
    (0xFB00, 0xFB06),
    (0xFB13, 0xFB17),
    (0x10D50, 0x10D65),
    (0x16EA0, 0x16EB8),
    (0x1DF40, 0x1DF40),
    (0x1DF48, 0x1DF48),
    (0x1DF4A, 0x1DF4A),
    (0x1DF4D, 0x1DF4D),
    (0x1DF51, 0x1DF51),
    (0x1DF68, 0x1DF68),
    (0x1DF6A, 0x1DF6A),
    (0x1DF6C, 0x1DF6C),
    (0x1DF6E, 0x1DF6E),
    (0x1DF72, 0x1DF72),
    (0x1DF74, 0x1DF74),
    (0x1DF76, 0x1DF76),
    (0x1DF78, 0x1DF78),
    (0x1DF7A, 0x1DF7A),
    (0x1DF7C, 0x1DF7C),
    (0x1DF7E, 0x1DF7E),
)


def build_ranges() -> tuple[tuple[int, int], ...]:
    import pyarrow as pa
    import pyarrow.compute as pc

    cps = [c for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    chars = [chr(c) for c in cps]
    arrow = pc.utf8_lower(pa.array(chars, pa.large_string())).to_pylist()
    # casefold and Arrow's lower are both context-free, so a per-character check is exact
    special = [ord(ch) for ch, got in zip(chars, arrow) if got != ch.casefold() or ch.isspace()]
    ranges: list[tuple[int, int]] = []
    for c in special:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1] = (ranges[-1][0], c)
        else:
            ranges.append((c, c))
    return tuple(ranges)


@lru_cache(maxsize=1)
def special_ranges() -> tuple[tuple[int, int], ...]:
    """The code point ranges of the characters that need the Python path."""
    import pyarrow as pa

    return RANGES if (pa.__version__, unicodedata.unidata_version) == VERSIONS else build_ranges()


@lru_cache(maxsize=1)
def special_class() -> str:
    """An RE2 character class matching the characters that need the Python path."""
    ranges = special_ranges()
    parts = [f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges]
    return "[" + "".join(parts) + "]"


if __name__ == "__main__":  # pragma: no cover
    import pathlib

    import pyarrow as pa

    path = pathlib.Path(__file__)
    text = path.read_text()
    head, _, _ = text.partition("# generated: ")
    rows = ",\n".join(f"    ({a:#x}, {b:#x})" for a, b in build_ranges())
    tail = text[text.index("\n\n\ndef build_ranges") :]
    path.write_text(
        head
        + "# generated: (pyarrow version, unicodedata version) -> code point ranges\n"
        + f"VERSIONS = ({pa.__version__!r}, {unicodedata.unidata_version!r})\n"
        + f"RANGES: tuple[tuple[int, int], ...] = (\n{rows},\n)"
        + tail
    )
    print(f"wrote {path}")

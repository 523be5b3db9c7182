"""The vectorized normalization equals the Python definition exactly, on hostile Unicode."""

from __future__ import annotations

import random
import unicodedata

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.features import unicode_table
from dataaudit.features.normalize import nfkc_array, normalize_array, normalize_text

ALPHABET = (
    [chr(c) for c in list(range(0x20, 0x7F)) * 4]
    + [chr(c) for c in range(0xA0, 0x250)]  # Latin-1, Latin Extended (ß, İ, ſ ...)
    + [chr(c) for c in range(0x370, 0x3FF)]  # Greek (final sigma, iota subscript)
    + [chr(c) for c in range(0x2000, 0x206F)]  # Unicode spaces, separators, zero-width
    + [chr(c) for c in range(0x3000, 0x30FF)]  # CJK punctuation, ideographic space, kana
    + [chr(c) for c in range(0xFB00, 0xFB07)]
    + [chr(c) for c in range(0xFF00, 0xFF60)]
    + [
        "\t",
        "\n",
        "  ",
        "\x0b",
        "\x1c",
        "\x1f",
        "\x85",
        "e\u0301",
        "I\u0307",
        "\U00010400",
        "\U0001d400",
    ]
)


def test_vectorized_normalization_equals_python_definition():
    rng = random.Random(7)
    rows = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40))) for _ in range(5000)]
    rows += [None, "", "  A  b  ", "Straße", "ΣΑΣ ΟΔΟΣ", "I\u0307stanbul", "ﬁne\u00a0print"]
    got = normalize_array(pa.array(rows, pa.large_string())).to_pylist()
    for row, value in zip(rows, got):
        assert value == (None if row is None else normalize_text(row)), repr(row)


def test_table_nfkc_equals_python_nfkc_where_neighbours_compose():
    # fullwidth letters before combining marks, Hangul jamo that compose across a replaced
    # character, compatibility ideographs, ligatures: the table may only be trusted where the
    # result is provably normalized; everything else must still come out as Python's NFKC
    alphabet = (
        [chr(c) for c in range(0xFF01, 0xFF5F)]
        + [chr(c) for c in range(0x300, 0x315)]
        + [chr(c) for c in range(0x1100, 0x1113)]
        + [chr(c) for c in range(0x1161, 0x1176)]
        + [chr(c) for c in range(0xF900, 0xF910)]
        + ["\ufb01", "\u2126", "\u212b", "\u3000"]
        + list("aeiou中文가 ")
    )
    rng = random.Random(11)
    rows = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(4000)]
    rows += ["\uff21\u0301", "\u1100\uff0c\u1161", "\u1100\u1161", None]
    got = nfkc_array(pa.array(rows, pa.large_string())).to_pylist()
    for row, value in zip(rows, got):
        assert value == (None if row is None else unicodedata.normalize("NFKC", row)), repr(row)


def test_ascii_only_batches_take_the_arrow_path():
    rows = ["Hello   World\t\n", "  x ", None]
    assert normalize_array(pa.array(rows)).to_pylist() == ["hello world", "x", None]


def test_shipped_unicode_table_matches_this_environment():
    if (pa.__version__, unicodedata.unidata_version) != unicode_table.VERSIONS:
        pytest.skip("other library versions: the table is rebuilt at run time")
    assert unicode_table.build_ranges() == unicode_table.RANGES


def test_a_feature_asked_with_or_without_its_defaults_is_computed_once():
    from dataaudit.corpus import Roles
    from dataaudit.features import Batch

    batch = Batch("train", pa.RecordBatch.from_pylist([{"text": "A  b"}]), 0, Roles(text="text"))
    first = batch.feature("normalized")
    assert batch.feature("normalized", view="text") is first
    assert len([k for k in batch._cache if k[0] == "normalized"]) == 1


def test_normalized_hash_groups_rows_exactly_as_normalize_text():
    from dataaudit.corpus import Roles
    from dataaudit.features import Batch
    from dataaudit.sketches.minhash import EMPTY_HASH, NULL_HASH

    rng = random.Random(5)
    base = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12))) for _ in range(400)]
    # the same texts again with case and whitespace changed: normalization must merge them
    variants = [" \t" + b.upper().replace(" ", "\n  ") + "\x1f" for b in base]
    rows = base + variants + [None, "", " \t\n", "ab", "a b", "ab "]
    batch = Batch(
        "train", pa.RecordBatch.from_pylist([{"text": r} for r in rows]), 0, Roles(text="text")
    )
    hashes = batch.feature("normalized_hash").tolist()
    by_hash, by_text = {}, {}
    for i, (h, r) in enumerate(zip(hashes, rows)):
        by_hash.setdefault(h, set()).add(i)
        by_text.setdefault(None if r is None else normalize_text(r), set()).add(i)
    assert sorted(map(sorted, by_hash.values())) == sorted(map(sorted, by_text.values()))
    assert hashes[-6] == NULL_HASH and hashes[-5] == hashes[-4] == EMPTY_HASH
    # shingling computes the same keys on the way; a batch that shingled first reuses them
    again = Batch("train", batch.data, 0, Roles(text="text"))
    again.feature("minhash", unit="auto")
    assert again.cached_any("_sketch") and again.feature("normalized_hash").tolist() == hashes
    assert again.cached("token_text") is None  # the fused pass read the raw text
    assert len({hashes[-3], hashes[-2]}) == 2 and hashes[-1] == hashes[-3]


def test_the_lower_table_maps_characters_as_tokenizable_array_does():
    """Each character the fused shingling pass maps (table >= 0) comes out of
    tokenizable_array as the bytes the table packs, alone and inside rows (NFKC replacement and
    Arrow's lower-casing are context-free); above CASED_LIMIT Arrow maps every character to
    itself."""
    import pyarrow.compute as pc

    from dataaudit._arrow import strings
    from dataaudit.features.normalize import (
        CASED_LIMIT,
        build_lower_table,
        lower_table,
        tokenizable_array,
    )
    from dataaudit.sketches.charsets import RAW_LIMIT

    table = build_lower_table()  # what is checked is what is built; the cache is checked below
    assert len(table) == RAW_LIMIT
    assert np.array_equal(lower_table(), table)

    def mapped(c: str) -> str:
        v = int(table[ord(c)])
        return (v & ((1 << 56) - 1)).to_bytes(7, "little")[: v >> 56].decode()

    chars = [chr(c) for c in range(0x80, RAW_LIMIT) if table[c] >= 0]
    assert tokenizable_array(strings(chars)).to_pylist() == [mapped(c) for c in chars]
    rng = random.Random(1)
    rows = ["".join(rng.choice(chars) for _ in range(40)) for _ in range(300)]
    want = ["".join(mapped(c) for c in r) for r in rows]
    assert tokenizable_array(strings(rows)).to_pylist() == want
    high = [chr(c) for c in range(CASED_LIMIT, RAW_LIMIT)]
    assert pc.utf8_lower(strings(high)).to_pylist() == high
    assert [mapped(c) for c in "É，ﬁ™\u212aⅨ…"] == ["é", ",", "fi", "tm", "k", "ix", "..."]
    # what it leaves to Python: other NFKC changes, casefold specials, Unicode whitespace
    for c in ("ß", "\u00a0", "\u3000", "\u0301", "İ"):
        assert table[ord(c)] == -1, c


def test_the_lower_table_is_cached_on_disk_and_rebuilt_when_stale_or_damaged(tmp_path, monkeypatch):
    """A process loads the table from the file an earlier one wrote (no build: pyarrow's first
    case mapping costs ~0.09 s of start-up); a file for other code, Unicode data or pyarrow has
    another name, and a damaged or wrong-shaped file is rebuilt and rewritten, never used."""
    from dataaudit.features import normalize

    built = normalize.build_lower_table()
    calls = []

    def build():
        calls.append(1)
        return built

    monkeypatch.setattr(normalize, "build_lower_table", build)
    monkeypatch.setattr(normalize, "_table_cache", lambda: tmp_path / "t.npy")
    fresh = normalize.lower_table.__wrapped__  # the function without this process's memo
    assert np.array_equal(fresh(), built) and len(calls) == 1  # built, then written
    assert np.array_equal(fresh(), built) and len(calls) == 1  # read back, not built
    (tmp_path / "t.npy").write_bytes(b"not a table")
    assert np.array_equal(fresh(), built) and len(calls) == 2
    assert np.array_equal(np.load(tmp_path / "t.npy"), built)  # rewritten whole
    np.save(tmp_path / "t.npy", built[:10])
    assert np.array_equal(fresh(), built) and len(calls) == 3
    monkeypatch.undo()
    name = normalize._table_cache().name
    monkeypatch.setattr(normalize.pa, "__version__", "0.0.0-other")
    assert normalize._table_cache().name != name


def test_tokenizable_rows_equals_tokenizable_array_on_text_that_is_not_ascii():
    from dataaudit._arrow import strings
    from dataaudit.features.normalize import tokenizable_array, tokenizable_rows

    rng = random.Random(2)
    rows = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 30))) for _ in range(2000)]
    rows = [r + "é" for r in rows] + [None]
    arr = strings(rows)
    assert arr.to_pylist() == rows
    assert tokenizable_rows(arr).to_pylist() == tokenizable_array(arr).to_pylist()

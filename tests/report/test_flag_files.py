"""The row flags files are written from the table's columns with Arrow, not through polars
(whose import alone cost a DUP002 audit ~0.09 s): the same bytes polars' ``write_ndjson`` and
``write_csv`` write for ``Report.flags()``, and Parquet that reads back as that frame. polars is
the oracle here, on values chosen to break an encoder (quotes, commas, CR/LF, control
characters, non-ASCII, empty text, nulls, NaN and infinite scores, floats of every magnitude)
and on random ones, across block boundaries."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from dataaudit._arrow import strings
from dataaudit.report import Report, flag_files
from dataaudit.report.flags import FlagTable, flag_table
from dataaudit.rule import Flag, Rule, RuleOutcome, RuleResult, Severity

TRICKY = [
    "",
    "plain",
    "a,b",
    'say "hi"',
    '"',
    '""',
    "line\nbreak",
    "cr\rhere",
    "crlf\r\n",
    "tab\there",
    "back\\slash",
    "\\",
    'mix \\" of both',
    "ctrl \x00\x01\x08\x0b\x0c\x1b\x1f end",
    "del \x7f and \x80\x9f",
    "é ü ß 中文 😀 \u2028\u2029 \ufeff",
    " lead",
    "trail ",
    "#hash",
    "'single'",
    "123",
    "-4.5",
    "1e5",
    "null",
    "NaN",
    "true",
    "x" * 5000,
    ',"\n' * 50,
]
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 0.816, 1 / 3, 2.0**53, 2.0**53 + 2, 5e-324]
FLOATS += [1.7976931348623157e308, float("inf"), float("-inf"), float("nan")]
FLOATS += [m * 10.0**e for e in range(-25, 25) for m in (1.0, -1.5, 1.2345678901234567, 9.999)]


def _tricky_table(n: int, seed: int) -> FlagTable:
    """A table in the columns flag_table builds, every value drawn from TRICKY/FLOATS (ids
    and clusters in several Arrow chunks)."""
    rng = np.random.default_rng(seed)
    texts = TRICKY + [None]

    def coded(values: list) -> tuple[list, np.ndarray]:
        return values, rng.integers(0, len(values), n).astype(np.int32)

    def text() -> pa.ChunkedArray:
        array = strings([texts[i] for i in rng.integers(0, len(texts), n)])
        cut = sorted(rng.integers(0, n + 1, 3).tolist())
        return pa.chunked_array(
            [array.slice(a, b - a) for a, b in zip([0, *cut], [*cut, n])], pa.large_string()
        )

    return FlagTable(
        n,
        {
            "split": coded(["test", "train", 'weird,"split"\n']),
            "row": rng.integers(-(2**62), 2**62, n),
            "id": text(),
            "code": coded(["DUP002"]),
            "severity": coded(["error", "info", "warn"]),
            "action": coded(["drop", "keep", "review", None]),
            "cluster": text(),
            "score": np.array(FLOATS)[rng.integers(0, len(FLOATS), n)],
            "detail": coded([*TRICKY, None]),
        },
    )


def _written(report: Report, path) -> bytes:
    return report.write_flags(path).read_bytes()


@pytest.mark.parametrize("block", [7, 64, flag_files.BLOCK_ROWS])
def test_jsonl_and_csv_are_the_bytes_polars_writes(tmp_path, monkeypatch, block):
    monkeypatch.setattr(flag_files, "BLOCK_ROWS", block)
    table = _tricky_table(700, seed=block)
    frame = table.frame()
    report = Report({"flags": table})
    assert _written(report, tmp_path / "f.jsonl") == frame.write_ndjson().encode()
    assert _written(report, tmp_path / "f.csv") == frame.write_csv().encode()
    assert dict.__len__(table) == 1  # written from the columns


def test_parquet_reads_back_as_the_frame(tmp_path, monkeypatch):
    monkeypatch.setattr(flag_files, "PARQUET_ROWS", 300)
    table = _tricky_table(700, seed=1)
    report = Report({"flags": table})
    report.write_flags(tmp_path / "f.parquet")
    back = pl.read_parquet(tmp_path / "f.parquet")
    assert back.schema == table.frame().schema
    assert_frame_equal(back, table.frame())
    assert back["score"].null_count() == int(np.isnan(table.arrays["score"]).sum())
    polars_file = tmp_path / "p.parquet"
    table.frame().write_parquet(polars_file)
    assert pq.read_schema(tmp_path / "f.parquet") == pq.read_schema(polars_file)
    assert pq.ParquetFile(tmp_path / "f.parquet").metadata.num_row_groups == 3


@pytest.mark.parametrize("seed", range(5))
def test_random_text_and_floats_are_the_bytes_polars_writes(tmp_path, seed):
    """Random strings over the characters an encoder must treat apart, and floats from random
    bits (every exponent) or rounded the way scores are."""
    rng = random.Random(seed)
    alphabet = [chr(i) for i in range(0x20)] + list(",\"\\'\r\n\t ab7.-e") + ["é", "😀", "\x7f"]
    n = 3000
    ids = [
        None if rng.random() < 0.1 else "".join(rng.choices(alphabet, k=rng.randrange(0, 6)))
        for _ in range(n)
    ]
    bits = np.frombuffer(rng.randbytes(8 * n), np.float64).copy()
    rounded = np.round(np.array([rng.random() for _ in range(n)]), rng.randrange(1, 7))
    score = np.where(np.array([rng.random() < 0.5 for _ in range(n)]), bits, rounded)
    table = _tricky_table(n, seed)
    table.arrays["id"] = pa.chunked_array([strings(ids)])
    table.arrays["score"] = score
    frame = table.frame()
    report = Report({"flags": table})
    assert _written(report, tmp_path / "f.jsonl") == frame.write_ndjson().encode()
    assert _written(report, tmp_path / "f.csv") == frame.write_csv().encode()


def test_an_empty_table_writes_what_polars_writes(tmp_path):
    report = Report({"flags": flag_table([])})
    frame = report.flags()
    assert _written(report, tmp_path / "f.jsonl") == frame.write_ndjson().encode() == b""
    assert _written(report, tmp_path / "f.csv") == frame.write_csv().encode()
    report.write_flags(tmp_path / "f.parquet")
    assert_frame_equal(pl.read_parquet(tmp_path / "f.parquet"), frame)


def test_a_stored_table_writes_the_bytes_its_columns_write(tmp_path):
    """A report loaded from its JSON (the stored dict) writes the files its columns wrote."""
    table = _tricky_table(300, seed=3)
    table.arrays["score"] = np.where(np.isfinite(table.arrays["score"]), table.arrays["score"], 0)
    report = Report({"flags": table})
    stored = Report({"flags": json.loads(json.dumps(dict(table)))})
    assert not isinstance(stored.data["flags"], FlagTable)
    for ext in ("jsonl", "csv"):
        assert _written(stored, tmp_path / f"s.{ext}") == _written(report, tmp_path / f"c.{ext}")
    stored.write_flags(tmp_path / "s.parquet")
    assert_frame_equal(pl.read_parquet(tmp_path / "s.parquet"), report.flags())


def test_stdout_gets_csv(capsys):
    table = _tricky_table(200, seed=4)
    Report({"flags": table}).write_flags("-")
    assert capsys.readouterr().out == table.frame().write_csv()


def test_flags_from_rules_write_the_bytes_polars_writes(tmp_path):
    class _R(Rule):
        code = "ABC001"

    flags = [
        Flag("train", i, group=str(i // 3), detail=TRICKY[i % len(TRICKY)], score=FLOATS[i])
        for i in range(len(FLOATS))
    ]
    report = Report(
        {"flags": flag_table([RuleOutcome(_R(), Severity.WARN, RuleResult(flags=flags))])}
    )
    frame = report.flags()
    assert _written(report, tmp_path / "f.jsonl") == frame.write_ndjson().encode()
    assert _written(report, tmp_path / "f.csv") == frame.write_csv().encode()


def test_writing_the_flags_imports_neither_polars_nor_pandas(tmp_path):
    code = textwrap.dedent(
        f"""
        import sys
        from dataaudit.report import Report
        from dataaudit.report.flags import flag_table
        from dataaudit.rule import Flag, Rule, RuleOutcome, RuleResult, Severity

        class R(Rule):
            code = "ABC001"

        flags = [Flag("train", i, group="g", detail="d", score=0.5) for i in range(10)]
        table = flag_table([RuleOutcome(R(), Severity.WARN, RuleResult(flags=flags))])
        report = Report({{"flags": table}})
        for ext in ("jsonl", "csv", "parquet"):
            report.write_flags({str(tmp_path)!r} + "/f." + ext)
        report.write_flags("-")
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("polars", "pandas")))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[]"
    assert proc.stdout.count("ABC001") == 10  # the CSV on stdout
    for ext in ("jsonl", "csv", "parquet"):
        assert (tmp_path / f"f.{ext}").stat().st_size > 0


def test_a_failed_write_leaves_no_file(tmp_path, monkeypatch):
    """The file is written a block at a time to a temporary file: a failure mid-way (a full
    disk) leaves neither a partial file nor the temporary one."""
    monkeypatch.setattr(flag_files, "BLOCK_ROWS", 10)
    encode = flag_files._encoded_column

    def failing(name, value, at, *args):
        if at >= 20:
            raise OSError("disk full")
        return encode(name, value, at, *args)

    monkeypatch.setattr(flag_files, "_encoded_column", failing)
    report = Report({"flags": _tricky_table(50, seed=5)})
    for ext in ("jsonl", "csv"):
        with pytest.raises(OSError, match="disk full"):
            report.write_flags(tmp_path / f"f.{ext}")
    assert list(tmp_path.iterdir()) == []

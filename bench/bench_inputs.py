"""Reading inputs: what the checks that keep "passed" honest cost, side by side with plain readers.

1. A Hugging Face Dataset after ``shuffle`` (an indices mapping) against the same rows after
   ``flatten_indices()``: the audit must read both at about the same speed (the issue's bar is
   1.5x; before, the shuffled one streamed one row per batch: 242 s against 3 s).
2. JSON Lines, MB/s side by side in one run: the Python line loop (``json.loads`` per line: the
   reader's fallback for a block the native parser rejects, and how every line was read before),
   dataaudit's reader (pyarrow's parser in newline-aligned blocks, with the union schema, depth
   guard and UTF-8 check; alone and as a corpus streams it), bare ``pyarrow.json.read_json`` and
   ``polars.scan_ndjson(...).collect()`` on the same file.

Text: the reStructuredText sources of the Python documentation, one paragraph per row.
Install them with ``apt-get install python3.11-doc`` (Debian); they land under
/usr/share/doc/python3.11-doc/html/_sources.

    python bench/bench_inputs.py [--rows 40000] [--jsonl-mb 200] [--repeat 3] [--only-jsonl]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

SOURCES = Path("/usr/share/doc/python3.11-doc/html/_sources")


def paragraphs() -> list[str]:
    if not SOURCES.is_dir():
        raise SystemExit(f"{SOURCES} not found: apt-get install python3.11-doc")
    out = []
    for path in sorted(SOURCES.rglob("*.txt")):
        for para in path.read_text(errors="replace").split("\n\n"):
            para = " ".join(para.split())
            if len(para) > 80:
                out.append(para)
    return out


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_indices_mapping(texts: list[str], rows: int) -> None:
    import datasets

    from dataaudit import audit
    from dataaudit.corpus import load_corpus

    datasets.disable_progress_bars()
    rng = random.Random(0)
    records = [{"text": rng.choice(texts), "label": rng.choice("abcd")} for _ in range(rows)]
    shuffled = datasets.Dataset.from_list(records).shuffle(seed=0)
    flat = shuffled.flatten_indices()

    def read(ds):
        return lambda: sum(rb.num_rows for _, rb in load_corpus(ds).stream(8192))

    def run(ds):
        return lambda: audit(ds, select=["DUP001", "TXT001", "LEN002", "LBL003"])

    print(f"\nHF Dataset, {rows:,} rows: shuffled (indices mapping) vs flatten_indices()")
    for what, make in (("read", read), ("audit", run)):
        t_flat, t_shuf = best_of(make(flat)), best_of(make(shuffled))
        print(
            f"  {what:<5}  flat {t_flat:6.2f} s   shuffled {t_shuf:6.2f} s   "
            f"ratio {t_shuf / t_flat:4.2f}x (bar: 1.5x)"
        )


def line_loop(path: Path, batch_size: int = 8192) -> int:
    """JSON Lines read by the Python line loop alone: ``json.loads`` per line and records ->
    batch, which is the reader's fallback path for a block the native parser rejects (and how
    every line was read before the native blocks)."""
    from dataaudit.inputs import jsonl

    bad = jsonl._BadLines(path, "error", None)
    rows = line_no = 0
    with path.open("rb") as fh:
        tail = b""
        while chunk := fh.read(jsonl.BLOCK_BYTES):
            data = tail + chunk
            cut = data.rfind(b"\n") + 1
            block, tail = data[:cut], data[cut:]
            for rb in jsonl._block_python(path, block, line_no, batch_size, None, {}, bad, None):
                rows += rb.num_rows
            line_no += block.count(b"\n")
        if tail.strip():
            for rb in jsonl._block_python(path, tail, line_no, batch_size, None, {}, bad, None):
                rows += rb.num_rows
    return rows


def bench_jsonl(texts: list[str], megabytes: int, repeat: int) -> None:
    """MB/s of the Python line loop, dataaudit's reader (native blocks + checks, as iterated by
    the reader and as streamed by a corpus), and bare pyarrow / polars readers, side by side."""
    import polars as pl
    import pyarrow.json as pj

    from dataaudit.corpus import load_corpus
    from dataaudit.inputs.jsonl import iter_jsonl

    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.jsonl"
        with path.open("w", encoding="utf-8") as fh:  # UTF-8 as written, as most datasets are
            while fh.tell() < megabytes << 20:
                record = {"text": rng.choice(texts), "source": "pydoc"}
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        size = path.stat().st_size / 1e6
        readers = {
            "Python line loop (json.loads)": lambda: line_loop(path),
            "dataaudit iter_jsonl (blocks)": lambda: sum(
                rb.num_rows for rb in iter_jsonl(path, 8192)
            ),
            "dataaudit corpus stream": lambda: sum(
                rb.num_rows for _, rb in load_corpus(path).stream(8192)
            ),
            "pyarrow.json.read_json": lambda: pj.read_json(path).num_rows,
            "polars.scan_ndjson.collect": lambda: pl.scan_ndjson(path).collect().height,
        }
        rows = {name: fn() for name, fn in readers.items()}  # warm the page cache
        assert len(set(rows.values())) == 1, rows
        # interleaved rounds, best of each: the machine is shared, so compare within a round
        times = {name: [] for name in readers}
        for _ in range(repeat):
            for name, fn in readers.items():
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
        best = {name: min(ts) for name, ts in times.items()}
        ours = best["dataaudit iter_jsonl (blocks)"]
        print(f"\nJSON Lines, {size:.0f} MB, {rows[name]:,} rows, best of {repeat}")
        for name, t in best.items():
            print(
                f"  {name:<30} {t:6.2f} s  {size / t:6.0f} MB/s   "
                f"time / iter_jsonl {t / ours:5.2f}x"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=40_000)
    parser.add_argument("--jsonl-mb", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only-jsonl", action="store_true")
    args = parser.parse_args()
    texts = paragraphs()
    if not args.only_jsonl:
        bench_indices_mapping(texts, args.rows)
    bench_jsonl(texts, args.jsonl_mb, args.repeat)


if __name__ == "__main__":
    main()

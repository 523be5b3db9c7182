"""Reading inputs: what the checks that keep "passed" honest cost, side by side with plain readers.

1. A Hugging Face Dataset after ``shuffle`` (an indices mapping) against the same rows after
   ``flatten_indices()``: the audit must read both at about the same speed (the issue's bar is
   1.5x; before, the shuffled one streamed one row per batch: 242 s against 3 s).
2. JSON Lines through dataaudit's reader (union schema, depth guard, UTF-8 check, shape checks)
   against ``pyarrow.json.read_json`` and ``polars.read_ndjson`` on the same file.

Text: the reStructuredText sources of the Python documentation, one paragraph per row.
Install them with ``apt-get install python3.11-doc`` (Debian); they land under
/usr/share/doc/python3.11-doc/html/_sources.

    python bench/bench_inputs.py [--rows 40000] [--jsonl-mb 200]
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


def bench_jsonl(texts: list[str], megabytes: int) -> None:
    import polars as pl
    import pyarrow.json as pj

    from dataaudit.corpus import load_corpus

    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.jsonl"
        with path.open("w") as fh:
            while fh.tell() < megabytes << 20:
                fh.write(json.dumps({"text": rng.choice(texts), "source": "pydoc"}) + "\n")
        size = path.stat().st_size / 1e6
        t_ours = best_of(lambda: sum(rb.num_rows for _, rb in load_corpus(path).stream(8192)))
        t_arrow = best_of(lambda: pj.read_json(path))
        t_polars = best_of(lambda: pl.read_ndjson(path))
        print(f"\nJSON Lines, {size:.0f} MB")
        print(f"  dataaudit (streamed, checked) {t_ours:6.2f} s  {size / t_ours:6.0f} MB/s")
        print(
            f"  pyarrow.json.read_json        {t_arrow:6.2f} s  {size / t_arrow:6.0f} MB/s  "
            f"(dataaudit/pyarrow {t_ours / t_arrow:.2f}x)"
        )
        print(
            f"  polars.read_ndjson            {t_polars:6.2f} s  {size / t_polars:6.0f} MB/s  "
            f"(dataaudit/polars {t_ours / t_polars:.2f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=40_000)
    parser.add_argument("--jsonl-mb", type=int, default=200)
    args = parser.parse_args()
    texts = paragraphs()
    bench_indices_mapping(texts, args.rows)
    bench_jsonl(texts, args.jsonl_mb)


if __name__ == "__main__":
    main()

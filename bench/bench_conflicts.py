"""LBL001 (conflicting labels) at scale: wall time, CPU, parent peak RSS and RSS through the run.

Data: the texts of ``fixtures/classification`` (real text: fortunes and Python docs) recombined
into ``--rows`` documents of 1-3 texts (seeded), 10% of them with one word dropped (near
copies), labelled a-e by their first text with 3% of the labels drawn at random and 5% null,
written once as Parquet under ``--dir``. Heavy duplication on purpose: at 1M rows about half of
the rows are in a conflict group, the worst case for the finish.

Each run is ``audit(DATA, select=...)`` in a fresh process that samples its own RSS every 0.25 s
and prints one JSON line: wall and CPU seconds, VmHWM, the RSS maximum per tenth of the run
(flat through the scan is the goal of the keyed stage) and LBL001's metrics.

    python bench/bench_conflicts.py --rows 1000000                    # LBL001 alone
    python bench/bench_conflicts.py --rows 100000 --select default    # the default pack
    PYTHONPATH=/path/to/older/checkout python bench/bench_conflicts.py  # an older dataaudit
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "classification"

CHILD = r"""
import json, resource, sys, threading, time
import dataaudit
data, select = sys.argv[1], sys.argv[2]
series, stop = [], []
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024
def sample():
    while not stop:
        series.append(rss())
        time.sleep(0.25)
threading.Thread(target=sample, daemon=True).start()
t = time.perf_counter()
kw = {} if select == "default" else {"select": select.split(",")}
report = dataaudit.audit(data, label="label", **kw)
wall = time.perf_counter() - t
stop.append(1)
ru = resource.getrusage(resource.RUSAGE_SELF)
peak = [int(l.split()[1]) // 1024 for l in open("/proc/self/status") if l.startswith("VmHWM")][0]
n = len(series)
tenths = [max(series[i * n // 10 : (i + 1) * n // 10] or [0]) for i in range(10)]
lbl = {m["name"]: m["value"] for m in report.result("LBL001")["metrics"]}
print(json.dumps({"dataaudit": dataaudit.__file__, "select": select, "wall_s": round(wall, 1),
                  "cpu_s": round(ru.ru_utime + ru.ru_stime, 1), "peak_mb": peak,
                  "rss_by_tenth_mb": tenths, "lbl001": lbl}))
"""


def corpus(rows: int, out: Path, seed: int = 15) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = out / f"conflicts-{rows}" / "train"
    if path.is_dir():
        return path.parent
    texts = []
    for split in ("train", "validation", "test"):
        for line in (FIXTURES / f"{split}.jsonl").read_text().splitlines():
            text = json.loads(line).get("text")
            if isinstance(text, str) and text.strip():
                texts.append(text)
    rng = random.Random(seed)
    labels = ["a", "b", "c", "d", "e"]
    docs, labs = [], []
    for _ in range(rows):
        idx = [rng.randrange(len(texts)) for _ in range(rng.randint(1, 3))]
        doc = " ".join(texts[i] for i in idx)
        if rng.random() < 0.1:  # a near copy: one word dropped
            words = doc.split()
            if len(words) > 20:
                del words[rng.randrange(len(words))]
                doc = " ".join(words)
        label = labels[idx[0] % 5] if rng.random() < 0.97 else rng.choice(labels)
        docs.append(doc)
        labs.append(None if rng.random() < 0.05 else label)
    path.mkdir(parents=True)
    parts = max(1, rows // 250_000)
    for i in range(parts):
        lo, hi = i * rows // parts, (i + 1) * rows // parts
        table = pa.table({"text": docs[lo:hi], "label": pa.array(labs[lo:hi], pa.string())})
        pq.write_table(table, path / f"part-{i}.parquet", row_group_size=5000)
    return path.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--select", default="LBL001", help="rule codes, or 'default' for the pack")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/dataaudit-bench-conflicts"))
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    data = corpus(args.rows, args.dir)
    for _ in range(args.repeat):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(data), args.select],
            check=True,
            capture_output=True,
            text=True,
        )
        print(out.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()

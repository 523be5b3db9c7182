"""The default pack on 1M real short texts with heavy duplication: whole-process wall time and
peak RSS, and per rule its update/finish time and the peak RSS while it finished.

Text: real short texts that Debian ships, with a label each (where they come from):

    apt-get install -y fortunes python3.11-doc

the fortunes (one label per fortune file) and the sentences of the Python 3.11 docs sources
(one label per top-level docs folder), 30-400 characters. Rows are drawn with Zipf-like
popularity (exponent 0.6 over ~100k distinct texts), so popular texts recur thousands of times;
10% of rows get a few words substituted (near duplicates) and 2% a random label (conflicting
labels). ``train.parquet`` / ``test.parquet`` (90% / 10%), columns ``text`` and ``label``,
cached under ``--dir``.

One run is ``dataaudit audit DIR --label label`` (the default pack) in a fresh process whose
rules are wrapped to record, per rule, the process's peak RSS during its ``finish`` (the
high-water mark is reset before each finish through /proc/self/clear_refs); the scan's peak is
read before the first finish. Wall time is measured around the whole process (start-up
included), the per-rule times come from the report's timings.

    python bench/bench_pack.py                      # 1M rows (check `free -g` first: ~3 GB)
    python bench/bench_pack.py --rows 200000
    python bench/bench_pack.py --select DUP002,LBL001,LEAK001
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FORTUNES = Path("/usr/share/games/fortunes")
PY_DOCS = Path("/usr/share/doc/python3.11/html/_sources")

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import dataaudit
from dataaudit._process import arrow_in_jemalloc, reuse_freed_memory
from dataaudit.registry import load_rules

reuse_freed_memory()  # what `dataaudit audit` sets in its process
arrow_in_jemalloc()

peaks = {}

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return 0.0

def reset():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass

def wrap(cls, name):
    finish = getattr(cls, name)
    def timed(self, *args):
        if "scan" not in peaks:
            peaks["scan"] = hwm()
        reset()
        try:
            return finish(self, *args)
        finally:
            peaks[self.code] = hwm()
    setattr(cls, name, timed)

for cls in load_rules().rules.values():
    wrap(cls, "finish")
    if getattr(cls, "keyed", False):  # finished through the keyed stage
        wrap(cls, "finish_keyed")
args = json.loads(sys.argv[1])
report = dataaudit.audit(args["path"], config=args["config"], select=args["select"],
                         label="label", progress=False)
peaks["total"] = None
print(json.dumps({"peaks": peaks, "timings": report.data.get("timings", {}),
                  "status": {r["code"]: r["status"] for r in report.results},
                  "flagged": {r["code"]: r.get("flagged_rows", 0) for r in report.results},
                  "flags": report.data.get("flags", {}).get("count", 0),
                  "seconds": time.perf_counter() - t0}))
"""


def texts() -> tuple[list[str], list[str]]:
    out, labels = [], []
    if FORTUNES.is_dir():
        for f in sorted(FORTUNES.glob("*")):
            if f.suffix or not f.is_file():
                continue
            for t in f.read_text("utf-8", "replace").split("\n%\n"):
                t = " ".join(t.split())
                if 20 <= len(t) <= 400:
                    out.append(t)
                    labels.append("fortune-" + f.name)
    for f in sorted(PY_DOCS.rglob("*.txt")):
        label = "py-" + f.relative_to(PY_DOCS).parts[0].split(".")[0]
        for p in re.split(r"\n\s*\n", f.read_text("utf-8", "replace")):
            for s in re.split(r"(?<=[.!?])\s+", " ".join(p.split())):
                if 30 <= len(s) <= 300:
                    out.append(s)
                    labels.append(label)
    if not out:
        sys.exit("no text found: apt-get install -y fortunes python3.11-doc")
    return out, labels


def make_corpus(out: Path, rows: int, seed: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    base, base_labels = texts()
    k = len(base)
    rng = np.random.default_rng(seed)
    weight = 1.0 / np.arange(1, k + 1) ** 0.6
    pick = rng.permutation(k)[rng.choice(k, size=rows, p=weight / weight.sum())]
    r = random.Random(seed)
    vocab = sorted({w for t in base[:5000] for w in t.split()})
    col_t, col_l = [], []
    for i in pick.tolist():
        t, label = base[i], base_labels[i]
        if r.random() < 0.1:
            w = t.split()
            for _ in range(max(1, len(w) // 15)):
                w[r.randrange(len(w))] = r.choice(vocab)
            t = " ".join(w)
        if r.random() < 0.02:
            label = base_labels[r.randrange(k)]
        col_t.append(t)
        col_l.append(label)
    n_train = int(rows * 0.9)
    out.mkdir(parents=True, exist_ok=True)
    for name, sl in (("train", slice(0, n_train)), ("test", slice(n_train, rows))):
        table = pa.table(
            {"text": pa.array(col_t[sl], pa.large_string()), "label": pa.array(col_l[sl])}
        )
        pq.write_table(table, out / f"{name}.parquet", row_group_size=50_000)


def run(path: Path, config: str | None, select: list[str] | None) -> dict:
    arg = json.dumps({"path": str(path), "config": config, "select": select})
    t0 = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", sys.executable, "-c", _CHILD, arg],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"audit failed ({proc.returncode}): {proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    # the process's peak: the largest of the per-phase high-water marks (each reset before a
    # rule's finish) and of what /usr/bin/time saw
    seen = [v for v in out["peaks"].values() if v]
    out["peak_mb"] = max([int(proc.stderr.strip().splitlines()[-1]) / 1024, *seen])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--select", default=None, help="rules instead of the default pack")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "dataaudit-bench"))
    args = ap.parse_args()

    data = Path(args.dir) / f"pack-short-{args.rows}-s{args.seed}"
    if not (data / "test.parquet").exists():
        t0 = time.perf_counter()
        make_corpus(data, args.rows, args.seed)
        print(f"corpus written in {time.perf_counter() - t0:.0f} s: {data}", file=sys.stderr)
    select = args.select.split(",") if args.select else None
    what = f"--select {args.select}" if select else "the default pack"
    print(f"{args.rows:,} short real rows (train 90% / test 10%), {what}, fresh process each run")
    for k in range(args.repeat):
        r = run(data, None if select else "default", select)
        t = r["timings"]
        stages = t.get("stages", {})
        scan = t.get("scan", {})
        print(
            f"\nrun {k + 1}: wall {r['wall']:.1f} s, peak RSS {r['peak_mb']:,.0f} MB "
            f"(scan peak {r['peaks'].get('scan', 0):,.0f} MB); load {stages.get('load', 0):.1f} s, "
            f"scan {stages.get('scan', 0):.1f} s (read {scan.get('read', 0):.1f} s, features "
            f"{sum(scan.get('features', {}).values()):.1f} s), finish {stages.get('finish', 0):.1f} s; "
            f"{r.get('flags', 0):,} row flags"
        )
        feats = sorted(scan.get("features", {}).items(), key=lambda kv: -kv[1])[:6]
        print("  features: " + ", ".join(f"{name} {sec:.1f} s" for name, sec in feats))
        print(
            f"  {'rule':<9} {'status':<8} {'update s':>9} {'finish s':>9} {'peak MB in finish':>18}"
            f" {'flagged rows':>13}"
        )
        rules = t.get("rules", {})
        for code in sorted(
            rules, key=lambda c: -(rules[c].get("finish", 0) + rules[c].get("update", 0))
        ):
            v = rules[code]
            print(
                f"  {code:<9} {r['status'].get(code, '?'):<8} {v.get('update', 0):>9.1f} "
                f"{v.get('finish', 0):>9.1f} {r['peaks'].get(code, 0):>18,.0f}"
                f" {r.get('flagged', {}).get(code, 0):>13,}"
            )


if __name__ == "__main__":
    main()

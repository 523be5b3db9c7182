"""What row flags cost: time and memory per 100k flags, as Flag objects and as Flags columns.

A rule's flags live from its ``finish`` until the report is built (and on the Ray driver with
every other rule's), so their size is part of every peak after the scan. Each variant runs in a
fresh process: build ``--flags`` flags shaped like DUP001's (one split, row, cluster id as text,
kept/duplicate, keep/drop, an id per row), then turn them into the report's table
(``flag_table``, what ``Report.build`` does) and count the flagged rows.
Memory is what the flags hold once built (tracemalloc: Python objects and numpy/Arrow buffers
allocated through Python) and the process's peak RSS growth over the whole run.

    python bench/bench_flags.py                    # 1M flags
    python bench/bench_flags.py --flags 200000

``objects`` is how every rule returned flags before ``Flags`` (a list of Flag);
``objects+compact`` the same list once the engine has checked and compacted it after the rule's
finish (what a rule still on Flag objects costs while the others finish); ``columns`` is
``result.flags.add(...)`` with numpy and Arrow columns, as DUP001 calls it (the ids, as Arrow
text, come from the keyed stage's table).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

_CHILD = r"""
import json, sys, time, tracemalloc
import numpy as np

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024

mode, n = sys.argv[1], int(sys.argv[2])
try:
    from dataaudit.report.flags import flag_table
except ImportError:  # before the columnar table
    from dataaudit.report.flags import collect_flags, encode_flags
    flag_table = lambda outcomes: encode_flags(collect_flags(outcomes))
from dataaudit.rule import Flag, Rule, RuleOutcome, RuleResult, Severity
import polars, pyarrow  # imported before measuring

class Dup(Rule):
    code = "DUP001"

rng = np.random.default_rng(0)
rows = np.sort(rng.choice(n * 3, n, replace=False)).astype(np.int64)
first = rows[(np.arange(n) // 4) * 4]  # groups of 4: the first member is the group id
is_first = rows == first
ids = [f"doc-{r}" for r in rows.tolist()]
base = rss()
tracemalloc.start()
t0 = time.perf_counter()
result = RuleResult()
if mode.startswith("objects"):
    result.flags.extend(
        Flag("train", r, str(g), "kept" if k else "duplicate", action="keep" if k else "drop", id=i)
        for r, g, k, i in zip(rows.tolist(), first.tolist(), is_first.tolist(), ids)
    )
    if mode == "objects+compact":  # what the engine does with a rule's flags after finish
        from dataaudit.rule import Flags
        result.flags = Flags.of(result.flags).compact()
else:
    import pyarrow as pa
    def pick(mask, yes, no):  # as DUP001 does
        return pa.DictionaryArray.from_arrays(pa.array((~mask).astype(np.int8)), [yes, no])
    result.flags.add(
        "train", rows, group=first, detail=pick(is_first, "kept", "duplicate"),
        action=pick(is_first, "keep", "drop"), id=pa.array(ids),
    )
build = time.perf_counter() - t0
held = tracemalloc.get_traced_memory()[0]
tracemalloc.stop()
t0 = time.perf_counter()
table = flag_table([RuleOutcome(Dup(), Severity.WARN, result)])
collect = time.perf_counter() - t0
t0 = time.perf_counter()
try:
    from dataaudit.rule import Flags
    flagged = Flags.of(result.flags).flagged_rows()
except ImportError:  # before Flags
    flagged = len({(f.split, f.row) for f in result.flags})
count = time.perf_counter() - t0
assert table["count"] == n and flagged == n
print(json.dumps({"build": build, "collect": collect, "count": count, "held_mb": held / 2**20,
                  "rss_mb": rss() - base}))
"""


def run(mode: str, n: int) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(n)], capture_output=True, text=True
    )
    if proc.returncode:
        sys.exit(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flags", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--modes", default="objects,objects+compact,columns")
    args = ap.parse_args()
    per = 100_000 / args.flags
    print(f"{args.flags:,} DUP001-shaped flags; per 100k flags (best of {args.repeat} runs):")
    print(f"  {'':<15} {'build s':>8} {'report s':>9} {'count s':>8} {'held MB':>8} {'RSS MB':>7}")
    for mode in args.modes.split(","):
        runs = [run(mode, args.flags) for _ in range(args.repeat)]
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        print(
            f"  {mode:<15} {best['build'] * per:>8.3f} {best['collect'] * per:>9.3f} "
            f"{best['count'] * per:>8.3f} {best['held_mb'] * per:>8.1f} {best['rss_mb'] * per:>7.1f}"
        )


if __name__ == "__main__":
    main()

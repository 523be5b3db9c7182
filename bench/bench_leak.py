"""LEAK001: the broadcast join (eval indexed in a prepass, train streamed) vs the in-process
search (every row of train and eval held until finish), on real text with planted leaks.

Text: paragraphs of the Python 3.11 documentation sources (``python3.11-doc``), recombined into
documents of 1-4 paragraphs (seeded), as bench_scale.py. The test split holds exact copies and
near copies (a few words changed) of train documents, fresh documents, and boilerplate: train
holds thousands of variants of one notice (one word differs), so the eval rows of that notice
share band buckets with far more than CAP train rows and the per-bucket cap decides which train
rows are compared; one notice is also copied verbatim thousands of times (all exact copies).

Each run is a fresh subprocess (``audit(path, select=["LEAK001"], workers=N)``) printing its
CPU seconds (self + children), the parent's peak RSS (VmHWM), the largest worker's peak RSS
(``ru_maxrss`` of the children), the mode that ran and a digest of the findings, flags and
metrics. ``--before PATH``: the same run with the package at PATH first on ``sys.path`` (an
older checkout) for the before side.

    python bench/bench_leak.py --train 200000 --eval 5000
    python bench/bench_leak.py --train 20000 --eval 1000 --workers 1 2 --before /tmp/old
    python bench/bench_leak.py --workers 1 2 --before /tmp/old --before-mode broadcast
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
SEED = 15
NOTICE = (
    "This document is distributed under the terms of the Python Software Foundation license "
    "agreement and may be copied, modified and redistributed provided that this notice and "
    "the copyright statement are kept in every copy, including copies made for internal use "
    "only, for the release numbered"
)


def corpus(train: int, evals: int) -> Path:
    """Train and test Parquet files under bench/data (written once)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sys.path.insert(0, str(HERE))
    from bench_scale import paragraphs

    folder = DATA / f"leak_{train}_{evals}"
    if (folder / "done").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    paras = paragraphs()
    n_notice = train // 50  # 2% boilerplate variants, 1% verbatim copies
    docs = ["\n\n".join(rng.choices(paras, k=rng.randint(1, 4))) for _ in range(train)]
    for i in rng.sample(range(train), n_notice):
        docs[i] = f"{NOTICE} {rng.randint(0, 10**6)}."
    for i in rng.sample(range(train), n_notice // 2):
        docs[i] = f"{NOTICE} 3.11."
    test = []
    for _ in range(evals):
        r = rng.random()
        if r < 0.05:  # an exact copy
            test.append(rng.choice(docs))
        elif r < 0.10:  # a near copy: three words replaced
            words = rng.choice(docs).split()
            for _ in range(3):
                words[rng.randrange(len(words))] = rng.choice(["alpha", "beta", "gamma"])
            test.append(" ".join(words))
        elif r < 0.12:  # boilerplate (the notice with its own number)
            test.append(f"{NOTICE} {rng.randint(0, 10**6)}.")
        else:  # a document of its own
            test.append("\n\n".join(rng.choices(paras, k=rng.randint(1, 4))))
    for name, texts in (("train", docs), ("test", test)):
        table = pa.table({"id": pa.array(range(len(texts))), "text": texts})
        pq.write_table(table, folder / f"{name}.parquet", row_group_size=20_000)
    (folder / "done").write_text("")
    return folder


def _child(path: str, workers: int, mode: str) -> None:
    import resource
    import time

    from dataaudit import audit
    from dataaudit.rules.leakage import overlap

    if mode == "in-process" and hasattr(overlap, "MAX_EVAL_ROWS"):
        overlap.MAX_EVAL_ROWS = -1  # no prepass: the in-process search
    extra: dict = {"workers": workers}
    if workers == 0:  # Ray: a local cluster of 2 CPUs
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        extra = {"engine": "ray"}
    t0 = time.perf_counter()
    report = audit(path, select=["LEAK001"], **extra)
    wall = time.perf_counter() - t0
    ray_cpu, ray_mb = 0.0, 0.0
    if workers == 0:  # the cluster's worker processes are the raylet's children, not ours
        sys.path.insert(0, str(HERE))
        from bench_scale import _ray_workers, _vmhwm_mb

        for pid in _ray_workers():
            ray_mb = max(ray_mb, _vmhwm_mb(pid))
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ray_cpu += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    res = report.result("LEAK001")
    body = {k: res.get(k) for k in ("findings", "metrics", "status")}
    body["flags"] = report.flags().to_dicts()
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    hwm = next(
        int(line.split()[1]) / 1024
        for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith("VmHWM")
    )
    timings = (report.to_dict().get("timings") or {}).get("rules", {}).get("LEAK001")
    out = {
        "wall": round(wall, 1),
        "cpu": round(me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime + ray_cpu, 1),
        "parent_mb": round(hwm),
        "worker_mb": round(max(kids.ru_maxrss / 1024, ray_mb)),
        "mode": (res.get("details") or {}).get("mode", "in-process (before)"),
        "leaked": [m["value"] for m in res["metrics"] if m["name"] == "leaked_rows"],
        "flags": len(body["flags"]),
        # train rows flagged as near copies: fewer than the notice's variants when the cap bites
        "near_train": sum(f["split"] == "train" and "near" in f["detail"] for f in body["flags"]),
        "digest": digest[:12],
        "timings": timings,
    }
    print(json.dumps(out))


def run(path: Path, workers: int, mode: str, before: str | None) -> dict:
    env = dict(os.environ)
    if before:
        env["PYTHONPATH"] = before
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(path), str(workers), mode],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode:
        sys.exit(f"the {mode} run failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", type=int, default=200_000)
    ap.add_argument("--eval", type=int, default=5_000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1], help="0: Ray (2 CPUs)")
    ap.add_argument("--before", help="an older checkout to run first (PYTHONPATH)")
    ap.add_argument(
        "--before-mode",
        choices=["in-process", "broadcast"],
        default="in-process",
        help="the search the older checkout runs (broadcast: compare two broadcast joins)",
    )
    ap.add_argument("--no-in-process", action="store_true", help="skip this tree's fallback")
    args = ap.parse_args()
    path = corpus(args.train, args.eval)
    print(f"{path.name}: load {os.getloadavg()[0]:.2f}")
    for w in args.workers:
        sides = [("before", args.before_mode, args.before)] if args.before else []
        if not args.no_in_process:
            sides.append(("in-process", "in-process", None))
        sides.append(("broadcast", "broadcast", None))
        for name, mode, before in sides:
            got = run(path, w, mode, before)
            print(f"workers={w} {name:10s} {json.dumps(got)}")
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main()

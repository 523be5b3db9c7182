"""Scale-out: the local engine (``workers=2``) vs the Ray engine on the same machine, side by side.

Text: the paragraphs of the Python 3.11 documentation sources that Debian ships
(``apt-get install -y python3.11-doc`` -> /usr/share/doc/python3.11-doc/html/_sources/**.rst.txt),
recombined into documents of 1-4 random paragraphs (seeded), so documents are real prose and
markup, some share paragraphs, and a few repeat whole. Written once (not timed) under
bench/data/ (gitignored) as ``--files`` Parquet files, so the Ray workers read their row groups.

Each measurement runs in a fresh Python subprocess (its own Ray cluster: ``ray.init(num_cpus=2)``,
whose start is timed apart), and prints:

  wall      seconds of ``audit(path, select=..., workers=2)`` vs ``audit(path, engine="ray")``
  ratio     Ray's wall over the local engine's (the overhead; goal <= 1.3x at 1M documents)
  driver    peak RSS of the process that called audit() (VmHWM): the local engine's parent
            merges every rule state; Ray's driver holds only references and results
  base      its RSS before audit() (imports, Ray's client): what the audit adds is the rest
  worker    the largest peak RSS of one Ray worker process (where the merged state of a global
            rule now lives, until its keyed stage lands) and of the local engine's workers
  same      whether the two reports are equal but for times and engine (findings, metrics,
            fingerprints, flags)

The machine is shared: run the sizes you compare in one invocation (the ratios are side by side)
and repeat; numbers from a busy machine are noisy.

    python bench/bench_scale.py                         # 200k documents
    python bench/bench_scale.py --docs 200000 1000000   # both sizes, one table
    python bench/bench_scale.py --select DUP001,DUP002  # the global rules only
    python bench/bench_scale.py --format jsonl          # JSON Lines: Ray's workers read ranges
    python bench/bench_scale.py --spill --docs 5000000  # the local engine's peak, keyed spill

``--format jsonl`` writes the same documents as JSON Lines files (the Ray workers read them in
byte ranges of the reader's blocks); ``--spill`` runs the local engine alone and prints its
parent's and largest worker's peak RSS (5M documents: ~1.5 GB of Parquet, written once).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
SOURCES = Path("/usr/share/doc/python3.11-doc/html/_sources")
DEFAULT_SELECT = "DUP001,DUP002,TXT001,TXT002,FMT001,LEN002"
SEED = 15


# -- data -------------------------------------------------------------------------------------
def paragraphs() -> list[str]:
    if not SOURCES.is_dir():
        sys.exit(f"{SOURCES} is missing: apt-get install -y python3.11-doc")
    out: dict[str, None] = {}
    for path in sorted(SOURCES.rglob("*.rst.txt")):
        for block in path.read_text(errors="replace").split("\n\n"):
            text = " ".join(block.split())
            if len(text.split()) >= 8:  # prose and code, not headings or rules
                out.setdefault(text, None)
    return list(out)


def dataset(docs: int, files: int, fmt: str = "parquet") -> Path:
    """The corpus of ``docs`` documents in ``files`` files (the same documents in either
    format: one seeded draw)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = DATA / (f"scale_{docs}_{files}" + ("" if fmt == "parquet" else f"_{fmt}"))
    if (folder / "done").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    paras = paragraphs()
    per = -(-docs // files)
    for i in range(files):
        n = min(per, docs - i * per)
        texts = ["\n\n".join(rng.choices(paras, k=rng.randint(1, 4))) for _ in range(n)]
        if fmt == "jsonl":
            with open(folder / f"part-{i:03d}.jsonl", "w") as fh:
                for j, text in enumerate(texts):
                    fh.write(json.dumps({"id": i * per + j, "text": text}) + "\n")
            continue
        table = pa.table({"id": pa.array(range(i * per, i * per + n)), "text": texts})
        pq.write_table(table, folder / f"part-{i:03d}.parquet", row_group_size=20_000)
    (folder / "done").write_text("")
    return folder


# -- one measurement, in a fresh process ------------------------------------------------------
def _vmhwm_mb(pid: int | str = "self") -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _ray_workers() -> list[int]:
    """The worker processes of the cluster this process started: the raylet's children."""
    from ray._private.worker import _global_node

    raylet = _global_node.all_processes["raylet"][0].process.pid
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == raylet:  # ppid
            out.append(int(stat.parent.name))
    return out


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _child(engine: str, path: str, select: list[str], out: str) -> None:
    import dataaudit

    extra: dict = {}
    init = 0.0
    if engine == "ray":
        import ray

        t0 = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        init = time.perf_counter() - t0
        extra["engine"] = "ray"
    else:
        extra["workers"] = int(engine.split("-")[1]) if "-" in engine else 2
    base = _rss_mb()  # imports and Ray's client: before the audit holds anything
    t0 = time.perf_counter()
    report = dataaudit.audit(path, select=select, **extra)
    wall = time.perf_counter() - t0
    workers = 0.0
    if engine == "ray":
        workers = max((_vmhwm_mb(p) for p in _ray_workers()), default=0.0)
    else:  # the local workers have exited; their peak is in RUSAGE_CHILDREN (max over them)
        import resource

        workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if out != "-":  # as the CLI writes it (piece by piece where the report can)
        getattr(report, "write_json", report.to_json)(out)
    print(
        json.dumps(
            {
                "wall": wall,
                "init": init,
                "driver_mb": _vmhwm_mb(),
                "base_mb": base,
                "worker_mb": workers,
            }
        )
    )


def measure(engine: str, path: Path, select: list[str], out: Path) -> dict:
    cmd = [sys.executable, __file__, "--child", engine, str(path), ",".join(select), str(out)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, env=env, check=True, text=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _body(path: Path) -> dict:
    data = json.loads(path.read_text())
    for key in ("created", "seconds", "timings", "engine"):
        data.pop(key, None)
    for key in ("workers", "batch_size"):
        data["config"].pop(key, None)
    for r in data["results"]:
        r.pop("seconds", None)
    return data


def spill_mode(args: argparse.Namespace, select: list[str]) -> None:
    """The local engine alone on a corpus larger than its rules' all-rows state: keyed rules
    spill their rows to on-disk partitions; the peak is the parent's plus its largest worker's
    (a bound on the machine's use: they peak at different times)."""
    print(f"rules: {', '.join(select)}; local engine, workers={args.workers}; spill mode")
    print(f"{'docs':>9} {'wall s':>8} {'parent MB':>10} {'worker MB':>10} {'sum MB':>8}")
    for docs in args.docs:
        path = dataset(docs, args.files, args.format)
        r = measure(f"local-{args.workers}", path, select, Path("-"))
        total = r["driver_mb"] + r["worker_mb"]
        print(
            f"{docs:>9,} {r['wall']:>8.1f} {r['driver_mb']:>10.0f} {r['worker_mb']:>10.0f} "
            f"{total:>8.0f}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, nargs="+", default=[200_000])
    ap.add_argument("--files", type=int, default=8, help="files per corpus")
    ap.add_argument("--format", choices=["parquet", "jsonl"], default="parquet")
    ap.add_argument("--select", default=DEFAULT_SELECT, help="rules, comma-separated")
    ap.add_argument("--repeat", type=int, default=1, help="runs per engine (best wall kept)")
    ap.add_argument(
        "--spill",
        action="store_true",
        help="the local engine alone: its peak RSS with the keyed rules' on-disk spill",
    )
    ap.add_argument("--workers", type=int, default=2, help="the local engine's (--spill)")
    args = ap.parse_args()
    select = args.select.split(",")
    if args.spill:
        spill_mode(args, select)
        return
    print(
        f"rules: {', '.join(select)}; {os.cpu_count()} cores; Ray's cluster: 2 CPUs; "
        f"{args.files} {args.format} files"
    )
    head = (
        f"{'docs':>9} {'engine':>8} {'wall s':>8} {'ratio':>6} {'init s':>7} "
        f"{'driver MB':>10} {'base MB':>8} {'worker MB':>10} {'same':>5}"
    )
    print(head)
    for docs in args.docs:
        path = dataset(docs, args.files, args.format)
        rows = {}
        for engine in ("local", "ray"):
            runs = [
                measure(engine, path, select, DATA / f"scale_report_{engine}.json")
                for _ in range(args.repeat)
            ]
            rows[engine] = min(runs, key=lambda r: r["wall"])
        same = _body(DATA / "scale_report_local.json") == _body(DATA / "scale_report_ray.json")
        base = rows["local"]["wall"]
        for engine, r in rows.items():
            print(
                f"{docs:>9,} {engine:>8} {r['wall']:>8.1f} {r['wall'] / base:>6.2f} "
                f"{r['init']:>7.1f} {r['driver_mb']:>10.0f} {r['base_mb']:>8.0f} "
                f"{r['worker_mb']:>10.0f} {str(same):>5}",
                flush=True,
            )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], sys.argv[4].split(","), sys.argv[5])
    else:
        main()

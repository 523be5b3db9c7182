"""Peak memory of LEAK002 alone and of the default pack, against LEAK002's documented bound.

Text: a word-bigram Markov chain trained on the reStructuredText sources of the Python 3.11 docs

    apt-get install -y python3.11-doc          # /usr/share/doc/python3.11/html/_sources

so rows read like the docs (their words, their word pairs) but are distinct: almost every 13-gram
is new, the worst case for an n-gram index. ``--rows`` rows of ``--chars`` characters (default
200k x 2k, ~400 MB of text) are written as ``train.parquet`` and ``test.parquet`` (``--test-frac``
of the rows); ``--plant`` of the test rows quote 30 consecutive words of a train row, and the bench
checks that LEAK002 flags them all (the chain also repeats some phrases of the docs, so it flags a
few more). The corpus is cached under ``--dir`` between runs.

Each run is ``dataaudit audit CORPUS --select ...`` in a fresh process that reports its own peak
RSS (VmHWM: ``ru_maxrss`` of a child inherits the parent's high-water mark across fork+exec);
with ``--workers`` above 1 the peak of the whole process tree is sampled as well. Runs:

  read only (TXT001)  interpreter, imports, reading the Parquet files
  LEAK002, no index   ``ngram`` longer than any row: the same reading, normalizing and hashing
                      (numba kernels loaded), the eval text kept, nothing indexed
  LEAK002             the defaults: the eval side's index (a prepass broadcasts the eval
                      n-grams, train streams through them)
  LEAK002, train idx  the previous way, forced (no prepass): every distinct train n-gram
                      indexed, exact if they fit max_index_ngrams
  LEAK002, Bloom      the train index with max_index_ngrams at half the distinct train n-grams
  default pack        every rule of the default pack, with the defaults (and on the Bloom path)

For the LEAK002 runs the bench prints the index bound the rule's docstring states, computed from
its options and the corpus (eval index: 8 bytes per distinct eval n-gram and per shared one,
plus folding pending n-grams in; train index: 8 bytes per distinct train n-gram up to
max_index_ngrams, plus the Bloom filter at the switch, plus folding pending n-grams in: twice
max(4M, distinct / 16) x 8 bytes), next to what the run took beyond the "no index" run, and
the CPU seconds of each run (its process and its workers). The eval text the rule keeps
(zstd-compressed) is in both, so it is printed apart, computed exactly.

    python bench/bench_memory.py                      # 200k rows x 2k chars (~3.5 minutes)
    python bench/bench_memory.py --rows 20000         # quick
    python bench/bench_memory.py --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DOCS = Path("/usr/share/doc/python3.11/html/_sources")
ROW_GROUP = 5000
PLANT_WORDS = 30
MB = 1 << 20


def load_words() -> list[str]:
    files = sorted(DOCS.rglob("*.txt"))
    if not files:
        sys.exit("needs python3.11-doc: apt-get install -y python3.11-doc")
    words: list[str] = []
    for f in files:
        words.extend(f.read_text("utf-8", "replace").split())
    return words


def make_corpus(out: Path, rows: int, chars: int, test_frac: float, plant: float, seed: int):
    """Write train.parquet / test.parquet; return the test rows that quote a train row."""
    words = load_words()
    vocab, seq = np.unique(np.array(words, dtype=object), return_inverse=True)
    vocab_arr = np.array(vocab, dtype=object)
    nxt_order = np.argsort(seq[:-1], kind="stable")
    succ = seq[1:][nxt_order]
    start = np.searchsorted(seq[:-1][nxt_order], np.arange(len(vocab) + 1))
    count = np.diff(start)
    mean_len = float(np.mean([len(w) for w in words])) + 1
    per_row = max(PLANT_WORDS + 13, round(chars / mean_len))
    rng = np.random.default_rng(seed)

    def chain(n: int) -> np.ndarray:
        ids = np.empty((n, per_row), np.int64)
        ids[:, 0] = rng.integers(0, len(vocab), n)
        for t in range(1, per_row):
            cur = ids[:, t - 1]
            c = count[cur]
            pick = start[cur] + (rng.random(n) * np.maximum(c, 1)).astype(np.int64)
            ids[:, t] = np.where(
                c > 0, succ[np.minimum(pick, len(succ) - 1)], rng.integers(0, len(vocab), n)
            )
        return ids

    n_test = int(rows * test_frac)
    n_train = rows - n_test
    planted: list[int] = []
    quotes: list[str] = []  # train rows that test rows quote from (the first row group)
    for name, n in (("train", n_train), ("test", n_test)):
        writer = None
        for lo in range(0, n, ROW_GROUP):
            docs = [" ".join(vocab_arr[r]) for r in chain(min(ROW_GROUP, n - lo))]
            if name == "train" and lo == 0:
                quotes = docs
            if name == "test":
                for i in np.flatnonzero(rng.random(len(docs)) < plant):
                    w = quotes[int(rng.integers(len(quotes)))].split()
                    at = int(rng.integers(len(w) - PLANT_WORDS))
                    cut = docs[i].rfind(" ", 0, chars // 2)
                    docs[i] = " ".join(
                        [docs[i][:cut], *w[at : at + PLANT_WORDS], docs[i][cut + 1 :]]
                    )
                    planted.append(lo + int(i))
            t = pa.table({"text": pa.array(docs, pa.large_string())})
            if writer is None:
                writer = pq.ParquetWriter(out / f"{name}.parquet", t.schema)
            writer.write_table(t, row_group_size=ROW_GROUP)
        writer.close()
    return planted


def corpus_dir(args) -> tuple[Path, list[int]]:
    base = Path(args.dir) / f"memory-{args.rows}x{args.chars}-t{args.test_frac}-s{args.seed}"
    data, planted_file = base / "corpus", base / "planted.json"
    if not planted_file.exists():
        data.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        planted = make_corpus(data, args.rows, args.chars, args.test_frac, args.plant, args.seed)
        planted_file.write_text(json.dumps(planted))
        print(f"corpus written in {time.perf_counter() - t0:.0f} s: {data}", file=sys.stderr)
    return data, json.loads(planted_file.read_text())


def text_stats(data: Path) -> dict[str, float]:
    """Input text MB, and eval text as LEAK002 keeps it (normalized, compressed per batch)."""
    from dataaudit.features.minhash import ngram_hashes
    from dataaudit.features.normalize import normalize_array
    from dataaudit.rules.leakage.contamination import _pack

    out = {"input_mb": 0.0, "eval_mb": 0.0, "eval_kept_mb": 0.0, "ngrams_per_row": 0.0}
    for name in ("train", "test"):
        pf = pq.ParquetFile(data / f"{name}.parquet")
        for rb in pf.iter_batches(batch_size=4096, columns=["text"]):
            text = rb.column(0).cast(pa.large_string())
            out["input_mb"] += text.nbytes / MB
            if not out["ngrams_per_row"]:
                ngrams = ngram_hashes(normalize_array(text), 13).hashes
                out["ngrams_per_row"] = len(ngrams) / len(text)
            if name == "test":
                out["eval_mb"] += text.nbytes / MB
                out["eval_kept_mb"] += len(_pack(normalize_array(text))) / MB
    return out


# -- measuring a run ------------------------------------------------------------------------
def _vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(report: str, argv: list[str], train_index: bool = False) -> None:
    """Run the CLI in this process; write its exit code and peak RSS next to the report.
    ``train_index``: LEAK002 without its prepass (the engine plans prepasses in this process,
    so its workers fold on the train index too)."""
    from dataaudit.cli import main

    if train_index:
        from dataaudit.rules.leakage.contamination import NgramContamination

        NgramContamination.prepass_splits = lambda self, ctx: []  # type: ignore[method-assign]
    code = main(argv)
    Path(report + ".rss").write_text(json.dumps({"exit": code, "peak_mb": _vm_hwm_mb()}))


def _tree_rss_mb(root: int) -> float:
    """RSS of ``root`` and its descendants now (for runs with worker processes)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    tree, grew = {root}, True
    while grew:
        more = {p for p, pp in parents.items() if pp in tree} - tree
        tree |= more
        grew = bool(more)
    total = 0
    for pid in tree:
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total * os.sysconf("SC_PAGE_SIZE") / MB


def run(
    data: Path, out: Path, select: str, options: list[str], workers: int, train_index: bool = False
) -> dict:
    argv = ["audit", str(data), "--select", select, "--json", str(out), "--no-progress"]
    argv += ["--flags", str(out.with_suffix(".flags.parquet"))]
    for opt in options:
        argv += ["--option", opt]
    if workers > 1:
        argv += ["--workers", str(workers)]
    flag = ["--train-index"] if train_index else []
    cmd = [sys.executable, __file__, "--child", str(out), *flag, "--", *argv]
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    tree = 0.0
    while proc.poll() is None:
        if workers > 1:
            tree = max(tree, _tree_rss_mb(proc.pid))
        time.sleep(0.1)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rss = json.loads(Path(str(out) + ".rss").read_text())
    if rss["exit"] not in (0, 1):
        sys.exit(f"{' '.join(argv)}: exit {rss['exit']}")
    report = json.loads(out.read_text())
    leak = next((r for r in report["results"] if r["code"] == "LEAK002"), None)
    return {
        "peak_mb": rss["peak_mb"],
        "tree_mb": tree,
        "seconds": seconds,
        "cpu": cpu,
        "leak": leak,
    }


# -- LEAK002's documented bound -------------------------------------------------------------
def leak002_index_bound(
    details: dict, options: dict, workers: int, rows: int, ngrams_per_row: float
) -> tuple[float, str]:
    """What LEAK002's docstring says its index takes (MB), and how that was computed."""
    pending = 4 << 20
    budget = int(options["max_index_ngrams"])
    if details["index"].get("mode") == "eval-index":
        n, shared = details["index"]["eval_ngrams"], details["index"]["shared_ngrams"]
        fold = 2 * 8 * max(pending, n // 16)
        bound = 8 * n + 8 * shared + fold
        how = f"8 B x ({n:,} eval + {shared:,} shared n-grams) + folding {fold / MB:.0f} MB"
    elif details["index"]["exact"]:
        n = details["index"]["train_ngrams"]
        fold = 2 * 8 * max(pending, n // 16)
        bound, how = 8 * n + fold, f"8 B x {n:,} train n-grams + folding {fold / MB:.0f} MB"
    else:
        bloom = int(options["bloom_mb"]) * MB
        fold = 2 * 8 * max(pending, budget // 16)
        bound = 8 * budget + bloom + fold
        how = (
            f"8 B x {budget:,} + Bloom {options['bloom_mb']} MB (at the switch) + folding "
            f"{fold / MB:.0f} MB"
        )
    if workers > 1:  # the engine's chunk size (engine.scan_parallel)
        chunk = min(16384, max(2048, -(-rows // (4 * workers))))
        flight = 2 * workers * chunk * ngrams_per_row * 8
        bound += flight
        how += f" + {2 * workers} chunks in flight {flight / MB:.0f} MB"
    return bound / MB, how


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--chars", type=int, default=2000)
    ap.add_argument("--test-frac", type=float, default=0.1)
    ap.add_argument("--plant", type=float, default=0.01, help="share of test rows quoting train")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "dataaudit-bench"))
    ap.add_argument("--no-default", action="store_true", help="skip the default pack")
    args = ap.parse_args()

    data, planted = corpus_dir(args)
    stats = text_stats(data)
    out_dir = data.parent / "runs"
    out_dir.mkdir(exist_ok=True)
    print(
        f"corpus: {args.rows:,} rows x ~{args.chars} chars, {stats['input_mb']:.0f} MB of text; "
        f"eval {stats['eval_mb']:.0f} MB, kept compressed by LEAK002: "
        f"{stats['eval_kept_mb']:.1f} MB; workers={args.workers}"
    )

    runs: list[tuple[str, str, list[str], bool]] = [
        ("read only (TXT001)", "TXT001", [], False),
        ("LEAK002, no index", "LEAK002", ["LEAK002.ngram=1000000"], False),
        ("LEAK002", "LEAK002", [], False),
        ("LEAK002, train idx", "LEAK002", [], True),
    ]
    results: dict[str, dict] = {}
    for label, select, options, train_index in runs:
        out = out_dir / f"{len(results)}.json"
        results[label] = run(data, out, select, options, args.workers, train_index)
    distinct = results["LEAK002, train idx"]["leak"]["details"]["index"]["train_ngrams"]
    if distinct:  # an exact index: run again with a budget it overflows
        budget = ["LEAK002.max_index_ngrams=" + str(distinct // 2)]
        results["LEAK002, Bloom"] = run(
            data, out_dir / "bloom.json", "LEAK002", budget, args.workers, True
        )
    same = _findings(results["LEAK002"]) == _findings(results["LEAK002, train idx"])
    print(f"LEAK002: eval index and train index give the same result: {same}")
    if not args.no_default:
        results["default pack"] = run(data, out_dir / "default.json", "default", [], args.workers)
        if distinct:
            results["default pack, Bloom"] = run(
                data, out_dir / "default-bloom.json", "default", budget, args.workers, True
            )

    flags = pq.read_table(out_dir / "2.flags.parquet").to_pylist()
    flagged = {f["row"] for f in flags if f["code"] == "LEAK002" and f["split"] == "test"}
    missed = sorted(set(planted) - flagged)
    print(
        f"LEAK002 flags {len(flagged):,} test rows; planted {len(planted):,}, missed {len(missed)}"
        + (f" (rows {missed[:10]})" if missed else "")
    )

    base = results["LEAK002, no index"]["peak_mb"]
    tree = args.workers > 1
    print(
        f"\n{'run':<20} {'peak MB':>8} {'MB/input MB':>12}"
        + (f" {'tree MB':>8}" if tree else "")
        + f" {'s':>6} {'CPU s':>6}   LEAK002: peak - no-index peak vs its documented index bound"
    )
    for label, r in results.items():
        line = f"{label:<20} {r['peak_mb']:>8.0f} {r['peak_mb'] / stats['input_mb']:>12.2f}"
        line += f" {r['tree_mb']:>8.0f}" if tree else ""
        line += f" {r['seconds']:>6.0f} {r['cpu']:>6.1f}"
        leak = r["leak"]
        if leak and label.startswith("LEAK002") and label != "LEAK002, no index":
            bound, how = leak002_index_bound(
                leak["details"], leak["options"], args.workers, args.rows, stats["ngrams_per_row"]
            )
            used = r["peak_mb"] - base
            line += f"   {used:.0f} MB vs {bound:.0f} MB ({used / bound:.2f}x; {how})"
        print(line)
    if missed:
        sys.exit(1)


def _findings(r: dict) -> str:
    """LEAK002's result but its index details and timing (the two indexes must agree)."""
    leak = dict(r["leak"])
    leak.pop("seconds", None)
    leak["details"] = {k: v for k, v in leak["details"].items() if k != "index"}
    return json.dumps(leak, sort_keys=True)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        argv = sys.argv[sys.argv.index("--") + 1 :]
        child(sys.argv[2], argv, train_index="--train-index" in sys.argv[: sys.argv.index("--")])
    else:
        main()

"""Near-duplicate detection: dataaudit vs datasketch, end to end (raw text -> clusters), on real text.

Text: the reStructuredText sources of the Python 3.11 docs and the Linux 6.1 kernel docs:

    apt-get install -y python3.11-doc linux-doc-6.1

Corpus: documents of ~300 words, each the concatenation of six random 50-word passages of that
text (so documents are real prose/markup but do not overlap by accident); ``--dup-rate`` of them
are planted near-copies of an earlier document with a known share of words substituted (edit
rates 1%..30%, giving Jaccard of 5-word shingles from ~0.95 down to ~0.2). The corpus is written to
a Parquet file first (not timed); the timed part reads it back.

Printed, side by side, with ratios and peak RSS:
  * docs/s end to end for dataaudit (2 worker processes: read -> normalize -> shingle -> MinHash
    -> exact shingle sets, as DUP002's features do it; then LSH + verification + clusters in the
    parent), for what a user runs (``audit(select=["DUP002"], workers=2)`` in a fresh process,
    start-up included), and on a subset for datasketch with a per-shingle ``MinHash.update``
    loop, ``MinHash.bulk``, and ``MinHashLSH`` insert+query (each followed by the same LSH
    clustering, so all are raw text -> clusters). Per-core rows are docs per CPU-second with
    both cores busy; a worker's start-up (imports, loading the compiled kernels, ~2 s) is printed
    apart and not in them, as datasketch's import is not. The update loop is timed in two halves,
    before and after dataaudit, and averaged: a shared machine's speed drifts over minutes;
  * quality against exact Jaccard of the planted pairs: recall for pairs with Jaccard >= the
    threshold, precision of verified pairs and of cluster membership;
  * the detection rate of the LSH stage by similarity bin beside the theoretical S-curve of the
    chosen bands (and of datasketch's default bands).

Whole process (``--whole-docs``, default 40k documents per corpus, or several sizes separated by
commas, where the start-up's share shrinks; ``--whole-docs 0`` skips it):
what a user runs, ``dataaudit audit corpus.jsonl --select DUP002`` in a fresh process (start-up,
JSONL reading and the report included), on two corpora written as JSONL:
  * "disjoint": the corpus above (documents that do not overlap by accident);
  * "shared passages": documents of ~435 words assembled from paragraphs of the Python docs
    (20-120 words each), every paragraph recurring in ~16 documents (boilerplate, templates and
    quoted text, as in crawls, docs and forums), plus the same share of planted near-copies;
beside, measured in the same run on a subset (``--loop-docs``), raw text -> clusters as a user
would write them in Python: a datasketch ``MinHash.update`` loop + ``MinHashLSH`` insert/query
(union-find over the query results), and rensa's ``RMinHash`` + ``RMinHashLSH`` loop (the same,
each candidate verified with ``RMinHash.jaccard``; ``pip install rensa``, skipped if missing).
The rensa loop also runs as a script in a fresh process over the whole file (start-up, import
and reading included, as dataaudit's run is): the comparison of two commands.
Printed: docs/s (wall clock) and the ratios, with recall of planted pairs whose exact Jaccard is
>= the threshold and precision of cluster members against their kept row (exact Jaccard),
and the phase times the report records. Each run is repeated ``--repeat`` times, alternating.

    python bench/bench_dedup.py                 # 100k documents (< 3 minutes on 2 cores)
    python bench/bench_dedup.py --docs 1000000  # the scale target
    python bench/bench_dedup.py --docs 20000 --whole-docs 40000 --repeat 3   # whole process
    python bench/bench_dedup.py --only-whole --whole-docs 40000,200000        # and at 200k docs
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

PY_DOCS = Path("/usr/share/doc/python3.11/html/_sources")
LINUX_DOCS = Path("/usr/share/doc/linux-doc-6.1/Documentation")
EDIT_RATES = (0.01, 0.02, 0.03, 0.05, 0.08, 0.12, 0.2, 0.3)
CHUNK = 50
WARM_UP = [
    "Ｆｕｌｌｗｉｄｔｈ，中文文本测试数据的句子",
    "Straße É ﬁne\u00a0print",
    "日本語のテキストです",
]
ROW_GROUP = 5000


def rss_mb() -> tuple[float, float]:
    self_ = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return self_, kids


def load_chunks(limit_files: int | None = None) -> list[str]:
    files = sorted(PY_DOCS.rglob("*.txt")) + sorted(LINUX_DOCS.rglob("*.rst*"))
    if not files:
        sys.exit("no text found: apt-get install -y python3.11-doc linux-doc-6.1")
    words: list[str] = []
    for f in files[:limit_files]:
        raw = gzip.decompress(f.read_bytes()) if f.suffix == ".gz" else f.read_bytes()
        words.extend(raw.decode("utf-8", "replace").split())
    chunks = {" ".join(words[i : i + CHUNK]) for i in range(0, len(words) - CHUNK, CHUNK)}
    return sorted(chunks)


def make_corpus(path: Path, n: int, dup_rate: float, seed: int) -> list[tuple[int, int, float]]:
    """Write the corpus; return planted (original, copy, edit rate) pairs."""
    chunks = load_chunks()
    vocab = sorted({w for c in chunks[:20000] for w in c.split()})
    rng = random.Random(seed)
    planted: list[tuple[int, int, float]] = []
    writer = None
    docs: list[str] = []
    ring_size = 50_000
    ring: list[str] = [""] * ring_size  # the last documents, for copies
    for i in range(n):
        if i > 100 and rng.random() < dup_rate:
            j = rng.randrange(max(0, i - ring_size), i)
            rate = rng.choice(EDIT_RATES)
            w = ring[j % ring_size].split()
            for _ in range(max(1, round(rate * len(w)))):
                w[rng.randrange(len(w))] = rng.choice(vocab)
            doc = " ".join(w)
            planted.append((j, i, rate))
        else:
            doc = " ".join(rng.choice(chunks) for _ in range(6))
        docs.append(doc)
        ring[i % ring_size] = doc
        if len(docs) == ROW_GROUP or i == n - 1:
            t = pa.table({"text": pa.array(docs, pa.large_string())})
            if writer is None:
                writer = pq.ParquetWriter(path, t.schema)
            writer.write_table(t, row_group_size=ROW_GROUP)
            docs = []
    if writer is not None:
        writer.close()
    return planted


# -- dataaudit -----------------------------------------------------------------------------------
def _signatures(text: pa.Array, f_sig, f_sizes, f_values) -> None:
    """What DUP002's features do: the fused pass over the raw text (unit="auto": CJK rows get
    character shingles)."""
    from dataaudit.features.normalize import lower_table, tokenizable_rows
    from dataaudit.sketches.minhash import sketch

    sk = sketch(text, 128, 5, "auto", 1, table=lower_table(), normalize=tokenizable_rows)
    sk.signatures.tofile(f_sig)
    sk.sets.sizes().tofile(f_sizes)
    sk.sets.values.tofile(f_values)


def _worker(args: tuple[str, list[int], str, int]) -> tuple[float, int, str, float]:
    path, groups, prefix, threshold_unused = args
    # start-up (imports, loading the compiled kernels) on a few rows, timed apart: a fixed cost
    # per process, not per document (datasketch's import is not timed either)
    t0 = time.process_time()
    pf = pq.ParquetFile(path)
    sample = pf.read_row_group(groups[0], columns=["text"]).column(0).combine_chunks()[:20]
    # ...and rows that take the lazily set-up paths (NFKC table, casefold specials, CJK)
    sample = pa.concat_arrays(
        [sample.cast(pa.large_string()), pa.array(WARM_UP, pa.large_string())]
    )
    with open(os.devnull, "wb") as null:
        _signatures(sample, null, null, null)
    startup = time.process_time() - t0

    t0 = time.process_time()  # CPU seconds (all threads): fair on a shared machine
    n = 0
    # stream each row group's arrays to disk: the worker holds one row group at a time
    with (
        open(prefix + "sig.bin", "wb") as f_sig,
        open(prefix + "sizes.bin", "wb") as f_sizes,
        open(prefix + "values.bin", "wb") as f_values,
    ):
        for g in groups:
            text = pf.read_row_group(g, columns=["text"]).column(0).combine_chunks()
            _signatures(text, f_sig, f_sizes, f_values)
            n += len(text)
    return time.process_time() - t0, n, prefix, startup


_AUDIT_SCRIPT = """
import json, sys, time
from dataaudit import audit
t0 = time.perf_counter()
report = audit(sys.argv[1], select=["DUP002"], workers=int(sys.argv[2]), progress=False)
seconds = time.perf_counter() - t0
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(json.dumps({"seconds": seconds, "rss_mb": int(hwm) / 1024,
                  "rate": report.metric("DUP002", "near_duplicate_rate", "train")}))
"""


def run_audit(path: Path, workers: int) -> dict:
    """What a user runs: audit(path, select=["DUP002"], workers=N), in a fresh process."""
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", _AUDIT_SCRIPT, str(path), str(workers)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _read_into(out: np.ndarray, files: list[str]) -> np.ndarray:
    view = memoryview(out.reshape(-1).view(np.uint8))
    pos = 0
    for f in files:
        with open(f, "rb") as fh:
            while True:
                got = fh.readinto(view[pos:])
                if not got:
                    break
                pos += got
        os.unlink(f)
    return out


def run_dataaudit(path: Path, workers: int, threshold: float, tmp: str) -> dict:
    from dataaudit.sketches.lsh import near_duplicate_pairs
    from dataaudit.sketches.minhash import ShingleSets, pair_jaccard

    groups = list(range(pq.ParquetFile(path).num_row_groups))
    # contiguous ranges of row groups so concatenation keeps row order
    per = -(-len(groups) // workers)
    jobs = [
        (str(path), groups[k * per : (k + 1) * per], f"{tmp}/w{k}_", 0)
        for k in range(workers)
        if groups[k * per : (k + 1) * per]
    ]
    t0 = time.perf_counter()
    if workers == 1:
        outs = [_worker(j) for j in jobs]
    else:
        # spawned, one thread each: a process per core, as audit(workers=N) runs them
        import multiprocessing as mp

        threads = {
            k: "1" for k in ("POLARS_MAX_THREADS", "RAYON_NUM_THREADS") if k not in os.environ
        }
        os.environ.update(threads)
        try:
            with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as ex:
                outs = list(ex.map(_worker, jobs))
        finally:
            for k in threads:
                os.environ.pop(k, None)
    t_sig = time.perf_counter() - t0
    # read the workers' files straight into preallocated arrays (no concatenation copies)
    n = sum(o[1] for o in outs)
    sig = _read_into(np.empty((n, 128), np.uint32), [o[2] + "sig.bin" for o in outs])
    sizes = _read_into(np.empty(n, np.int64), [o[2] + "sizes.bin" for o in outs])
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    values = _read_into(np.empty(int(offsets[-1]), np.uint32), [o[2] + "values.bin" for o in outs])
    sets = ShingleSets(offsets, values)
    t1, c1 = time.perf_counter(), time.process_time()
    labels, ea, eb, es = near_duplicate_pairs(
        sig, threshold, verify=lambda a, b: pair_jaccard(sets, a, b)
    )
    t_cluster = time.perf_counter() - t1
    c_cluster = time.process_time() - c1
    return {
        "seconds": time.perf_counter() - t0,
        "sig_seconds": t_sig,
        "cpu_seconds": sum(o[0] for o in outs) + c_cluster,
        "startup_seconds": max(o[3] for o in outs),
        "cluster_seconds": t_cluster,
        "labels": labels,
        "edges": (ea, eb, es),
        "sig": sig,
    }


# -- datasketch ------------------------------------------------------------------------------
def _shingles(doc: str) -> set[bytes]:
    w = doc.lower().split()
    return {" ".join(w[i : i + 5]).encode() for i in range(max(len(w) - 4, 1))}


def _lsh_clusters(minhashes: list, threshold: float) -> float:
    from datasketch import MinHashLSH

    t0 = time.process_time()
    lsh = MinHashLSH(threshold=threshold, num_perm=128)
    parent = list(range(len(minhashes)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, m in enumerate(minhashes):
        for j in lsh.query(m):
            parent[find(i)] = find(j)
        lsh.insert(i, m)
    return time.process_time() - t0


def update_loop_rate(docs: list[str], threshold: float) -> float:
    """Docs per CPU-second: a per-shingle ``MinHash.update`` loop, then MinHashLSH clusters."""
    from datasketch import MinHash

    t0 = time.process_time()
    mhs = []
    for d in docs:
        m = MinHash(num_perm=128)
        for s in _shingles(d):
            m.update(s)
        mhs.append(m)
    _lsh_clusters(mhs, threshold)
    return len(docs) / (time.process_time() - t0)


def run_datasketch(docs: list[str], threshold: float) -> dict:
    from datasketch import MinHash

    out = {}
    t0 = time.process_time()
    mhs = MinHash.bulk([list(_shingles(d)) for d in docs], num_perm=128)
    t_lsh = _lsh_clusters(mhs, threshold)
    out["MinHash.bulk"] = len(docs) / (time.process_time() - t0)
    out["MinHashLSH insert+query"] = len(docs) / t_lsh
    return out


# -- quality -----------------------------------------------------------------------------------
def _rows(path: Path, rows: np.ndarray) -> dict[int, str]:
    """Text of the given rows, reading one row group at a time."""
    pf = pq.ParquetFile(path)
    want = np.unique(rows)
    out: dict[int, str] = {}
    for g in range(pf.num_row_groups):
        lo = g * ROW_GROUP
        local = want[(want >= lo) & (want < lo + ROW_GROUP)] - lo
        if len(local):
            col = pf.read_row_group(g, columns=["text"]).column(0)
            for r, t in zip(local.tolist(), col.take(pa.array(local)).to_pylist()):
                out[lo + r] = t
    return out


def _truth_shingles(doc: str) -> set[str]:
    """The shingles DUP002 means, in plain Python: 5-grams of the normalized text's words, or of
    its characters for a text written mostly in a script without spaces (CJK, Thai...)."""
    from dataaudit.features.normalize import normalize_text
    from dataaudit.sketches.minhash import _no_space_table

    text = normalize_text(doc)
    table = _no_space_table()
    no_space = sum(1 for c in text if ord(c) < len(table) and table[ord(c)])
    tokens = [c for c in text if c != " "] if no_space * 10 >= len(text) * 3 > 0 else text.split()
    return {"\x00".join(tokens[i : i + 5]) for i in range(max(len(tokens) - 4, 1))}


def exact_jaccard(a: str, b: str) -> float:
    x, y = _truth_shingles(a), _truth_shingles(b)
    return len(x & y) / len(x | y)


# -- whole process: the shared-passages corpus, the CLI, datasketch and rensa loops ---------------
PASSAGE_DOC_WORDS = 435
PASSAGE_RECUR = 16


def load_paragraphs() -> list[str]:
    """Paragraphs of the Python docs sources of 20-120 words, whitespace collapsed, distinct."""
    import re

    paras: set[str] = set()
    for f in sorted(PY_DOCS.rglob("*.txt")):
        for p in re.split(r"\n\s*\n", f.read_text("utf-8", "replace")):
            w = p.split()
            if 20 <= len(w) <= 120:
                paras.add(" ".join(w))
    if not paras:
        sys.exit("no text found: apt-get install -y python3.11-doc")
    return sorted(paras)


def make_passages_corpus(n: int, dup_rate: float, seed: int) -> tuple[list[str], list]:
    """Documents of ~435 words from paragraphs that each recur in ~16 documents; ``dup_rate``
    of them planted near-copies of an earlier document (words substituted, EDIT_RATES)."""
    paras = load_paragraphs()
    rng = random.Random(seed)
    mean = sum(len(p.split()) for p in paras) / len(paras)
    need = int(n * (PASSAGE_DOC_WORDS / mean) / PASSAGE_RECUR)
    pool = rng.sample(paras, min(need, len(paras)))
    vocab = sorted({w for p in pool[:5000] for w in p.split()})
    docs: list[str] = []
    planted = []
    for i in range(n):
        if i > 100 and rng.random() < dup_rate:
            j = rng.randrange(max(0, i - 50_000), i)
            rate = rng.choice(EDIT_RATES)
            w = docs[j].split()
            for _ in range(max(1, round(rate * len(w)))):
                w[rng.randrange(len(w))] = rng.choice(vocab)
            docs.append(" ".join(w))
            planted.append((j, i, rate))
            continue
        parts: list[str] = []
        words = 0
        while words < PASSAGE_DOC_WORDS:
            p = rng.choice(pool)
            parts.append(p)
            words += len(p.split())
        docs.append("\n\n".join(parts))
    return docs, planted


def write_jsonl(path: Path, docs: list[str]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"text": d}) + "\n")


def child_env() -> dict[str, str]:
    """The CLI child's environment: bytecode cached (under bench/data/pycache), as an installed
    package has it (pip compiles it at install). With PYTHONDONTWRITEBYTECODE set, as in some
    development shells, every child compiled each module edited since its last cached bytecode
    from source (up to ~0.5 CPU-s of a run's start-up); the first run writes the cache."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPYCACHEPREFIX": str(Path(__file__).resolve().parent / "data" / "pycache")}


def cli_run(path: Path, out: Path, threshold: float) -> dict:
    """``dataaudit audit PATH --select DUP002`` in a fresh process: wall seconds, peak RSS, the
    report's phase times and DUP002's cluster per row (from --flags)."""
    import subprocess

    flags = out.with_suffix(".flags.jsonl")
    cmd = [
        sys.executable, "-m", "dataaudit.cli", "audit", str(path), "--select", "DUP002",
        "--option", f"DUP002.threshold={threshold}", "--json", str(out), "--flags", str(flags),
        "--no-progress", "-q",
    ]  # fmt: skip
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0 = usage.ru_utime + usage.ru_stime
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=child_env())
        rss_kb = _peak_rss_kb(proc)
        seconds = time.perf_counter() - t0
        err.seek(0)
        stderr = err.read()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - cpu0
    if proc.returncode not in (0, 1):
        sys.exit(f"dataaudit audit failed ({proc.returncode}): {stderr[-2000:]}")
    report = json.loads(out.read_text())
    cluster: dict[int, int] = {}
    with open(flags) as f:
        for line in f:
            r = json.loads(line)
            if r["code"] == "DUP002":
                cluster[int(r["row"])] = int(r["cluster"])
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "rss_mb": rss_kb / 1024 if rss_kb else None,
        "timings": report.get("timings", {}),
        "cluster": cluster,
    }


def _peak_rss_kb(proc) -> int | None:
    """Wait for ``proc``; its peak RSS in KB, read from its VmHWM every 20 ms by a thread while
    this one blocks in ``wait()`` (None without /proc).

    Not ``ru_maxrss``: Linux keeps the high-water mark of the address space a child had before
    ``exec`` (this process's, copied or shared by fork/vfork), so a child of this process, which
    holds the corpus in memory, would report this process's size (658 MB where the CLI's own
    peak was ~330 MB). VmHWM is the exec'ed program's own; the last 20 ms before exit are unseen,
    which a peak reached before the report is written does not need. (It polled with
    ``wait(timeout=0.005)`` before, which woke every ~1 ms on the cores the CLI uses and saw
    the exit up to ~2.5 ms late; 10 alternating runs in either order against a plain
    ``subprocess.run`` showed no difference beyond this machine's noise either way.)"""
    import threading

    status, peak = Path(f"/proc/{proc.pid}/status"), [None]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0] or 0, int(line.split()[1]))
            except (OSError, ValueError):  # no /proc, or the process is gone
                pass
            done.wait(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    proc.wait()
    done.set()
    watcher.join()
    return peak[0]


def datasketch_loop(docs: list[str], threshold: float) -> tuple[float, float]:
    """docs/s (wall, CPU): MinHash.update per shingle, MinHashLSH insert + query, union-find."""
    t0, c0 = time.perf_counter(), time.process_time()
    update_loop_rate(docs, threshold)
    return len(docs) / (time.perf_counter() - t0), len(docs) / (time.process_time() - c0)


def rensa_loop(docs: list[str], threshold: float) -> tuple[float, float] | None:
    """docs/s (wall, CPU): RMinHash.update with the shingles, RMinHashLSH query then insert,
    each candidate verified with RMinHash.jaccard, union-find. None if rensa is not
    installed."""
    try:
        from rensa import RMinHash, RMinHashLSH
    except ImportError:
        return None
    t0, c0 = time.perf_counter(), time.process_time()
    lsh = RMinHashLSH(threshold=threshold, num_perm=128, num_bands=16)
    parent = list(range(len(docs)))
    mhs = []

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, d in enumerate(docs):
        m = RMinHash(num_perm=128, seed=42)
        m.update(list(_shingles_str(d)))
        mhs.append(m)
        for j in lsh.query(m):
            if m.jaccard(mhs[j]) >= threshold:
                parent[find(i)] = find(j)
        lsh.insert(i, m)
    return len(docs) / (time.perf_counter() - t0), len(docs) / (time.process_time() - c0)


#: the rensa loop as a user's script: a fresh process that reads the JSON Lines itself
_RENSA_SCRIPT = """
import json, sys
from rensa import RMinHash, RMinHashLSH
path, threshold = sys.argv[1], float(sys.argv[2])
with open(path, encoding="utf-8") as f:
    docs = [json.loads(line)["text"] for line in f]
lsh = RMinHashLSH(threshold=threshold, num_perm=128, num_bands=16)
parent = list(range(len(docs)))
mhs = []
def find(x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x
for i, d in enumerate(docs):
    w = d.lower().split()
    m = RMinHash(num_perm=128, seed=42)
    m.update(list({" ".join(w[k : k + 5]) for k in range(max(len(w) - 4, 1))}))
    mhs.append(m)
    for j in lsh.query(m):
        if m.jaccard(mhs[j]) >= threshold:
            parent[find(i)] = find(j)
    lsh.insert(i, m)
print(len({find(i) for i in range(len(docs))}))
"""


def rensa_script(path: Path, n: int, threshold: float) -> tuple[float, float] | None:
    """docs/s (wall, CPU) of :func:`rensa_loop` written as a script and run as a fresh process
    over the whole corpus file (start-up, imports and reading included, as dataaudit's run):
    the comparison a user makes between two commands. None if rensa is not installed."""
    import subprocess

    try:
        import rensa  # noqa: F401
    except ImportError:
        return None
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0 = usage.ru_utime + usage.ru_stime
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", _RENSA_SCRIPT, str(path), str(threshold)],
        check=True,
        stdout=subprocess.DEVNULL,
        env=child_env(),
    )
    seconds = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return n / seconds, n / (usage.ru_utime + usage.ru_stime - cpu0)


def _shingles_str(doc: str) -> set[str]:
    w = doc.lower().split()
    return {" ".join(w[i : i + 5]) for i in range(max(len(w) - 4, 1))}


def cluster_quality(docs: list[str], planted: list, cluster: dict[int, int], threshold: float,
                    pairs: int, seed: int) -> dict:  # fmt: skip
    """Recall of planted pairs with exact Jaccard >= threshold; precision of cluster members
    against their kept row (exact Jaccard >= threshold)."""
    rng = random.Random(seed)
    sample = planted if len(planted) <= pairs else rng.sample(planted, pairs)
    true = np.array([exact_jaccard(docs[a], docs[b]) for a, b, _ in sample])
    found = np.array([cluster.get(a, -1) == cluster.get(b, -2) for a, b, _ in sample], bool)
    pos = true >= threshold
    members = [r for r, c in cluster.items() if r != c]
    members = members if len(members) <= pairs else rng.sample(members, pairs)
    prec = np.array([exact_jaccard(docs[m], docs[cluster[m]]) >= threshold for m in members])
    return {
        "recall": float(found[pos].mean()) if pos.any() else float("nan"),
        "positives": int(pos.sum()),
        "precision": float(prec.mean()) if len(prec) else float("nan"),
        "members": len(prec),
    }


def whole_process(args, tmp: str, n: int, disjoint_docs: list[str], disjoint_planted: list) -> None:
    corpora = {
        "disjoint": (disjoint_docs[:n], [p for p in disjoint_planted if p[1] < n]),
        "shared passages": make_passages_corpus(n, args.dup_rate, args.seed),
    }
    print(f"\nwhole process, raw text -> clusters, {n:,} docs per corpus (wall clock, docs/s)")
    print(
        "  dataaudit: `dataaudit audit corpus.jsonl --select DUP002` in a fresh process "
        "(start-up, JSONL read, report included);"
    )
    print(
        f"  datasketch and rensa: a Python loop on the first {args.loop_docs:,} docs, "
        "imports not timed; each measured in the same run, alternating, best of --repeat"
    )
    print(
        "  best of each; 'per CPU-s' rows divide by the process's CPU seconds (user + sys, all "
        "threads), which a loaded machine does not inflate"
    )
    print(
        f"  {'corpus':<16} {'':<10} {'dataaudit':>10} {'datasketch':>11} {'rensa':>8} "
        f"{'x datask.':>10} {'x rensa':>8} {'recall':>7} {'prec.':>6} {'RSS MB':>7}"
    )
    warm = Path(tmp) / "warm_up.jsonl"  # writes the bytecode cache; untimed
    write_jsonl(warm, disjoint_docs[:200])
    cli_run(warm, Path(tmp) / "whole.json", args.threshold)
    for name, (docs, planted) in corpora.items():
        path = Path(tmp) / f"{name.replace(' ', '_')}.jsonl"
        write_jsonl(path, docs)
        sub = docs[: args.loop_docs]
        da, ds, rs, script = [], [], [], []
        for _ in range(args.repeat):
            run = cli_run(path, Path(tmp) / "whole.json", args.threshold)
            da.append(run)
            ds.append(datasketch_loop(sub, args.threshold))
            r = rensa_loop(sub, args.threshold)
            if r is not None:
                rs.append(r)
            r = rensa_script(path, len(docs), args.threshold)
            if r is not None:
                script.append(r)
        best = min(da, key=lambda r: r["seconds"])
        q = cluster_quality(docs, planted, best["cluster"], args.threshold,
                            args.quality_pairs, args.seed)  # fmt: skip
        nan = float("nan")
        for k, label in ((0, "wall"), (1, "per CPU-s")):
            key = "seconds" if k == 0 else "cpu_seconds"
            rate = len(docs) / min(r[key] for r in da)
            ds_rate = max(x[k] for x in ds)
            rs_rate = max(x[k] for x in rs) if rs else nan
            tail = (
                f" {q['recall']:>7.4f} {q['precision']:>6.4f} {best['rss_mb'] or nan:>7.0f}"
                if k == 0
                else ""
            )
            print(
                f"  {name if k == 0 else '':<16} {label:<10} {rate:>10,.0f} {ds_rate:>11,.0f} "
                f"{rs_rate:>8,.0f} {rate / ds_rate:>9.0f}x {rate / rs_rate:>7.1f}x{tail}"
            )
        spread = [len(docs) / r["seconds"] for r in da]
        cpus = ", ".join(f"{r['cpu_seconds']:.1f}" for r in da)
        t = best["timings"]
        stages = t.get("stages", {})
        scan = t.get("scan", {})
        feats = scan.get("features", {})
        print(
            f"    dataaudit runs {', '.join(f'{x:,.0f}' for x in spread)} docs/s "
            f"(CPU {cpus} s); "
            f"datasketch {', '.join(f'{x[0]:,.0f}' for x in ds)}; "
            f"rensa {', '.join(f'{x[0]:,.0f}' for x in rs) or 'not installed'}"
        )
        if script:
            wall, cpu = (max(x[k] for x in script) for k in (0, 1))
            rate, cpu_rate = (
                len(docs) / min(r[key] for r in da) for key in ("seconds", "cpu_seconds")
            )
            print(
                f"    rensa loop as a script, fresh process over the whole file: "
                f"{', '.join(f'{x[0]:,.0f}' for x in script)} docs/s; dataaudit "
                f"{rate / wall:.1f}x per wall second, {cpu_rate / cpu:.1f}x per CPU-second"
            )
        print(
            f"    best run {best['seconds']:.2f}s: load {stages.get('load', 0):.2f}s, "
            f"scan {stages.get('scan', 0):.2f}s (read {scan.get('read', 0):.2f}s, "
            f"features {sum(feats.values()):.2f}s), finish {stages.get('finish', 0):.2f}s; "
            f"recall on {q['positives']:,} planted pairs >= threshold, precision on "
            f"{q['members']:,} cluster members"
        )


def main() -> None:
    import shutil

    tmp = tempfile.mkdtemp(prefix="bench_dedup_")
    try:
        run(tmp)
    finally:  # the corpus is 1.4 GB at 1M documents
        shutil.rmtree(tmp, ignore_errors=True)


def _sizes(text: str) -> list[int]:
    sizes = [int(x) for x in text.split(",") if x.strip()]
    return [n for n in sizes if n > 0]


def run(tmp: str) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--dup-rate", type=float, default=0.1)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--baseline-docs", type=int, default=2000, help="subset for datasketch")
    ap.add_argument("--loop-docs", type=int, default=1000, help="subset for the update loop")
    ap.add_argument("--quality-pairs", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--whole-docs",
        type=_sizes,
        default=[40_000],
        help="documents per corpus, or sizes separated by commas (40000,200000); 0: skip",
    )
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--only-whole", action="store_true", help="skip the kernel benchmark")
    args = ap.parse_args()

    from dataaudit.sketches.lsh import choose_bands, s_curve

    if args.whole_docs:
        whole_path = Path(tmp) / "whole.parquet"
        whole_planted = make_corpus(whole_path, max(args.whole_docs), args.dup_rate, args.seed)
        whole_docs = pq.read_table(whole_path).column("text").to_pylist()
        whole_path.unlink()
        for n in args.whole_docs:
            whole_process(args, tmp, n, whole_docs, whole_planted)
    if args.only_whole:
        return

    path = Path(tmp) / "corpus.parquet"
    t0 = time.perf_counter()
    planted = make_corpus(path, args.docs, args.dup_rate, args.seed)
    print(
        f"corpus: {args.docs:,} docs, {len(planted):,} planted near-copies, "
        f"{path.stat().st_size / 1e6:.0f} MB parquet, built in {time.perf_counter() - t0:.0f}s"
    )

    pf = pq.ParquetFile(path)
    sub = (
        pf.read_row_groups(list(range(-(-args.baseline_docs // ROW_GROUP))), columns=["text"])
        .column(0)[: args.baseline_docs]
        .to_pylist()
    )
    # the baseline is timed in two halves, before and after dataaudit: the speed of a shared
    # machine drifts over minutes, and the ratio should not depend on which ran first
    half = args.loop_docs // 2
    loop_before = update_loop_rate(sub[:half], args.threshold)

    da = run_dataaudit(path, args.workers, args.threshold, tmp)
    rss_self, rss_kids = rss_mb()
    user = run_audit(path, args.workers)
    da_rate = args.docs / da["seconds"]
    per_core = args.docs / da["cpu_seconds"]

    # dataaudit on the same subset, one process, for a like-for-like small-corpus figure
    sub_path = Path(tmp) / "sub.parquet"
    pq.write_table(pa.table({"text": pa.array(sub, pa.large_string())}), sub_path)
    da_sub = run_dataaudit(sub_path, 1, args.threshold, tmp)
    ds = run_datasketch(sub, args.threshold)
    loop_after = update_loop_rate(sub[half : args.loop_docs], args.threshold)
    loop = (loop_before + loop_after) / 2
    print(
        f"\nthroughput, raw text -> clusters (docs/s; peak RSS parent {rss_self:.0f} MB, "
        f"largest worker {rss_kids:.0f} MB)"
    )
    rows = [
        (f"dataaudit, {args.workers} processes, wall clock, {args.docs:,} docs", da_rate),
        (
            f"audit(select=['DUP002'], workers={args.workers}), wall, {user['rss_mb']:.0f} MB",
            args.docs / user["seconds"],
        ),
        (f"dataaudit, per core (CPU time), {args.docs:,} docs", per_core),
        (f"dataaudit, 1 process (CPU time), {len(sub):,} docs", len(sub) / da_sub["cpu_seconds"]),
        (
            f"datasketch update loop, {args.loop_docs:,} docs "
            f"({loop_before:,.0f} before, {loop_after:,.0f} after)",
            loop,
        ),
        (f"datasketch MinHash.bulk + MinHashLSH, {len(sub):,} docs", ds["MinHash.bulk"]),
        (
            f"datasketch MinHashLSH insert+query only, {len(sub):,} docs",
            ds["MinHashLSH insert+query"],
        ),
    ]
    print(
        "  (all but the first row: docs per CPU-second, so other load on the machine cancels out)"
    )
    print(f"  {'pipeline':<58} {'docs/s':>10} {'x loop':>8}")
    for name, rate in rows:
        print(f"  {name:<58} {rate:>10,.0f} {rate / loop:>7.1f}x")
    print(
        f"  dataaudit wall: {da['seconds']:.1f}s (signatures {da['sig_seconds']:.1f}s, "
        f"LSH+verify+clusters {da['cluster_seconds']:.1f}s); start-up per worker process "
        f"(imports, loading compiled kernels; not in the per-core rows): {da['startup_seconds']:.1f}s CPU"
    )

    # quality on planted pairs
    rng = random.Random(args.seed)
    sample = (
        planted if len(planted) <= args.quality_pairs else rng.sample(planted, args.quality_pairs)
    )
    a = np.array([p[0] for p in sample], np.int64)
    b = np.array([p[1] for p in sample], np.int64)
    labels = da["labels"]
    ea, eb, _ = da["edges"]
    pick = rng.sample(range(len(ea)), min(len(ea), args.quality_pairs))
    member = np.flatnonzero((labels >= 0) & (labels != np.arange(len(labels))))
    mpick = rng.sample(range(len(member)), min(len(member), args.quality_pairs))
    need = np.concatenate([a, b, ea[pick], eb[pick], member[mpick], labels[member[mpick]]])
    texts = _rows(path, need)
    true = np.array([exact_jaccard(texts[x], texts[y]) for x, y in zip(a, b)])
    found = (labels[a] == labels[b]) & (labels[a] >= 0)
    pos = true >= args.threshold
    recall = found[pos].mean() if pos.any() else float("nan")
    edge_true = np.array([exact_jaccard(texts[ea[k]], texts[eb[k]]) for k in pick])
    member_true = np.array([exact_jaccard(texts[m], texts[labels[m]]) for m in member[mpick]])
    print(f"\nquality vs exact Jaccard (threshold {args.threshold}, {len(sample):,} planted pairs)")
    print(
        f"  recall, planted pairs with Jaccard >= threshold: {recall:.4f} ({int(pos.sum()):,} pairs)"
    )
    if len(edge_true):
        print(
            f"  precision, verified pairs:                      {(edge_true >= args.threshold).mean():.4f}"
        )
    if len(member_true):
        print(
            f"  precision, cluster member vs kept row:          {(member_true >= args.threshold).mean():.4f}"
        )
    print(
        f"  false merges of pairs below threshold:           {found[~pos].mean() if (~pos).any() else 0:.4f}"
    )

    # S-curve: LSH candidate rate per similarity bin
    sig = da["sig"]
    bands, r = choose_bands(args.threshold, 128)
    print(
        f"\nLSH detection rate by exact Jaccard (ours: {bands} bands x {r} rows; datasketch default 9 x 13)"
    )
    print(f"  {'Jaccard':<12} {'pairs':>6} {'ours':>7} {'theory':>7} {'ds 9x13':>8} {'theory':>7}")

    def cand(bb: int, rr: int) -> np.ndarray:
        sa, sb = sig[a], sig[b]
        eq = (sa[:, : bb * rr] == sb[:, : bb * rr]).reshape(len(a), bb, rr).all(axis=2)
        return eq.any(axis=1)

    ours, theirs = cand(bands, r), cand(9, 13)
    edges = [0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.01]
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (true >= lo) & (true < hi)
        if not m.any():
            continue
        mid = float(true[m].mean())
        print(
            f"  {lo:.2f}-{min(hi, 1):.2f}    {int(m.sum()):>6} {ours[m].mean():>7.3f} "
            f"{float(s_curve(mid, bands, r)):>7.3f} {theirs[m].mean():>8.3f} {float(s_curve(mid, 9, 13)):>7.3f}"
        )
    print(f"\npeak RSS: parent {rss_mb()[0]:.0f} MB, largest worker {rss_mb()[1]:.0f} MB")


if __name__ == "__main__":
    main()

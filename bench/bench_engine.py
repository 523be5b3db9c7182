"""Engine overhead: dataaudit's one-pass scan with the cheap rules vs a bare polars scan.

Data: short real English texts, the sentences of the Python 3.11 documentation sources that Debian
ships (``apt-get install -y python3.11-doc`` → /usr/share/doc/python3.11/html/_sources/*.rst.txt;
falls back to the man pages' plain text in /usr/share/man if that package is missing). The
sentences are cycled to reach ``--rows`` rows and written once, cached under bench/data/
(gitignored), as ``texts_<rows>.parquet`` and ``texts_<rows>.jsonl`` with one column ``text``.

Each measurement runs in a fresh Python subprocess so its peak RSS is its own (the child reads
its VmHWM from /proc/self/status: on Linux ``ru_maxrss`` of a child, from ``os.wait4`` or
``RUSAGE_CHILDREN``, inherits the parent's high-water mark across fork+exec); the time is measured inside the child around the work only (imports
excluded, reported separately):

  polars      ``pl.scan_parquet(path).select("text").collect()`` / ``pl.scan_ndjson(...)``
  query       the same checks as one polars lazy query (blank/null, control characters,
              U+FFFD, the mojibake prefilter, length bounds, a content hash; flagged rows and
              counts from one scan): what the cheap rules would cost written by hand
  dataaudit   ``dataaudit.audit(path, select=["TXT001", "TXT002", "TXT003", "FMT001"],
              progress=False)``: "cold" is the first call in a fresh process (what a CLI run
              pays: rule registry, the reader's imports, regex compilation...), "warm" runs
              after a one-row warm-up audit of a file of the same format (the steady-state
              cost of the scan itself; a list of records would import pandas through
              ``pa.array``, which the file's audit does not)

Every child caches its bytecode under bench/data/pycache, as an installed package has it, and
each kind runs once untimed first (see ``_child_env``). The cold run's phases are then printed
from the report's own timings (import, load, read, content hash, each feature, each rule's update
and finish), with the heavy libraries it loaded (pandas must not be one: pyarrow's conversions
import it, 0.35-0.7 s, and the cheap rules avoid them).

Then the engine runs again on a ``--small-rows`` (100k) file, to show that its peak RSS is
bounded by the batch size rather than the dataset size.

    python bench/bench_engine.py                  # 1M rows, best of --repeat 1
    python bench/bench_engine.py --rows 200000 --repeat 3
    python bench/bench_engine.py --profile        # + cProfile of the engine on the Parquet file
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
CHEAP_RULES = ["TXT001", "TXT002", "TXT003", "FMT001"]
DOC_SOURCES = Path("/usr/share/doc/python3.11/html/_sources")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_MARKUP = re.compile(
    r":[a-z:]+:`([^`<]*?)(?:\s*<[^>]*>)?`|``([^`]*)``|`([^`<]*?)(?:\s*<[^>]*>)?`_*"
)


# -- data -------------------------------------------------------------------------------------
def _rst_sentences(path: Path) -> list[str]:
    out = []
    paragraph: list[str] = []
    for line in [*path.read_text(encoding="utf-8", errors="replace").splitlines(), ""]:
        stripped = line.strip()
        bullet = bool(paragraph) and paragraph[0].startswith("\x00")
        if stripped.startswith(("* ", "- ")) and not line.startswith(" "):
            if paragraph:
                out += _sentences(paragraph)
            paragraph, stripped, line = ["\x00"], stripped[2:], stripped[2:]
            bullet = True
        # prose paragraphs only: not indented (code, directive bodies), not markup lines;
        # a bullet item continues on indented lines
        indented = line.startswith((" ", "\t")) and not (bullet and line.startswith("  "))
        if stripped and not indented and not stripped.startswith(("..", "|", "+", ">>>")):
            if re.fullmatch(r"([=\-~^*#+\"'`:.])\1+", stripped):
                paragraph = []  # a title underline: the previous line was a title
                continue
            paragraph.append(stripped)
            continue
        if paragraph:
            out += _sentences(paragraph)
        paragraph = []
    return out


def _sentences(paragraph: list[str]) -> list[str]:
    text = " ".join(p for p in paragraph if p != "\x00")
    text = _MARKUP.sub(lambda m: next(g for g in m.groups() if g is not None), text)
    text = text.replace("**", "").replace("\\", "")
    return [s for s in _SENTENCE_END.split(text) if 20 <= len(s) <= 400 and " " in s]


def _man_sentences(limit_files: int = 3000) -> list[str]:
    out = []
    files = sorted(Path("/usr/share/man/man1").glob("*.gz"))[:limit_files]
    for f in files:
        try:
            raw = gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
        except OSError:
            continue
        for line in raw.splitlines():
            if line.startswith(".") or len(line) < 20:
                continue
            line = re.sub(r"\\f[BIRP]|\\-|\\\(..|\\&", "", line).strip()
            if 20 <= len(line) <= 400:
                out.append(line)
    return out


def real_sentences() -> list[str]:
    if DOC_SOURCES.is_dir():
        sentences = []
        for path in sorted(DOC_SOURCES.rglob("*.rst.txt")):
            sentences += _rst_sentences(path)
        source = str(DOC_SOURCES)
    else:
        sentences = _man_sentences()
        source = "/usr/share/man/man1"
    if len(sentences) < 1000:
        sys.exit("not enough real text found: install it with `apt-get install -y python3.11-doc`")
    print(f"# {len(sentences):,} sentences from {source}", file=sys.stderr)
    return sentences


def dataset(rows: int) -> tuple[Path, Path]:
    """bench/data/texts_<rows>.{parquet,jsonl}, generated once."""
    DATA.mkdir(parents=True, exist_ok=True)
    pq_path, jl_path = DATA / f"texts_{rows}.parquet", DATA / f"texts_{rows}.jsonl"
    if pq_path.exists() and jl_path.exists():
        return pq_path, jl_path
    import polars as pl

    sentences = real_sentences()
    texts = [sentences[i % len(sentences)] for i in range(rows)]
    frame = pl.DataFrame({"text": texts}, schema={"text": pl.String})
    for path, write in ((pq_path, frame.write_parquet), (jl_path, frame.write_ndjson)):
        tmp = path.with_suffix(path.suffix + ".tmp")
        write(tmp)
        os.replace(tmp, path)
    print(f"# wrote {pq_path.name} and {jl_path.name} ({rows:,} rows)", file=sys.stderr)
    return pq_path, jl_path


# -- one measurement, in a child process -------------------------------------------------------
# the checks of TXT001-TXT003 (+ FMT001: on a string column, nothing to check) and the content
# hash, written as one polars lazy query: per-row flags (the rows a user would act on) and the
# split's counts and hash, sharing one scan
_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
_BLANK = r"^[\s\x0b\pZ\x{200b}-\x{200d}\x{2060}\x{feff}\x{ad}]*$"


# TXT002's mojibake prefilter (dataaudit/rules/content/encoding.py), built the same way here so
# the query's process does not import dataaudit
_CONTINUATION = "".join(
    bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in range(0x80, 0xC0)
)
_MOJIBAKE_PREFILTER = (
    "[\u00c2-\u00f4][" + "".join(f"\\x{{{ord(c):x}}}" for c in _CONTINUATION) + "]"
)


def _polars_query(pl, path: str) -> int:
    scan = pl.scan_parquet if path.endswith(".parquet") else pl.scan_ndjson
    t = pl.col("text")
    n = t.str.len_chars()
    flags = (
        scan(path)
        .with_row_index("row")
        .select(
            "row",
            empty=t.is_null() | t.str.contains(_BLANK),
            control=t.str.contains(_CONTROL),
            replacement=t.str.contains("\ufffd", literal=True),
            mojibake=t.str.contains(_MOJIBAKE_PREFILTER),
            too_long=n > 100_000,
            too_short=(n > 0) & (n < 3),
            hash=t.hash(seed=0),
        )
    )
    checks = ["empty", "control", "replacement", "mojibake", "too_long", "too_short"]
    rows_q = flags.filter(pl.any_horizontal(checks)).select("row", *checks)
    totals_q = flags.select(
        pl.len().alias("rows"), *[pl.col(c).sum() for c in checks], pl.col("hash").sum()
    )
    _, totals = pl.collect_all([rows_q, totals_q])
    return int(totals["rows"][0])


def _child(kind: str, path: str, batch_size: int | None) -> None:
    t0 = time.perf_counter()
    if kind == "polars-query":
        import polars as pl

        t1 = time.perf_counter()
        rows = _polars_query(pl, path)
    elif kind.startswith("polars"):
        import polars as pl

        t1 = time.perf_counter()
        scan = pl.scan_parquet if path.endswith(".parquet") else pl.scan_ndjson
        frame = (
            scan(path)
            .select("text")
            .collect(engine="streaming" if kind.endswith("streaming") else "auto")
        )
        rows = frame.height
    else:
        import dataaudit
        from dataaudit import api  # noqa: F401  (import the engine before the clock starts)

        if kind.endswith("warm"):
            _warm_up(path)
        t1 = time.perf_counter()
        report = dataaudit.audit(path, select=CHEAP_RULES, progress=False, batch_size=batch_size)
        rows = sum(s["rows"] for s in report.data["dataset"]["splits"].values())
        timings = report.data["timings"]
    t2 = time.perf_counter()
    result = {"rows": rows, "seconds": t2 - t1, "import_seconds": t1 - t0, "rss_mb": _peak_rss_mb()}
    if kind.startswith("dataaudit"):
        result["timings"] = timings
        result["loaded"] = [m for m in ("pandas", "polars", "numba") if m in sys.modules]
    print(json.dumps(result))


def _warm_up(path: str) -> None:
    """Pay the one-time costs first (rule registry, the reader's imports, regex compilation)
    so the clock sees the steady-state scan: a one-row audit of a file of ``path``'s format
    (in-memory records would type their columns with ``pa.array``, which imports pandas)."""
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    import dataaudit
    from dataaudit._arrow import strings

    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / ("warm" + Path(path).suffix)
        if one.suffix == ".parquet":
            pq.write_table(pa.Table.from_arrays([strings(["warm up"])], names=["text"]), one)
        else:
            one.write_text('{"text": "warm up"}\n')
        dataaudit.audit(one, select=CHEAP_RULES, progress=False)


def _peak_rss_mb() -> float:
    """This process's peak RSS. Linux keeps the parent's high-water mark across fork+exec in
    ru_maxrss, so the child reads VmHWM (its own address space) when /proc has it."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child_env() -> dict[str, str]:
    """The children's environment: bytecode cached (under bench/data/pycache), as an installed
    package has it (pip compiles it at install). With PYTHONDONTWRITEBYTECODE set, as in some
    development shells, every child would compile the whole package from source (~0.2-0.4 s)
    while polars, already compiled in site-packages, would not."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONHASHSEED": "0", "PYTHONPYCACHEPREFIX": str(DATA / "pycache")}


def measure(kind: str, path: Path, batch_size: int | None = None) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, str(path)]
    if batch_size:
        cmd += ["--batch-size", str(batch_size)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=_child_env())
    out = proc.stdout.read()
    _, status, _usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"measurement {kind} on {path} failed (exit {proc.returncode})")
    process_cpu = _usage.ru_utime + _usage.ru_stime
    return json.loads(out.decode().strip().splitlines()[-1]) | {"wall": wall, "pcpu": process_cpu}


# -- main ----------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--small-rows", type=int, default=100_000, help="for the memory check")
    ap.add_argument("--repeat", type=int, default=1, help="best of N (fresh process each)")
    ap.add_argument("--batch-size", type=int, default=None, help="engine batch size")
    ap.add_argument("--profile", action="store_true", help="cProfile the engine (Parquet)")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], args.batch_size)
        return

    pq_path, jl_path = dataset(args.rows)
    small_pq, small_jl = dataset(args.small_rows)
    print(
        f"rows={args.rows:,}  rules={','.join(CHEAP_RULES)}  repeat={args.repeat}  "
        f"python={sys.version.split()[0]}  cpus={os.cpu_count()}"
    )
    header = (
        f"{'input':<8} {'reader':<26} {'seconds':>8} {'rows/s':>12} {'peak RSS':>10} {'ratio':>7}"
        f" {'process s':>10} {'x query':>8} {'CPU s':>6} {'x query':>8}"
    )
    print(header)
    print("-" * len(header))
    print(
        "(seconds: the work alone, imports excluded; process s: the whole child process, wall "
        "clock; ratio vs the bare scan, x query vs the same checks as one polars lazy query; "
        "CPU s: the whole child's user + system seconds, all threads, which a shared machine's "
        "load inflates far less than wall time)"
    )
    # untimed: compile and cache every child's bytecode once (see _child_env)
    for kind in ("polars", "polars-query", "dataaudit"):
        for path in (small_pq, small_jl):
            measure(kind, path)
    phases: dict[str, dict] = {}
    for label, path in (("parquet", pq_path), ("jsonl", jl_path)):
        # alternate the runs so a shared machine's drift hits all of them alike
        runs: dict[str, list[dict]] = {}
        for _ in range(args.repeat):
            for kind in ("polars", "polars-query", "dataaudit", "dataaudit-warm"):
                bs = args.batch_size if kind.startswith("dataaudit") else None
                runs.setdefault(kind, []).append(measure(kind, path, bs))
        got = {
            k: min(v, key=lambda r: r["seconds"])
            | {
                "rss_mb": max(r["rss_mb"] for r in v),
                "wall": min(r["wall"] for r in v),
                "pcpu": min(r["pcpu"] for r in v),
            }
            for k, v in runs.items()
        }
        bare, query = got["polars"], got["polars-query"]
        phases[label] = got["dataaudit"]
        fn = "scan_parquet" if label == "parquet" else "scan_ndjson"
        for name, r in (
            (f"polars.{fn}", bare),
            ("polars lazy query (checks)", query),
            ("dataaudit.audit (cold)", got["dataaudit"]),
            ("dataaudit.audit (warm)", got["dataaudit-warm"]),
        ):
            ratio = r["seconds"] / bare["seconds"]
            print(
                f"{label:<8} {name:<26} {r['seconds']:>8.2f} {r['rows'] / r['seconds']:>12,.0f} "
                f"{r['rss_mb']:>8.0f}MB {ratio:>6.2f}x {r['wall']:>10.2f} "
                f"{r['wall'] / query['wall']:>7.2f}x {r['pcpu']:>6.2f} "
                f"{r['pcpu'] / query['pcpu']:>7.2f}x"
            )
    print()
    print("where the cold dataaudit run's time went (seconds, the report's own timings):")
    for label, r in phases.items():
        print(f"  {label:<8} {_phases(r)}")
    print()
    print("engine peak RSS vs dataset size (memory should follow the batch size, not the rows):")
    for label, small, big in (("parquet", small_pq, pq_path), ("jsonl", small_jl, jl_path)):
        s = measure("dataaudit", small, args.batch_size)
        b = measure("dataaudit", big, args.batch_size)
        print(
            f"  {label:<8} {s['rows']:>10,} rows: {s['rss_mb']:>6.0f}MB   "
            f"{b['rows']:>10,} rows: {b['rss_mb']:>6.0f}MB"
        )
    if args.profile:
        profile(pq_path, args.batch_size)


def _phases(r: dict) -> str:
    t = r["timings"]
    scan = t.get("scan", {})
    parts = [f"import {r['import_seconds']:.2f}"]
    parts += [f"{k} {v:.2f}" for k, v in t.get("stages", {}).items()]
    parts += [f"{k} {scan[k]:.2f}" for k in ("read", "identity") if k in scan]
    parts += [f"feature {k} {v:.2f}" for k, v in sorted(scan.get("features", {}).items())]
    parts += [
        f"{code} {p.get('update', 0):.2f}+{p.get('finish', 0):.2f}"
        for code, p in sorted(t.get("rules", {}).items())
        if code in CHEAP_RULES
    ]
    loaded = ", ".join(r.get("loaded", [])) or "none"
    return " | ".join(parts) + f" (rule: update+finish; loaded: {loaded})"


def profile(path: Path, batch_size: int | None) -> None:
    import cProfile
    import pstats

    import dataaudit

    _warm_up(str(path))
    prof = cProfile.Profile()
    prof.enable()
    dataaudit.audit(path, select=CHEAP_RULES, progress=False, batch_size=batch_size)
    prof.disable()
    print(f"\ncProfile of a warm dataaudit.audit({path.name}), by own time:")
    pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()

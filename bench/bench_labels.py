"""Label-error detection: dataaudit LBL002 vs cleanlab's ``find_label_issues`` on real text.

Data: Debian's fortune cookie files, labeled by their category (one file per category), which
ship with the ``fortunes`` package:

    apt-get install -y fortunes          # files under /usr/share/games/fortunes
    pip install cleanlab                 # bench-only; not a dataaudit dependency

The entries of ``--categories`` are de-duplicated (a fortune filed in two categories is dropped
entirely, so the clean labels are unambiguous), ``--flip`` (5%) of the labels are replaced by a
different category at random (seeded), and the rows go to dataaudit as one train split.

Both methods get the SAME out-of-fold probabilities: those of LBL002's probe (hashed word
1-2-gram tf-idf + logistic loss, 5-fold, on LBL002's seeded sample; with the default row cap of
20k every row is sampled). Printed side by side, with ratios:
  * precision / recall / F1 of the flagged rows at each method's default setting
    (LBL002 as the rule reports it; cleanlab ``find_label_issues(labels, pred_probs)``, i.e.
    ``filter_by="prune_by_noise_rate"``) against the flipped rows;
  * precision@k for k = number of flipped rows (LBL002's ranked list vs cleanlab
    ``return_indices_ranked_by="self_confidence"``);
  * the probe's accuracy against the clean labels (how hard the task is), wall time and peak RSS.

    python bench/bench_labels.py                     # 12 categories, ~4.4k rows
    python bench/bench_labels.py --rows 2000 --seed 1
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

import numpy as np

FORTUNES = Path("/usr/share/games/fortunes")
DEFAULT_CATEGORIES = (
    "computers,food,science,literature,politics,law,medicine,sports,love,education,work,drugs"
)


def load(categories: list[str]) -> list[tuple[str, str]]:
    seen: dict[str, set[str]] = {}
    for cat in categories:
        path = FORTUNES / cat
        if not path.exists():
            sys.exit(f"{path} not found: apt-get install -y fortunes")
        for entry in path.read_text(encoding="utf-8", errors="replace").split("\n%\n"):
            text = entry.strip()
            if len(text) >= 20:
                seen.setdefault(text, set()).add(cat)
    rows = [(t, next(iter(c))) for t, c in seen.items() if len(c) == 1]
    rows.sort(key=lambda r: (r[1], r[0]))
    return rows


def prf(flagged: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    tp = int((flagged & truth).sum())
    p = tp / max(int(flagged.sum()), 1)
    r = tp / max(int(truth.sum()), 1)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=0, help="use at most this many rows (0 = all)")
    ap.add_argument("--categories", default=DEFAULT_CATEGORIES)
    ap.add_argument("--flip", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import dataaudit as da
    from dataaudit.context import AuditContext, SplitInfo
    from dataaudit.corpus import load_corpus
    from dataaudit.features import Batch
    from dataaudit.rules.labels._probe import run_probe
    from dataaudit.rules.labels._sample import sampled
    from dataaudit.rules.labels.likely_mislabels import LikelyMislabels

    try:
        from cleanlab.filter import find_label_issues
    except ImportError:
        sys.exit("pip install cleanlab  (bench-only dependency)")

    cats = args.categories.split(",")
    rows = load(cats)
    rng = random.Random(args.seed)
    if args.rows and args.rows < len(rows):
        rows = sorted(rng.sample(rows, args.rows), key=lambda r: (r[1], r[0]))
    rng.shuffle(rows)
    n = len(rows)
    flipped = set(rng.sample(range(n), int(round(args.flip * n))))
    records = []
    for i, (text, cat) in enumerate(rows):
        label = rng.choice([c for c in cats if c != cat]) if i in flipped else cat
        records.append({"text": text, "label": label})
    truth_by_row = np.zeros(n, bool)
    truth_by_row[sorted(flipped)] = True
    print(
        f"fortunes: {n} rows, {len(cats)} categories, {len(flipped)} labels flipped (seed {args.seed})"
    )

    # 1) the rule as users run it
    t0 = time.perf_counter()
    report = da.audit(
        {"train": records}, select=["LBL002"], text="text", label="label", seed=args.seed
    )
    t_audit = time.perf_counter() - t0
    res = report.result("LBL002")
    if res["status"] == "skipped":
        sys.exit(f"LBL002 skipped: {res['message']}")
    flags = report.flags()
    ours_flag = np.zeros(n, bool)
    ours_flag[flags.filter(flags["code"] == "LBL002")["row"].to_numpy()] = True

    # 2) the same sample and out-of-fold probabilities, for cleanlab
    rule = LikelyMislabels()
    corpus = load_corpus({"train": records}, roles={"text": "text", "label": "label"})
    ctx = AuditContext(
        splits={s: SplitInfo(s, c.kind, c.num_rows) for s, c in corpus.splits.items()},
        roles=corpus.roles,
        seed=args.seed,
    )
    state = rule.start(ctx)
    offset = 0
    for split, rb in corpus.stream(4096):
        state = rule.update(state, Batch(split, rb, offset, ctx.roles, "train"))
        offset += rb.num_rows
    run = run_probe(
        sampled(state["sample"]),
        seed=args.seed,
        folds=rule.folds,
        min_rows=rule.min_rows,
        min_class_rows=rule.min_class_rows,
        max_classes=rule.max_classes,
    )
    rows_idx = np.array([it.row for it in run.items])
    truth = truth_by_row[rows_idx]
    index = {c: i for i, c in enumerate(run.classes)}
    given = np.array([index[it.label] for it in run.items])
    clean = np.array([index.get(rows[r][1], -1) for r in rows_idx])
    ours = ours_flag[rows_idx]
    assert np.array_equal(ours, run.cl.issue), "bench and audit disagree on LBL002's flags"

    t0 = time.perf_counter()
    cl_flag = find_label_issues(given, run.proba)
    cl_rank = find_label_issues(given, run.proba, return_indices_ranked_by="self_confidence")
    t_cleanlab = time.perf_counter() - t0

    k = int(truth.sum())
    ranked_rows = [r["row"] for r in res["details"]["ranked"]]
    if len(ranked_rows) < k:  # the report lists max_listed rows; rank all flagged the same way
        p_given = run.proba[np.arange(len(given)), given]
        order = sorted(np.flatnonzero(run.cl.issue), key=lambda i: (p_given[i], rows_idx[i]))
        ranked_rows = [int(rows_idx[i]) for i in order]
    ours_pk = truth_by_row[ranked_rows[:k]].sum() / k
    cl_pk = truth[cl_rank[:k]].sum() / k

    po, ro, fo = prf(ours, truth)
    pc, rc, fc = prf(cl_flag, truth)
    acc = float((run.proba.argmax(axis=1) == clean).mean())
    print(
        f"probe: {len(run.items)} rows sampled of {n}, out-of-fold accuracy vs clean labels {acc:.3f}"
    )
    print()
    print(f"{'':22}{'dataaudit LBL002':>18}{'cleanlab':>12}{'ratio':>9}")
    print(
        f"{'flagged rows':22}{int(ours.sum()):>18}{int(cl_flag.sum()):>12}{ours.sum() / max(cl_flag.sum(), 1):>9.2f}"
    )
    for name, a, b in (
        ("precision", po, pc),
        ("recall", ro, rc),
        ("F1", fo, fc),
        (f"precision@{k}", ours_pk, cl_pk),
    ):
        print(f"{name:22}{a:>18.3f}{b:>12.3f}{a / b if b else float('nan'):>9.2f}")
    print(
        f"{'seconds':22}{t_audit:>18.2f}{t_cleanlab:>12.2f}   (audit end to end incl. probe; "
        "cleanlab on given probabilities)"
    )
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    noise = res["details"]["noise_by_class"]
    print("estimated noise by class (LBL002):", ", ".join(f"{c} {v:.2f}" for c, v in noise.items()))


if __name__ == "__main__":
    main()

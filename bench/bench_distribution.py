"""Distribution rules (LEN/TOK/MIX/SHIFT): planted shifts found, random splits not, and speed.

Data: real text from Debian packages (``apt-get install -y python3.11-doc fortunes``):
paragraphs of the Python 3.11 documentation sources (/usr/share/doc/python3.11/html/_sources,
source "pydoc") and the fortune cookies in /usr/share/games/fortunes (source "fortunes"). A
byte-level BPE (vocab 8000) is trained in the bench on the documentation text: no downloads.

Three parts, printed as tables:

1. Planted shifts (``--planted-rows`` rows, train 80% / test 20%): the test split from another
   source mix; boilerplate appended to every test row; a length cut-off on test; a vocabulary
   shift (30% of test rows from the other domain). Each drift rule's verdict is shown.
2. False positives: 20 seeded random train/test splits (80/20) of one same-distribution sample,
   at 1k and at 100k rows (``--fp-rows``); the share of splits each drift rule flags (target
   <= 5%).
3. Speed: ``--rows`` short rows (one sentence each; default 200k, ``--rows 1000000`` for 1M):
   ``Tokenizer.encode_batch_fast`` alone on the same texts in the same batches (the limit), then
   ``dataaudit.audit`` with every rule of this family (LEN001-003, TOK001-002, MIX001, SHIFT001)
   and the same tokenizer; rows/s, the ratio and peak RSS.

    python bench/bench_distribution.py                    # 200k rows for speed
    python bench/bench_distribution.py --rows 1000000     # the 1M-row measurement
"""

from __future__ import annotations

import argparse
import random
import re
import resource
import sys
import time
from pathlib import Path

DOCS = Path("/usr/share/doc/python3.11/html/_sources")
FORTUNES = Path("/usr/share/games/fortunes")
DRIFT_RULES = ["LEN003", "TOK001", "SHIFT001", "MIX001"]
ALL_RULES = ["LEN001", "LEN002", "LEN003", "TOK001", "TOK002", "MIX001", "SHIFT001"]
BOILERPLATE = " Copyright (c) 2024 Example Corp. All rights reserved. Visit https://example.com."


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def doc_paragraphs() -> list[str]:
    if not DOCS.is_dir():
        sys.exit("needs python3.11-doc: apt-get install -y python3.11-doc")
    out: list[str] = []
    for path in sorted(DOCS.rglob("*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for para in re.split(r"\n\s*\n", text):
            words = para.split()
            if len(words) >= 5 and not para.lstrip().startswith((".. ", "::", ">>>", "=", "-")):
                out.append(" ".join(words))
    return out


def fortunes() -> list[str]:
    if not FORTUNES.is_dir():
        sys.exit("needs fortunes: apt-get install -y fortunes")
    out: list[str] = []
    for path in sorted(FORTUNES.iterdir()):
        if path.suffix or not path.is_file():
            continue
        for item in path.read_text(encoding="utf-8", errors="replace").split("\n%\n"):
            words = item.split()
            if len(words) >= 3:
                out.append(" ".join(words))
    return out


def train_tokenizer(texts: list[str]):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=8000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(texts, trainer)
    return tok


def mixed(rng: random.Random, n: int, docs: list[str], fort: list[str], p_docs: float):
    rows = []
    for _ in range(n):
        if rng.random() < p_docs:
            rows.append({"text": rng.choice(docs), "source": "pydoc"})
        else:
            rows.append({"text": rng.choice(fort), "source": "fortunes"})
    return rows


def flagged(report, code: str) -> bool:
    return report.status(code) in ("warn", "fail")


def planted(tok, docs, fort, n: int) -> None:
    from dataaudit import audit

    rng = random.Random(7)
    n_test = n // 5
    train = mixed(rng, n - n_test, docs, fort, 0.7)
    cases = {
        "source mix 70/30 -> 30/70": mixed(rng, n_test, docs, fort, 0.3),
        "boilerplate appended": [
            {**r, "text": r["text"] + BOILERPLATE} for r in mixed(rng, n_test, docs, fort, 0.7)
        ],
        "length cut-off (<= 20 words)": [
            r for r in mixed(rng, n_test * 4, docs, fort, 0.7) if len(r["text"].split()) <= 20
        ][:n_test],
        "no shift (control)": mixed(rng, n_test, docs, fort, 0.7),
    }
    cases = {k: (train, v) for k, v in cases.items()}
    # a vocabulary shift: train is documentation only; 30% of test rows are fortunes, labelled
    # with the same source (so only the text tells)
    docs_train = mixed(rng, n - n_test, docs, fort, 1.0)
    shifted = [{"text": r["text"], "source": "pydoc"} for r in mixed(rng, n_test, docs, fort, 0.7)]
    cases["vocabulary shift (30% other domain)"] = (docs_train, shifted)
    cases["no shift (docs-only control)"] = (docs_train, mixed(rng, n_test, docs, fort, 1.0))
    print(f"\n## planted shifts ({n - n_test:,} train / {n_test:,} test rows; * = flagged)")
    print(f"{'case':38s} " + " ".join(f"{c:>16s}" for c in DRIFT_RULES))
    for name, (train, test) in cases.items():
        report = audit({"train": train, "test": test}, select=DRIFT_RULES, tokenizer=tok)
        cells = []
        for code in DRIFT_RULES:
            res = report.result(code)
            comp = (res["details"].get("comparisons") or {}).get("test vs train", {})
            value = {
                "LEN003": ("ks", comp.get("ks")),
                "TOK001": ("js", comp.get("js")),
                "SHIFT001": ("auc", comp.get("auc")),
                "MIX001": ("V", comp.get("cramers_v")),
            }[code]
            mark = "*" if flagged(report, code) else " "
            v = "-" if value[1] is None else f"{value[1]:.3f}"
            cells.append(f"{value[0]}={v}{mark}".rjust(16))
        print(f"{name:38s} " + " ".join(cells))


def false_positives(tok, docs, fort, sizes: list[int], seeds: int) -> None:
    from dataaudit import audit

    print(f"\n## false positives: {seeds} seeded random 80/20 splits (target <= 5%)")
    print(f"{'rows':>8s} " + " ".join(f"{c:>9s}" for c in DRIFT_RULES) + "   seconds")
    for n in sizes:
        sample = mixed(random.Random(1000 + n), n, docs, fort, 0.7)
        hits = dict.fromkeys(DRIFT_RULES, 0)
        t0 = time.perf_counter()
        for seed in range(seeds):
            rows = list(sample)
            random.Random(seed).shuffle(rows)
            cut = n - n // 5
            report = audit(
                {"train": rows[:cut], "test": rows[cut:]},
                select=DRIFT_RULES,
                tokenizer=tok,
                seed=seed,
            )
            for code in DRIFT_RULES:
                hits[code] += flagged(report, code)
        cells = " ".join(f"{hits[c] / seeds:>9.0%}" for c in DRIFT_RULES)
        print(f"{n:>8,d} {cells}   {time.perf_counter() - t0:7.1f}")


def speed(tok, docs, fort, rows: int, batch_size: int) -> None:
    import pyarrow as pa

    from dataaudit import audit
    from dataaudit.resources.tokenizer import resolve_tokenizer

    sentences = [s for d in docs for s in re.split(r"(?<=[.!?])\s+", d) if len(s.split()) >= 3]
    rng = random.Random(3)
    texts = [sentences[i % len(sentences)] for i in range(rows)]
    sources = [rng.choice(["pydoc", "web", "books"]) for _ in range(rows)]
    table = pa.table({"text": pa.array(texts, pa.large_string()), "source": sources})
    n_test = rows // 10
    data = {"train": table.slice(0, rows - n_test), "test": table.slice(rows - n_test)}
    handle = resolve_tokenizer(tok)  # the same thread settings as the audit
    inner = handle.tokenizer

    # the limit: encode_batch_fast alone on the same batches (texts already Python strings)
    def encode_alone() -> float:
        t0 = time.perf_counter()
        for i in range(0, rows, batch_size):
            inner.encode_batch_fast(texts[i : i + batch_size])
        return time.perf_counter() - t0

    first = encode_alone()
    audit({"train": table.slice(0, 200), "test": table.slice(200, 100)}, select=ALL_RULES)
    t0 = time.perf_counter()
    report = audit(
        data,
        select=ALL_RULES,
        tokenizer=tok,
        rules={"LEN001": {"max_seq_len": 64}},
        batch_size=batch_size,
    )
    t_audit = time.perf_counter() - t0
    t_limit = min(first, encode_alone())  # best of two, one before and one after the audit
    print(f"\n## speed: {rows:,} short rows, batch {batch_size}, {handle.unit}")
    print(f"{'':34s} {'seconds':>9s} {'rows/s':>11s} {'ratio':>7s}")
    print(f"{'encode_batch_fast alone':34s} {t_limit:9.2f} {rows / t_limit:11,.0f} {1:7.2f}")
    print(
        f"{'dataaudit LEN+TOK+MIX+SHIFT':34s} {t_audit:9.2f} {rows / t_audit:11,.0f} "
        f"{t_audit / t_limit:7.2f}"
    )
    for res in report.results:
        print(f"    {res['code']:9s} {res['status']:8s} {res['seconds']:8.2f} s")
    print(f"peak RSS {peak_rss_mb():,.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000, help="rows for the speed part")
    ap.add_argument("--batch-size", type=int, default=8192)
    ap.add_argument("--planted-rows", type=int, default=5000)
    ap.add_argument("--fp-rows", type=int, nargs="+", default=[1000, 100_000])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--skip", nargs="*", default=[], choices=["planted", "fp", "speed"])
    args = ap.parse_args()
    t0 = time.perf_counter()
    docs, fort = doc_paragraphs(), fortunes()
    tok = train_tokenizer(docs)
    print(
        f"data: {len(docs):,} doc paragraphs, {len(fort):,} fortunes; BPE vocab "
        f"{tok.get_vocab_size():,} trained in {time.perf_counter() - t0:.1f} s"
    )
    if "planted" not in args.skip:
        planted(tok, docs, fort, args.planted_rows)
    if "fp" not in args.skip:
        false_positives(tok, docs, fort, args.fp_rows, args.seeds)
    if "speed" not in args.skip:
        speed(tok, docs, fort, args.rows, args.batch_size)


if __name__ == "__main__":
    main()

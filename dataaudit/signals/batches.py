"""A batch compared with the corpus: what makes the rows of one step unusual.

The rows of the training split are read once (their text view, source and label, through the
same roles the audit used) and joined with the audit's row flags. A batch is measured on:

* ``length``: the mean of log(1 + words);
* ``tokens``: the Jensen–Shannon divergence of its word distribution from the corpus's;
* ``source`` / ``label``: the total-variation distance of its source / label mix from the
  corpus's;
* one share per family of the audit's row flags: duplicates (DUP), encoding damage (TXT002),
  label doubts (LBL), length outliers (LEN, TXT003), empty or unreadable rows (TXT001, FMT,
  INPUT), contamination or leaks (LEAK).

Each measure is compared with the same measure on ``null_batches`` random batches of the same
size drawn from the split (seeded): the effect is the z-score against those, so measures of
different kinds rank on one scale, and a measure that random batches of that size vary on a
lot does not look unusual. Effects from ``batch_z`` up are the batch's reasons, strongest
first; its worst rows are the ones that carry the most of them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..stats import js_divergence

__all__ = ["RowTable", "compare_batch", "load_rows"]

_WORD = re.compile(r"\w+")
VOCAB = 5000
FAMILIES = (  # (key, label, code prefixes)
    ("encoding", "encoding damage", ("TXT002",)),
    ("duplicates", "duplicates", ("DUP",)),
    ("label_doubts", "label doubts", ("LBL",)),
    ("length_outliers", "length outliers", ("LEN", "TXT003")),
    ("unreadable", "empty or unreadable rows", ("TXT001", "FMT", "INPUT")),
    ("leaks", "leaked or contaminated rows", ("LEAK",)),
)


@dataclass
class RowTable:
    """Per row of the training split: what the batch comparison needs."""

    split: str
    ids: list[Any]  # the id column's values (None without one)
    texts: list[str | None]
    log_words: np.ndarray
    tokens: list[np.ndarray]  # vocabulary ids (VOCAB = other)
    vocab: list[str]
    source: np.ndarray | None  # category index per row
    sources: list[str]
    label: np.ndarray | None
    labels: list[str]
    flags: dict[str, np.ndarray]  # family -> bool per row
    flag_codes: list[list[str]]
    content_hash: str = ""

    def attach_flags(self, flags: Any) -> None:
        """Join the audit's row flags (a polars frame of split, row, code; None: no flags)."""
        codes: list[list[str]] = [[] for _ in range(self.rows)]
        if flags is not None and flags.height:
            mine = flags.filter(flags["split"] == self.split).select("row", "code")
            for row, code in mine.iter_rows():
                if 0 <= row < self.rows and code not in codes[row]:
                    codes[row].append(code)
        self.flag_codes = codes
        self.flags = {
            key: np.array([any(c.startswith(p) for c in cs for p in prefixes) for cs in codes])
            for key, _, prefixes in FAMILIES
        }

    @property
    def rows(self) -> int:
        return len(self.texts)

    def resolve(self, refs: list[Any], step: int) -> np.ndarray:
        """Row positions of an order's references (positions as they are, ids looked up)."""
        out = np.empty(len(refs), dtype=np.int64)
        lookup: dict[str, int] | None = None
        for k, ref in enumerate(refs):
            if isinstance(ref, int):
                if not 0 <= ref < self.rows:
                    raise InputError(
                        f"the order gives row {ref} at step {step}, but split {self.split!r} "
                        f"has {self.rows} rows (positions 0-{self.rows - 1}): the order file "
                        "belongs to another dataset, or the data was filtered or shuffled "
                        "after the run. Pass the data the run trained on, in its order."
                    )
                out[k] = ref
                continue
            if lookup is None:
                if all(i is None for i in self.ids):
                    raise InputError(
                        f"the order gives row {ref!r} at step {step}, a string, but the data "
                        "has no id column to look it up in: pass --id COLUMN, or write row "
                        "positions (integers) in the order file."
                    )
                lookup = {str(v): i for i, v in enumerate(self.ids) if v is not None}
            pos = lookup.get(str(ref))
            if pos is None:
                raise InputError(
                    f"the order gives id {ref!r} at step {step}, which is not in the id column "
                    f"of split {self.split!r} ({self.rows} rows): the order file belongs to "
                    "another dataset or version of it."
                )
            out[k] = pos
        return out


def _categories(values: list[Any]) -> tuple[np.ndarray, list[str]]:
    names = sorted({str(v) for v in values if v is not None})
    index = {n: i for i, n in enumerate(names)}
    codes = np.array([index[str(v)] if v is not None else len(names) for v in values])
    return codes, names + ["(none)"]


def load_rows(
    data: Any,
    split: str | None,
    roles: dict[str, str] | None,
    split_column: str | None = None,
    on_bad_lines: str | None = None,
) -> RowTable:
    """Read the training split's rows as the audit reads them (its roles, split column and
    bad-line policy); the audit's flags come later (:meth:`RowTable.attach_flags`). The split's
    content hash is the audit's (``dataset.splits[...].content_hash``), to tell a report of
    other data."""
    from ..context import AuditContext
    from ..corpus import load_corpus
    from ..identity import SplitIdentity

    kwargs = {"on_bad_lines": on_bad_lines} if on_bad_lines else {}
    corpus = load_corpus(data, split=split_column, roles=roles or None, **kwargs)
    ctx = AuditContext.from_corpus(corpus)
    names = list(ctx.splits)
    if split is None:
        split = ctx.train_split() or (names[0] if len(names) == 1 else None)
        if split is None:
            raise InputError(
                f"the data has splits {', '.join(names)} and none is a training split: name "
                "the one the run trained on (--train-split)."
            )
    elif split not in ctx.splits:
        raise InputError(
            f"split {split!r} is not in the data (splits: {', '.join(names)}); name the split "
            "the run trained on."
        )
    texts: list[str | None] = []
    ids: list[Any] = []
    sources: list[Any] = []
    labels: list[Any] = []
    offset = 0
    identity = SplitIdentity()
    for name, rb in corpus.stream(4096):
        if name != split:
            continue
        identity.update(rb)
        batch = ctx.batch(name, rb, offset)
        offset += rb.num_rows
        texts.extend(batch.text.to_pylist())
        for role, out in (("id", ids), ("source", sources), ("label", labels)):
            col = batch.role(role)
            out.extend(col.to_pylist() if col is not None else [None] * rb.num_rows)
    n = len(texts)
    words = [(_WORD.findall(t.lower()) if isinstance(t, str) else []) for t in texts]
    counts: dict[str, int] = {}
    for ws in words:
        for w in ws:
            counts[w] = counts.get(w, 0) + 1
    vocab = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:VOCAB]]
    index = {w: i for i, w in enumerate(vocab)}
    tokens = [np.array([index.get(w, len(vocab)) for w in ws], dtype=np.int64) for ws in words]
    source = label = None
    source_names: list[str] = []
    label_names: list[str] = []
    if any(v is not None for v in sources):
        source, source_names = _categories(sources)
    if any(v is not None for v in labels):
        label, label_names = _categories(labels)
    table = RowTable(
        split=split,
        ids=ids,
        texts=texts,
        log_words=np.log1p(np.array([len(ws) for ws in words], dtype=np.float64)),
        tokens=tokens,
        vocab=vocab,
        source=source,
        sources=source_names,
        label=label,
        labels=label_names,
        flags={},
        flag_codes=[[] for _ in range(n)],
    )
    table.content_hash = identity.content_hash()
    table.attach_flags(None)
    return table


class _Measures:
    """The batch measures of a RowTable, computed for any set of rows."""

    def __init__(self, table: RowTable):
        self.t = table
        self.corpus_tokens = np.bincount(
            np.concatenate(table.tokens) if table.tokens else np.zeros(0, np.int64),
            minlength=len(table.vocab) + 1,
        )
        self.source_shares = self._shares(table.source, len(table.sources), None)
        self.label_shares = self._shares(table.label, len(table.labels), None)
        self.flag_rates = {k: float(v.mean()) if len(v) else 0.0 for k, v in table.flags.items()}

    @staticmethod
    def _shares(codes: np.ndarray | None, k: int, rows: np.ndarray | None) -> np.ndarray | None:
        if codes is None:
            return None
        c = codes if rows is None else codes[rows]
        return np.bincount(c, minlength=k) / max(1, len(c))

    def names(self) -> list[str]:
        out = ["length", "tokens"]
        if self.t.source is not None and len(self.t.sources) > 2:
            out.append("source")
        if self.t.label is not None and len(self.t.labels) > 2:
            out.append("label")
        out += [k for k, rate in self.flag_rates.items() if rate > 0]
        return out

    def measure(self, rows: np.ndarray) -> dict[str, float]:
        t = self.t
        out = {"length": float(t.log_words[rows].mean())}
        toks = [t.tokens[i] for i in rows]
        counts = np.bincount(
            np.concatenate(toks) if toks else np.zeros(0, np.int64), minlength=len(t.vocab) + 1
        )
        out["tokens"] = js_divergence(counts, self.corpus_tokens) if counts.sum() else 0.0
        if self.source_shares is not None:
            s = self._shares(t.source, len(t.sources), rows)
            out["source"] = 0.5 * float(np.abs(s - self.source_shares).sum())
        if self.label_shares is not None:
            s = self._shares(t.label, len(t.labels), rows)
            out["label"] = 0.5 * float(np.abs(s - self.label_shares).sum())
        for k, v in t.flags.items():
            out[k] = float(v[rows].mean())
        return out


def _null(measures: _Measures, n: int, draws: int, seed: int) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(seed)
    total = measures.t.rows
    samples: dict[str, list[float]] = {}
    for _ in range(draws):
        rows = rng.choice(total, size=min(n, total), replace=False)
        for k, v in measures.measure(rows).items():
            samples.setdefault(k, []).append(v)
    return {k: (float(np.mean(v)), float(np.std(v))) for k, v in samples.items()}


def _pct(x: float) -> str:
    return f"{x:.1%}" if x < 0.1 else f"{x:.0%}"


def _top_share(codes: np.ndarray, names: list[str], corpus: np.ndarray, rows: np.ndarray):
    batch = np.bincount(codes[rows], minlength=len(names))
    k = int(np.argmax(batch / max(1, len(rows)) - corpus))
    return names[k], int(batch[k]), float(corpus[k])


def compare_batch(
    table: RowTable,
    rows: np.ndarray,
    *,
    seed: int = 0,
    null_batches: int = 300,
    batch_z: float = 4.0,
    cache: dict[Any, Any] | None = None,
) -> dict[str, Any]:
    """How the batch ``rows`` differs from random batches of its size: every measure with its
    value, the random batches' mean and spread and the z-score; the reasons (z >= batch_z,
    strongest first) with a sentence each; and the rows ranked by how much of it they carry."""
    cache = cache if cache is not None else {}
    measures = cache.get("measures")
    if measures is None:
        measures = cache["measures"] = _Measures(table)
    n = len(rows)
    key = ("null", n)
    if key not in cache:
        cache[key] = _null(measures, n, null_batches, seed)
    null = cache[key]
    values = measures.measure(rows)
    effects: dict[str, dict[str, float]] = {}
    for name in measures.names():
        mean, sd = null[name]
        floor = 0.5 / n if name in table.flags else 1e-3
        z = (values[name] - mean) / max(sd, floor)
        effects[name] = {
            "value": round(values[name], 6),
            "random_mean": round(mean, 6),
            "random_sd": round(sd, 6),
            "z": round(float(np.clip(z, -99, 99)), 2),
        }
    ranked = sorted(
        (k for k, e in effects.items() if (abs(e["z"]) if k == "length" else e["z"]) >= batch_z),
        key=lambda k: (-abs(effects[k]["z"]), k),
    )
    reasons = [
        {"measure": k, "z": effects[k]["z"], "text": _reason(k, table, measures, rows, effects[k])}
        for k in ranked
    ]
    return {
        "rows": int(n),
        "effects": effects,
        "reasons": reasons,
        "worst": _worst_rows(table, measures, rows, ranked, effects),
    }


def _reason(
    name: str, t: RowTable, m: _Measures, rows: np.ndarray, effect: dict[str, float]
) -> str:
    z = effect["z"]
    n = len(rows)
    if name == "length":
        batch = float(np.median(np.expm1(t.log_words[rows])))
        corpus = float(np.median(np.expm1(t.log_words)))
        side = "longer" if z > 0 else "shorter"
        return (
            f"length: {side} rows, median {batch:.0f} words against {corpus:.0f} in the "
            f"corpus (z {z:.1f})"
        )
    if name == "tokens":
        toks = np.concatenate([t.tokens[i] for i in rows]) if n else np.zeros(0, np.int64)
        counts = np.bincount(toks, minlength=len(t.vocab) + 1)[: len(t.vocab)]
        base = m.corpus_tokens[: len(t.vocab)]
        # words this batch holds most of (the corpus count includes the batch)
        ratio = np.where(counts >= 3, counts / np.maximum(base, 1), 0)
        top = [t.vocab[i] for i in np.argsort(-ratio, kind="stable")[:5] if ratio[i] > 0]
        words = f"; its words: {', '.join(repr(w[:20]) for w in top)}" if top else ""
        return (
            f"token distribution: Jensen-Shannon {effect['value']:.3f} from the corpus against "
            f"{effect['random_mean']:.3f}±{effect['random_sd']:.3f} for random batches "
            f"(z {z:.1f}){words}"
        )
    if name in ("source", "label"):
        codes = t.source if name == "source" else t.label
        names = t.sources if name == "source" else t.labels
        corpus = m.source_shares if name == "source" else m.label_shares
        top, count, share = _top_share(codes, names, corpus, rows)
        return (
            f"{name} mix: {count} of {n} rows are {top[:80]!r} against {_pct(share)} of the corpus "
            f"(z {z:.1f})"
        )
    label = next(lbl for key, lbl, _ in FAMILIES if key == name)
    codes = sorted({c for i in rows for c in t.flag_codes[i] if _family(c) == name})
    hit = int(t.flags[name][rows].sum())
    return (
        f"{label} ({', '.join(codes)}): {hit} of {n} rows flagged by the audit against "
        f"{_pct(m.flag_rates[name])} of the corpus (z {z:.1f})"
    )


def _family(code: str) -> str | None:
    for key, _, prefixes in FAMILIES:
        if any(code.startswith(p) for p in prefixes):
            return key
    return None


def _worst_rows(
    t: RowTable,
    m: _Measures,
    rows: np.ndarray,
    ranked: list[str],
    effects: dict[str, dict[str, float]],
) -> list[dict[str, Any]]:
    """The batch's rows, those that carry the most of its reasons first."""
    mu, sd = float(t.log_words.mean()), float(t.log_words.std()) or 1.0
    over = {}
    for name in ("source", "label"):
        if name in ranked:
            codes = t.source if name == "source" else t.label
            names = t.sources if name == "source" else t.labels
            corpus = m.source_shares if name == "source" else m.label_shares
            top = _top_share(codes, names, corpus, rows)[0]
            over[name] = (codes, names.index(top))
    corpus_p = (m.corpus_tokens + 0.5) / (m.corpus_tokens.sum() + 0.5 * len(m.corpus_tokens))
    scored = []
    for i in rows:
        score, why = 0.0, []
        for name in ranked:
            w = abs(effects[name]["z"])
            if name == "length":
                d = (t.log_words[i] - mu) / sd
                if d * effects[name]["z"] > 0:
                    score += w * min(abs(d), 5) / 5
                    why.append(f"{math.expm1(t.log_words[i]):.0f} words")
            elif name == "tokens":
                toks = t.tokens[i]
                if toks.size:
                    rare = float(np.mean(-np.log(corpus_p[toks])))
                    score += w * min(rare / 15, 1)
            elif name in over:
                codes, k = over[name]
                if codes[i] == k:
                    score += w
                    value = (t.sources if name == "source" else t.labels)[k]
                    why.append(f"{name} {value[:80]!r}")  # dataset text: bounded
            elif t.flags[name][i]:
                score += w
                why.append(", ".join(c for c in t.flag_codes[i] if _family(c) == name))
        scored.append((-score, int(i), why))
    scored.sort()
    return [
        {"row": row, "score": round(-neg, 3), "why": "; ".join(why)} for neg, row, why in scored
    ]

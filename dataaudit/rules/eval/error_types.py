"""EVAL003: the model's wrong rows, grouped into a few error types by their text."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import xxhash

from ...context import AuditContext
from ...rule import Direction, Finding, RuleResult, Severity
from ...wording import plural
from ._rows import EvalRule, Table, gather


class ErrorTypes(EvalRule):
    """The rows the model gets wrong, grouped into a few error types, each named by the words
    that set it apart and by its dominant confusion, with representative rows.

    What it does:
        Takes the wrong rows (all of them, or a seeded sample of ``max_rows``), represents each
        by word 1-2-gram tf-idf of its text (English stop words out, n-grams in at least two
        rows) and clusters them with seeded k-means into 2 to ``max_types`` types (at most one
        per ``min_type_rows`` wrong rows), the number chosen by the best cosine silhouette. Each type is reported with its size and share of
        the errors, its distinctive n-grams (highest centroid weight above the mean of all
        wrong rows), its dominant confusion (true -> predicted label, with its share) and the
        rows closest to its centroid as examples. Findings are notes: they describe, the other
        EVAL rules judge.

    Why it matters:
        A list of a thousand wrong rows is not something anyone reads; five error types with
        three rows each is. Types tied to a topic, a format or a label pair point to missing
        training data, a confusing label definition or a broken input.

    Example:
        ``type 1 (38% of errors): "def", "return", "import"; mostly 'python' -> 'computers'
        (71%)``.

    Options:
        max_types: most types (clusters) to form (default 5).
        min_type_rows: wrong rows per type on average at least: k is at most the wrong rows
            over this (default 10), so a few wrong rows are not cut into noise clusters.
        min_rows: fewest wrong rows to cluster (default 20).
        max_rows: wrong rows clustered at most (a seeded sample beyond; default 5000).
        max_chars: characters of each wrong row's text used (default 1000).
        top_ngrams: n-grams that name a type (default 5).
    """

    code = "EVAL003"
    name = "eval.error-types"
    severity = Severity.INFO

    def __init__(
        self,
        max_types: int = 5,
        min_type_rows: int = 10,
        min_rows: int = 20,
        max_rows: int = 5000,
        max_chars: int = 1000,
        top_ngrams: int = 5,
    ):
        self.max_types = max_types
        self.min_type_rows = min_type_rows
        self.min_rows = min_rows
        self.max_rows = max_rows
        self.max_chars = max_chars
        self.top_ngrams = top_ngrams

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        t = gather(state["rows"])
        result = RuleResult(thresholds={"max_types": self.max_types, "min_rows": self.min_rows})
        wrong = np.flatnonzero(t.wrong)
        result.metric("wrong_rows", len(wrong), Direction.LOWER)
        if t.n == 0:
            result.skipped = "no row with a prediction has a label or score to judge it by"
            return result
        sampled = _sample(t, wrong, int(self.max_rows), ctx.seed)
        info: dict[str, Any] = {"wrong_rows": len(wrong), "clustered": len(sampled)}
        if len(sampled) < int(self.min_rows):
            info["note"] = (
                f"{plural(len(sampled), 'wrong row')}: fewer than min_rows={self.min_rows}, "
                "not clustered"
            )
            result.details = info
            result.metric("error_types", 0, Direction.NONE)
            return result
        texts = [t.text[i] or "" for i in sampled.tolist()]
        most = min(int(self.max_types), len(texts) // max(int(self.min_type_rows), 1))
        clusters = _cluster(texts, max(most, 2), ctx.seed)
        if clusters is None:
            info["note"] = "the wrong rows share too few words (n-grams in 2+ rows) to cluster"
            result.details = info
            result.metric("error_types", 0, Direction.NONE)
            return result
        labels, x, names, silhouette = clusters
        k = int(labels.max()) + 1
        info["silhouette"] = round(silhouette, 4)
        mean = np.asarray(x.mean(axis=0)).ravel()
        types = []
        for c in range(k):
            members = np.flatnonzero(labels == c)
            rows = sampled[members]
            centroid = np.asarray(x[members].mean(axis=0)).ravel()
            lift = centroid - mean
            top = [
                names[j] for j in np.argsort(-lift, kind="stable")[: int(self.top_ngrams)]
                if lift[j] > 0
            ]  # fmt: skip
            pairs = Counter((t.gold[i], t.pred[i]) for i in rows.tolist() if t.pred[i] is not None)
            confusion = None
            if pairs:
                (g, p), cnt = sorted(pairs.items(), key=lambda kv: (-kv[1], str(kv[0])))[0]
                confusion = {"true": g, "predicted": p, "rows": cnt, "share": cnt / len(rows)}
            # representatives: the rows closest to the centroid (cosine; rows are l2-normed)
            sims = np.asarray(x[members] @ centroid).ravel()
            reps = members[np.lexsort((members, -sims))][: ctx.max_examples]
            types.append(
                {
                    "size": len(rows),
                    "share": len(rows) / len(sampled),
                    "ngrams": top,
                    "confusion": confusion,
                    "examples": [t.example(ctx, int(sampled[j])) for j in reps],
                    "splits": sorted({str(t.split[i]) for i in rows.tolist()}),
                }
            )
        types.sort(key=lambda ty: (-ty["size"], ty["ngrams"]))
        for n_type, ty in enumerate(types, 1):
            conf = ty["confusion"]
            conf_text = (
                f"; mostly {conf['true']!r} -> {conf['predicted']!r} ({conf['share']:.0%})"
                if conf
                else ""
            )
            words = ", ".join(repr(w) for w in ty["ngrams"]) or "no distinctive words"
            result.findings.append(
                Finding(
                    message=f"error type {n_type} ({plural(ty['size'], 'row')}, "
                    f"{ty['share']:.0%} of the wrong rows): {words}{conf_text}",
                    key="type|"
                    + (f"{conf['true']}->{conf['predicted']}|" if conf else "")
                    + "|".join(sorted(ty["ngrams"][:3])),
                    count=ty["size"],
                    examples=ty["examples"],
                    data={
                        "ngrams": ty["ngrams"],
                        "share": round(ty["share"], 4),
                        "confusion": None
                        if conf is None
                        else {**conf, "share": round(conf["share"], 4)},
                        "splits": ty["splits"],
                    },
                )
            )
        result.metric("error_types", len(types), Direction.NONE)
        info["types"] = [
            {
                "size": ty["size"],
                "share": round(ty["share"], 4),
                "ngrams": ty["ngrams"],
                "confusion": None
                if ty["confusion"] is None
                else {**ty["confusion"], "share": round(ty["confusion"]["share"], 4)},
            }
            for ty in types
        ]
        result.details = info
        return result


def _sample(t: Table, wrong: np.ndarray, max_rows: int, seed: int) -> np.ndarray:
    """All wrong rows, or the ``max_rows`` with the smallest seeded hash of (split, row)."""
    if len(wrong) <= max_rows:
        return wrong
    keys = np.array(
        [
            xxhash.xxh3_64_intdigest(f"{seed}|{t.split[i]}|{t.row[i]}".encode())
            for i in wrong.tolist()
        ],
        dtype=np.uint64,
    )
    return np.sort(wrong[np.argsort(keys, kind="stable")[:max_rows]])


def _cluster(texts: list[str], max_types: int, seed: int):
    """(labels, tf-idf matrix, feature names, silhouette) or None when there is nothing to
    cluster on. Seeded k-means for k = 2..max_types; the best cosine silhouette wins."""
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics import silhouette_score

    vec = TfidfVectorizer(
        ngram_range=(1, 2),
        min_df=2,
        max_features=20000,
        stop_words="english",
        sublinear_tf=True,
        token_pattern=r"(?u)\b[^\W\d_][\w']+\b",
    )
    try:
        x = vec.fit_transform(texts)
    except ValueError:  # empty vocabulary
        return None
    if x.shape[1] < 2 or x.nnz == 0:
        return None
    names = vec.get_feature_names_out().tolist()
    best = None
    rng = np.random.RandomState(seed)
    sample = None
    if x.shape[0] > 2000:
        sample = np.sort(rng.choice(x.shape[0], 2000, replace=False))
    for k in range(2, max(2, min(max_types, x.shape[0] - 1)) + 1):
        km = KMeans(n_clusters=k, random_state=seed, n_init=5)
        labels = km.fit_predict(x)
        if len(set(labels.tolist())) < 2:
            continue
        xs, ls = (x, labels) if sample is None else (x[sample], labels[sample])
        if len(set(ls.tolist())) < 2:
            continue
        s = float(silhouette_score(xs, ls, metric="cosine", random_state=seed))
        if best is None or s > best[3] + 1e-12:
            best = (labels, x, names, s)
    if best is None:
        return None
    labels, x, names, s = best
    # number the types by first appearance, so labels do not depend on k-means' own numbering
    remap: dict[int, int] = {}
    for v in labels.tolist():
        remap.setdefault(v, len(remap))
    return np.array([remap[v] for v in labels.tolist()]), x, names, s

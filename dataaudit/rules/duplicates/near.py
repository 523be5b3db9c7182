"""DUP002: near-duplicate documents (MinHash + LSH, verified, clustered)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, Flag, Rule, RuleResult, Severity
from ...sketches.lsh import choose_bands, near_duplicate_pairs, s_curve
from ...sketches.minhash import ShingleSets, pair_jaccard
from ...sketches.state import PerSplit
from .._columns import append, cat, key_hex, texts
from .._ids import take_ids
from .._minhash import (
    check_minhash_options,
    digest,
    minhash_columns,
    minhash_params,
    shared_candidates,
    shingle_params,
)
from .._origin import check_origin, state_origin
from ._sources import per_source, source_values


def lsh_params(rule: Any) -> tuple[int, int]:
    if rule.bands is not None and rule.rows is not None:
        return int(rule.bands), int(rule.rows)
    return choose_bands(float(rule.threshold), int(rule.num_perm))


class NearDuplicates(Rule):
    """Near-duplicate documents within a split: MinHash-LSH candidates, verified, clustered.

    What it does:
        Shingles each row's normalized text into word ``ngram``-grams (character n-grams for rows
        in scripts without spaces with ``unit: auto``), computes ``num_perm`` MinHash values
        (the shared ``minhash`` feature), finds candidate pairs by LSH banding, verifies each
        candidate by the exact Jaccard of the two shingle sets (``verify: exact``) or the
        signature estimate (``verify: estimate``), and joins verified pairs into clusters
        (connected components). Bands × rows are chosen so that >= 98% of pairs at exactly the
        threshold become candidates (datasketch's default choice finds ~40% there). It reports the
        near-duplicate rate (rows removable keeping one per cluster), the cluster count and size
        distribution, the largest clusters with examples and their similarity to the kept row,
        and the rate per source. Rows of a cluster are flagged with the cluster id (its smallest
        row): the smallest row ``kept`` with the action ``keep``, the others ``duplicate`` with
        the action ``drop``; the score is the Jaccard of the row's closest verified pair in its
        cluster (1.0 for identical signatures). Clusters whose rows are all the same normalized
        text
        count in the rate but are left to DUP001 for findings. Rows without any shingle (empty
        text) are never clustered; their count is reported.

    Why it matters:
        Templated pages, boilerplate and lightly edited copies multiply their weight in training
        just like exact copies, but no hash finds them.

    Example:
        Two 300-word articles differing in a handful of words (Jaccard 0.9 of their 5-word
        shingles) form a cluster of two: one kept, one duplicate.

    Options:
        threshold: Jaccard similarity of the shingle sets at or above which two rows are near
            duplicates (default 0.8).
        num_perm: MinHash values per row (default 128).
        ngram: tokens per shingle (default 5).
        unit: "word", "char" or "auto" (default: character shingles for rows written mostly in
            Chinese/Japanese/Thai-like scripts, words otherwise).
        verify: "exact" (default; keeps ~4 bytes per shingle of each row until the end) or
            "estimate" (signature agreement only; no extra memory). Per row the audit keeps
            4 x num_perm bytes of signature, a snippet and, for "exact", the shingle hashes:
            ~2 KB for a 300-word row (1M such rows peaked at 2.9 GB), ~0.8 KB with "estimate".
        bands, rows: LSH banding (default: chosen from the threshold, e.g. 18 × 7 for 0.8).
        max_findings: the largest clusters reported as findings per split (default 20).
    """

    code = "DUP002"
    name = "duplicates.near"
    groups = ("default", "duplicates")
    severity = Severity.WARN
    requires = ("text",)

    def __init__(
        self,
        threshold: float = 0.8,
        num_perm: int = 128,
        ngram: int = 5,
        unit: str = "auto",
        verify: str = "exact",
        bands: int | None = None,
        rows: int | None = None,
        max_findings: int = 20,
    ):
        self.threshold = threshold
        self.num_perm = num_perm
        self.ngram = ngram
        self.unit = unit
        self.verify = verify
        self.bands = bands
        self.rows = rows
        self.max_findings = max_findings

    def check_options(self) -> None:
        check_minhash_options(self)
        if (self.bands is None) != (self.rows is None):
            raise ValueError("set both bands and rows, or neither")
        if self.bands is not None and int(self.bands) * int(self.rows) > int(self.num_perm):
            raise ValueError(f"bands*rows = {self.bands}*{self.rows} exceeds num_perm")

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        return {
            "origin": state_origin(self, ctx),
            "chars": ctx.example_chars,
            "splits": PerSplit(dict),
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        cols = minhash_columns(self, batch, state["chars"])
        cols["unit"] = batch.feature("shingle_unit", **shingle_params(self))
        sources = source_values(batch)
        if sources is not None:
            cols["source"] = sources
        append(state, batch.split, **cols)
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {**a, "splits": a["splits"].merge(b["splits"])}

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        bands, rows_per_band = lsh_params(self)
        threshold = float(self.threshold)
        result = RuleResult(
            thresholds={
                "threshold": threshold,
                "bands": bands,
                "rows": rows_per_band,
                "recall_at_threshold": round(float(s_curve(threshold, bands, rows_per_band)), 4),
            }
        )
        details: dict[str, Any] = {}
        for split in sorted(state["splits"]):
            details[split] = self._split(
                split, state["splits"][split], ctx, result, bands, rows_per_band
            )
        result.details = {"splits": details}
        return result

    def _split(
        self,
        split: str,
        sp: dict[str, list[Any]],
        ctx: AuditContext,
        result: RuleResult,
        bands: int,
        rows_per_band: int,
    ) -> dict[str, Any]:
        threshold = float(self.threshold)
        n = sum(len(c) for c in sp.get("rows", []))
        # the LSH candidates are computed once per audit (LBL001 clusters the same signatures); each
        # split is finished once: consume its parts while concatenating (halves the peak)
        data = digest(sp.get("rows", []), sp.get("sig", []))
        sets = ShingleSets.concat(sp["sets"], consume=True) if sp.get("sets") else None
        sig = cat(sp.get("sig", []), np.uint32, int(self.num_perm), consume=True)

        candidates = shared_candidates(
            ctx, split, data, minhash_params(self), bands, rows_per_band, lambda: sig
        )
        verify = (
            (lambda a, b: pair_jaccard(sets, a, b, signatures=sig, threshold=threshold))
            if sets is not None
            else None
        )
        labels, ea, eb, es = near_duplicate_pairs(
            sig, threshold, bands=bands, rows=rows_per_band, verify=verify, candidates=candidates
        )
        rows = cat(sp.get("rows", []), np.int64, consume=True)
        unit = cat(sp.get("unit", []), np.uint8, consume=True)
        h = cat(sp.get("hash", []), np.uint64, consume=True)
        no_shingle = int((unit == 0).sum())
        member = labels >= 0
        cluster_ids, cluster_size = np.unique(labels[member], return_counts=True)
        kept = member & (labels == np.arange(n))
        removable = member & ~kept
        dup_rows = int(removable.sum())
        result.metric("near_duplicate_rows", dup_rows, Direction.LOWER, split=split)
        result.metric(
            "near_duplicate_rate", dup_rows / n if n else 0.0, Direction.LOWER, split=split
        )
        result.metric("clusters", len(cluster_ids), Direction.LOWER, split=split)
        result.metric(
            "largest_cluster",
            int(cluster_size.max()) if len(cluster_size) else 0,
            Direction.LOWER,
            split=split,
        )
        result.metric("rows_without_shingles", no_shingle, Direction.NONE, split=split)
        flagged = np.flatnonzero(member)
        # score: the row's closest verified pair (free: the clustering computed it)
        closest = np.zeros(n)
        if len(ea):
            np.maximum.at(closest, ea, es)
            np.maximum.at(closest, eb, es)
        result.flags.extend(
            Flag(
                split,
                row,
                str(cluster),
                "kept" if keep else "duplicate",
                action="keep" if keep else "drop",
                score=score,
                id=row_id,
            )
            for row, cluster, keep, score, row_id in zip(
                rows[flagged].tolist(),
                rows[labels[flagged]].tolist(),
                kept[flagged].tolist(),
                np.round(closest[flagged], 4).tolist(),
                take_ids(sp.get("ids", []), flagged),
            )
        )
        # clusters with more than one distinct text get findings (exact-only ones: DUP001)
        order = np.lexsort((np.arange(n)[member], h[member], labels[member]))
        lab_sorted = labels[member][order]
        h_sorted = h[member][order]
        distinct = np.ones(len(lab_sorted), bool)
        if len(lab_sorted):
            distinct[1:] = (lab_sorted[1:] != lab_sorted[:-1]) | (h_sorted[1:] != h_sorted[:-1])
        n_distinct = np.bincount(
            np.searchsorted(cluster_ids, lab_sorted), weights=distinct, minlength=len(cluster_ids)
        )
        near_clusters = cluster_ids[n_distinct > 1]
        near_sizes = cluster_size[n_distinct > 1]
        result.metric("near_only_clusters", len(near_clusters), Direction.LOWER, split=split)
        pick = np.lexsort((near_clusters, -near_sizes))[: int(self.max_findings)]
        for c in pick:
            self._finding(split, int(near_clusters[c]), labels, rows, h, sets, sig, sp, ctx, result)
        rest = len(near_clusters) - len(pick)
        if rest > 0:
            rest_rows = int(near_sizes.sum() - len(near_sizes)) - int((near_sizes[pick] - 1).sum())
            result.findings.append(
                Finding(
                    message=f"{split}: {rest} more near-duplicate clusters ({rest_rows} removable rows)",
                    key=f"{split}:more",
                    severity=Severity.INFO,
                    count=rest_rows,
                    split=split,
                    rollup=True,
                )
            )
        if no_shingle:
            result.findings.append(
                Finding(
                    message=(
                        f"{split}: {no_shingle} rows have no text to shingle (null, empty or "
                        "whitespace) and were not compared"
                    ),
                    key=f"{split}:no-shingles",
                    severity=Severity.INFO,
                    count=no_shingle,
                    split=split,
                )
            )
        sims = es[(ea >= 0)] if len(es) else es
        return {
            "rows": n,
            "near_duplicate_rows": dup_rows,
            "clusters": len(cluster_ids),
            "near_only_clusters": len(near_clusters),
            "cluster_sizes": _histogram(cluster_size),
            "verified_pairs": int(len(ea)),
            "mean_pair_similarity": round(float(sims.mean()), 4) if len(sims) else None,
            "rows_by_unit": {
                "none": no_shingle,
                "word": int((unit == 1).sum()),
                "char": int((unit == 2).sum()),
            },
            "per_source": per_source(sp.get("source", []), removable, n),
        }

    def _finding(self, split, cid, labels, rows, h, sets, sig, sp, ctx, result) -> None:
        members = np.flatnonzero(labels == cid)  # positions, in row order; first = kept
        k = len(members)
        shown = members[: ctx.max_examples]
        rep = members[0]
        if sets is not None:
            sim = pair_jaccard(sets, np.full(len(shown), rep), shown)
        else:
            from ...sketches.minhash import jaccard_estimate

            sim = jaccard_estimate(sig[np.full(len(shown), rep)], sig[shown])
        sim[0] = 1.0
        snips = texts(sp.get("snip", []), shown)
        result.findings.append(
            Finding(
                message=(
                    f"{split}: {k} near-duplicate rows (Jaccard >= {self.threshold}); "
                    f"kept row {int(rows[rep])}, {k - 1} removable"
                ),
                key=f"{split}:{key_hex(h[members].min())}",  # member content, not row order
                count=k - 1,
                split=split,
                examples=[
                    ctx.example(split, int(rows[p]), t, similarity=round(float(s), 4))
                    for p, t, s in zip(shown, snips, sim)
                ],
                data={"rows": [int(r) for r in rows[members[:100]]], "size": int(k)},
            )
        )


def _histogram(sizes: np.ndarray) -> dict[str, int]:
    from .exact import _size_histogram

    return _size_histogram(np.asarray(sizes))

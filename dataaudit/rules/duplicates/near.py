"""DUP002: near-duplicate documents (MinHash + LSH, verified, clustered)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..._arrow import bools, fixed, indices, mask_array, numeric_array, strings
from ..._compute import call, cast, take
from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, Rule, RuleResult, Severity
from ...sketches.lsh import choose_bands, s_curve, signature_keys
from ...sketches.minhash import empty_rows, jaccard_estimate, pair_jaccard
from ...sketches.state import PerSplit
from ...wording import plural
from .._columns import key_hex, nonempty_hash, snippet
from .._keyed_minhash import (
    band_rows,
    bucket_pairs,
    set_column,
    sets_of,
    sig_column,
    signatures_of,
)
from .._minhash import check_minhash_options, minhash_params, shingle_params
from .._origin import check_origin, state_origin
from ._sources import source_values, two_labels, with_row_labels


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
        count in the rate but are left to DUP001 for findings (one info finding says how many
        rows they hold). Rows without any shingle (empty text) are never clustered; their count
        is reported.

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
        verify: "exact" (default; the Jaccard of the shingle sets, ~4 bytes per shingle) or
            "estimate" (signature agreement only). The rows go through the engine's keyed
            stage, not the rule's state: each row with shingles emits one key per band, its
            shingle set ("exact") or signature ("estimate") and snippet are spilled once (on
            disk locally, the object store on Ray) and only candidate pairs meet them, so memory
            is one partition, not every row (a 75-word row spills 0.5 KB of band keys and
            0.6 KB of payload; a 300-word row ~2.0 KB with "exact", ~1.3 KB with "estimate").
        bands, rows: LSH banding (default: chosen from the threshold, e.g. 18 × 7 for 0.8).
        max_findings: the largest clusters reported as findings per split (default 20).
    """

    code = "DUP002"
    name = "duplicates.near"
    groups = ("default", "duplicates")
    severity = Severity.WARN
    requires = ("text",)
    keyed = True  # rows meet by LSH band in the engine's keyed stage, verified where they meet

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

    #: what every cluster member brings to the finish (flags, rates, distinct texts)
    member_columns = ("hash", "id", "source")

    @property
    def fetch_columns(self) -> tuple[str, ...]:
        """What the finish reads for the findings' examples only (their snippets and their
        similarity to the kept row): fetched for those rows, not carried by every member."""
        return ("snip", "sets" if self.verify == "exact" else "sig")

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        return {
            "origin": state_origin(self, ctx),
            "chars": ctx.example_chars,
            "splits": PerSplit(dict),
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        # counts only: the rows themselves go through the keyed stage (emit, emit_rows)
        sp = state["splits"].at(batch.split)
        sp["rows"] = sp.get("rows", 0) + batch.num_rows
        unit = np.asarray(batch.feature("shingle_unit", **shingle_params(self)))
        by_unit = np.bincount(unit, minlength=3)
        for i, name in enumerate(("none", "word", "char")):
            sp[name] = sp.get(name, 0) + int(by_unit[i])
        sources = source_values(batch)
        if sources is not None:
            counts = sp.setdefault("sources", {})
            for item in call("value_counts", sources).to_pylist():
                counts[item["values"]] = counts.get(item["values"], 0) + item["counts"]
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {**a, "splits": a["splits"].merge(b["splits"])}

    # -- the keyed stage ---------------------------------------------------------------------
    def _valid(self, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
        sig = batch.feature("minhash", **minhash_params(self))
        return sig, np.flatnonzero(~empty_rows(sig))

    def emit(self, state: dict[str, Any], batch: Batch) -> pa.Table | None:
        """Per row with shingles, one key per LSH band (the band's hash, seeded by the band) with
        the hash of the whole signature (rows with identical signatures are collapsed where
        they meet) and the band's index: 17 bytes a row and band, no signature."""
        sig, idx = self._valid(batch)
        if not len(idx):
            return None
        bands, per_band = lsh_params(self)
        keys, at, band = band_rows(sig, idx, bands, per_band)
        full = signature_keys(sig, rows=idx)
        rows = np.asarray(batch.row_ids, np.int64)[idx]
        return pa.table(
            {
                "key": numeric_array(np.asarray(keys, np.uint64)),
                "row": numeric_array(rows[at]),
                "full": numeric_array(np.asarray(full[at], np.uint64)),
                "band": numeric_array(np.asarray(band, np.uint8)),
            }
        )

    def emit_rows(self, state: dict[str, Any], batch: Batch) -> pa.Table | None:
        """Per row with shingles, what verifying it and showing it takes: its shingle set
        (``verify: exact``) or its signature (``verify: estimate``), exact-duplicate hash,
        snippet, id and source. Not the signature with ``exact``: it only pre-filtered the
        candidates before their merge, and most rows are never candidates (bench_dedup's 40k
        corpora: ~1,900 candidate pairs, merged in ~0.05 s, for 512 B written per row)."""
        sig, idx = self._valid(batch)
        if not len(idx):
            return None
        at = indices(idx)
        every = len(idx) == batch.num_rows  # the usual batch: its columns whole, not copied
        snip = cast(snippet(batch, state["chars"]), pa.large_string())
        cols: dict[str, Any] = {
            "row": numeric_array(np.asarray(batch.row_ids, np.int64)[idx]),
            "hash": numeric_array(np.asarray(nonempty_hash(batch)[idx], np.uint64)),
            "snip": snip if every else take(snip, at),
        }
        if self.verify == "exact":
            cols["sets"] = set_column(batch.feature("shingle_sets", **shingle_params(self)), idx)
        else:
            cols["sig"] = sig_column(sig if every else sig[idx])
        return with_row_labels(cols, batch, at)

    def edges(self, part: pa.Table) -> pa.Table:
        """Candidate pairs of one partition, rows sorted by (key, split, row): a bucket is a run
        of one key within one split. In a bucket, a row whose whole signature an earlier row
        has is that row's copy (``same``: an edge without verification, from band 0 only); the
        other rows chain as the in-process LSH chains them: each to the bucket's first and to
        its predecessor."""
        n = part.num_rows
        keys = fixed(part.column("key"))
        split = part.column("split")
        split = split.combine_chunks() if isinstance(split, pa.ChunkedArray) else split
        codes = fixed(call("dictionary_encode", split).indices)
        full = fixed(part.column("full"))
        band = fixed(part.column("band"))
        new = np.ones(n, bool)
        new[1:] = (keys[1:] != keys[:-1]) | (codes[1:] != codes[:-1])
        a, b, copies = bucket_pairs(new, full, band)
        same = np.zeros(len(a), bool)
        same[:copies] = True
        row = part.column("row")
        ia, ib = indices(a), indices(b)
        return pa.table(
            {
                "split_a": take(split, ia),
                "row_a": take(row, ia),
                "split_b": take(split, ib),
                "row_b": take(row, ib),
                "same": mask_array(same),
            }
        )

    def verify_pairs(self, pairs: pa.Table, rows: pa.Table) -> pa.Table:
        """Accept a pair at Jaccard >= threshold: exact Jaccard of the shingle sets, every
        candidate merged (no signature pre-filter: see :meth:`emit_rows`), or the signature
        estimate; copies (identical signatures) score 1.0 unverified."""
        threshold = float(self.threshold)
        a = fixed(pairs.column("at_a"))
        b = fixed(pairs.column("at_b"))
        same = bools(pairs.column("same"))
        check = np.flatnonzero(~same)
        if self.verify == "exact":
            sim = pair_jaccard(sets_of(rows.column("sets")), a[check], b[check])
        else:
            sig = signatures_of(rows.column("sig"), int(self.num_perm))
            sim = np.asarray(jaccard_estimate(sig[a[check]], sig[b[check]]), float)
        score = np.ones(len(a))
        score[check] = sim
        ok = same.copy()
        ok[check] = sim >= threshold
        keep = indices(np.flatnonzero(ok))
        out = take(pairs.select(["split_a", "row_a", "split_b", "row_b"]), keep)
        return out.append_column("score", numeric_array(score[ok]))

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        raise RuntimeError(
            f"{self.code} finds its clusters in the engine's keyed stage (finish_keyed)"
        )

    def finish_keyed(
        self, state: dict[str, Any], clusters: list[Any], ctx: AuditContext
    ) -> RuleResult:
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
        by_split: dict[str, list[Any]] = {}
        for cluster in clusters:  # edges join rows of one split only
            by_split.setdefault(cluster[0][0], []).append(cluster)
        edges = getattr(clusters, "edges", None)
        details: dict[str, Any] = {}
        for split in sorted(state["splits"]):
            details[split] = self._split(
                split,
                state["splits"][split],
                by_split.get(split, []),
                clusters,
                _split_scores(edges, split),
                ctx,
                result,
            )
        result.details = {"splits": details}
        return result

    def _split(
        self,
        split: str,
        sp: dict[str, Any],
        groups: list[Any],
        clusters: Any,
        scores: np.ndarray,
        ctx: AuditContext,
        result: RuleResult,
    ) -> dict[str, Any]:
        n = int(sp.get("rows", 0))
        no_shingle = int(sp.get("none", 0))
        sizes = np.array([len(g) for g in groups], np.int64)
        dup_rows = int(sizes.sum() - len(sizes))
        result.metric("near_duplicate_rows", dup_rows, Direction.LOWER, split=split)
        result.metric(
            "near_duplicate_rate", dup_rows / n if n else 0.0, Direction.LOWER, split=split
        )
        result.metric("clusters", len(groups), Direction.LOWER, split=split)
        result.metric(
            "largest_cluster", int(sizes.max()) if len(sizes) else 0, Direction.LOWER, split=split
        )
        result.metric("rows_without_shingles", no_shingle, Direction.NONE, split=split)
        removable: dict[str, int] = {}
        near = np.zeros(0, np.int64)  # clusters with more than one distinct text
        exact_rows = 0
        hashes = np.zeros(0, np.uint64)
        table = clusters.rows if groups else None
        if groups:
            # every member at once, cluster after cluster (at: its row in the clusters' table)
            starts = np.array([g.at for g in groups], np.int64)
            ends = np.cumsum(sizes)
            offset = np.arange(int(ends[-1]), dtype=np.int64) - np.repeat(ends - sizes, sizes)
            at = np.repeat(starts, sizes) + offset
            rows = fixed(table.column("row"))
            first = offset == 0
            result.flags.add(
                split,
                rows[at],
                group=np.repeat(rows[starts], sizes),  # the first row, written as text
                detail=two_labels(first, "kept", "duplicate"),
                action=two_labels(first, "keep", "drop"),
                # rounded as numpy rounds (half to even on the scaled value), as always
                score=np.round(fixed(table.column("score"))[at], 4),
                id=take(table.column("id"), at) if "id" in table.column_names else None,
            )
            if "source" in table.column_names:
                drop = take(table.column("source"), at[~first])
                for item in call("value_counts", drop).to_pylist():
                    removable[item["values"]] = int(item["counts"])
            hashes = fixed(table.column("hash"))
            cid = np.repeat(np.arange(len(groups)), sizes)
            h = hashes[at]
            order = np.lexsort((h, cid))
            distinct = np.ones(len(order), bool)
            distinct[1:] = (cid[order][1:] != cid[order][:-1]) | (h[order][1:] != h[order][:-1])
            texts = np.bincount(cid[order], weights=distinct, minlength=len(groups))
            near = np.flatnonzero(texts > 1)
            exact_rows = int((sizes[texts <= 1] - 1).sum())
        near_sizes = sizes[near]
        near_firsts = np.array([groups[c][0][1] for c in near.tolist()], np.int64)
        result.metric("near_only_clusters", len(near), Direction.LOWER, split=split)
        pick = np.lexsort((near_firsts, -near_sizes))[: int(self.max_findings)]
        chosen = [groups[int(near[i])] for i in pick.tolist()]
        shown = [min(len(g), ctx.max_examples) for g in chosen]
        # the shown members' payload of every finding in one read (engine/keyed.py:
        # Clusters.fetch; one read per finding took each payload batch up to 20 times)
        shown_at = [g.at + p for g, k in zip(chosen, shown) for p in range(k)]
        columns = list(self.fetch_columns)
        fetched = clusters.fetch(columns, np.array(shown_at, np.int64)) if shown_at else None
        start = 0
        for group, k in zip(chosen, shown):
            rows = fetched.slice(start, k)
            start += k
            self._finding(split, group, rows, hashes, ctx, result)
        rest = len(near) - len(pick)
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
        exact_clusters = len(groups) - len(near)
        if exact_clusters:  # flagged here, reported by DUP001: say so, not a bare "PASS"
            result.findings.append(
                Finding(
                    message=(
                        f"{split}: {plural(exact_clusters, 'cluster')} of identical normalized "
                        f"text ({plural(exact_rows, 'removable row')}) are flagged here and "
                        "reported by DUP001"
                    ),
                    key=f"{split}:exact-only",
                    severity=Severity.INFO,
                    count=exact_rows,
                    split=split,
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
        return {
            "rows": n,
            "near_duplicate_rows": dup_rows,
            "clusters": len(groups),
            "near_only_clusters": len(near),
            "cluster_sizes": _histogram(sizes),
            "verified_pairs": int(len(scores)),
            "mean_pair_similarity": round(float(scores.mean()), 4) if len(scores) else None,
            "rows_by_unit": {
                "none": no_shingle,
                "word": int(sp.get("word", 0)),
                "char": int(sp.get("char", 0)),
            },
            "per_source": _per_source(sp.get("sources"), removable, n),
        }

    def _finding(self, split, group, shown_rows, hashes, ctx, result) -> None:
        """The finding of one cluster; ``shown_rows``: its first members' payload (those shown)."""
        members = [row for _, row in group]  # in row order; first = kept
        k, at = len(members), group.at
        shown = shown_rows.num_rows
        pos = np.arange(shown, dtype=np.int64)
        if self.verify == "exact":
            sets = sets_of(shown_rows.column("sets"))
            sim = pair_jaccard(sets, np.zeros(shown, np.int64), pos)
        else:
            sig = signatures_of(shown_rows.column("sig"), int(self.num_perm))
            sim = jaccard_estimate(sig[np.zeros(shown, np.int64)], sig[pos])
        sim[0] = 1.0
        snips = shown_rows.column("snip").to_pylist()
        result.findings.append(
            Finding(
                message=(
                    f"{split}: {k} near-duplicate rows (Jaccard >= {self.threshold}); "
                    f"kept row {members[0]}, {k - 1} removable"
                ),
                key=f"{split}:{key_hex(hashes[at : at + k].min())}",  # content, not row order
                count=k - 1,
                split=split,
                examples=[
                    ctx.example(split, members[p], t, similarity=round(float(s), 4))
                    for p, t, s in zip(range(shown), snips, sim)
                ],
                data={"rows": members[:100], "size": int(k)},
            )
        )


def _split_scores(edges: pa.Table | None, split: str) -> np.ndarray:
    """The scores of the split's verified edges, in (first end, second end) order."""
    if edges is None or edges.num_rows == 0:
        return np.zeros(0)
    mask = call("equal", edges.column("split"), strings([split], pa.string())[0])
    return np.asarray(fixed(call("filter", edges.column("score"), mask)), float)


def _per_source(
    rows: dict[str, int] | None, removable: dict[str, int], n: int
) -> dict[str, dict[str, float | int]]:
    from .exact import _per_source as per_source

    return per_source(rows, removable, n)


def _histogram(sizes: np.ndarray) -> dict[str, int]:
    from .exact import _size_histogram

    return _size_histogram(np.asarray(sizes))

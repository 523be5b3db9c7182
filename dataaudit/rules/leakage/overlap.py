"""LEAK001: eval rows that are exact or near copies of train rows."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, Flag, Rule, RuleResult, Severity
from ...sketches.lsh import choose_bands, cross_candidates
from ...sketches.minhash import ShingleSets, jaccard_estimate, pair_jaccard
from ...sketches.state import PerSplit
from .._columns import append, cat, key_hex, texts
from .._ids import take_ids
from .._minhash import check_minhash_options, minhash_columns
from .._origin import check_origin, state_origin

MAX_MATCHES = 5


def _take(sp: dict[str, Any], key: str, free: bool) -> list[Any]:
    """A copy of the split's list of ``key`` chunks; ``free``: and empty the split's own list, so
    each chunk is freed once the caller has copied it."""
    chunks = list(sp.get(key, []))
    if free and key in sp:
        sp[key] = []
    return chunks


class TrainEvalOverlap(Rule):
    """Eval rows that also sit in train: exact copies and near copies.

    What it does:
        For each validation/test split (and any ``pairs`` you name), finds rows whose
        normalized text equals a train row (same hash as DUP001), and rows whose shingle sets
        have Jaccard >= ``threshold`` with a train row (MinHash-LSH candidates between the two
        splits, verified like DUP002). Each leaked eval row is a finding with its train matches
        and their similarity.

        Both sides are flagged, with ``detail`` exact/near, the similarity as score and one
        cluster id per leaked eval row (``test:74``): the eval row with the action ``keep`` (the
        benchmark stays intact) and every train row that matches it with the action ``drop``
        (all exact copies; near copies as LSH finds them, at most 10 train rows per eval row
        and band bucket). A train row matching several eval rows is flagged once, in the
        cluster of its closest match. For ``pairs`` whose reference split is not a train split,
        the reference rows get ``review`` instead of ``drop``.

    Why it matters:
        An eval row that the model saw in training measures memorization, not generalization:
        every metric on that split is inflated, silently.

    Example:
        ``test`` row 74 has the same text as ``train`` row 122, and ``validation`` row 96 differs
        from ``train`` row 589 by a few words: both are reported, and the rule fails the gate.

    Options:
        threshold: Jaccard at or above which an eval row counts as a near copy (default 0.7,
            lower than DUP002's 0.8: a leak costs more than a duplicate).
        num_perm, ngram, unit: MinHash parameters, as DUP002 (defaults 128, 5, auto).
        verify: "exact" (default) or "estimate", as DUP002.
        pairs: extra [eval_split, reference_split] pairs to compare (default none: each eval split
            against train).
        max_findings: leaked rows reported as findings per split (default 50); the rest are
            counted in one summary finding.
    """

    code = "LEAK001"
    name = "leakage.train-eval-overlap"
    groups = ("default", "leakage")
    severity = Severity.ERROR
    requires = ("text", "eval_split")

    def __init__(
        self,
        threshold: float = 0.7,
        num_perm: int = 128,
        ngram: int = 5,
        unit: str = "auto",
        verify: str = "exact",
        pairs: list[list[str]] | None = None,
        max_findings: int = 50,
    ):
        self.threshold = threshold
        self.num_perm = num_perm
        self.ngram = ngram
        self.unit = unit
        self.verify = verify
        self.pairs = pairs
        self.max_findings = max_findings

    def check_options(self) -> None:
        check_minhash_options(self)
        for p in self.pairs or []:
            if len(p) != 2:
                raise ValueError(f"pairs: {p!r} is not [eval_split, reference_split]")

    def _comparisons(self, ctx: AuditContext) -> list[tuple[str, str]]:
        train = ctx.train_split()
        out = [(e, train) for e in ctx.eval_splits()] if train else []
        for e, ref in self.pairs or []:
            if (e, ref) not in out:
                out.append((str(e), str(ref)))
        return out

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        return {
            "origin": state_origin(self, ctx),
            "chars": ctx.example_chars,
            "splits": PerSplit(dict),
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        append(state, batch.split, **minhash_columns(self, batch, state["chars"]))
        return state

    @staticmethod
    def _flags(ev, ref, ctx, se, sr, e_rows, r_rows, kind, best, ref_pairs) -> list[Flag]:
        """Both sides of every leak: the eval row (keep) and each train row it matches (drop)."""
        leaked = sorted(kind)
        e_ids = take_ids(se.get("ids", []), leaked)
        flags = [
            Flag(
                ev,
                int(e_rows[i]),
                f"{ev}:{int(e_rows[i])}",
                kind[i],
                action="keep",
                score=round(best[i], 4),
                id=row_id,
            )
            for i, row_id in zip(leaked, e_ids)
        ]
        # each train row once: its closest eval row (highest similarity, then first row; an
        # exact match wins a tie): ref_pairs are arrays (ref pos, eval pos, sim, 0 exact/1 near)
        rp, ri, rs, rhow = ref_pairs
        o = np.lexsort((rhow, ri, -rs, rp))
        first = np.ones(len(o), bool)
        first[1:] = rp[o][1:] != rp[o][:-1]
        pick = o[first]  # by ref position, ascending
        pick_p = rp[pick]
        r_ids = take_ids(sr.get("ids", []), pick_p.tolist())
        info = ctx.splits.get(ref)
        action = "drop" if info is not None and info.kind == "train" else "review"
        e_row = e_rows[ri[pick]].tolist()  # the eval row each train row is flagged with
        flags.extend(
            Flag(
                ref,
                r_row,
                f"{ev}:{e}",
                f"{'near' if how else 'exact'} copy of {ev} row {e}",
                action=action,
                score=round(s, 4),
                id=row_id,
            )
            for r_row, e, s, how, row_id in zip(
                r_rows[pick_p].tolist(), e_row, rs[pick].tolist(), rhow[pick].tolist(), r_ids
            )
        )
        return flags

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {**a, "splits": a["splits"].merge(b["splits"])}

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        threshold = float(self.threshold)
        bands, rows = choose_bands(threshold, int(self.num_perm))
        result = RuleResult(thresholds={"threshold": threshold, "bands": bands, "rows": rows})
        details: dict[str, Any] = {}
        comparisons = self._comparisons(ctx)
        last = {name: k for k, pair in enumerate(comparisons) for name in pair}
        for k, (ev, ref) in enumerate(comparisons):
            se, sr = state["splits"].get(ev, {}), state["splits"].get(ref, {})
            # a split no later comparison reads gives its signatures and sets up as they are
            # copied (finish reads the state once): one copy at the peak, not two
            free = {n for n in (ev, ref) if last[n] == k}
            details[f"{ev}~{ref}"] = self._compare(ev, ref, se, sr, ctx, result, bands, rows, free)
        result.details = {"comparisons": details}
        return result

    def _compare(
        self, ev, ref, se, sr, ctx, result, bands, rows_per_band, free=frozenset()
    ) -> dict[str, Any]:
        threshold = float(self.threshold)
        k = int(self.num_perm)
        e_rows, r_rows = cat(se.get("rows", []), np.int64), cat(sr.get("rows", []), np.int64)
        e_hash, r_hash = cat(se.get("hash", []), np.uint64), cat(sr.get("hash", []), np.uint64)
        ne, nr = len(e_rows), len(r_rows)
        matches: dict[int, list[tuple[int, float]]] = {}  # eval position -> [(ref pos, sim)]
        kind: dict[int, str] = {}
        # (ref pos, eval pos, sim, 0 exact / 1 near) of every match, for the train-side flags
        pairs_p, pairs_i, pairs_s, pairs_how = [], [], [], []
        # exact
        if ne and nr:
            order = np.lexsort((np.arange(nr), r_hash))
            rh = r_hash[order]
            lo = np.searchsorted(rh, e_hash, "left")
            hi = np.searchsorted(rh, e_hash, "right")
            for i in np.flatnonzero((hi > lo) & (e_hash != 0)).tolist():
                matches[i] = [
                    (p, 1.0) for p in order[lo[i] : min(hi[i], lo[i] + MAX_MATCHES)].tolist()
                ]
                kind[i] = "exact"
            # each train row with an exact copy in eval: pair it with the first such eval row
            eo = np.lexsort((np.arange(ne), e_hash))
            eh = e_hash[eo]
            at = np.minimum(np.searchsorted(eh, r_hash, "left"), ne - 1)
            hit = np.flatnonzero((eh[at] == r_hash) & (r_hash != 0))
            pairs_p.append(hit)
            pairs_i.append(eo[at[hit]])
            pairs_s.append(np.ones(len(hit)))
            pairs_how.append(np.zeros(len(hit), np.int8))
        # near: LSH between the two splits, verified
        if ne and nr:
            # one copy of both splits' signatures, filled chunk by chunk
            sig = cat(
                _take(sr, "sig", ref in free) + _take(se, "sig", ev in free),
                np.uint32,
                k,
                consume=True,
            )
            is_ref = np.zeros(nr + ne, bool)
            is_ref[:nr] = True
            a, b = cross_candidates(sig, is_ref, bands, rows_per_band)
            b_e = b - nr
            if len(a):
                # every candidate is verified: the train side of an exact leak can hold near
                # copies too, and a clean train split must lose them all
                if se.get("sets") and sr.get("sets"):
                    sets = ShingleSets.concat(
                        _take(sr, "sets", ref in free) + _take(se, "sets", ev in free),
                        consume=True,
                    )
                    sim = pair_jaccard(sets, a, b, signatures=sig, threshold=threshold)
                else:
                    sim = jaccard_estimate(sig[a], sig[b])
                ok = sim >= threshold
                pairs_p.append(a[ok])
                pairs_i.append(b_e[ok])
                pairs_s.append(np.asarray(sim[ok], float))
                pairs_how.append(np.ones(int(ok.sum()), np.int8))
                exact_rows = np.zeros(ne, bool)
                exact_rows[list(kind)] = True
                keep = ~exact_rows[b_e]
                a, b, b_e, sim, ok = a[keep], b[keep], b_e[keep], sim[keep], ok[keep]
                for ra, eb, s in sorted(
                    zip(a[ok].tolist(), b_e[ok].tolist(), sim[ok].tolist()),
                    key=lambda t: (t[1], -t[2], t[0]),
                ):
                    lst = matches.setdefault(eb, [])
                    kind.setdefault(eb, "near")
                    if len(lst) < MAX_MATCHES:
                        lst.append((ra, s))
        ref_pairs = (
            np.concatenate(pairs_p) if pairs_p else np.zeros(0, np.int64),
            np.concatenate(pairs_i) if pairs_i else np.zeros(0, np.int64),
            np.concatenate(pairs_s) if pairs_s else np.zeros(0),
            np.concatenate(pairs_how) if pairs_how else np.zeros(0, np.int8),
        )
        leaked = sorted(matches)
        n_exact = sum(1 for i in leaked if kind[i] == "exact")
        rate = len(leaked) / ne if ne else 0.0
        result.metric("leaked_rows", len(leaked), Direction.LOWER, split=ev)
        result.metric("leaked_rate", rate, Direction.LOWER, split=ev)
        result.metric("exact_leaks", n_exact, Direction.LOWER, split=ev)
        result.metric("near_leaks", len(leaked) - n_exact, Direction.LOWER, split=ev)
        shown = leaked[: int(self.max_findings)]
        e_snip = dict(zip(shown, texts(se.get("snip", []), np.asarray(shown, np.int64))))
        ref_pos = sorted({p for i in shown for p, _ in matches[i][:1]})
        r_snip = dict(zip(ref_pos, texts(sr.get("snip", []), np.asarray(ref_pos, np.int64))))
        best = {i: matches[i][0][1] for i in leaked}
        result.flags.extend(
            self._flags(ev, ref, ctx, se, sr, e_rows, r_rows, kind, best, ref_pairs)
        )
        for i in shown:
            best_pos, best_sim = matches[i][0]
            train_rows = [int(r_rows[p]) for p, _ in matches[i]]
            what = (
                "an exact copy" if kind[i] == "exact" else f"a near copy (Jaccard {best_sim:.2f})"
            )
            result.findings.append(
                Finding(
                    message=f"{ev} row {int(e_rows[i])} is {what} of {ref} row {train_rows[0]}",
                    key=f"{ev}:{key_hex(e_hash[i])}",
                    split=ev,
                    examples=[
                        ctx.example(ev, int(e_rows[i]), e_snip.get(i)),
                        ctx.example(
                            ref, train_rows[0], r_snip.get(best_pos), similarity=round(best_sim, 4)
                        ),
                    ],
                    data={
                        "eval_row": int(e_rows[i]),
                        "kind": kind[i],
                        "train_rows": train_rows,
                        "similarity": [round(s, 4) for _, s in matches[i]],
                        "reference_split": ref,
                    },
                )
            )
        if len(leaked) > len(shown):
            rest = len(leaked) - len(shown)
            result.findings.append(
                Finding(
                    message=f"{ev}: {rest} more rows overlap {ref}",
                    key=f"{ev}:more",
                    count=rest,
                    split=ev,
                    rollup=True,
                )
            )
        return {"eval_rows": ne, "leaked_rows": len(leaked), "exact": n_exact, "rate": rate}

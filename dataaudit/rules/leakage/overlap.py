"""LEAK001: eval rows that are exact or near copies of train rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..._arrow import indices, numeric_array, strings
from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, Rule, RuleResult, Severity
from ...sketches.lsh import band_matrix, choose_bands, cross_candidates
from ...sketches.minhash import ShingleSets, jaccard_estimate, pair_jaccard
from ...sketches.state import PerSplit
from .._columns import append, cat, key_hex, nonempty_hash, snippet, texts
from .._ids import id_column, take_ids
from .._minhash import check_minhash_options, minhash_columns, minhash_params, shingle_params
from .._origin import check_origin, state_origin
from ._eval_index import (
    CAP,
    MAX_BUCKETS,
    EvalIndex,
    Matches,
    build_index,
    merge_matches,
    probe,
)

MAX_MATCHES = 5  #: train rows a finding names
#: eval rows (all eval sides together) up to which they are indexed and broadcast to the
#: workers (~1.6 KB a row pickled with 128 permutations and exact verification, on docs text:
#: ~320 MB at the cap); above it the in-process search runs, as without a prepass
MAX_EVAL_ROWS = 200_000


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
        and band bucket: the 10 smallest rows of the bucket). A train row matching several
        eval rows is flagged once, in the cluster of its closest match. For ``pairs`` whose
        reference split is not a train split, the reference rows get ``review`` instead of
        ``drop``.

        Memory: the eval splits are read first (a prepass) and indexed (exact keys, LSH band
        buckets, signatures and shingle sets: ~1.6 KB a row); the index is broadcast to the
        workers and train streams against it, keeping only the train rows that match (and the
        10 smallest rows of each eval bucket). Memory follows the eval side, not train.
        Above 200,000 eval rows, or on an engine without a prepass, every row of both sides
        is kept until the end instead (memory grows with train); both give the same report,
        and ``details.mode`` says which ran ("broadcast" or "in-process").

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
            "matches": {},
        }

    # the prepass: the eval sides, indexed once and broadcast (see _eval_index)

    def prepass_splits(self, ctx: AuditContext) -> list[str]:
        evals = list(dict.fromkeys(e for e, _ in self._comparisons(ctx)))
        known = [ctx.splits[e].num_rows for e in evals if e in ctx.splits]
        if sum(n or 0 for n in known) > MAX_EVAL_ROWS:
            return []  # too large to broadcast: the in-process search
        return evals

    def prepass_start(self, ctx: AuditContext) -> dict[str, Any]:
        return {"origin": state_origin(self, ctx), "splits": PerSplit(dict), "rows": 0}

    def prepass_update(self, pre: dict[str, Any], batch: Batch) -> dict[str, Any]:
        pre["rows"] += batch.num_rows
        if pre["rows"] <= MAX_EVAL_ROWS:  # past the cap nothing more is kept
            # the shingles first: the exact keys then reuse their pass (as minhash_columns);
            # band keys and sorted sets here, where the compiled kernels already run
            sig = batch.feature("minhash", **minhash_params(self))
            bands, per_band = choose_bands(float(self.threshold), int(self.num_perm))
            cols = {"sig": sig, "keys": band_matrix(sig, bands, per_band)}
            if self.verify == "exact":
                cols["sets"] = batch.feature("shingle_sets", **shingle_params(self)).sorted()
            cols.update(rows=batch.row_ids, hash=nonempty_hash(batch))
            append(pre, batch.split, **cols)
        return pre

    def prepass_merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {**a, "splits": a["splits"].merge(b["splits"]), "rows": a["rows"] + b["rows"]}

    def prepass_finish(self, pre: dict[str, Any], ctx: AuditContext) -> dict[str, Any] | None:
        """The eval sides' indexes, or None (the in-process search) past MAX_EVAL_ROWS."""
        bands, rows = choose_bands(float(self.threshold), int(self.num_perm))
        if pre["rows"] > MAX_EVAL_ROWS or pre["rows"] * bands >= MAX_BUCKETS:
            return None
        k = int(self.num_perm)
        index = {}
        for ev in dict.fromkeys(e for e, _ in self._comparisons(ctx)):
            sp = pre["splits"].get(ev, {})
            sets = sp.get("sets")
            index[ev] = build_index(
                cat(sp.get("rows", []), np.int64),
                cat(sp.get("hash", []), np.uint64),
                cat(sp.get("sig", []), np.uint32, k),
                ShingleSets.concat(sets) if sets else None,
                bands,
                rows,
                cat(sp.get("keys", []), np.uint64, bands),
            )
        return {"comparisons": self._comparisons(ctx), "index": index}

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        value = _prepared(batch.resources, self.code)
        if value is None:  # the in-process search: every row's columns until finish
            append(state, batch.split, **minhash_columns(self, batch, state["chars"]))
            return state
        split = batch.split
        if split in value["index"]:  # an eval side: what its findings and flags show
            cols = {"rows": batch.row_ids, "snip": snippet(batch, state["chars"])}
            ids = id_column(batch)
            append(state, split, **(cols if ids is None else {**cols, "ids": ids}))
        refs = [(e, r) for e, r in value["comparisons"] if r == split]
        if refs:  # a reference side: matched against the eval indexes, only matches kept
            cols = minhash_columns(self, batch, state["chars"])
            for ev, ref in refs:
                key = f"{ev}~{ref}"
                state["matches"][key] = probe(
                    value["index"][ev],
                    state["matches"].get(key) or Matches(),
                    cols["rows"],
                    cols["hash"],
                    cols["sig"],
                    cols.get("sets"),
                    cols.get("ids"),
                    cols["snip"],
                    float(self.threshold),
                )
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        matches = dict(a["matches"])
        for key, m in b["matches"].items():
            matches[key] = merge_matches(matches[key], m) if key in matches else m
        return {**a, "splits": a["splits"].merge(b["splits"]), "matches": matches}

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        threshold = float(self.threshold)
        bands, rows = choose_bands(threshold, int(self.num_perm))
        result = RuleResult(thresholds={"threshold": threshold, "bands": bands, "rows": rows})
        value = _prepared(ctx.resources, self.code)
        details: dict[str, Any] = {}
        comparisons = self._comparisons(ctx)
        last = {name: k for k, pair in enumerate(comparisons) for name in pair}
        for k, (ev, ref) in enumerate(comparisons):
            se, sr = state["splits"].get(ev, {}), state["splits"].get(ref, {})
            if value is None:
                # a split no later comparison reads gives its signatures and sets up as they
                # are copied (finish reads the state once): one copy at the peak, not two
                free = {n for n in (ev, ref) if last[n] == k}
                leaks = self._in_process(se, sr, ev, ref, bands, rows, free)
            else:
                leaks = _broadcast(se, value["index"][ev], state["matches"].get(f"{ev}~{ref}"))
            details[f"{ev}~{ref}"] = self._report(ev, ref, ctx, result, leaks)
        mode = "in-process" if value is None else "broadcast"
        result.details = {"comparisons": details, "mode": mode}
        return result

    def _in_process(self, se, sr, ev, ref, bands, rows_per_band, free) -> Leaks:
        """Every row of both splits in this process: exact keys by a sort, near copies by LSH
        between the two splits (at most CAP train rows per eval row and band bucket)."""
        threshold = float(self.threshold)
        k = int(self.num_perm)
        e_rows, r_rows = cat(se.get("rows", []), np.int64), cat(sr.get("rows", []), np.int64)
        e_hash, r_hash = cat(se.get("hash", []), np.uint64), cat(sr.get("hash", []), np.uint64)
        ne, nr = len(e_rows), len(r_rows)
        # (ref pos, eval pos, sim) of every match, exact ones first
        pairs_p, pairs_i, pairs_s, n_ex = [], [], [], 0
        if ne and nr:
            # each train row with an exact copy in eval: pair it with the first such eval row
            eo = np.lexsort((np.arange(ne), e_hash))
            eh = e_hash[eo]
            at = np.minimum(np.searchsorted(eh, r_hash, "left"), ne - 1)
            hit = np.flatnonzero((eh[at] == r_hash) & (r_hash != 0))
            pairs_p.append(hit)
            pairs_i.append(eo[at[hit]])
            pairs_s.append(np.ones(len(hit)))
            n_ex = len(hit)
            # near: LSH between the two splits, verified; one copy of both splits' signatures
            sig = cat(
                _take(sr, "sig", ref in free) + _take(se, "sig", ev in free),
                np.uint32,
                k,
                consume=True,
            )
            is_ref = np.zeros(nr + ne, bool)
            is_ref[:nr] = True
            a, b = cross_candidates(sig, is_ref, bands, rows_per_band, max_per_bucket=CAP)
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
                pairs_i.append(b[ok] - nr)
                pairs_s.append(np.asarray(sim[ok], float))
        keys = np.concatenate(pairs_p) if pairs_p else np.zeros(0, np.int64)
        return Leaks(
            e_rows=e_rows,
            e_hash=e_hash,
            e_ids=se.get("ids", []),
            e_snip=se.get("snip", []),
            keys=keys,
            e=np.concatenate(pairs_i) if pairs_i else np.zeros(0, np.int64),
            s=np.concatenate(pairs_s) if pairs_s else np.zeros(0),
            n_exact=n_ex,
            ref_rows=lambda p: r_rows[p],
            ref_ids=lambda i: take_ids(sr.get("ids", []), keys[i]),
            ref_snips=lambda i: texts(sr.get("snip", []), keys[i]),
        )

    @staticmethod
    def _flags(ev, ref, ctx, result, lk: Leaks, kind, best) -> None:
        """Both sides of every leak: the eval row (keep) and each train row it matches (drop),
        added as column blocks (a leaked train split is ~all flagged: a Flag object a row
        cost more than the search). Texts repeat per eval row, so they are dictionaries."""
        leaked = np.asarray(sorted(kind), np.int64)
        e_rows = lk.e_rows[leaked]
        result.flags.add(
            ev,
            e_rows,
            group=_texts_of(e_rows, lambda e: f"{ev}:{e}"),
            detail=np.asarray([kind[i] for i in leaked.tolist()]),
            action="keep",
            score=_rounded(np.asarray([best[i] for i in leaked.tolist()], float)),
            id=take_ids(lk.e_ids, leaked),
        )
        # each train row once: its closest eval row (highest similarity, then first row; an
        # exact match wins a tie)
        rp, ri, rs, rhow = lk.keys, lk.e, lk.s, lk.how()
        o = np.lexsort((rhow, ri, -rs, rp))
        first = np.ones(len(o), bool)
        first[1:] = rp[o][1:] != rp[o][:-1]
        pick = o[first]  # by ref row, ascending
        info = ctx.splits.get(ref)
        e_row = lk.e_rows[ri[pick]]  # the eval row each train row is flagged with
        how = rhow[pick].astype(np.int64)
        # one text per (eval row, how) pair: "exact copy of test row 3", "near copy of ..."
        detail = _texts_of(
            e_row * 2 + how, lambda c: f"{'near' if c & 1 else 'exact'} copy of {ev} row {c >> 1}"
        )
        result.flags.add(
            ref,
            lk.ref_rows(rp[pick]),
            group=_texts_of(e_row, lambda e: f"{ev}:{e}"),
            detail=detail,
            action="drop" if info is not None and info.kind == "train" else "review",
            score=_rounded(rs[pick]),
            id=lk.ref_ids(pick),
        )

    def _report(self, ev, ref, ctx, result, lk: Leaks) -> dict[str, Any]:
        """Metrics, findings and flags of one comparison, whichever search found the pairs."""
        ne = len(lk.e_rows)
        matches: dict[int, list[int]] = {}  # eval position -> pair indices, best first
        kind: dict[int, str] = {}
        if lk.n_exact:
            # an eval row's exact matches: the first MAX_MATCHES train rows of its key's pairs
            # (an exact pair names the key's first eval row)
            ex_e = lk.e[: lk.n_exact]
            o = np.lexsort((lk.keys[: lk.n_exact], ex_e))
            heads, start = np.unique(ex_e[o], return_index=True)
            eo = np.lexsort((np.arange(ne), lk.e_hash))
            new = np.ones(ne, bool)
            new[1:] = lk.e_hash[eo][1:] != lk.e_hash[eo][:-1]
            first_of = np.empty(ne, np.int64)
            first_of[eo] = eo[np.maximum.accumulate(np.where(new, np.arange(ne), 0))]
            at = np.minimum(np.searchsorted(heads, first_of), len(heads) - 1)
            for i in np.flatnonzero((heads[at] == first_of) & (lk.e_hash != 0)).tolist():
                s = int(start[at[i]])
                end = len(o) if at[i] + 1 == len(heads) else int(start[at[i] + 1])
                matches[i] = o[s : min(end, s + MAX_MATCHES)].tolist()
                kind[i] = "exact"
        near = np.arange(lk.n_exact, len(lk.keys))
        near = near[[i not in kind for i in lk.e[near].tolist()]] if kind else near
        for p in near[np.lexsort((lk.keys[near], -lk.s[near], lk.e[near]))].tolist():
            lst = matches.setdefault(int(lk.e[p]), [])
            kind.setdefault(int(lk.e[p]), "near")
            if len(lst) < MAX_MATCHES:
                lst.append(p)
        leaked = sorted(matches)
        n_exact = sum(1 for i in leaked if kind[i] == "exact")
        rate = len(leaked) / ne if ne else 0.0
        result.metric("leaked_rows", len(leaked), Direction.LOWER, split=ev)
        result.metric("leaked_rate", rate, Direction.LOWER, split=ev)
        result.metric("exact_leaks", n_exact, Direction.LOWER, split=ev)
        result.metric("near_leaks", len(leaked) - n_exact, Direction.LOWER, split=ev)
        shown = leaked[: int(self.max_findings)]
        e_snip = dict(zip(shown, texts(lk.e_snip, np.asarray(shown, np.int64))))
        heads_p = sorted({matches[i][0] for i in shown})
        r_snip = dict(zip(heads_p, lk.ref_snips(np.asarray(heads_p, np.int64))))
        best = {i: float(lk.s[matches[i][0]]) for i in leaked}
        self._flags(ev, ref, ctx, result, lk, kind, best)
        for i in shown:
            head = matches[i][0]
            best_sim = float(lk.s[head])
            train_rows = lk.ref_rows(lk.keys[matches[i]]).tolist()
            what = (
                "an exact copy" if kind[i] == "exact" else f"a near copy (Jaccard {best_sim:.2f})"
            )
            result.findings.append(
                Finding(
                    message=f"{ev} row {int(lk.e_rows[i])} is {what} of {ref} row {train_rows[0]}",
                    key=f"{ev}:{key_hex(lk.e_hash[i])}",
                    split=ev,
                    examples=[
                        ctx.example(ev, int(lk.e_rows[i]), e_snip.get(i)),
                        ctx.example(
                            ref, train_rows[0], r_snip.get(head), similarity=round(best_sim, 4)
                        ),
                    ],
                    data={
                        "eval_row": int(lk.e_rows[i]),
                        "kind": kind[i],
                        "train_rows": train_rows,
                        "similarity": [round(float(lk.s[p]), 4) for p in matches[i]],
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


def _texts_of(values: np.ndarray, text: Callable[[int], str]) -> pa.DictionaryArray:
    """``text(v)`` for every int of ``values``, computed once per distinct value."""
    distinct, inverse = np.unique(np.asarray(values, np.int64), return_inverse=True)
    words = strings([text(v) for v in distinct.tolist()], pa.string())
    return pa.DictionaryArray.from_arrays(numeric_array(inverse.astype(np.int32)), words)


def _rounded(scores: np.ndarray) -> np.ndarray:
    """``round(s, 4)`` of each score (Python's rounding, as a Flag's score always was),
    computed once per distinct value."""
    distinct, inverse = np.unique(np.asarray(scores, float), return_inverse=True)
    return np.asarray([round(v, 4) for v in distinct.tolist()], float)[inverse]


def _prepared(resources: Any, code: str) -> Any:
    """The prepass value of ``code`` (None: no prepass ran, or an engine without one)."""
    prepared = getattr(resources, "prepared", None)
    return prepared(code) if prepared is not None else None


@dataclass
class Leaks:
    """One comparison's matches, as the report is built from them: per pair (exact pairs
    first) the reference key (a position or a row; ascending with the row), the eval position
    and the similarity; lookups of the reference rows, ids and snippets."""

    e_rows: np.ndarray
    e_hash: np.ndarray
    e_ids: list[Any]  # the eval split's id chunks
    e_snip: list[Any]  # and snippet chunks, by eval position
    keys: np.ndarray
    e: np.ndarray
    s: np.ndarray
    n_exact: int
    ref_rows: Callable[[np.ndarray], np.ndarray]  # keys -> row numbers
    ref_ids: Callable[[np.ndarray], list[Any]]  # pair indices -> ids
    ref_snips: Callable[[np.ndarray], list[Any]]  # pair indices -> snippets

    def how(self) -> np.ndarray:
        """0 for an exact pair, 1 for a near one."""
        out = np.ones(len(self.keys), np.int8)
        out[: self.n_exact] = 0
        return out


def _broadcast(se: dict[str, Any], index: EvalIndex, m: Matches | None) -> Leaks:
    """The leaks of the broadcast join: the eval side from the index and the scan's eval rows,
    the reference side from the matches (keys are row numbers)."""
    m = m or Matches()
    e_rows = cat(se.get("rows", []), np.int64)
    if not np.array_equal(e_rows, index.rows):
        order = np.argsort(e_rows, kind="stable")
        if not np.array_equal(e_rows[order], index.rows):
            raise RuntimeError(
                f"LEAK001: the scan read {len(e_rows)} eval rows, the prepass {len(index)}: "
                "the eval split changed between the two passes"
            )
        ids, snip = se.get("ids", []), se.get("snip", [])
        take = indices(order)
        se = {
            "ids": [pa.chunked_array(ids, pa.large_string()).take(take)] if ids else [],
            "snip": [pa.chunked_array(snip, pa.large_string()).take(take)],
        }
    ex_r, ex_e, ex_id = m.exact()
    n_ex = len(ex_r)
    keys = np.concatenate([ex_r, m.nr_r])
    ids = pa.concat_arrays([ex_id.cast(pa.large_string()), m.nr_id.cast(pa.large_string())])
    best_at = {r: k for k, r in enumerate(m.best_r.tolist())}

    def snips(idx: np.ndarray) -> list[Any]:
        out = []
        for i in idx.tolist():
            if i < n_ex:
                k = best_at.get(int(keys[i]))
                out.append(None if k is None else m.best_snip[k].as_py())
            else:
                out.append(m.nr_snip[i - n_ex].as_py())
        return out

    return Leaks(
        e_rows=index.rows,
        e_hash=index.hash,
        e_ids=se.get("ids", []),
        e_snip=se.get("snip", []),
        keys=keys,
        e=np.concatenate([ex_e, m.nr_e]),
        s=np.concatenate([np.ones(n_ex), m.nr_s]),
        n_exact=n_ex,
        ref_rows=lambda k: k,
        ref_ids=lambda i: ids.take(indices(i)).to_pylist(),
        ref_snips=snips,
    )

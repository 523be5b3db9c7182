"""TOK001: unigram token distributions that differ between splits or against a reference."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, RuleResult, Severity
from ...sketches.hashing import splitmix64
from ...sketches.histogram import CountVector
from ...sketches.state import PerSplit, merge_values
from ...stats import js_divergence, js_terms
from .._drift import (
    DriftRule,
    band_severity,
    close_comparisons,
    comparison_plan,
    grade,
    pair_label,
    rounded,
)
from .._origin import check_origin, state_origin


@dataclass
class _Halves:
    """One split's token counts in two seeded random halves of its rows: the pair's divergence
    is the noise floor a drift must clear."""

    halves: list[CountVector]
    rows: list[int]  # rows with tokens, per half

    @classmethod
    def start(cls, size: int) -> _Halves:
        return cls([CountVector(size), CountVector(size)], [0, 0])

    def merge(self, other: _Halves) -> _Halves:
        return _Halves(
            [a.merge(b) for a, b in zip(self.halves, other.halves)],
            [a + b for a, b in zip(self.rows, other.rows)],
        )


def half_of(rows: np.ndarray, seed: int) -> np.ndarray:
    """0/1 per row id: a seeded splitmix64 bit, so halves are random yet shard-independent."""
    return (splitmix64(rows, seed) & np.uint64(1)).astype(np.int64)


_NAME_CHARS = 80  # a token shown as evidence is cut to this many characters


class TokenDrift(DriftRule):
    """Unigram token distributions that differ between train and eval splits, or across versions.

    What it does:
        Counts every token id per split (a fixed-size count vector; whitespace words hashed into
        2^18 buckets without a tokenizer) and compares each validation/test split with train, and
        each split with the matching reference split, by the Jensen–Shannon divergence (bits,
        0 = same, 1 = disjoint). Tokens too rare to be compared (expected count below
        ``min_count`` in the smaller split) are pooled into one "rare" cell, so the statistic is
        not dominated by sampling noise of the long tail.

        Verdict, size-aware: each split's rows are divided into two seeded random halves, and the
        JS divergence between the halves measures how much two samples of the same text differ
        (including the burstiness of tokens within documents). Scaled to the sizes compared, this
        is the noise floor. Graded by the excess over it, only where the divergence is at least
        ``noise_ratio`` times the noise floor (beyond sampling noise):

        - info: beyond noise, but less than ``min_js`` bits above the floor (real, small);
        - warn: at least ``min_js`` bits above the noise floor;
        - error (fails the default gate): at least ``error_js`` bits above it (0.1: about what a
          test split with a third of its rows from another domain, or with one boilerplate
          sentence on every row, measures against train).

        Evidence: the tokens contributing most to the divergence in each direction (a word
        bucket is shown as the first word counted in it), in ``details.comparisons`` with their
        shares on each side (the report's chart of top drifting tokens).

    Why it matters:
        An eval split from another domain (other sources, a boilerplate footer on every row, a
        new language) measures something other than what the model was trained for; between
        dataset versions, a vocabulary shift is the earliest sign that a pipeline change altered
        the data.

    Example:
        A test split with 48% documentation paragraphs against a train split with 17%: JS =
        0.04 bits against a noise floor of 0.005, over-represented tokens "the", "module",
        "function".

    Options:
        min_js: excess divergence over the noise floor, in bits, that counts as drift (default
            0.01).
        noise_ratio: the divergence must also be this many times the noise floor (default 3:
            the floor is itself estimated from one half-split, and on same-distribution splits
            of real text the ratio reached 2.0 at 400 vs 100 rows and 1.7 at 1,500 vs 500; 30
            runs each, Python docs paragraphs and fortunes).
        error_js: excess divergence over the noise floor, in bits, from which the drift is an
            error (default 0.1; 1.0 never errs).
        min_count: tokens with a smaller expected count in the smaller split are pooled
            (default 5).
        min_rows: pairs with a split of fewer rows get no verdict (default 50).
        top_tokens: tokens shown as evidence in each direction (default 10).
    """

    code = "TOK001"
    name = "tokens.drift"
    groups = ("default", "tokens", "drift")
    severity = Severity.WARN
    requires = ("text",)

    def __init__(
        self,
        min_js: float = 0.01,
        noise_ratio: float = 3.0,
        min_count: int = 5,
        min_rows: int = 50,
        top_tokens: int = 10,
        error_js: float = 0.1,
    ):
        self.min_js = min_js
        self.noise_ratio = noise_ratio
        self.min_count = min_count
        self.min_rows = min_rows
        self.top_tokens = top_tokens
        self.error_js = error_js

    def check_options(self) -> None:
        if self.min_js <= 0 or self.noise_ratio < 1:
            raise ValueError("min_js must be positive and noise_ratio at least 1")
        if not self.min_js <= self.error_js <= 1:
            raise ValueError(f"error_js={self.error_js} must be in [min_js, 1]")
        if self.min_count < 1 or self.min_rows < 4 or self.top_tokens < 0:
            raise ValueError("min_count >= 1, min_rows >= 4, top_tokens >= 0")

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        tok = ctx.resources.tokenizer
        return {
            "origin": state_origin(self, ctx, tokenizer=tok.key),
            "tok": tok.key,
            "unit": tok.unit,
            "size": tok.vocab_size,
            "seed": ctx.seed,
            "splits": PerSplit(partial(_Halves.start, tok.vocab_size)),
            "kinds": {},
            # word fallback: bucket -> the first word counted in it, in input order (bounded by
            # the number of buckets); the names travel with the state, so a worker's words are
            # named like one pass's
            "names": {},
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        toks = batch.feature("tokens", tokenizer=state["tok"])
        s: _Halves = state["splits"].at(batch.split)
        state["kinds"][batch.split] = batch.kind
        half = half_of(batch.row_ids, state["seed"])
        valid = toks.lengths >= 0
        for h in (0, 1):
            s.rows[h] += int(np.count_nonzero(valid & (half == h)))
        token_half = np.repeat(half, np.maximum(toks.lengths, 0))
        for h in (0, 1):
            s.halves[h].add(toks.ids[token_half == h])
        if toks.words is not None:
            names = state["names"]
            for bucket, word in zip(toks.words[0].tolist(), toks.words[1]):
                if bucket not in names:
                    names[bucket] = word[:_NAME_CHARS]
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {
            **a,
            "splits": a["splits"].merge(b["splits"]),
            "kinds": merge_values(a["kinds"], b["kinds"]),
            "names": {**b["names"], **a["names"]},  # b's rows come after a's: a's names win
        }

    def sketch(self, state: dict[str, Any]) -> dict[str, Any]:
        out = {
            "tokenizer": state["tok"],
            "unit": state["unit"],
            "kinds": dict(state["kinds"]),
            "splits": {
                n: {"rows": list(s.rows), "halves": [h.to_dict() for h in s.halves]}
                for n, s in sorted(state["splits"].items())
            },
        }
        if state["names"]:
            # A word absent from the audited split is shown as evidence (less frequent) only
            # if the reference split counts it at least 2 x min_count times: name just those.
            total = CountVector(state["size"])
            for s in state["splits"].values():
                total = total.merge(s.halves[0]).merge(s.halves[1])
            frequent = np.flatnonzero(total.counts >= 2 * self.min_count).tolist()
            out["names"] = {str(i): state["names"][i] for i in frequent if i in state["names"]}
        return out

    @staticmethod
    def _from_sketch(data: dict[str, Any]) -> _Halves:
        return _Halves([CountVector.from_dict(h) for h in data["halves"]], list(data["rows"]))

    def compare(self, base: _Halves, other: _Halves) -> dict[str, Any]:
        n = max(base.halves[0].size, other.halves[0].size)

        def dense(cv: CountVector) -> np.ndarray:
            out = np.zeros(n, np.int64)
            out[: cv.size] = cv.counts
            return out

        bh = [dense(h) for h in base.halves]
        oh = [dense(h) for h in other.halves]
        p, q = bh[0] + bh[1], oh[0] + oh[1]
        n_p, n_q = int(p.sum()), int(q.sum())
        pooled = p + q
        expected_small = pooled * (min(n_p, n_q) / max(n_p + n_q, 1))
        cells = np.flatnonzero(expected_small >= self.min_count)
        rare = np.ones(n, dtype=bool)
        rare[cells] = False

        def cut(v: np.ndarray) -> np.ndarray:
            return np.append(v[cells], v[rare].sum())

        js = js_divergence(cut(p), cut(q))
        # noise floor: half-vs-half divergence, scaled from (1/a + 1/b) of the halves to the pair
        floors = []
        for halves in (bh, oh):
            a, b = int(halves[0].sum()), int(halves[1].sum())
            if a and b:
                within = js_divergence(cut(halves[0]), cut(halves[1]))
                floors.append(within * (1 / n_p + 1 / n_q) / (1 / a + 1 / b))
        floor = max(floors) if floors else float("nan")
        excess = js - floor
        band = grade(
            significant=bool(excess > 0 and js >= self.noise_ratio * floor),
            warn=excess >= self.min_js,
            error=excess >= self.error_js,
        )
        terms = js_terms(cut(p), cut(q))[:-1]
        pp, qq = p[cells] / max(n_p, 1), q[cells] / max(n_q, 1)
        return {
            "js": js,
            "noise": floor,
            "excess": excess,
            "cells": int(cells.size),
            "drift": band in ("warn", "error"),
            "severity": band,
            "tokens": n_p + n_q,
            "_terms": terms,
            "_ids": cells,
            "_p": pp,
            "_q": qq,
        }

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        unit = state["unit"]
        handle = ctx.resources.tokenizer_named(state["tok"])
        result = RuleResult(
            thresholds={
                "min_js": self.min_js,
                "noise_ratio": self.noise_ratio,
                "min_count": self.min_count,
                "min_rows": self.min_rows,
                "error_js": self.error_js,
            },
            details={"unit": unit, "comparisons": {}},
        )
        present = {n: state["kinds"].get(n, "other") for n in state["splits"]}
        pairs, ref, notes = comparison_plan(ctx, self.code, present, state["tok"])
        ref_names = {int(k): v for k, v in ((ref or {}).get("names") or {}).items()}

        def names_for(origin: str) -> Any:
            def name(token_id: int) -> str:
                found = state["names"].get(token_id)
                if found is None and origin == "reference":
                    found = ref_names.get(token_id)
                return found if found is not None else handle.token_name(token_id)

            return name

        judged = 0
        for origin, base_name, split in pairs:
            base = (
                state["splits"][base_name]
                if origin == "train"
                else self._from_sketch(ref["splits"][base_name])
            )
            other = state["splits"][split]
            label = pair_label(origin, base_name, split)
            smallest = min(min(base.rows), min(other.rows)) * 2
            if smallest < self.min_rows:
                notes.append(f"{label}: no verdict (a split has < min_rows={self.min_rows} rows)")
                continue
            # all-empty text is TXT001's finding; a distribution of nothing cannot drift
            empty = [
                name
                for name, s in (
                    (base_name if origin == "train" else f"reference {base_name}", base),
                    (split, other),
                )
                if not sum(h.total for h in s.halves)
            ]
            if empty:
                verb = "has" if len(empty) == 1 else "have"
                notes.append(
                    f"{label}: no verdict ({' and '.join(empty)} {verb} no {unit}: every row is "
                    "empty, blank or null)"
                )
                continue
            c = self.compare(base, other)
            if not np.isfinite(c["js"]) or not np.isfinite(c["noise"]):
                notes.append(f"{label}: no verdict (no {unit} to compare)")
                continue
            judged += 1
            evidence = self._evidence(c, names_for(origin))
            public = {k: rounded(v) for k, v in c.items() if not k.startswith("_")}
            result.details["comparisons"][label] = {**public, **evidence}
            suffix = "" if origin == "train" else "_vs_reference"
            result.metric(
                f"js{suffix}", public["js"], Direction.LOWER, split=split, noise=public["noise"]
            )
            result.metric(f"js_noise{suffix}", public["noise"], Direction.NONE, split=split)
            band = c["severity"]
            if band is not None:
                over = ", ".join(repr(e["token"]) for e in evidence["over"][:5])
                under = ", ".join(repr(e["token"]) for e in evidence["under"][:5])
                result.findings.append(
                    Finding(
                        message=(
                            f"{label}: {unit} distribution "
                            f"{'drifted' if c['drift'] else 'differs slightly'} (JS "
                            f"{c['js']:.4f} bits, noise floor {c['noise']:.4f}); more frequent "
                            f"in {split}: {over or 'none'}; less frequent: {under or 'none'}"
                        ),
                        key=f"{origin}|{base_name}|{split}",
                        severity=band_severity(band),
                        split=split,
                        data={**public, **evidence, "unit": unit},
                    )
                )
        result.details["sketch"] = self.sketch(state)
        close_comparisons(result, notes, judged)
        return result

    def _evidence(self, c: dict[str, Any], name: Any) -> dict[str, Any]:
        terms, ids, p, q = c["_terms"], c["_ids"], c["_p"], c["_q"]
        out: dict[str, Any] = {}
        for key, mask in (("over", q > p), ("under", q < p)):
            idx = np.flatnonzero(mask)
            order = idx[np.lexsort((ids[idx], -terms[idx]))][: self.top_tokens]
            out[key] = [
                {
                    "token": name(int(ids[i]))[:_NAME_CHARS],
                    "base_share": round(float(p[i]), 6),
                    "share": round(float(q[i]), 6),
                    "js_bits": round(float(terms[i]), 6),
                }
                for i in order
            ]
        return out

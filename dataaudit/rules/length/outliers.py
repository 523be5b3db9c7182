"""LEN002: rows extremely short or long for their split, by robust statistics of token length."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from ...context import AuditContext
from ...features import Batch
from ...rule import Direction, Finding, Rule, RuleResult, Severity
from ...sketches.histogram import LENGTH_EDGES, Histogram
from ...sketches.state import PerSplit
from ...wording import noun, plural
from .._columns import SNIPPET_EXTRA
from .._ids import ids_at
from .._origin import check_origin, state_origin
from ._hist import chart_histograms


def _top(
    lengths: np.ndarray, rows: np.ndarray, k: int, longest: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The k most extreme (length, row) pairs, ties broken by row: a deterministic order."""
    if lengths.size == 0:
        return lengths, rows
    order = np.lexsort((rows, -lengths if longest else lengths))[:k]
    return lengths[order], rows[order]


def _no_rows() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, np.int64), np.zeros(0, np.int64)


@dataclass
class _Split:
    """One split's length histogram and its most extreme rows: the ``max_flags`` longest and
    shortest (length, row) pairs (flagged in ``finish`` when past the bounds), the ids of those
    and the text of the first ``max_examples`` of each (the examples)."""

    max_flags: int
    max_examples: int
    hist: Histogram = field(default_factory=Histogram)
    long: tuple[np.ndarray, np.ndarray] = field(default_factory=_no_rows)
    short: tuple[np.ndarray, np.ndarray] = field(default_factory=_no_rows)
    texts: dict[int, str] = field(default_factory=dict)
    ids: dict[int, str | None] = field(default_factory=dict)

    def add(self, batch: Batch, lengths: np.ndarray, chars: int) -> None:
        idx = np.flatnonzero(lengths > 0)
        if not idx.size:
            return
        lens = lengths[idx]
        rows = idx + batch.offset
        self.hist.add(lens)
        for key, longest in (("long", True), ("short", False)):
            top_l, top_r = _top(lens, rows, self.max_flags, longest)
            kept_l, kept_r = getattr(self, key)
            setattr(self, key, (np.concatenate([kept_l, top_l]), np.concatenate([kept_r, top_r])))
            ids = ids_at(batch, top_r - batch.offset)
            if ids:
                self.ids.update(zip(top_r.tolist(), ids))
        self._keep()
        end = batch.offset + batch.num_rows
        need = [r for r in self._shown() if r not in self.texts and batch.offset <= r < end]
        if need:
            texts = batch.text
            for r in need:
                self.texts[r] = texts[r - batch.offset].as_py()[: chars + SNIPPET_EXTRA]

    def merge(self, other: _Split) -> _Split:
        if (other.max_flags, other.max_examples) != (self.max_flags, self.max_examples):
            raise ValueError("cannot merge length outliers kept to different bounds")
        out = _Split(
            self.max_flags,
            self.max_examples,
            self.hist.merge(other.hist),
            tuple(np.concatenate([x, y]) for x, y in zip(self.long, other.long)),
            tuple(np.concatenate([x, y]) for x, y in zip(self.short, other.short)),
            {**self.texts, **other.texts},
            {**self.ids, **other.ids},
        )
        out._keep()
        return out

    def _shown(self) -> set[int]:
        k = self.max_examples
        return set(self.long[1][:k].tolist()) | set(self.short[1][:k].tolist())

    def _keep(self) -> None:
        """Cut to the ``max_flags`` most extreme of each side, and what they need."""
        self.long = _top(*self.long, self.max_flags, True)
        self.short = _top(*self.short, self.max_flags, False)
        shown = self._shown()
        self.texts = {r: t for r, t in self.texts.items() if r in shown}
        if self.ids:
            flagged = set(self.long[1].tolist()) | set(self.short[1].tolist())
            self.ids = {r: i for r, i in self.ids.items() if r in flagged}


def robust_bounds(hist: Histogram, z: float) -> tuple[float, float, float, float]:
    """Median and scaled MAD of log(1 + length) from a histogram, and the (low, high) bounds."""
    counts = hist.counts
    points = np.log1p(LENGTH_EDGES[:-1].astype(np.float64))
    cum = np.cumsum(counts)
    med = float(points[int(np.searchsorted(cum, cum[-1] / 2, side="left"))])
    dev = np.abs(points - med)
    order = np.argsort(dev, kind="stable")
    cdev = np.cumsum(counts[order])
    mad = float(dev[order][int(np.searchsorted(cdev, cdev[-1] / 2, side="left"))])
    scale = max(1.4826 * mad, 0.1)
    return med, scale, math.expm1(med - z * scale), math.expm1(med + z * scale)


class LengthOutliers(Rule):
    """Rows extremely short or extremely long compared with the rest of their split.

    What it does:
        Per split, builds a fixed-bin histogram of token lengths (whitespace words without a
        tokenizer) and finds the median and the median absolute deviation (MAD) of
        log(1 + length). Rows more than ``z`` scaled MADs above the median are long outliers (a
        warning); non-empty rows more than ``z`` below are short outliers (a note). Thresholds
        are snapped to the histogram's bin edges so counts are exact; examples are the most
        extreme rows. Empty rows are left to TXT001. Outlier rows are flagged ``long`` or
        ``short`` with their length as score and the action ``review`` (a long row may be a
        whole file to split; a short one a fragment), short ones with severity info.

    Why it matters:
        A handful of rows thousands of times longer than the rest is usually a parsing accident
        (a whole file in one row); they dominate token budgets and get truncated. Rows of one or
        two tokens are fragments that teach nothing. Log-scale robust statistics adapt to each
        split, so a corpus of tweets and a corpus of books are both judged fairly.

    Example:
        In a split whose rows have a median of 60 tokens, three 4,000-token rows that hold a
        whole documentation page each are reported with their row numbers.

    Options:
        z: how many scaled MADs of log-length from the median make an outlier (default 4.5).
        min_rows: splits with fewer non-empty rows get no verdict (default 50).
        max_flags: at most this many outlier rows per split and direction are flagged; the
            count is always exact (default 1000).
    """

    code = "LEN002"
    name = "length.outliers"
    groups = ("default", "length")
    severity = Severity.WARN
    requires = ("text",)

    def __init__(self, z: float = 4.5, min_rows: int = 50, max_flags: int = 1000):
        self.z = z
        self.min_rows = min_rows
        self.max_flags = max_flags

    def check_options(self) -> None:
        if self.z <= 0:
            raise ValueError(f"z={self.z} must be positive")
        if self.min_rows < 1 or self.max_flags < 1:
            raise ValueError("min_rows and max_flags must be at least 1")

    def start(self, ctx: AuditContext) -> dict[str, Any]:
        tok = ctx.resources.tokenizer
        return {
            "origin": state_origin(self, ctx, tokenizer=tok.key),
            "tok": tok.key,
            "unit": tok.unit,
            "limit": (ctx.max_examples, ctx.example_chars),
            "splits": PerSplit(partial(_Split, self.max_flags, ctx.max_examples)),
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        lengths = batch.feature("token_lengths", tokenizer=state["tok"])
        state["splits"].at(batch.split).add(batch, lengths, state["limit"][1])
        return state

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {**a, "splits": a["splits"].merge(b["splits"])}

    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        unit = state["unit"]
        result = RuleResult(
            thresholds={"z": self.z, "min_rows": self.min_rows},
            details={
                "unit": unit,
                "tokenizer": state["tok"],
                "splits": {},
                # per-split length histograms (non-empty rows) in shared bins: chart data
                "histograms": chart_histograms(
                    {name: sp.hist for name, sp in state["splits"].items()}, unit
                ),
            },
        )
        judged = 0
        max_examples = ctx.max_examples
        for split in sorted(state["splits"]):
            s: _Split = state["splits"][split]
            hist = s.hist
            if hist.n < self.min_rows:
                result.details["splits"][split] = {
                    "verdict": f"no verdict: {plural(hist.n, 'non-empty row')} < "
                    f"min_rows={self.min_rows}"
                }
                continue
            judged += 1
            med, scale, low, high = robust_bounds(hist, self.z)
            # snap to bin edges: long = length >= edge_hi, short = length < edge_lo
            hi_idx = int(np.searchsorted(LENGTH_EDGES, math.ceil(high), side="left"))
            hi_idx = min(hi_idx, LENGTH_EDGES.size - 2)
            lo_idx = int(np.searchsorted(LENGTH_EDGES, math.floor(low), side="right")) - 1
            lo_idx = max(lo_idx, 1)
            edge_hi, edge_lo = int(LENGTH_EDGES[hi_idx]), int(LENGTH_EDGES[lo_idx])
            n_long = hist.count_at_least(hi_idx)
            n_short = hist.count_below(lo_idx) if low >= 1 else 0
            result.details["splits"][split] = {
                "rows": hist.n,
                "median": round(math.expm1(med), 3),
                "mean": round(hist.mean, 3),
                "max": hist.max,
                "long_at_least": edge_hi,
                "short_below": edge_lo if low >= 1 else None,
            }
            result.metric("median_length", math.expm1(med), split=split, unit=unit)
            result.metric("long_outliers", n_long, Direction.LOWER, split=split)
            result.metric("short_outliers", n_short, Direction.LOWER, split=split)
            for kind, n, sev, cond in (
                ("long", n_long, None, f"longer than {edge_hi - 1:,} {unit}"),
                ("short", n_short, Severity.INFO, f"shorter than {edge_lo:,} {unit}"),
            ):
                if not n:
                    continue
                lens, rows = getattr(s, kind)
                mask = lens >= edge_hi if kind == "long" else lens < edge_lo
                rows_hit, lens_hit = rows[mask], lens[mask]
                result.flags.add(
                    split,
                    rows_hit,
                    detail=kind,
                    action="review",
                    severity=sev,
                    score=np.asarray(lens_hit).astype(np.int64),
                    id=[s.ids.get(r) for r in rows_hit.tolist()] if s.ids else None,
                )
                result.findings.append(
                    Finding(
                        message=(
                            f"{split}: {plural(n, 'row')} {noun(n, 'is', 'are')} {cond} "
                            f"(median {math.expm1(med):,.0f} "
                            f"{unit}; {self.z} MADs of log-length)"
                        ),
                        key=f"{split}|{kind}",
                        severity=sev,
                        count=n,
                        split=split,
                        examples=[
                            ctx.example(split, int(r), s.texts.get(int(r)), length=int(n_))
                            for r, n_ in zip(rows_hit[:max_examples], lens_hit[:max_examples])
                        ],
                        data={"threshold": edge_hi if kind == "long" else edge_lo, "unit": unit},
                    )
                )
        if not judged and state["splits"]:
            result.skipped = f"every split has fewer than min_rows={self.min_rows} non-empty rows"
        return result

"""Per-split length histograms as chart data: a few shared bins cut from the fine length bins.

The fine :data:`~dataaudit.sketches.histogram.LENGTH_EDGES` bins are too many to draw (and to
store in a report); :func:`chart_histograms` merges them into at most ``bins`` log-spaced bins
shared by every split (each a run of whole fine bins, so the counts stay exact), with
``max_seq_len + 1`` as a bin edge when it is one of the fine edges (always up to 127; else
``max_seq_len`` itself when it is), so the bars left of its line are the rows that fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...sketches.histogram import LENGTH_EDGES, Histogram

CHART_BINS = 40


def chart_histograms(
    hists: Mapping[str, Histogram],
    unit: str,
    *,
    max_seq_len: int | None = None,
    bins: int = CHART_BINS,
) -> dict[str, Any] | None:
    """``{"unit", "max_seq_len", "edges", "splits": {split: counts}}``: ``edges`` are the
    ``len(counts) + 1`` bin edges (a bin holds lengths ``edges[i] <= n < edges[i + 1]``); None
    when no split has a row."""
    filled = {s: h for s, h in hists.items() if h.n}
    if not filled:
        return None
    lo = min(h.min for h in filled.values())
    hi = max(h.max for h in filled.values())
    first = int(Histogram.bin_index(np.array([lo]))[0])
    last = int(Histogram.bin_index(np.array([hi]))[0]) + 1  # end of the max's bin
    targets = np.geomspace(max(LENGTH_EDGES[first], 1), LENGTH_EDGES[last], bins + 1)
    cut = np.searchsorted(LENGTH_EDGES, np.round(targets), side="left")
    idx = {first, last, *np.clip(cut, first, last).tolist()}
    if max_seq_len is not None:  # the edge after the longest row that fits, if a fine edge
        for edge in (max_seq_len + 1, max_seq_len):
            at = int(np.searchsorted(LENGTH_EDGES, edge))
            if at < LENGTH_EDGES.size and LENGTH_EDGES[at] == edge and first < at < last:
                idx.add(at)
                break
    edges = np.array(sorted(idx), np.int64)
    out: dict[str, list[int]] = {}
    for split in sorted(hists):
        cum = np.concatenate([[0], np.cumsum(hists[split].counts)])
        out[split] = (cum[edges[1:]] - cum[edges[:-1]]).tolist()
    return {
        "unit": unit,
        "max_seq_len": max_seq_len,
        "edges": LENGTH_EDGES[edges].tolist(),
        "splits": out,
    }

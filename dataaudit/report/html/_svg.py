"""Inline SVG charts drawn in Python: no script, no library, no network, bounded in size.

Every label may be dataset text (a class, a source, a token, a split), so it goes through
``esc`` with a short limit; colours and coordinates are ours. Each chart caps how many items it
draws (the tables beside it and the JSON report hold the rest).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ._base import COLORS, num
from ._base import esc_plain as esc

__all__ = ["grouped_bars", "hbars", "heatmap", "histograms", "intervals", "legend", "token_bars"]

MAX_BARS = 30
MAX_HEATMAP = 20
Fmt = Callable[[float], str]


def _svg(width: float, height: float, body: list[str], label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{esc(label, 200)}">'
        f"<title>{esc(label, 200)}</title>{''.join(body)}</svg>"
    )


def _text(
    x: float, y: float, s: Any, *, anchor: str = "start", limit: int = 40, extra: str = ""
) -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{esc(s, limit)}</text>'


def legend(items: Sequence[tuple[Any, str]]) -> str:
    """Colour swatches with their (escaped) names, as HTML above a chart."""
    parts = [
        f'<span class="sw" style="background:{color}"></span>{esc(name, 60)}'
        for name, color in items
    ]
    return f'<div class="legend">{"".join(parts)}</div>'


def hbars(
    items: Sequence[tuple[Any, float]],
    *,
    fmt: Fmt = num,
    label: str = "bar chart",
    color: str = COLORS["info"],
    colors: Sequence[str] | None = None,
    limit: int = MAX_BARS,
) -> str:
    """Horizontal bars, one per (label, value), longest scale first as given."""
    rows = [
        (name, float(v), (colors or [color] * len(items))[i]) for i, (name, v) in enumerate(items)
    ]
    rows = [r for r in rows if math.isfinite(r[1])][:limit]
    if not rows:
        return ""
    label_w, bar_w, row_h = 200, 420, 20
    vmax = max(abs(v) for _, v, _ in rows) or 1.0
    body = []
    for i, (name, v, c) in enumerate(rows):
        y = i * row_h
        w = max(1.0, bar_w * abs(v) / vmax) if v else 0.0
        body.append(
            _text(label_w - 6, y + 14, name, anchor="end", limit=32)
            + f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" fill="{c}" '
            f'rx="2"><title>{esc(name, 200)}: {esc(fmt(v))}</title></rect>'
            + _text(label_w + w + 6, y + 14, fmt(v))
        )
    return _svg(label_w + bar_w + 90, row_h * len(rows) + 4, body, label)


def grouped_bars(
    categories: Sequence[Any],
    series: Sequence[tuple[Any, str]],
    values: dict[tuple[int, int], float],
    *,
    fmt: Fmt = num,
    label: str = "grouped bar chart",
    markers: dict[int, tuple[float, str]] | None = None,
    limit: int = MAX_BARS,
) -> str:
    """Per category one bar per series (values[(category, series)]), with an optional marker
    line per category (a recipe's share: ``markers[category] = (value, title)``)."""
    cats = list(categories)[:limit]
    markers = markers or {}
    if not cats or not series:
        return ""
    finite = [v for v in values.values() if math.isfinite(v)] + [m[0] for m in markers.values()]
    vmax = max((abs(v) for v in finite), default=0.0) or 1.0
    label_w, bar_w, bar_h, gap = 170, 440, 11, 8
    group_h = bar_h * len(series) + gap
    body = []
    for ci, cat in enumerate(cats):
        top = ci * group_h
        body.append(_text(label_w - 6, top + group_h / 2 + 2, cat, anchor="end", limit=28))
        for si, (name, color) in enumerate(series):
            v = values.get((ci, si))
            y = top + si * bar_h
            if v is None or not math.isfinite(v):
                body.append(_text(label_w + 2, y + bar_h - 2, "—", extra=' class="muted"'))
                continue
            w = max(1.0, bar_w * abs(v) / vmax) if v else 0.0
            body.append(
                f'<rect x="{label_w}" y="{y + 1}" width="{w:.1f}" height="{bar_h - 2}" '
                f'fill="{color}"><title>{esc(cat, 100)} · {esc(name, 100)}: {esc(fmt(v))}'
                f"</title></rect>"
                + _text(label_w + w + 4, y + bar_h - 2, fmt(v), extra=' font-size="10"')
            )
        if ci in markers:
            mv, title = markers[ci]
            x = label_w + bar_w * abs(mv) / vmax
            body.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top - 2}" y2="{top + group_h - gap + 2}" '
                f'stroke="#1f2328" stroke-width="2"><title>{esc(title, 200)}</title></line>'
            )
    return _svg(label_w + bar_w + 70, group_h * len(cats), body, label)


def histograms(
    series: Sequence[tuple[Any, str, Sequence[tuple[int, int, int]]]],
    *,
    unit: str = "tokens",
    vlines: Sequence[tuple[float, str, str]] = (),
    label: str = "length histograms",
    n_bins: int = 48,
) -> str:
    """Length distributions of several splits overlaid as step lines on a log axis.

    ``series``: (name, colour, [(low, high, count)]) with integer bins [low, high); each is drawn
    as the share of its rows per unit of log-length, so splits of any size compare.
    ``vlines``: (x, label, colour), e.g. ``max_seq_len``.
    """
    series = [(n, c, [b for b in bins if b[2] > 0]) for n, c, bins in series]
    series = [s for s in series if s[2]]
    if not series:
        return ""
    vlines = [v for v in vlines if math.isfinite(v[0]) and v[0] > 0][:8]
    lows = [min(b[0] for b in bins) for _, _, bins in series] + [v for v, _, _ in vlines]
    highs = [max(b[1] for b in bins) for _, _, bins in series] + [v for v, _, _ in vlines]
    lo = max(1.0, 0.8 * min(lows))
    hi = max(2.0 * lo, 1.05 * max(highs))
    span = math.log10(hi / lo)
    # integer display edges, evenly spaced in log(x); the first bin also holds lengths below lo
    edges = sorted({0, *(math.ceil(lo * (hi / lo) ** (k / n_bins)) for k in range(1, n_bins + 1))})
    width, left, bottom, plot_h = 760, 46, 30, 160
    top = 10 + 13 * len(vlines)
    height = top + plot_h + bottom
    plot_w = width - left - 16

    def frac(v: float) -> float:
        return math.log10(max(v, lo) / lo) / span

    def x_of(v: float) -> float:
        return left + plot_w * frac(v)

    curves = []
    for _name, _color, bins in series:
        total = sum(b[2] for b in bins) or 1
        dens = [0.0] * (len(edges) - 1)
        for low, _high, count in bins:
            i = max(0, min(len(dens) - 1, _bisect(edges, low)))
            dens[i] += count / total
        for i in range(len(dens)):
            dens[i] /= (frac(edges[i + 1]) - frac(edges[i])) or 1.0
        curves.append(dens)
    ymax = max(max(d) for d in curves) or 1.0
    body = [
        f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" '
        'stroke="#d0d7de"/>'
    ]
    ticks = [m * 10**e for e in range(0, 13) for m in (1, 2, 5) if lo <= m * 10**e <= hi]
    if len(ticks) > 10:
        ticks = [t for t in ticks if str(int(t))[0] == "1"]
    for tick in ticks:
        x = x_of(tick)
        body.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + plot_h}" stroke="#eaeef2"/>'
            + _text(x, top + plot_h + 14, _short_num(tick), anchor="middle")
        )
    body.append(
        _text(left + plot_w / 2, height - 2, f"length in {unit} (log scale)", anchor="middle")
    )
    body.append(
        _text(12, top + plot_h / 2, "share of rows", anchor="middle",
              extra=f' transform="rotate(-90 12 {top + plot_h / 2:.1f})"')
    )  # fmt: skip
    for (name, color, _bins), dens in zip(series, curves):
        pts = [f"{left},{top + plot_h}"]
        for i, d in enumerate(dens):
            y = top + plot_h - plot_h * d / ymax
            pts.append(f"{x_of(edges[i]):.1f},{y:.1f} {x_of(edges[i + 1]):.1f},{y:.1f}")
        pts.append(f"{x_of(edges[-1]):.1f},{top + plot_h}")
        body.append(
            f'<polyline points="{" ".join(pts)}" fill="{color}" fill-opacity="0.08" '
            f'stroke="{color}" stroke-width="1.6"><title>{esc(name, 100)}</title></polyline>'
        )
    for k, (v, text, color) in enumerate(vlines):
        x = x_of(v)
        right = x > left + plot_w - 200
        body.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{8 + 13 * k}" y2="{top + plot_h}" '
            f'stroke="{color}" stroke-width="2" stroke-dasharray="5 3"><title>{esc(text, 100)}'
            "</title></line>"
            + _text(x - 4 if right else x + 4, 17 + 13 * k, text, anchor="end" if right else "start",
                    limit=60, extra=f' fill="{color}"')
        )  # fmt: skip
    return _svg(width, height, body, label)


def _bisect(edges: list[int], value: int) -> int:
    lo, hi = 0, len(edges) - 1
    while lo < hi - 1:
        mid = (lo + hi) // 2
        if edges[mid] <= value:
            lo = mid
        else:
            hi = mid
    return lo


def _short_num(v: float) -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"


def heatmap(
    labels: Sequence[Any],
    counts: Sequence[Sequence[float]],
    *,
    row_title: str,
    col_title: str,
    label: str = "heat map",
) -> str:
    """A square count matrix: rows ``row_title`` (given), columns ``col_title`` (likely).

    Cells are shaded by their share of the row, the diagonal blue (agreement), the rest red
    (confusion), each with its count.
    """
    n = min(len(labels), MAX_HEATMAP)
    if n == 0:
        return ""
    cell, left, top = 34, 150, 110
    body = [
        _text(left + n * cell / 2, 12, col_title, anchor="middle", limit=80),
        _text(10, top + n * cell / 2, row_title, anchor="middle", limit=80,
              extra=f' transform="rotate(-90 10 {top + n * cell / 2:.1f})"'),
    ]  # fmt: skip
    for j in range(n):
        x = left + j * cell + cell / 2
        body.append(
            _text(
                x, top - 6, labels[j], limit=18, extra=f' transform="rotate(-45 {x:.1f} {top - 6})"'
            )
        )
    for i in range(n):
        row = [float(v) if isinstance(v, (int, float)) else 0.0 for v in list(counts[i])[:n]]
        total = sum(row) or 1.0
        y = top + i * cell
        body.append(_text(left - 6, y + cell / 2 + 4, labels[i], anchor="end", limit=20))
        for j, v in enumerate(row):
            share = v / total
            base = (9, 105, 218) if i == j else (207, 34, 46)
            alpha = math.sqrt(share) if v else 0.0
            rgb = tuple(round(255 - (255 - c) * alpha) for c in base)
            fill = f"rgb({rgb[0]},{rgb[1]},{rgb[2]})"
            ink = "#fff" if alpha > 0.6 else "#1f2328"
            x = left + j * cell
            body.append(
                f'<rect x="{x}" y="{y}" width="{cell - 1}" height="{cell - 1}" fill="{fill}" '
                f'stroke="#d0d7de" stroke-width="0.5"><title>{esc(labels[i], 60)} → '
                f"{esc(labels[j], 60)}: {num(v)} ({share:.1%} of the row)</title></rect>"
                + (
                    _text(x + cell / 2, y + cell / 2 + 4, num(v), anchor="middle",
                          extra=f' style="fill:{ink}" font-size="10"')
                    if v else ""
                )
            )  # fmt: skip
    return _svg(left + n * cell + 10, top + n * cell + 6, body, label)


def intervals(
    items: Sequence[tuple[Any, float, float | None, float | None, str]],
    *,
    domain: tuple[float, float] = (0.4, 1.0),
    vlines: Sequence[tuple[float, str, str]] = (),
    fmt: Fmt = num,
    label: str = "interval plot",
) -> str:
    """An estimate with its interval per item (AUC and its CI), on a fixed axis with reference
    lines (chance, thresholds)."""
    if not items:
        return ""
    lo_d, hi_d = domain
    left, plot_w, row_h = 190, 460, 26
    top = 12 + 13 * len(vlines)
    height = top + row_h * len(items) + 26

    def x_of(v: float) -> float:
        return left + plot_w * (min(max(v, lo_d), hi_d) - lo_d) / (hi_d - lo_d)

    body = []
    for k in range(11):
        v = lo_d + (hi_d - lo_d) * k / 10
        x = x_of(v)
        body.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top - 4}" y2="{height - 22}" stroke="#eaeef2"/>'
            + _text(x, height - 8, f"{v:.2f}", anchor="middle")
        )
    for k, (v, text, color) in enumerate(vlines):
        x = x_of(v)
        body.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{3 + 13 * k}" y2="{height - 22}" '
            f'stroke="{color}" stroke-width="1.5" stroke-dasharray="4 3"/>'
            + _text(x + 3, 12 + 13 * k, text, limit=40, extra=f' fill="{color}"')
        )
    for i, (name, est, lo, hi, color) in enumerate(items):
        y = top + i * row_h + row_h / 2
        body.append(_text(left - 8, y + 4, name, anchor="end", limit=30))
        if lo is not None and hi is not None:
            body.append(
                f'<line x1="{x_of(lo):.1f}" x2="{x_of(hi):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{color}" stroke-width="3" stroke-linecap="round"/>'
            )
        span = f" [{fmt(lo)}, {fmt(hi)}]" if lo is not None and hi is not None else ""
        body.append(
            f'<circle cx="{x_of(est):.1f}" cy="{y:.1f}" r="5" fill="{color}">'
            f"<title>{esc(name, 100)}: {esc(fmt(est))}{esc(span)}</title></circle>"
            + _text(left + plot_w + 8, y + 4, f"{fmt(est)}{span}", limit=60)
        )
    return _svg(left + plot_w + 150, height, body, label)


def token_bars(
    over: Sequence[tuple[Any, float, str]],
    under: Sequence[tuple[Any, float, str]],
    *,
    over_title: str,
    under_title: str,
    label: str = "drifting tokens",
    limit: int = 12,
) -> str:
    """Two columns of bars: tokens more common in the eval split (right), less common (left);
    each (token, weight, hover text)."""
    over, under = list(over)[:limit], list(under)[:limit]
    if not over and not under:
        return ""
    vmax = max([abs(w) for _, w, _ in over + under] or [1.0]) or 1.0
    col_w, label_w, bar_w, row_h, top = 440, 130, 170, 18, 20
    body = [_text(0, 12, under_title, limit=80), _text(col_w, 12, over_title, limit=80)]
    for col, (rows, color) in enumerate(((under, COLORS["info"]), (over, COLORS["fail"]))):
        x0 = col * col_w
        for i, (tok, w, hover) in enumerate(rows):
            y = top + i * row_h
            bw = max(1.0, bar_w * abs(w) / vmax)
            body.append(
                _text(x0 + label_w - 6, y + 13, tok, anchor="end", limit=20,
                      extra=' font-family="ui-monospace,monospace"')
                + f'<rect x="{x0 + label_w}" y="{y + 3}" width="{bw:.1f}" height="{row_h - 6}" '
                f'fill="{color}"><title>{esc(tok, 100)}: {esc(hover, 200)}</title></rect>'
                + _text(x0 + label_w + bw + 4, y + 13, hover, limit=40, extra=' font-size="10"')
            )  # fmt: skip
    return _svg(2 * col_w, top + row_h * max(len(over), len(under)) + 4, body, label)

"""The chart that fits each rule, drawn from what the rule put in its ``details``.

A chart reads only the report dict; a rule whose details lack what its chart needs (an older
report, a plugin, a changed rule) gets no chart and a note saying so, never a broken page. Each
chart function also names the detail keys it shows, so the collapsed details do not repeat them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._base import (
    COLORS,
    SPLIT_COLORS,
    as_dict,
    as_list,
    chart_section,
    esc,
    is_number,
    num,
    pct,
    table,
    value_text,
)
from ._eval import EVAL_CHART_KEYS, EVAL_CHARTS
from ._svg import grouped_bars, hbars, heatmap, histograms, intervals, legend, token_bars

__all__ = ["CHART_KEYS", "Context", "rule_chart"]


@dataclass
class Context:
    """What charts need from the whole report: split colours, and facts other rules carry
    (LEN003's length histograms, LEN001's ``max_seq_len``)."""

    splits: list[str]
    by_code: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, data: dict[str, Any]) -> Context:
        splits = [str(s) for s in ((data.get("dataset") or {}).get("splits") or {})]
        results = data.get("results") or []
        by_code = {str(r.get("code")): r for r in results if isinstance(r, dict)}
        return cls(splits, by_code)

    def color(self, split: Any) -> str:
        name = str(split)
        if name not in self.splits:
            self.splits.append(name)
        return SPLIT_COLORS[self.splits.index(name) % len(SPLIT_COLORS)]

    def ordered(self, names: Any) -> list[str]:
        """Split names in the dataset's order (train first), unknown ones after."""
        names = [str(n) for n in names]
        known = [s for s in self.splits if s in names]
        return known + sorted(n for n in names if n not in known)

    def max_seq_len(self) -> float | None:
        r = self.by_code.get("LEN001") or {}
        if r.get("status") == "skipped":
            return None
        for source in (r.get("thresholds") or {}, r.get("options") or {}):
            v = source.get("max_seq_len")
            if is_number(v) and v > 0:
                return float(v)
        return None


# -- lengths: LEN001, LEN002, LEN003 ----------------------------------------------------------
def _length_series(
    ctx: Context, r: dict[str, Any] | None = None
) -> tuple[list[tuple[str, str, list[tuple[int, int, int]]]], str]:
    """Per split (low, high, count) bins, and their unit: the rule's own chart histograms
    (LEN001/LEN002 ``details.histograms``: shared ``edges`` and per-split counts), else
    LEN003's sketch (reports before the rules carried their own)."""
    from ...sketches.histogram import EDGES_NAME, LENGTH_EDGES

    own = as_dict(as_dict((r or {}).get("details")).get("histograms"))
    edges = [e for e in as_list(own.get("edges")) if is_number(e)]
    if own and len(edges) == len(as_list(own.get("edges"))) > 1:
        counts = as_dict(own.get("splits"))
        series = []
        for name in ctx.ordered(counts):
            bins = [
                (int(edges[i]), int(edges[i + 1]), int(c))
                for i, c in enumerate(as_list(counts[name])[: len(edges) - 1])
                if is_number(c) and c > 0
            ]
            if bins:
                series.append((name, ctx.color(name), bins))
        return series, str(own.get("unit") or "tokens")
    sketch = as_dict(as_dict((ctx.by_code.get("LEN003") or {}).get("details")).get("sketch"))
    splits = as_dict(sketch.get("splits"))
    series = []
    for name in ctx.ordered(splits):
        h = as_dict(splits[name])
        if h.get("edges") != EDGES_NAME:
            continue
        bins = []
        for item in as_list(h.get("bins")):
            i, count = int(item[0]), int(item[1])
            if 0 <= i < len(LENGTH_EDGES) - 1 and count > 0:
                bins.append((int(LENGTH_EDGES[i]), int(LENGTH_EDGES[i + 1]), count))
        if bins:
            series.append((name, ctx.color(name), bins))
    return series, str(sketch.get("unit") or "tokens")


def _length_chart(
    ctx: Context, vlines: list[tuple[float, str, str]], title: str, r: dict[str, Any] | None = None
) -> str:
    series, unit = _length_series(ctx, r)
    if not series:
        return ""
    svg = histograms(series, unit=unit, vlines=vlines, label=title)
    return chart_section(title, legend([(n, c) for n, c, _ in series]) + svg)


def _len001(r: dict[str, Any], ctx: Context) -> str:
    limit = ctx.max_seq_len()
    vlines = [(limit, f"max_seq_len {num(limit)}", COLORS["fail"])] if limit else []
    chart = _length_chart(ctx, vlines, "Length per split, against max_seq_len", r)
    if not chart and r.get("status") != "skipped":
        return '<p class="muted small">No length histogram in this report.</p>'
    return chart


def _len002(r: dict[str, Any], ctx: Context) -> str:
    vlines = []
    for name, s in as_dict(as_dict(r.get("details")).get("splits")).items():
        s = as_dict(s)
        for key, what in (("long_at_least", "long"), ("short_below", "short")):
            if is_number(s.get(key)):
                vlines.append((float(s[key]), f"{name}: {what} ≥ {num(s[key])}"
                               if what == "long" else f"{name}: short < {num(s[key])}",
                               ctx.color(name)))  # fmt: skip
    return _length_chart(ctx, vlines, "Length per split, with each split's outlier bounds", r)


def _comparisons_table(rows: dict[str, Any], cols: list[tuple[str, str]]) -> str:
    data = [[pair] + [as_dict(c).get(k) for k, _ in cols] for pair, c in rows.items()]
    return table(["comparison"] + [h for _, h in cols], data, limit=30) if data else ""


def _len003(r: dict[str, Any], ctx: Context) -> str:
    limit = ctx.max_seq_len()
    vlines = [(limit, f"max_seq_len {num(limit)}", COLORS["fail"])] if limit else []
    chart = _length_chart(ctx, vlines, "Length per split (overlaid)")
    comps = as_dict(as_dict(r.get("details")).get("comparisons"))
    cols = [("ks", "KS D"), ("ks_pvalue", "p-value"), ("wasserstein", "W / mean"),
            ("psi", "PSI"), ("base_mean", "mean before"), ("mean", "mean"),
            ("base_median", "median before"), ("median", "median"), ("drift", "drift")]  # fmt: skip
    return chart + _comparisons_table(comps, cols)


# -- labels: LBL001, LBL002, LBL003 -------------------------------------------------------------
def _lbl003(r: dict[str, Any], ctx: Context) -> str:
    classes = [c for c in as_list(as_dict(r.get("details")).get("classes")) if isinstance(c, dict)]
    if not classes:
        return ""
    splits = ctx.ordered({s for c in classes for s in as_dict(c.get("share_by_split"))})
    values = {}
    for ci, c in enumerate(classes):
        shares = as_dict(c.get("share_by_split"))
        for si, s in enumerate(splits):
            v = shares.get(s)
            if is_number(v):
                values[(ci, si)] = float(v)
    series = [(s, ctx.color(s)) for s in splits]
    svg = grouped_bars([c.get("class") for c in classes], series, values, fmt=pct,
                       label="class shares per split")  # fmt: skip
    more = (
        f" (the {len(classes) - 30:,} smaller classes are in the JSON report)"
        if len(classes) > 30
        else ""
    )
    return chart_section("Class shares per split", legend(series) + svg, more)


def _lbl002(r: dict[str, Any], ctx: Context) -> str:
    m = as_dict(as_dict(r.get("details")).get("matrix"))
    labels, counts = as_list(m.get("labels")), as_list(m.get("counts"))
    if not labels or len(counts) != len(labels):
        return ""
    keep = sorted(range(len(labels)), key=lambda i: -sum(_numbers(counts[i])))[:20]
    keep.sort()
    sub = [[_numbers(counts[i])[j] if j < len(counts[i]) else 0 for j in keep] for i in keep]
    svg = heatmap([labels[i] for i in keep], sub, row_title=str(m.get("rows") or "given label"),
                  col_title=str(m.get("columns") or "likely label"),
                  label="given label against likely label")  # fmt: skip
    note = (
        f"{len(labels) - len(keep)} classes with the fewest rows are left out."
        if len(keep) < len(labels)
        else ""
    )
    return chart_section("Given label (rows) against likely label (columns)", svg, note)


def _numbers(row: Any) -> list[float]:
    return [float(v) if is_number(v) else 0.0 for v in as_list(row)]


def _lbl001(r: dict[str, Any], ctx: Context) -> str:
    pairs = [
        p for p in as_list(as_dict(r.get("details")).get("class_pairs")) if isinstance(p, dict)
    ]
    items = [(" ↔ ".join(str(x) for x in as_list(p.get("labels"))), p.get("groups")) for p in pairs]
    items = [(k, float(v)) for k, v in items if is_number(v)]
    return chart_section(
        "Conflicting label pairs (groups)", hbars(items, label="conflicting label pairs")
    )


# -- mixture, duplicates, leakage ---------------------------------------------------------------
def _mix001(r: dict[str, Any], ctx: Context) -> str:
    details, thresholds = as_dict(r.get("details")), as_dict(r.get("thresholds"))
    per_split = as_dict(details.get("splits"))
    if not per_split:
        return ""
    recipe = {str(k): v for k, v in as_dict(thresholds.get("recipe")).items() if is_number(v)}
    # against a recipe, the shares it is checked in; else rows, which the drift test compares
    key = "token_share" if recipe and thresholds.get("share") != "rows" else "row_share"
    splits = ctx.ordered(per_split)
    sources = sorted({str(s) for t in per_split.values() for s in as_dict(t)} | set(recipe))
    values = {}
    for ci, src in enumerate(sources):
        for si, s in enumerate(splits):
            v = as_dict(as_dict(per_split.get(s)).get(src)).get(key)
            if is_number(v):
                values[(ci, si)] = float(v)
    tol = thresholds.get("tolerance")
    tol_text = f" ± {pct(tol)}" if is_number(tol) else ""
    markers = {i: (float(recipe[s]), f"recipe {s}: {pct(recipe[s])}{tol_text}")
               for i, s in enumerate(sources) if s in recipe}  # fmt: skip
    series = [(s, ctx.color(s)) for s in splits]
    what = "rows" if key == "row_share" else "tokens"
    svg = grouped_bars(sources, series, values, fmt=pct, markers=markers,
                       label=f"share of {what} per source")  # fmt: skip
    head = legend(series) + (
        '<div class="legend"><span class="sw" style="background:#1f2328"></span>recipe</div>'
        if markers
        else ""
    )
    note = (
        ""
        if recipe
        else "No recipe is configured (MIX001 option recipe): the splits are compared with each other."
    )
    chart = chart_section(f"Share of {what} per source and split", head + svg, note)
    comps = as_dict(details.get("comparisons"))
    cols = [("cramers_v", "Cramér's V"), ("pvalue", "p-value"), ("drift", "drift")]
    return chart + _comparisons_table(comps, cols)


def _dup(r: dict[str, Any], ctx: Context) -> str:
    per_split = as_dict(as_dict(r.get("details")).get("splits"))
    key = (
        "cluster_sizes"
        if any("cluster_sizes" in as_dict(v) for v in per_split.values())
        else "group_sizes"
    )
    splits = [
        s
        for s in ctx.ordered(per_split)
        if any(_numbers(list(as_dict(as_dict(per_split[s]).get(key)).values())))
    ]
    if not splits:
        return ""
    buckets: list[str] = []
    for s in splits:
        buckets += [b for b in as_dict(as_dict(per_split[s]).get(key)) if b not in buckets]
    values = {}
    for ci, b in enumerate(buckets):
        for si, s in enumerate(splits):
            v = as_dict(as_dict(per_split[s]).get(key)).get(b)
            if is_number(v):
                values[(ci, si)] = float(v)
    series = [(s, ctx.color(s)) for s in splits]
    svg = grouped_bars([f"{b} rows" for b in buckets], series, values,
                       label="clusters by size")  # fmt: skip
    what = "near-duplicate clusters" if key == "cluster_sizes" else "duplicate groups"
    return chart_section(f"Number of {what} by size", legend(series) + svg)


def _leak001(r: dict[str, Any], ctx: Context) -> str:
    comps = as_dict(as_dict(r.get("details")).get("comparisons"))
    items = [(pair, as_dict(c).get("rate")) for pair, c in comps.items()]
    items = [(k, float(v)) for k, v in items if is_number(v)]
    cols = [("eval_rows", "eval rows"), ("leaked_rows", "leaked rows"), ("exact", "exact copies"),
            ("rate", "leaked share")]  # fmt: skip
    chart = chart_section(
        "Share of eval rows that sit in train",
        hbars(items, fmt=pct, color=COLORS["fail"], label="leaked share"),
    )
    return chart + _comparisons_table(comps, cols)


def _leak002(r: dict[str, Any], ctx: Context) -> str:
    details = as_dict(r.get("details"))
    items = []
    for name in ctx.ordered(k for k, v in details.items() if "contaminated_rows" in as_dict(v)):
        d = as_dict(details[name])
        if is_number(d.get("rows")) and d["rows"] and is_number(d.get("contaminated_rows")):
            items.append((name, d["contaminated_rows"] / d["rows"]))
    return chart_section(
        "Share of rows sharing an n-gram span with train",
        hbars(items, fmt=pct, color=COLORS["warn"], label="contaminated share"),
    )


# -- drift: TOK001, SHIFT001 --------------------------------------------------------------------
def _tok001(r: dict[str, Any], ctx: Context) -> str:
    comps = as_dict(as_dict(r.get("details")).get("comparisons"))
    out = []
    for pair, c in comps.items():
        c = as_dict(c)

        def rows(key: str, c: dict[str, Any] = c) -> list[tuple[Any, float, str]]:
            out = []
            for t in as_list(c.get(key)):
                t = as_dict(t)
                if is_number(t.get("js_bits")):
                    hover = f"{pct(t.get('base_share') or 0)} → {pct(t.get('share') or 0)}"
                    out.append((t.get("token"), float(t["js_bits"]), hover))
            return out

        names = str(pair).split(" vs ")
        other, base = (names[0], names[1]) if len(names) == 2 else ("the eval split", "the base")
        svg = token_bars(rows("over"), rows("under"), over_title=f"more common in {other} than in {base}",
                         under_title=f"less common in {other} than in {base}",
                         label=f"{pair}: drifting tokens")  # fmt: skip
        verdict = "drift" if c.get("drift") else "within noise"
        title = f"{pair}: top drifting tokens (JS {num(c.get('js'))}, noise {num(c.get('noise'))}; {verdict})"
        out.append(
            chart_section(title, svg, "Bar length: the token's contribution to the JS divergence.")
        )
    return "".join(out)


def _shift001(r: dict[str, Any], ctx: Context) -> str:
    comps = as_dict(as_dict(r.get("details")).get("comparisons"))
    items = []
    for pair, c in comps.items():
        c = as_dict(c)
        if not is_number(c.get("auc")):
            continue
        lo, hi = c.get("auc_low"), c.get("auc_high")
        band = c.get("severity")
        color = COLORS["fail" if band == "error" else "warn" if c.get("shift") else "info"]
        items.append((pair, float(c["auc"]), lo if is_number(lo) else None,
                      hi if is_number(hi) else None, color))  # fmt: skip
    if not items:
        return ""
    lows = [min(v for v in (est, lo) if v is not None) for _, est, lo, _, _ in items]
    domain = (min(0.4, min(lows) - 0.02), 1.0)
    vlines = [(0.5, "chance 0.5", COLORS["skipped"])]
    # the warn line comes from the null (it depends on the sample sizes): the largest critical
    # value of the comparisons shown; older reports carry a fixed min_auc instead
    crit = [float(c["auc_critical"]) for c in map(as_dict, comps.values()) if is_number(c.get("auc_critical"))]  # fmt: skip
    t = as_dict(r.get("thresholds")).get("min_auc")
    if crit:
        vlines.append((max(crit), f"null critical {num(max(crit))}", COLORS["warn"]))
    elif is_number(t):
        vlines.append((float(t), f"threshold {num(t)}", COLORS["warn"]))
    e = as_dict(r.get("thresholds")).get("error_auc")
    if is_number(e) and float(e) < 1:
        vlines.append((float(e), f"error (lower bound) {num(e)}", COLORS["fail"]))
    svg = intervals(items, domain=domain, vlines=vlines, label="domain classifier AUC")
    out = [chart_section("Domain classifier: AUC with its confidence interval", svg,
                    "0.5: the classifier cannot tell the splits apart; 1.0: it always can.")]  # fmt: skip
    roc = _roc_chart(comps)
    if roc:
        out.append(chart_section("Domain classifier: ROC curves (out-of-fold)", roc,
                            "The diagonal is chance; a curve bowed toward the top left separates the splits."))  # fmt: skip
    rows = []
    for pair, c in comps.items():
        c = as_dict(c)
        a, b = as_list(c.get("eval_ngrams")), as_list(c.get("base_ngrams"))
        if a or b:
            names = str(pair).split(" vs ")
            eval_name, base_name = (names[0], names[1]) if len(names) == 2 else ("eval", "base")
            rows.append(
                f"<tr><td>{esc(pair, 200)}</td><td><b>{esc(eval_name, 100)}</b>{_chips(a)}</td>"
                f"<td><b>{esc(base_name, 100)}</b>{_chips(b)}</td></tr>"
            )
    if rows:
        out.append(
            "<h4>The n-grams that most give each side away</h4><table><thead><tr>"
            "<th>comparison</th><th>typical of the eval split</th><th>typical of the base</th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
    return "".join(out)


def _roc_chart(comps: dict[str, Any]) -> str:
    """SHIFT001's ROC curve per comparison (``roc: {fpr, tpr}``), over the chance diagonal."""
    from ._svg import _svg, _text

    curves = []
    for pair, c in comps.items():
        roc = as_dict(as_dict(c).get("roc"))
        fpr, tpr = as_list(roc.get("fpr")), as_list(roc.get("tpr"))
        if len(fpr) == len(tpr) >= 2 and all(is_number(v) for v in fpr + tpr):
            curves.append((str(pair), [float(v) for v in fpr[:200]], [float(v) for v in tpr[:200]]))
    if not curves:
        return ""
    left, top, size = 40, 10, 220

    def xy(fx: float, ty: float) -> str:
        fx, ty = min(max(fx, 0.0), 1.0), min(max(ty, 0.0), 1.0)
        return f"{left + size * fx:.1f},{top + size * (1 - ty):.1f}"

    body = [
        f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="none" stroke="#d0d7de"/>',
        f'<line x1="{left}" y1="{top + size}" x2="{left + size}" y2="{top}" stroke="#8c959f" '
        'stroke-dasharray="4 3"/>',
        _text(left + size / 2, top + size + 28, "false positive rate (base rows)", anchor="middle"),
        _text(left - 6, top + size + 4, "0", anchor="end"),
        _text(left - 6, top + 8, "1", anchor="end"),
        _text(left + size, top + size + 14, "1", anchor="middle"),
    ]
    names = []
    for k, (pair, fpr, tpr) in enumerate(curves[: len(SPLIT_COLORS)]):
        color = SPLIT_COLORS[k % len(SPLIT_COLORS)]
        points = " ".join(xy(a, b) for a, b in zip(fpr, tpr))
        body.append(
            f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2">'
            f"<title>{esc(pair, 100)}</title></polyline>"
        )
        names.append((pair, color))
    svg = _svg(left + size + 20, top + size + 36, body, "domain classifier ROC curves")
    return legend(names) + svg


def _chips(items: list[Any]) -> str:
    return (
        '<div class="chips">' + "".join(f"<span>{esc(x, 60)}</span>" for x in items[:20]) + "</div>"
    )


_Chart = Callable[[dict[str, Any], Context], str]
_CHARTS: dict[str, _Chart] = {
    "LEN001": _len001,
    "LEN002": _len002,
    "LEN003": _len003,
    "LBL001": _lbl001,
    "LBL002": _lbl002,
    "LBL003": _lbl003,
    "MIX001": _mix001,
    "DUP001": _dup,
    "DUP002": _dup,
    "LEAK001": _leak001,
    "LEAK002": _leak002,
    "TOK001": _tok001,
    "SHIFT001": _shift001,
}
#: detail keys a rule's chart shows in full (the collapsed details leave them out); ``sketch`` is
#: a rule's saved state for later audits, drawn from but never shown
CHART_KEYS: dict[str, frozenset[str]] = {
    "LBL002": frozenset({"matrix"}),
    "LEN003": frozenset({"comparisons"}),
    "MIX001": frozenset({"comparisons"}),
    "LEAK001": frozenset({"comparisons"}),
    "TOK001": frozenset({"comparisons"}),
    "SHIFT001": frozenset({"comparisons"}),
}
_CHARTS.update(EVAL_CHARTS)  # the EVAL rules' charts live in their own module
CHART_KEYS.update(EVAL_CHART_KEYS)


def rule_chart(r: dict[str, Any], ctx: Context) -> str:
    """The chart(s) for one rule, or "" when it has none or its details are not there."""
    fn = _CHARTS.get(str(r.get("code")))
    if fn is None or r.get("status") == "skipped":
        return ""
    try:
        return fn(r, ctx)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as e:
        return (
            '<p class="muted small">No chart: this rule\'s details are not in the shape the '
            f"chart reads ({esc(type(e).__name__)}: {esc(value_text(str(e)), 200)}).</p>"
        )

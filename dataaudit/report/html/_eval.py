"""Charts of the EVAL rules (a model's predictions): the confusion matrix as a heat map with
per-class recall and its interval, the failing slices ranked, the error types with their words.

Like every chart they read only the report dict; the examples of each finding (a class's wrong
rows, a slice's, an error type's representatives) are shown under the finding as for any rule.
"""

from __future__ import annotations

from typing import Any

from ._base import COLORS, as_dict, as_list, chart_section, esc, is_number, num, pct, ratio, table
from ._svg import MAX_HEATMAP, hbars, heatmap, intervals

__all__ = ["EVAL_CHARTS", "EVAL_CHART_KEYS"]


def _eval001(r: dict[str, Any], ctx: Any) -> str:
    out = []
    failing = {
        (f.get("split"), as_dict(f.get("data")).get("class"))
        for f in as_list(r.get("findings"))
        if isinstance(f, dict) and as_dict(f.get("data")).get("metric") == "recall"
    }
    for split, info in as_dict(as_dict(r.get("details")).get("splits")).items():
        info = as_dict(info)
        m = as_dict(info.get("confusion"))
        labels, counts = as_list(m.get("labels")), as_list(m.get("counts"))
        if labels and len(counts) == len(labels):
            keep = sorted(range(len(labels)), key=lambda i: -sum(_nums(counts[i])))[:MAX_HEATMAP]
            keep.sort()
            sub = [[_nums(counts[i])[j] if j < len(counts[i]) else 0 for j in keep] for i in keep]
            svg = heatmap([labels[i] for i in keep], sub, row_title="true label",
                          col_title="predicted label", label=f"{split}: confusion matrix")  # fmt: skip
            left = len(labels) - len(keep)
            note = f"{left} classes with the fewest rows are left out." if left > 0 else ""
            out.append(chart_section(f"{split}: true label (rows) against prediction (columns)",
                                svg, note))  # fmt: skip
        classes = [c for c in as_list(info.get("classes")) if isinstance(c, dict)]
        items = []
        for c in classes:
            ci = as_list(c.get("recall_ci"))
            if not is_number(c.get("recall")):
                continue
            bad = (split, c.get("class")) in failing
            items.append(
                (
                    f"{c.get('class')} (n={num(c.get('support', 0))})",
                    float(c["recall"]),
                    ci[0] if len(ci) == 2 and is_number(ci[0]) else None,
                    ci[1] if len(ci) == 2 and is_number(ci[1]) else None,
                    COLORS["fail"] if bad else COLORS["info"],
                )
            )
        acc = info.get("accuracy")
        vlines = [(float(acc), f"accuracy {num(acc)}", COLORS["skipped"])] if is_number(acc) else []
        svg = intervals(items[:40], domain=(0.0, 1.0), vlines=vlines, fmt=num,
                        label=f"{split}: recall per class")  # fmt: skip
        out.append(chart_section(f"{split}: recall per class with its 95% interval", svg,
                            "Red: a class significantly worse than the other rows."))  # fmt: skip
        rows = [
            [c.get("class"), c.get("support"), c.get("precision"), _ci(c.get("precision_ci")),
             c.get("recall"), _ci(c.get("recall_ci")), c.get("f1"), _ci(c.get("f1_ci")),
             c.get("recall_q")]
            for c in classes
        ]  # fmt: skip
        headers = ["class", "support", "precision", "precision 95%", "recall", "recall 95%",
                   "f1", "f1 95%", "recall q"]  # fmt: skip
        out.append(chart_section(f"{split}: per-class metrics", table(headers, rows, limit=50)))
    return "".join(out)


def _ci(value: Any) -> str | None:
    v = as_list(value)
    if len(v) == 2 and all(is_number(x) for x in v):
        return f"{num(v[0])} – {num(v[1])}"
    return None


def _nums(row: Any) -> list[float]:
    return [float(v) if is_number(v) else 0.0 for v in as_list(row)]


def _eval002(r: dict[str, Any], ctx: Any) -> str:
    details = as_dict(r.get("details"))
    slices = [s for s in as_list(details.get("slices")) if isinstance(s, dict)]
    if not slices:
        return ""
    alpha = as_dict(r.get("thresholds")).get("alpha", 0.05)
    reported = {
        (as_dict(f.get("data")).get("dimension"), as_dict(f.get("data")).get("value"))
        for f in as_list(r.get("findings"))
        if isinstance(f, dict)
    }
    top = [s for s in slices if is_number(s.get("lift"))][:20]
    items = [(str(s.get("slice")), float(s["lift"])) for s in top]
    colors = [
        COLORS["fail"] if (s.get("dimension"), s.get("value")) in reported else COLORS["skipped"]
        for s in top
    ]
    svg = hbars(items, fmt=ratio, colors=colors, label="failure slices by lift")
    rate = details.get("error_rate")
    note = (
        f"Error rate over all rows with a prediction: {pct(float(rate))}. "
        if is_number(rate)
        else ""
    ) + f"Red: significant (Benjamini–Hochberg q <= {alpha}) with enough lift and effect."
    rows = [
        [s.get("slice"), s.get("size"), s.get("error_rate"), s.get("rest_error_rate"),
         s.get("lift"), s.get("p"), s.get("q")]
        for s in slices
    ]  # fmt: skip
    headers = ["slice", "rows", "error rate", "rest error rate", "lift", "p", "q"]
    out = [
        chart_section("Slices ranked by q-value: lift of the error rate", svg, note),
        chart_section("Slices tested (ranked)", table(headers, rows, limit=30)),
    ]
    missing = as_dict(details.get("unavailable"))
    if missing:
        items_html = "".join(
            f"<li>{esc(k, 100)}: {esc(v, 200)}</li>" for k, v in list(missing.items())[:30]
        )
        out.append(chart_section("Not searched", f'<ul class="small">{items_html}</ul>'))
    return "".join(out)


def _eval003(r: dict[str, Any], ctx: Any) -> str:
    types = [t for t in as_list(as_dict(r.get("details")).get("types")) if isinstance(t, dict)]
    if not types:
        return ""
    items = []
    for n, t in enumerate(types, 1):
        words = ", ".join(str(w) for w in as_list(t.get("ngrams"))[:3])
        conf = as_dict(t.get("confusion"))
        pair = f" · {conf.get('true')}→{conf.get('predicted')}" if conf else ""
        if is_number(t.get("size")):
            items.append((f"{n}. {words}{pair}", float(t["size"])))
    svg = hbars(items, label="error types by size")
    return chart_section(
        "Error types (wrong rows per type)",
        svg,
        "Each type's representative rows are listed under its finding.",
    )


EVAL_CHARTS = {"EVAL001": _eval001, "EVAL002": _eval002, "EVAL003": _eval003}
#: detail keys the charts show in full (the collapsed details leave them out)
EVAL_CHART_KEYS = {
    "EVAL001": frozenset({"splits"}),
    "EVAL002": frozenset({"slices", "unavailable"}),
    "EVAL003": frozenset({"types"}),
}

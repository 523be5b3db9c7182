"""The training-signals section of the report page: the logged curves as inline SVG with the
flagged steps marked, then each finding with its batch's reasons and worst rows.

Everything drawn comes from the report's ``signals`` section; curve values are numbers (a
non-number is skipped, never drawn as text) and every label goes through ``esc``.
"""

from __future__ import annotations

import math
from typing import Any

from ._base import COLORS, SEVERITY_CLASS, badge, esc, esc_plain, num, severity_of, table
from ._examples import examples_html

__all__ = ["curve_svg", "signals_html"]

_W, _H = 640.0, 170.0
_PAD_L, _PAD_R, _PAD_T, _PAD_B = 56.0, 12.0, 12.0, 26.0
_MAX_POINTS = 2000
_MAX_MARKS = 50
_MAX_FINDINGS = 40
#: curves drawn first, in this order; the others after them, by name
_FIRST = ("loss", "eval_loss", "grad_norm", "learning_rate")


def _points(curve: Any) -> list[tuple[float, float]]:
    if not isinstance(curve, dict):
        return []
    steps, values = curve.get("step"), curve.get("value")
    if not isinstance(steps, list) or not isinstance(values, list):
        return []
    out = []
    for s, v in zip(steps[:_MAX_POINTS], values[:_MAX_POINTS]):
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (s, v))
        if numbers and math.isfinite(s) and math.isfinite(v):
            out.append((float(s), float(v)))
    return out


def curve_svg(
    name: str,
    points: list[tuple[float, float]],
    marks: dict[int, str],
    *,
    log_scale: bool = False,
    overlay: list[tuple[float, float]] | None = None,
) -> str:
    """One curve (and an optional second one on the same axes) with marked steps: a red
    dot on the curve and a dashed line at each marked step, labelled with its code."""
    pts = [(s, v) for s, v in points if not log_scale or v > 0]
    over = [(s, v) for s, v in (overlay or []) if not log_scale or v > 0]
    if not pts:
        return ""

    def tr(v: float) -> float:
        return math.log10(v) if log_scale else v

    xs = [s for s, _ in pts + over]
    ys = [tr(v) for _, v in pts + over]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y1 = y0 + 1
    plot_w, plot_h = _W - _PAD_L - _PAD_R, _H - _PAD_T - _PAD_B

    def px(s: float) -> float:
        return _PAD_L + (s - x0) / (x1 - x0) * plot_w

    def py(v: float) -> float:
        return _PAD_T + (1 - (tr(v) - y0) / (y1 - y0)) * plot_h

    def path(series: list[tuple[float, float]]) -> str:
        return " ".join(
            f"{'M' if i == 0 else 'L'}{px(s):.1f},{py(v):.1f}" for i, (s, v) in enumerate(series)
        )

    def ylabel(t: float) -> str:
        return num(10**t) if log_scale else num(t)

    body = [
        f'<rect x="{_PAD_L}" y="{_PAD_T}" width="{plot_w:.1f}" height="{plot_h:.1f}" '
        'fill="none" stroke="#d0d7de"/>',
        f'<path d="{path(pts)}" fill="none" stroke="{COLORS["info"]}" stroke-width="1.2"/>',
    ]
    if over:
        body.append(
            f'<path d="{path(over)}" fill="none" stroke="#e16f24" stroke-width="1.6" '
            'stroke-dasharray="4 2"/>'
        )
    for t, anchor_y in ((y1, _PAD_T + 9), (y0, _PAD_T + plot_h)):
        body.append(
            f'<text x="{_PAD_L - 4:.1f}" y="{anchor_y:.1f}" text-anchor="end" '
            f'font-size="10">{esc_plain(ylabel(t), 20)}</text>'
        )
    for s, anchor in ((x0, "start"), (x1, "end")):
        body.append(
            f'<text x="{px(s):.1f}" y="{_H - 8:.1f}" text-anchor="{anchor}" font-size="10">'
            f"step {esc_plain(num(s), 20)}</text>"
        )
    by_step = dict(pts)
    for step, code in sorted(marks.items())[:_MAX_MARKS]:
        if not x0 <= step <= x1:
            continue
        x = px(step)
        body.append(
            f'<line x1="{x:.1f}" y1="{_PAD_T}" x2="{x:.1f}" y2="{_PAD_T + plot_h:.1f}" '
            f'stroke="{COLORS["fail"]}" stroke-dasharray="3 3" stroke-width="0.8"/>'
        )
        if step in by_step:
            body.append(
                f'<circle cx="{x:.1f}" cy="{py(by_step[step]):.1f}" r="3.5" '
                f'fill="{COLORS["fail"]}"><title>{esc_plain(code, 20)} at step '
                f"{esc_plain(num(step), 20)}: {esc_plain(num(by_step[step]), 20)}</title></circle>"
            )
        body.append(
            f'<text x="{x + 2:.1f}" y="{_PAD_T + 9:.1f}" font-size="9" '
            f'fill="{COLORS["fail"]}">{esc_plain(num(step), 12)}</text>'
        )
    label = f"{name} by step" + (" (log scale)" if log_scale else "")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W:.0f}" height="{_H:.0f}" '
        f'viewBox="0 0 {_W:.0f} {_H:.0f}" role="img" aria-label="{esc_plain(label, 200)}">'
        f"<title>{esc_plain(label, 200)}</title>{''.join(body)}</svg>"
    )


def _wide(points: list[tuple[float, float]]) -> bool:
    """Log scale for a positive curve whose top is 10x its median (a spike would flatten
    everything else on a linear axis)."""
    values = sorted(v for _, v in points)
    if not values or values[0] <= 0:
        return False
    return values[-1] > 10 * values[len(values) // 2]


def _marks(findings: list[dict[str, Any]]) -> dict[int, str]:
    out: dict[int, str] = {}
    for f in findings:
        step = f.get("step")
        if isinstance(step, int) and not isinstance(step, bool):
            out.setdefault(step, str(f.get("code", "")))
    return out


def _curves(section: dict[str, Any]) -> str:
    curves = section.get("curves")
    if not isinstance(curves, dict):
        return ""
    findings = [f for f in section.get("findings") or [] if isinstance(f, dict)]
    marks = _marks(
        [f for f in findings if f.get("code") in ("SIG001", "SIG002", "SIG003", "SIG005")]
    )
    names = [n for n in _FIRST if n in curves] + sorted(
        n for n in curves if n not in _FIRST and isinstance(n, str)
    )
    parts = []
    for name in names[:12]:
        if name == "eval_loss" and "loss" in curves:
            continue  # drawn over the training loss
        points = _points(curves[name])
        overlay = _points(curves.get("eval_loss")) if name == "loss" else None
        svg = curve_svg(
            name,
            points,
            marks,
            log_scale=_wide(points),
            overlay=overlay,
        )
        if not svg:
            continue
        title = esc(name, 60) + (
            ' <span class="muted small">(dashed: eval_loss)</span>' if overlay else ""
        )
        parts.append(f'<div class="chart"><h4>{title}</h4>{svg}</div>')
    return "".join(parts)


def _finding(f: dict[str, Any], split_index: dict[str, int]) -> str:
    sev = severity_of(f)
    head = (
        f"{badge(sev, SEVERITY_CLASS[sev])} <b>{esc(f.get('code'), 20)}</b> "
        f"{esc(f.get('name'), 60)}: {esc(f.get('message'), 1500)}"
    )
    batch = f.get("batch")
    extra = ""
    if isinstance(batch, dict):
        effects = batch.get("effects") if isinstance(batch.get("effects"), dict) else {}
        rows = [
            [
                name,
                e.get("value"),
                f"{num(e.get('random_mean'))} ± {num(e.get('random_sd'))}",
                e.get("z"),
            ]
            for name, e in sorted(
                effects.items(),
                key=lambda kv: -abs(kv[1].get("z", 0) if isinstance(kv[1], dict) else 0),
            )
            if isinstance(e, dict)
        ]
        extra = (
            f'<details><summary class="small">batch of step {esc(batch.get("step"), 20)}: '
            f"{esc(batch.get('rows'), 20)} rows against random batches</summary>"
            + table(["measure", "batch", "random batches", "z"], rows, limit=20)
            + "</details>"
        )
    examples = examples_html(f.get("examples"), str(f.get("code")), split_index)
    return (
        f'<div class="finding" data-severity="{sev}">{head}'
        f'<div class="muted small">fingerprint {esc(f.get("fingerprint"), 60)}</div>'
        f"{extra}{examples}</div>"
    )


def signals_html(data: dict[str, Any], split_index: dict[str, int]) -> str:
    """The section, or "" when the report has none."""
    section = data.get("signals")
    if not isinstance(section, dict):
        return ""
    status = str(section.get("status", "pass"))
    log = section.get("log") if isinstance(section.get("log"), dict) else {}
    order = section.get("order") if isinstance(section.get("order"), dict) else None
    metrics = section.get("metrics") if isinstance(section.get("metrics"), dict) else {}
    line = (
        f"{esc(log.get('path'), 300)} ({esc(log.get('format'), 40)}): "
        f"{esc(log.get('steps'), 20)} steps · "
        + (
            f"sample order: {esc(order.get('kind'), 40)} {esc(order.get('path'), 300)}"
            if order
            else "no sample order: spikes are not mapped to rows"
        )
    )
    findings = [f for f in section.get("findings") or [] if isinstance(f, dict)]
    items = "".join(_finding(f, split_index) for f in findings[:_MAX_FINDINGS])
    if len(findings) > _MAX_FINDINGS:
        items += f'<p class="muted">{len(findings) - _MAX_FINDINGS} more in the JSON report.</p>'
    if not findings:
        items = '<p class="muted">No findings in the training log.</p>'
    metric_rows = [[k, v] for k, v in metrics.items()]
    cls = status if status in COLORS else "info"
    return (
        f'<section id="signals" class="rule st-{cls}"><h2>{badge(status, cls)} Training '
        f'signals</h2><p class="muted small">{line}</p>'
        + table(["metric", "value"], metric_rows, limit=20)
        + _curves(section)
        + items
        + "</section>"
    )

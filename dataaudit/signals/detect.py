"""What a training log shows: spikes, non-finite values, clipping, schedule anomalies,
train/validation divergence and plateaus. Numbers in, findings out (no data, no report).

A spike is a step whose value is far above its neighbours: the robust z-score
``(x - median) / (1.4826 · MAD)`` against the ``window`` steps on each side (the step itself
left out), one-sided (only upward), on the loss as logged and on the logarithm of the
gradient norm (norms vary by factors, not by amounts). The median is the higher of the medians
before and after the step, so a trend (the loss falling fast) is no spike; the scale is the
MAD of the neighbours' step-to-step differences (over √2: the noise, which a trend does not
widen), with a floor of 1% of the median, so a flat curve does not turn every wiggle into a
spike. The first ``min_points / 2`` steps are not judged (no past to
compare with, and the loss falls fastest there). Consecutive spike steps are one event (the
steps after a bad update are its aftershocks), reported at the step with the highest z.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .log import TrainingLog

__all__ = ["SignalOptions", "Event", "detect", "robust_z"]

CODES = {
    "SIG001": "loss spike",
    "SIG002": "gradient-norm spike",
    "SIG003": "non-finite values",
    "SIG004": "clipped steps",
    "SIG005": "learning-rate schedule",
    "SIG006": "train/validation divergence",
    "SIG007": "loss plateau",
}


@dataclass(frozen=True)
class SignalOptions:
    z: float = 6.0  # robust z from which a step is a spike
    window: int = 25  # neighbours on each side of a step
    min_points: int = 10  # fewer finite neighbours: no verdict for that step
    max_grad_norm: float | None = None  # the clipping threshold, when known
    max_clipped_share: float = 0.5  # above this share of clipped steps: a finding
    lr_jump: float = 3.0  # a step-to-step factor of the learning rate that is a jump
    expect_warmup: bool = True  # a run that starts at its peak rate is a finding
    divergence: float = 0.05  # relative rise of the validation loss over its minimum
    plateau: float = 0.02  # relative range of a flat stretch of the smoothed loss
    plateau_steps: float = 0.25  # least share of the run a reported plateau spans

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class Event:
    """One finding of the log: its code, severity, message, the steps and the numbers."""

    code: str
    severity: str
    message: str
    step: int | None = None
    steps: list[int] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return str(x)
    return f"{x:.4g}"


def robust_z(
    values: np.ndarray, window: int, min_points: int, floor: float = 0.01, min_left: int = 0
) -> tuple:
    """Per point: robust z against its centred neighbourhood, the neighbours' median and
    scale (NaN where there are fewer than ``min_points`` finite neighbours, or fewer than
    ``min_left`` before the point)."""
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    z = np.full(n, np.nan)
    med = np.full(n, np.nan)
    scale = np.full(n, np.nan)
    if n == 0:
        return z, med, scale
    padded = np.concatenate([np.full(window, np.nan), np.where(np.isfinite(x), x, np.nan)])
    padded = np.concatenate([padded, np.full(window, np.nan)])
    span = 2 * window + 1
    keep = np.ones(span, dtype=bool)
    keep[window] = False  # the point itself is not its own neighbour
    chunk = max(1, 4_000_000 // span)  # bounded memory whatever the log's length
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        nb = np.lib.stride_tricks.sliding_window_view(padded[lo : hi + 2 * window], span)[:, keep]
        count = np.sum(np.isfinite(nb), axis=1)
        left = np.sum(np.isfinite(nb[:, :window]), axis=1)
        ok = (count >= min_points) & (left >= min_left) & np.isfinite(x[lo:hi])
        if not ok.any():
            continue
        rows = nb[ok]
        m = np.nanmedian(rows, axis=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a side without points: NaN
            # the noise from step-to-step differences: a trend moves their median, not their
            # spread (1.4826 · MAD / √2 is σ for independent noise)
            d = np.diff(rows, axis=1)
            dm = np.nanmedian(d, axis=1)
            mad = np.nanmedian(np.abs(d - dm[:, None]), axis=1) / math.sqrt(2)
            sides = np.stack(
                [np.nanmedian(rows[:, :window], axis=1), np.nanmedian(rows[:, window:], axis=1)]
            )
        mad = np.where(np.isfinite(mad), mad, 0.0)
        sc = np.maximum(np.maximum(1.4826 * mad, floor * np.abs(m)), 1e-12)
        # above both sides: a trend (the loss falling fast) is not a spike
        ref = np.nanmax(sides, axis=0)
        idx = np.flatnonzero(ok) + lo
        med[idx], scale[idx], z[idx] = ref, sc, (x[idx] - ref) / sc
    return z, med, scale


def _events(flags: np.ndarray, z: np.ndarray) -> list[list[int]]:
    """Runs of consecutive flagged indices."""
    runs: list[list[int]] = []
    for i in np.flatnonzero(flags):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(int(i))
        else:
            runs.append([int(i)])
    return runs


def spikes(log: TrainingLog, opts: SignalOptions) -> list[Event]:
    out: list[Event] = []
    series = [("loss", "SIG001", False), ("grad_norm", "SIG002", True)]
    found: dict[int, Event] = {}
    for name, code, in_log in series:
        raw = log.columns.get(name)
        if raw is None:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.log(raw) if in_log else raw.copy()
        x[~np.isfinite(x)] = np.nan
        # the first steps have no past to be compared with, and the loss falls fastest
        # there: a step is judged once min_points/2 steps came before it
        z, med, _ = robust_z(x, opts.window, opts.min_points, 0.01, opts.min_points // 2)
        hit = np.nan_to_num(z, nan=-np.inf) >= opts.z
        for run in _events(hit, z):
            top = max(run, key=lambda i: z[i])
            step = int(log.steps[top])
            median = float(np.exp(med[top]) if in_log else med[top])
            info = {
                "value": float(raw[top]),
                "median": median,
                "z": round(float(z[top]), 2),
                "steps": [int(log.steps[i]) for i in run],
            }
            # the same bad batch often spikes both: one event, under the loss if it spiked
            near = [s for s in found if abs(s - step) <= max(1, len(run))]
            if near:
                ev = found[near[0]]
                ev.data[name] = info
                ev.steps = sorted(set(ev.steps) | set(info["steps"]))
                continue
            ev = Event(code, "warn", "", step=step, steps=info["steps"], data={name: info})
            found[step] = ev
            out.append(ev)
    for ev in out:
        parts = []
        for name, label in (("loss", "loss"), ("grad_norm", "gradient norm")):
            if name in ev.data:
                d = ev.data[name]
                parts.append(
                    f"{label} {_fmt(d['value'])} against a median of {_fmt(d['median'])} around "
                    f"it (robust z {d['z']:.1f})"
                )
        after = f"; high through step {ev.steps[-1]}" if len(ev.steps) > 1 else ""
        ev.message = f"step {ev.step}: {' and '.join(parts)}{after}"
        ev.data["z"] = max(ev.data[n]["z"] for n in ("loss", "grad_norm") if n in ev.data)
    return sorted(out, key=lambda e: e.step or 0)


def nonfinite(log: TrainingLog) -> list[Event]:
    out = []
    for name in sorted(log.columns):
        values, present = log.columns[name], log.present[name]
        bad = present & ~np.isfinite(values)
        if not bad.any():
            continue
        steps = [int(s) for s in log.steps[bad]]
        kinds = sorted({"NaN" if math.isnan(v) else "inf" for v in values[bad]})
        out.append(
            Event(
                "SIG003",
                "error",
                f"{name} is {'/'.join(kinds)} at {len(steps)} step{'s' * (len(steps) != 1)} "
                f"(first at step {steps[0]}): the run diverged or a batch broke it",
                step=steps[0],
                steps=steps[:100],
                data={"column": name, "count": len(steps), "first_step": steps[0]},
            )
        )
    return out


def clipping(log: TrainingLog, opts: SignalOptions) -> tuple[float | None, list[Event]]:
    norms = log.columns.get("grad_norm")
    limit = opts.max_grad_norm
    if limit is None:
        limit = log.meta.get("max_grad_norm")
    if norms is None or limit is None:
        return None, []
    finite = norms[np.isfinite(norms)]
    if not finite.size:
        return None, []
    share = float(np.mean(finite > float(limit)))
    if share <= opts.max_clipped_share:
        return share, []
    return share, [
        Event(
            "SIG004",
            "warn",
            f"{share:.0%} of steps have a gradient norm above max_grad_norm={_fmt(float(limit))} "
            "and were clipped: the clip, not the learning rate, sets the step size; raise "
            "max_grad_norm or lower the learning rate",
            data={"clipped_share": round(share, 4), "max_grad_norm": float(limit)},
        )
    ]


def schedule(log: TrainingLog, opts: SignalOptions) -> list[Event]:
    lr = log.columns.get("learning_rate")
    if lr is None:
        return []
    keep = np.isfinite(lr)
    rates, steps = lr[keep], log.steps[keep]
    if rates.size < 2:
        return []
    out: list[Event] = []
    peak = float(rates.max())
    if peak <= 0:
        return [
            Event(
                "SIG005",
                "error",
                "the learning rate is 0 at every logged step: nothing was trained",
                step=int(steps[0]),
                data={"kind": "zero", "peak": peak},
            )
        ]
    zero = rates <= 0
    # zeros are expected only as the first step of a warm-up and at the end of a decay
    first_nonzero = int(np.argmax(~zero))
    last_nonzero = len(rates) - 1 - int(np.argmax(~zero[::-1]))
    inner = np.flatnonzero(zero[first_nonzero : last_nonzero + 1]) + first_nonzero
    if first_nonzero > 1:
        inner = np.concatenate([np.arange(first_nonzero), inner])
    if inner.size:
        where = [int(steps[i]) for i in inner]
        out.append(
            Event(
                "SIG005",
                "warn",
                f"the learning rate is 0 at {len(where)} step{'s' * (len(where) != 1)} while "
                f"training goes on (first at step {where[0]}): those steps update nothing; a "
                "scheduler restarted or a parameter group is frozen",
                step=where[0],
                steps=where[:100],
                data={"kind": "zero", "count": len(where)},
            )
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = rates[1:] / rates[:-1]
    both = (rates[1:] > 0) & (rates[:-1] > 0)
    jumps = np.flatnonzero(both & ((ratio > opts.lr_jump) | (ratio < 1 / opts.lr_jump)))
    # a warm-up's first steps double the rate legitimately; a jump is a factor > lr_jump
    for i in jumps[:10]:
        out.append(
            Event(
                "SIG005",
                "warn",
                f"the learning rate jumps from {_fmt(float(rates[i]))} to "
                f"{_fmt(float(rates[i + 1]))} at step {int(steps[i + 1])} "
                f"(×{float(ratio[i]):.3g}): a scheduler restart or a resumed run with another "
                "schedule",
                step=int(steps[i + 1]),
                data={"kind": "jump", "from": float(rates[i]), "to": float(rates[i + 1])},
            )
        )
    if opts.expect_warmup and steps[0] <= 5 and rates[0] >= 0.5 * peak:
        out.append(
            Event(
                "SIG005",
                "warn",
                f"no warm-up: the first logged step already runs at {rates[0] / peak:.0%} of the "
                f"peak learning rate ({_fmt(peak)}); a short warm-up (warmup_ratio 0.03-0.1) "
                "avoids early spikes",
                step=int(steps[0]),
                data={"kind": "no_warmup", "first": float(rates[0]), "peak": peak},
            )
        )
    return out


def _smooth(x: np.ndarray, k: int) -> np.ndarray:
    """Rolling median over 2k+1 points (fewer at the ends), non-finite values left out."""
    x = np.where(np.isfinite(x), x, np.nan).astype(np.float64)
    n = len(x)
    out = np.full(n, np.nan)
    padded = np.concatenate([np.full(k, np.nan), x, np.full(k, np.nan)])
    span = 2 * k + 1
    chunk = max(1, 4_000_000 // span)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN window stays NaN
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            win = np.lib.stride_tricks.sliding_window_view(padded[lo : hi + 2 * k], span)
            out[lo:hi] = np.nanmedian(win, axis=1)
    return out


def divergence(log: TrainingLog, opts: SignalOptions) -> list[Event]:
    ev = log.eval_columns.get("eval_loss")
    if ev is None:
        return []
    keep = np.isfinite(ev)
    values, steps = ev[keep], log.eval_steps[keep]
    if values.size < 4:
        return []
    smooth = _smooth(values, 1)
    best = int(np.lexsort((values, smooth))[0])  # lowest smoothed; a tie by the raw value
    low = float(smooth[best])
    later = smooth[best + 1 :]
    if not later.size or low <= 0:
        return []
    rise = float(later.max() - low) / low
    end_rise = float(smooth[-1] - low) / low
    if rise <= opts.divergence or end_rise <= opts.divergence / 2:
        return []
    loss = log.columns["loss"]
    train = _smooth(loss, 5)
    at_best = float(np.interp(steps[best], log.steps, train))
    at_end = float(np.interp(steps[-1], log.steps, train))
    falling = at_end < at_best
    what = (
        f"while the training loss keeps falling ({_fmt(at_best)} → {_fmt(at_end)}): "
        "overfitting starts there; keep the checkpoint of that step or stop earlier"
        if falling
        else "and the training loss does not fall either: the run degrades after it"
    )
    return [
        Event(
            "SIG006",
            "warn",
            f"the validation loss is lowest at step {int(steps[best])} ({_fmt(low)}) and rises "
            f"to {_fmt(float(smooth[-1]))} by step {int(steps[-1])} (+{end_rise:.0%}) {what}",
            step=int(steps[best]),
            data={
                "best_step": int(steps[best]),
                "best_eval_loss": low,
                "last_eval_loss": float(smooth[-1]),
                "train_loss_at_best": at_best,
                "train_loss_at_end": at_end,
            },
        )
    ]


def plateau(log: TrainingLog, opts: SignalOptions) -> list[Event]:
    loss = log.columns["loss"]
    n = len(loss)
    if n < 40:
        return []
    # the curve in at most 400 bins (each its median), smoothed: long logs cost the same
    bins = min(n, 400)
    edges = np.linspace(0, n, bins + 1).round().astype(int)
    finite = np.where(np.isfinite(loss), loss, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        binned = np.array([np.nanmedian(finite[a:b]) for a, b in zip(edges[:-1], edges[1:])])
    smooth = _smooth(binned, max(2, bins // 40))
    first_step, last_step = log.steps[edges[:-1]], log.steps[edges[1:] - 1]
    least = max(1, int(math.ceil(max(20, opts.plateau_steps * n) * bins / n)))
    tail = max(5, bins // 10)
    first = float(np.nanmedian(smooth[:tail]))
    last = float(np.nanmedian(smooth[-tail:]))
    if first > 0 and (first - last) / first < opts.plateau:
        return [
            Event(
                "SIG007",
                "warn",
                f"the training loss does not go down: {_fmt(first)} in the first tenth of the "
                f"run, {_fmt(last)} in the last; check the learning rate, the labels and that "
                "the batches are what the model is meant to learn",
                step=int(log.steps[0]),
                data={"first": first, "last": last},
            )
        ]
    # flat stretches before the end: a stretch where the smoothed loss stays in a ±plateau band
    out = []
    start = 0
    while start < bins - least:
        ref = smooth[start]
        end = start
        while end + 1 < bins and abs(smooth[end + 1] - ref) <= opts.plateau * abs(ref):
            end += 1
        if end - start + 1 >= least and end < bins - tail:
            a, b = int(first_step[start]), int(last_step[end])
            out.append(
                Event(
                    "SIG007",
                    "info",
                    f"the training loss stays at {_fmt(float(ref))} (±{opts.plateau:.0%}) from "
                    f"step {a} to step {b}, then moves again",
                    step=a,
                    data={"from": a, "to": b},
                )
            )
            start = end + 1
        else:
            start += 1
    return out


SPIKES = ("SIG001", "SIG002")


def detect(log: TrainingLog, opts: SignalOptions) -> tuple[list[Event], dict[str, Any]]:
    """Every finding of the log, and its metrics."""
    events = nonfinite(log) + spikes(log, opts)
    share, clipped = clipping(log, opts)
    events += clipped + schedule(log, opts) + divergence(log, opts) + plateau(log, opts)
    metrics = {
        "steps": int(len(log.steps)),
        # a step where both spiked is one SIG001 event, and counts as a spike of each
        "loss_spikes": sum(e.code in SPIKES and "loss" in e.data for e in events),
        "grad_norm_spikes": sum(e.code in SPIKES and "grad_norm" in e.data for e in events),
        "nonfinite_steps": int(sum(e.data.get("count", 0) for e in events if e.code == "SIG003")),
        "clipped_share": None if share is None else round(share, 4),
        "final_loss": _last_finite(log.columns["loss"]),
        "final_eval_loss": _last_finite(log.eval_columns.get("eval_loss")),
    }
    return events, metrics


def _last_finite(values: np.ndarray | None) -> float | None:
    if values is None:
        return None
    finite = values[np.isfinite(values)]
    return float(finite[-1]) if finite.size else None

"""signals(): a training log read against the data it trained on."""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any

from ..errors import ConfigError, InputError

__all__ = ["signals"]

MAX_CURVE_POINTS = 2000


def _curve(steps: Any, values: Any, keep: set[int]) -> dict[str, list[Any]]:
    """A curve for the report: at most MAX_CURVE_POINTS points (evenly thinned, but the steps
    in ``keep`` always stay), non-finite values as null."""
    import numpy as np

    n = len(steps)
    idx = np.arange(n)
    if n > MAX_CURVE_POINTS:
        idx = np.unique(np.linspace(0, n - 1, MAX_CURVE_POINTS).round().astype(int))
        extra = [i for i in range(n) if int(steps[i]) in keep]
        idx = np.unique(np.concatenate([idx, np.array(extra, dtype=int)]))
    return {
        "step": [int(steps[i]) for i in idx],
        "value": [float(values[i]) if math.isfinite(values[i]) else None for i in idx],
    }


def _fingerprint(code: str, evidence: Any) -> str:
    text = json.dumps(evidence, sort_keys=True, default=str)
    return f"{code}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def signals(
    log: str | os.PathLike,
    data: Any,
    *,
    order: str | os.PathLike | None = None,
    sampler_order: str | os.PathLike | None = None,
    batch_size: int | None = None,
    gradient_accumulation_steps: int = 1,
    train_split: str | None = None,
    max_grad_norm: float | None = None,
    z: float = 6.0,
    window: int = 25,
    batch_z: float = 4.0,
    config: Any = None,
    fail_on: str | None = None,
    seed: int | None = None,
    progress: bool = False,
    report: Any = None,
    **columns: str,
) -> Any:
    """Read a training log against the data the run trained on; return the data's Report with
    a ``signals`` section. ``report.passed`` gates on both (``fail_on`` applies).

    ``log``: a Hugging Face Trainer ``trainer_state.json``, a JSON/JSONL of step entries or a
    CSV of step metrics (``step``, ``loss``; ``grad_norm``, ``learning_rate``, ``eval_loss`` and
    any other columns are used when present). ``data``: what ``audit()`` takes; it is audited
    (``config``, ``fail_on``, ``seed`` and the column roles as in ``audit()``) and each row's
    flags describe the batches. ``order``: an order file (rows per step), or ``sampler_order``
    with ``batch_size`` (rows per forward pass over all devices) and
    ``gradient_accumulation_steps``: each spike is then mapped to its batch, compared with the
    corpus. ``train_split``: the split the run trained on (default: the training split).
    ``report``: the audit of ``data`` already made (a report JSON path or a Report): its row
    flags and gate are used instead of auditing again (checked: the training split's rows and
    content hash must be the report's). ``max_grad_norm``: the clipping threshold, for the
    share of clipped steps. ``z``: the
    robust z-score from which a step is a spike, against ``window`` steps on each side;
    ``batch_z``: from which a batch measure is a reason.
    """
    from ..api import audit
    from .batches import compare_batch, load_rows
    from .detect import CODES, SignalOptions, detect
    from .log import read_log
    from .order import read_order
    from .order import sampler_order as read_sampler

    if order is not None and sampler_order is not None:
        raise ConfigError("give an order file or a sampler order, not both.")
    if sampler_order is not None and batch_size is None:
        raise ConfigError(
            "a sampler order needs batch_size (rows per forward pass over all devices)."
        )
    if z <= 0 or batch_z <= 0 or window < 2:
        raise ConfigError("z and batch_z must be > 0 and window at least 2.")
    opts = SignalOptions(z=z, window=window, max_grad_norm=max_grad_norm)
    training = read_log(log)  # a bad log fails before the audit runs
    steps_rows = None
    if order is not None:
        steps_rows = read_order(order)
    elif sampler_order is not None:
        steps_rows = read_sampler(
            sampler_order, batch_size, gradient_accumulation_steps, int(training.steps[0])
        )
    if steps_rows is not None:
        last = int(training.steps[-1])
        missing = [int(s) for s in training.steps if int(s) not in steps_rows]
        if missing:
            source = (
                f"order file {order}" if order is not None else f"sampler order {sampler_order}"
            )
            raise InputError(
                f"{source} has rows for {len(steps_rows)} steps ({min(steps_rows)}-"
                f"{max(steps_rows)}), but the log has step {missing[0]}"
                + (f" and {len(missing) - 1} more" if len(missing) > 1 else "")
                + f" (up to {last}): the order belongs to another run, or batch_size / "
                "gradient_accumulation_steps are not the run's."
            )
    base = _given_report(report, fail_on) if report is not None else None
    table = None
    if steps_rows is not None or base is not None:
        from ..config import load_config

        # the rows are read as the audit reads them (the config's columns and split column,
        # and the arguments); the order is checked against the data before the audit runs
        if base is not None:  # the roles the report's audit used, given or detected
            used = base.data["config"]
            roles = {k: v["column"] for k, v in base.data["dataset"]["roles"].items()}
            split_column, bad_lines = used.get("split"), used.get("on_bad_lines")
        else:
            cfg = load_config(config, columns={k: v for k, v in columns.items() if v} or None)
            roles, split_column, bad_lines = cfg.columns, cfg.split, cfg.on_bad_lines
        table = load_rows(data, train_split, roles, split_column, bad_lines)
        if base is not None:
            _check_same_data(base, table)
        # every step of the order must name rows of this data: check them all, not only spikes
        for step, refs in (steps_rows or {}).items():
            table.resolve(refs, step)
    if base is not None:
        report = base
    else:
        report = audit(
            data, config=config, fail_on=fail_on, seed=seed, progress=progress, **columns
        )
    events, metrics = detect(training, opts)
    if steps_rows is None:
        table = None  # read only to check the report; no batch without an order
    if table is not None:
        table.attach_flags(report.flags())
    max_examples = int(report.data["config"].get("max_examples", 5))
    example_chars = int(report.data["config"].get("example_chars", 200))
    cache: dict[Any, Any] = {}
    findings = []
    for ev in events:
        finding: dict[str, Any] = {
            "code": ev.code,
            "name": CODES[ev.code],
            "severity": ev.severity,
            "message": ev.message,
            "step": ev.step,
            "steps": ev.steps,
            "data": ev.data,
            "batch": None,
            "examples": [],
        }
        if table is not None and ev.code in ("SIG001", "SIG002", "SIG003") and ev.step is not None:
            refs = steps_rows.get(ev.step) if steps_rows else None
            if refs:
                rows = table.resolve(refs, ev.step)
                cmp = compare_batch(
                    table,
                    rows,
                    seed=int(report.data["config"].get("seed", 0)),
                    batch_z=batch_z,
                    cache=cache,
                )
                finding["batch"] = {
                    "step": ev.step,
                    "rows": cmp["rows"],
                    "effects": cmp["effects"],
                    "reasons": cmp["reasons"],
                }
                if cmp["reasons"]:
                    top = "; ".join(r["text"] for r in cmp["reasons"][:3])
                    finding["message"] += f". Its batch ({cmp['rows']} rows) is unusual: {top}"
                else:
                    finding["message"] += (
                        f". Its batch ({cmp['rows']} rows) looks like the corpus on every "
                        "measure: the optimizer (learning rate, state) is the likelier cause"
                    )
                for w in cmp["worst"][:max_examples]:
                    text = table.texts[w["row"]]
                    if isinstance(text, str) and len(text) > example_chars:
                        text = text[:example_chars] + f"… [+{len(text) - example_chars} chars]"
                    ident = table.ids[w["row"]]
                    finding["examples"].append(
                        {
                            "split": table.split,
                            "row": w["row"],
                            "id": None if ident is None else str(ident)[:200],
                            "text": text,
                            "why": w["why"],
                            "score": w["score"],
                        }
                    )
        evidence = {k: finding[k] for k in ("code", "step")} | {
            "kind": ev.data.get("kind") or ev.data.get("column")
        }
        finding["fingerprint"] = _fingerprint(ev.code, evidence)
        findings.append(finding)
    keep = {s for f in findings for s in f["steps"]}
    curves = {
        name: _curve(training.steps, values, keep) for name, values in training.columns.items()
    }
    curves.update(
        {
            name: _curve(training.eval_steps, values, set())
            for name, values in training.eval_columns.items()
        }
    )
    section = {
        "log": training.describe(),
        "order": None
        if steps_rows is None
        else {
            "path": os.fspath(order if order is not None else sampler_order),
            "kind": "order file" if order is not None else "sampler order",
            "steps": len(steps_rows),
            "split": table.split if table else None,
            "batch_size": batch_size,
            "gradient_accumulation_steps": gradient_accumulation_steps
            if sampler_order is not None
            else None,
        },
        "options": {**opts.to_dict(), "batch_z": batch_z},
        "metrics": metrics,
        "curves": curves,
        "findings": findings,
    }
    report.add_signals(section)
    return report


def _given_report(report: Any, fail_on: str | None) -> Any:
    """A copy of an audit report to add the signals to (a path is loaded and checked)."""
    import copy

    from ..report import Report

    base = Report.load(report) if isinstance(report, (str, os.PathLike)) else report
    if not isinstance(base, Report):
        raise ConfigError("report= takes a report JSON path or a Report.")
    if base.signals is not None:
        raise ConfigError(
            "report= already has a signals section; pass the audit's own report (dataaudit audit "
            "--json), not the output of dataaudit signals."
        )
    if fail_on is not None and str(fail_on).lower() != base.data["fail_on"]:
        raise ConfigError(
            f"fail_on={fail_on} but the report was gated at fail_on={base.data['fail_on']}: audit "
            "again with that fail_on, or leave fail_on out to keep the report's."
        )
    return Report(copy.deepcopy(base.data))


def _check_same_data(base: Any, table: Any) -> None:
    """The report must be an audit of this data: same rows and content in the trained split."""
    splits = base.data["dataset"]["splits"]
    info = splits.get(table.split)
    if info is None:
        raise InputError(
            f"the report has no split {table.split!r} (it has {', '.join(splits) or 'none'}): it "
            "is the audit of other data; pass the report of the data the run trained on."
        )
    if info["rows"] != table.rows or info["content_hash"] != table.content_hash:
        raise InputError(
            f"the report audited other data: split {table.split!r} has {info['rows']} rows "
            f"({info['content_hash']}) in the report and {table.rows} ({table.content_hash}) in "
            "the data given; audit this data again, or pass the data the report audited."
        )

"""Reading a training log: a Hugging Face Trainer ``trainer_state.json`` (its ``log_history``),
a JSON list or JSONL of step entries, or a CSV of step metrics.

Whatever the format, the result is one table of training steps (``step`` strictly increasing,
one float column per metric, NaN where a step did not log it) and one of evaluation steps
(``eval_*`` columns). Common spellings are mapped to one name: ``loss`` (``train_loss``,
``train/loss``), ``grad_norm`` (``gradient_norm``, ``train/grad_norm``), ``learning_rate``
(``lr``, ``train/learning_rate``), ``eval_loss`` (``val_loss``, ``validation_loss``,
``eval/loss``), ``step`` (``global_step``, ``train/global_step``). A value that is present but
not finite (``NaN``, ``inf``) is kept as such and reported; a value that is not a number is an
error naming the entry and column.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["TrainingLog", "read_log"]

ALIASES = {
    "step": ("step", "global_step", "train/global_step", "trainer/global_step", "iteration"),
    "loss": ("loss", "train_loss", "train/loss", "training_loss"),
    "grad_norm": ("grad_norm", "gradient_norm", "train/grad_norm", "grad-norm"),
    "learning_rate": ("learning_rate", "lr", "train/learning_rate", "train/lr"),
    "eval_loss": ("eval_loss", "val_loss", "validation_loss", "eval/loss", "valid_loss"),
}
#: keys of a Trainer log entry that describe the run, not a step's metric
_SUMMARY_KEYS = ("train_runtime", "train_samples_per_second", "total_flos")
_SKIP = {"epoch", "_runtime", "_timestamp", "timestamp", "time"}
_CANONICAL = {alias: name for name, aliases in ALIASES.items() for alias in aliases}


@dataclass
class TrainingLog:
    """Training steps and evaluation steps of one run, as read."""

    path: str
    format: str
    steps: np.ndarray  # int64, strictly increasing
    columns: dict[str, np.ndarray]  # float64 per training step; NaN where not logged
    present: dict[str, np.ndarray]  # bool per training step: the entry had the key
    eval_steps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    eval_columns: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)  # trainer_state fields (batch size, ...)

    def column(self, name: str) -> np.ndarray | None:
        return self.columns.get(name)

    def describe(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "steps": int(len(self.steps)),
            "first_step": int(self.steps[0]),
            "last_step": int(self.steps[-1]),
            "columns": sorted(self.columns),
            "eval_steps": int(len(self.eval_steps)),
            "eval_columns": sorted(self.eval_columns),
        }


def _number(value: Any, where: str, column: str) -> float:
    if isinstance(value, bool):
        raise InputError(f"{where}: column {column!r} is {value!r}, not a number.")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("nan", "+nan", "-nan"):
            return math.nan
        if text in ("inf", "+inf", "infinity", "+infinity"):
            return math.inf
        if text in ("-inf", "-infinity"):
            return -math.inf
        try:
            return float(text)
        except ValueError:
            pass
    raise InputError(
        f"{where}: column {column!r} has {str(value)[:60]!r}, which is not a number; a metric "
        "column must hold numbers (NaN and inf are read as such)."
    )


def _entries(path: Path) -> tuple[list[tuple[str, dict[str, Any]]], str, dict[str, Any]]:
    """(where, entry) pairs, the format, and run metadata."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"training log {path}: cannot be read ({exc.strerror or exc}).") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"training log {path}: not UTF-8 text.") from None
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        reader = csv.DictReader(text.splitlines(), delimiter="\t" if suffix == ".tsv" else ",")
        rows = []
        for i, row in enumerate(reader, start=2):
            rows.append((f"{path} line {i}", {k: v for k, v in row.items() if v not in ("", None)}))
        if reader.fieldnames is None:
            raise InputError(f"training log {path}: empty CSV (no header line).")
        return rows, "csv", {}
    if suffix in (".jsonl", ".ndjson"):
        rows = []
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"training log {path} line {i}: not JSON ({exc.msg}).") from None
            if not isinstance(obj, dict):
                raise InputError(f"training log {path} line {i}: expected a JSON object.")
            rows.append((f"{path} line {i}", obj))
        return rows, "jsonl", {}
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"training log {path}: not JSON ({exc.msg} at line {exc.lineno}); give a "
            "trainer_state.json, a .jsonl of step entries or a .csv of step metrics."
        ) from None
    if isinstance(obj, dict) and isinstance(obj.get("log_history"), list):
        meta = {
            k: v for k, v in obj.items() if k != "log_history" and not isinstance(v, (list, dict))
        }
        entries = obj["log_history"]
        fmt = "trainer_state"
    elif isinstance(obj, list):
        meta, entries, fmt = {}, obj, "json"
    else:
        raise InputError(
            f"training log {path}: a JSON file must be a Trainer state (an object with "
            "'log_history') or a list of step entries."
        )
    rows = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InputError(f"training log {path}: log entry {i} is not an object.")
        rows.append((f"{path} log entry {i}", entry))
    return rows, fmt, meta


def read_log(path: str | Path) -> TrainingLog:
    """Read a training log (see the module docstring); InputError names what is wrong."""
    p = Path(path)
    entries, fmt, meta = _entries(p)
    train: list[tuple[str, int, dict[str, float]]] = []
    evals: list[tuple[int, dict[str, float]]] = []
    seen_keys: set[str] = set()
    for where, entry in entries:
        if any(k in entry for k in _SUMMARY_KEYS):
            continue  # the Trainer's end-of-run summary (train_loss averaged over the run)
        named = {_CANONICAL.get(k, k): v for k, v in entry.items()}
        seen_keys.update(named)
        if "step" not in named:
            raise InputError(
                f"{where}: no step column (looked for {', '.join(ALIASES['step'])}); every "
                "entry needs the optimizer step it was logged at: name the column 'step'."
            )
        step_value = _number(named.pop("step"), where, "step")
        if not math.isfinite(step_value) or step_value != int(step_value) or step_value < 0:
            raise InputError(f"{where}: step {step_value!r} is not a whole number >= 0.")
        metrics = {
            k: _number(v, where, k)
            for k, v in named.items()
            if k not in _SKIP and not k.startswith("_") and v is not None
        }
        is_eval = [k for k in metrics if k.startswith("eval_")]
        if is_eval:
            evals.append((int(step_value), {k: metrics[k] for k in is_eval}))
            metrics = {k: v for k, v in metrics.items() if not k.startswith("eval_")}
        if metrics:
            train.append((where, int(step_value), metrics))
    if not train:
        raise InputError(
            f"training log {path}: no training step entries (found columns: "
            f"{', '.join(sorted(seen_keys)) or 'none'}); log the training loss per step "
            "(Trainer logging_steps, or a 'loss' column)."
        )
    names = sorted({k for _, _, m in train for k in m})
    if "loss" not in names:
        raise InputError(
            f"training log {path}: no training loss column (looked for "
            f"{', '.join(ALIASES['loss'])}; found {', '.join(names)}); rename the loss column "
            "to 'loss'."
        )
    steps = np.array([s for _, s, _ in train], dtype=np.int64)
    back = np.flatnonzero(np.diff(steps) <= 0)
    if back.size:
        i = int(back[0]) + 1
        what = "repeats" if steps[i] == steps[i - 1] else "goes back to"
        raise InputError(
            f"{train[i][0]}: step {what} {int(steps[i])} after step {int(steps[i - 1])}; the "
            "training steps must increase. A resumed run's entries logged twice, or two runs in "
            "one file: keep one run, each step once, in order."
        )
    columns, present = {}, {}
    for name in names:
        has = np.array([name in m for _, _, m in train])
        columns[name] = np.array([m.get(name, math.nan) for _, _, m in train], dtype=np.float64)
        present[name] = has
    eval_steps = np.array([s for s, _ in evals], dtype=np.int64)
    eval_names = sorted({k for _, m in evals for k in m})
    eval_columns = {
        n: np.array([m.get(n, math.nan) for _, m in evals], dtype=np.float64) for n in eval_names
    }
    if eval_steps.size and np.any(np.diff(eval_steps) <= 0):
        order = np.argsort(eval_steps, kind="stable")
        eval_steps = eval_steps[order]
        eval_columns = {k: v[order] for k, v in eval_columns.items()}
    return TrainingLog(
        path=str(path),
        format=fmt,
        steps=steps,
        columns=columns,
        present=present,
        eval_steps=eval_steps,
        eval_columns=eval_columns,
        meta={k: v for k, v in meta.items() if isinstance(v, (int, float, str, bool))},
    )

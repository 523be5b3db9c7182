"""Which rows each optimizer step trained on.

Two ways to know it:

* an order file, one entry per step: JSONL ``{"step": 12, "rows": [...]}`` (``rows``,
  ``indices`` or ``ids``), a JSON object ``{"12": [...]}`` or list of lists (step 1 first), or a
  CSV with ``step`` and ``row`` columns, one line per row;
* the sampler's order (every row reference in the order the data loader yielded them, over all
  epochs: a JSON list, a ``.npy`` array or one per line) with ``batch_size`` and
  ``gradient_accumulation_steps``: step ``s`` trained on entries ``(s-1)·B·G … s·B·G``
  (``B`` = the rows of one forward pass over all devices).

A reference that is an integer is a row position in the split (0-based, input order, what a
PyTorch sampler yields); a string is a value of the data's id column.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["StepOrder", "read_order", "sampler_order"]

StepOrder = dict[int, list[Any]]


def _ref(value: Any, where: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise InputError(
            f"{where}: {value!r} is not a row reference; use row positions (integers) or "
            "values of the id column (strings)."
        )
    return value


def _csv_ref(text: str) -> Any:
    text = text.strip()
    return int(text) if text.lstrip("-").isdigit() else text


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text("utf-8-sig").splitlines()
    except OSError as exc:
        raise InputError(f"order file {path}: cannot be read ({exc.strerror or exc}).") from None
    except UnicodeDecodeError:
        raise InputError(f"order file {path}: not UTF-8 text.") from None


def read_order(path: str | Path) -> StepOrder:
    """Row references per optimizer step, from an order file (see the module docstring)."""
    p = Path(path)
    suffix = p.suffix.lower()
    order: StepOrder = {}

    def add(step: Any, rows: Any, where: str) -> None:
        try:
            s = int(step)
        except (TypeError, ValueError):
            raise InputError(f"{where}: step {step!r} is not an integer.") from None
        if not isinstance(rows, list):
            raise InputError(f"{where}: the rows of step {s} must be a list.")
        if s in order:
            raise InputError(
                f"{where}: step {s} is listed twice; an order file has one entry per step."
            )
        order[s] = [_ref(r, where) for r in rows]

    if suffix == ".csv":
        reader = csv.DictReader(_lines(p))
        fields = [f.strip().lower() for f in reader.fieldnames or []]
        if "step" not in fields or not ({"row", "id", "index"} & set(fields)):
            raise InputError(
                f"order file {p}: a CSV order needs a 'step' and a 'row' (or 'id') column; "
                f"found {', '.join(fields) or 'no header'}."
            )
        key = next(k for k in ("row", "id", "index") if k in fields)
        for i, raw in enumerate(reader, start=2):
            row = {k.strip().lower(): v for k, v in raw.items() if k}
            try:
                s = int(row["step"])
            except (TypeError, ValueError):
                raise InputError(
                    f"order file {p} line {i}: step {row['step']!r} is not an integer."
                ) from None
            order.setdefault(s, []).append(_csv_ref(row[key] or ""))
        return _check_order(order, p)
    if suffix in (".jsonl", ".ndjson"):
        for i, line in enumerate(_lines(p), start=1):
            if not line.strip():
                continue
            where = f"order file {p} line {i}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{where}: not JSON ({exc.msg}).") from None
            if not isinstance(obj, dict) or "step" not in obj:
                raise InputError(f'{where}: expected {{"step": N, "rows": [...]}}.')
            rows = next((obj[k] for k in ("rows", "indices", "ids") if k in obj), None)
            add(obj["step"], rows, where)
        return _check_order(order, p)
    try:
        obj = json.loads("\n".join(_lines(p)))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"order file {p}: not JSON ({exc.msg}); give a .jsonl of "
            '{"step": N, "rows": [...]} lines, a JSON object of step -> rows, or a CSV.'
        ) from None
    if isinstance(obj, dict):
        for k, v in obj.items():
            add(k, v, f"order file {p}")
    elif isinstance(obj, list) and all(isinstance(v, list) for v in obj):
        for i, v in enumerate(obj, start=1):
            add(i, v, f"order file {p}")
    else:
        raise InputError(
            f"order file {p}: expected steps with their rows; a flat list of rows is a sampler "
            "order: pass it as sampler order with batch_size (--sampler-order, --batch-size)."
        )
    return _check_order(order, p)


def _check_order(order: StepOrder, path: Path) -> StepOrder:
    if not order:
        raise InputError(f"order file {path}: no steps in it.")
    return dict(sorted(order.items()))


def sampler_order(
    path: str | Path, batch_size: int, gradient_accumulation_steps: int = 1, first_step: int = 1
) -> StepOrder:
    """Row references per step from the sampler's order and the batch geometry."""
    if batch_size is None or batch_size < 1:
        raise InputError(
            "a sampler order needs batch_size (rows per forward pass over all devices): "
            "pass --batch-size."
        )
    if gradient_accumulation_steps < 1:
        raise InputError("gradient_accumulation_steps must be at least 1.")
    p = Path(path)
    refs: list[Any]
    if p.suffix.lower() == ".npy":
        import numpy as np

        try:
            refs = [int(v) for v in np.load(p, allow_pickle=False).ravel()]
        except (OSError, ValueError) as exc:
            raise InputError(f"sampler order {p}: not a readable .npy array ({exc}).") from None
    else:
        lines = _lines(p)
        text = "\n".join(lines).strip()
        if text.startswith("["):
            try:
                values = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(f"sampler order {p}: not JSON ({exc.msg}).") from None
            refs = [_ref(v, f"sampler order {p}") for v in values]
        else:
            refs = [_csv_ref(line) for line in lines if line.strip()]
    per_step = batch_size * gradient_accumulation_steps
    if not refs:
        raise InputError(f"sampler order {p}: no rows in it.")
    return {
        first_step + k: refs[k * per_step : (k + 1) * per_step]
        for k in range((len(refs) + per_step - 1) // per_step)
    }

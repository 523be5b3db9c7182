"""A model's predictions, joined to the audited rows: what the EVAL rules read.

``audit(ds, predictions=...)`` / ``--predictions FILE`` takes one of:

- a **column** of the dataset (its name): predicted labels, or a bool / 0-1 score ``correct``;
- an **array** (list, numpy, pandas Series) with one value per row of a one-split dataset, or a
  dict ``{split: array}``: predicted labels (1-D), or bools (``correct``);
- a **dict** ``{"probabilities": P, "classes": model.classes_}`` (or ``"labels"`` /
  ``"correct"``, optionally ``"row"`` or ``"id"`` keys and ``"split"``), or ``{split: dict}``;
- a **file** (.csv, .tsv, .jsonl, .json, .parquet) keyed by ``row`` (0-based position in its
  split) or ``id`` (the dataset's id column, by that name or as ``id``), with an optional
  ``split`` column and one of: ``prediction`` (a label), ``correct`` (bool or a score in
  [0, 1], for generative tasks), ``probabilities`` (a {class: p} object per row) or one
  ``prob_<class>`` column per class.

Everything that can be checked before the scan is checked when the predictions are resolved
(:func:`resolve_predictions`): the file, its columns, probabilities in [0, 1] that sum to 1,
duplicate keys, split names, and the row count where the input knows it. What only the scan can
tell (row counts of streamed files, ids, the dataset's label set) is checked by a
:class:`PredictionCheck` that watches the batches as they are read, right after the scan
(:meth:`PredictionCheck.check`). Either way the error is an :class:`InputError` that names the
problem and the fix, before any rule reports on half-joined predictions.

The resource is a frozen, picklable value: the parallel engine sends it to each worker once, and
the ``prediction`` feature (features/predictions.py) joins it to each batch there.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError, InputError

if TYPE_CHECKING:
    import pyarrow as pa

    from ..corpus import Corpus

__all__ = ["PredictionCheck", "Predictions", "SplitPredictions", "resolve_predictions"]

KINDS = ("labels", "probabilities", "correct")
#: a split key that matches rows of any split (predictions keyed by id, without a split column)
ANY_SPLIT = "*"
_LABEL_COLUMNS = ("prediction", "predicted", "predicted_label", "pred")
_PROB_PREFIX = "prob_"
_SPEC_KEYS = {"labels", "probabilities", "classes", "correct", "row", "id", "split"}
_FILE_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".ndjson", ".parquet", ".pq")
#: how far a row of probabilities may sum from 1 (rounding in a CSV written with 4 decimals)
SUM_TOLERANCE = 1e-3


def label_key(value: Any) -> str | None:
    """A predicted label as the label feature's class key (so 1 and "1" match an int label)."""
    from ..features.labels import _key

    return _key(value)


def id_strings(batch: Any) -> list[str | None]:
    """The batch's id column as strings (ints as their digits), as prediction ids are read."""
    col = batch.role("id")
    if col is None:
        return [None] * batch.num_rows
    return [None if v is None else str(v) for v in col.to_pylist()]


@dataclass(frozen=True)
class SplitPredictions:
    """The predictions for one split (or ANY_SPLIT): keyed by row position or by id.

    ``rows``: int64 row positions (key "row"); ``ids``: id -> index (key "id"). ``labels``:
    predicted class keys; ``proba``: (n, classes) probabilities; ``correct``: scores in [0, 1].
    """

    key: str
    n: int
    rows: np.ndarray | None = None
    ids: dict[str, int] | None = None
    labels: tuple[str | None, ...] | None = None
    proba: np.ndarray | None = None
    correct: np.ndarray | None = None
    #: an array given without keys: its length must equal the split's rows
    positional: bool = False

    def index_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """Index into this split's predictions of each row position, -1 where none."""
        if self.positional:
            return np.where(rows < self.n, rows, -1)
        assert self.rows is not None
        order = np.argsort(self.rows, kind="stable")
        sorted_rows = self.rows[order]
        pos = np.searchsorted(sorted_rows, rows)
        pos = np.minimum(pos, max(len(sorted_rows) - 1, 0))
        hit = (len(sorted_rows) > 0) & (sorted_rows[pos] == rows) if len(sorted_rows) else None
        if hit is None:
            return np.full(len(rows), -1, np.int64)
        return np.where(hit, order[pos], -1)

    def index_of_ids(self, ids: list[str | None]) -> np.ndarray:
        assert self.ids is not None
        get = self.ids.get
        return np.fromiter((-1 if v is None else get(v, -1) for v in ids), np.int64, len(ids))


@dataclass(frozen=True)
class Predictions:
    """Predictions for the audit: ``kind`` (labels, probabilities or correct), where they came
    from, and per split the keyed values; or ``column``: a column of the dataset itself."""

    kind: str
    source: str
    splits: dict[str, SplitPredictions] = field(default_factory=dict)
    classes: tuple[str, ...] = ()
    column: str | None = None
    #: the digest of what was given (the report's provenance; a diff can tell runs apart)
    digest: str = ""

    @property
    def key(self) -> str:
        if self.column is not None:
            return "column"
        return next(iter(self.splits.values())).key if self.splits else "row"

    def predicted_labels(self) -> set[str]:
        """Every class a prediction names (for the label-set check)."""
        out: set[str] = set(self.classes)
        for sp in self.splits.values():
            if sp.labels is not None:
                out.update(v for v in sp.labels if v is not None)
        return out

    def describe(self) -> dict[str, Any]:
        rows = {name: sp.n for name, sp in self.splits.items()}
        out: dict[str, Any] = {"kind": self.kind, "source": self.source, "key": self.key}
        if self.column is None:
            out["rows"] = rows
        if self.classes:
            out["classes"] = list(self.classes)
        if self.digest:
            out["digest"] = self.digest
        return out


# -- parsing ---------------------------------------------------------------------------------------
def _values(obj: Any, where: str) -> list[Any] | np.ndarray:
    if hasattr(obj, "to_numpy") and not isinstance(obj, np.ndarray):  # pandas / polars Series
        obj = obj.to_numpy()
    if isinstance(obj, np.ndarray):
        return obj
    if isinstance(obj, (list, tuple)):
        return list(obj)
    raise ConfigError(
        f"{where}: {type(obj).__name__} is not an array; pass a list or numpy array with one "
        "value per row."
    )


def _labels(values: Any, where: str) -> tuple[str | None, ...]:
    arr = _values(values, where)
    if isinstance(arr, np.ndarray) and arr.ndim != 1:
        raise ConfigError(
            f"{where}: a {arr.ndim}-D array; predicted labels are one value per row. For class "
            "probabilities pass {'probabilities': P, 'classes': model.classes_}."
        )
    items = arr.tolist() if isinstance(arr, np.ndarray) else arr
    from ..features.labels import _key

    return tuple(map(_key, items))


def _correct(values: Any, where: str) -> np.ndarray:
    arr = _values(values, where)
    items = arr.tolist() if isinstance(arr, np.ndarray) else list(arr)
    out = np.empty(len(items))
    for i, v in enumerate(items):
        if isinstance(v, (bool, int, float)):
            f = float(v)
            if math.isfinite(f) and 0.0 <= f <= 1.0:
                out[i] = f
                continue
        if v is None:
            out[i] = np.nan
            continue
        raise InputError(
            f"{where}: row {i} has correct={v!r}; `correct` is a bool or a score in [0, 1] "
            "(1 = right). Rescale scores to [0, 1] or threshold them."
        )
    return out


def _proba(values: Any, classes: Any, where: str) -> tuple[np.ndarray, tuple[str, ...]]:
    if classes is None:
        raise ConfigError(
            f"{where}: class probabilities need their class order; pass "
            "{'probabilities': P, 'classes': model.classes_} (the column order of P)."
        )
    names = tuple(label_key(c) for c in _values(classes, f"{where} classes"))
    if any(c is None for c in names) or len(set(names)) != len(names):
        raise ConfigError(f"{where}: classes {list(names)!r} must be distinct, non-null labels.")
    try:
        p = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(
            f"{where}: probabilities are not all numbers; pass one row of floats per row."
        ) from None
    if p.ndim != 2 or p.shape[1] != len(names):
        raise InputError(
            f"{where}: probabilities have shape {p.shape}; expected (rows, {len(names)}) for "
            f"the {len(names)} classes {list(names)[:10]!r}."
        )
    _check_proba(p, where)
    return p, names


def _check_proba(p: np.ndarray, where: str, rows: Any = None) -> None:
    def name(i: int) -> str:
        return f"row {rows[i]}" if rows is not None else f"row {i}"

    bad = np.flatnonzero(~np.isfinite(p).all(axis=1))
    if bad.size:
        raise InputError(
            f"{where}: {name(int(bad[0]))} has a missing or infinite probability "
            f"({bad.size} rows); every class needs a probability."
        )
    bad = np.flatnonzero(((p < 0) | (p > 1)).any(axis=1))
    if bad.size:
        raise InputError(
            f"{where}: {name(int(bad[0]))} has a probability outside [0, 1] ({bad.size} rows); "
            "these look like logits: apply a softmax first."
        )
    sums = p.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1) > SUM_TOLERANCE)
    if bad.size:
        raise InputError(
            f"{where}: the probabilities of {name(int(bad[0]))} sum to {sums[bad[0]]:.4g}, not 1 "
            f"({bad.size} rows); pass one probability per class that sum to 1 (a softmax over "
            "every class; for multi-label scores pass predicted labels instead)."
        )


def _keys(spec: Mapping[str, Any], n: int, where: str) -> dict[str, Any]:
    """rows / ids of a spec (positional without either)."""
    if "row" in spec and "id" in spec:
        raise ConfigError(f"{where}: give `row` or `id` keys, not both.")
    if "row" in spec:
        rows = _values(spec["row"], f"{where} row")
        try:
            arr = np.asarray(rows, dtype=np.float64)
        except (TypeError, ValueError):
            arr = np.array([np.nan])
        if (
            len(rows) != n
            or arr.size != n
            or not np.isfinite(arr).all()
            or (arr != np.round(arr)).any()
            or (arr < 0).any()
        ):
            raise InputError(
                f"{where}: `row` must hold one 0-based row position (an integer >= 0) per "
                f"prediction ({n} predictions)."
            )
        arr = arr.astype(np.int64)
        uniq, counts = np.unique(arr, return_counts=True)
        if (counts > 1).any():
            raise InputError(
                f"{where}: row {int(uniq[counts > 1][0])} has {int(counts.max())} predictions; "
                "give each row one prediction."
            )
        return {"key": "row", "rows": arr}
    if "id" in spec:
        ids = [None if v is None else str(v) for v in _values(spec["id"], f"{where} id")]
        if len(ids) != n:
            raise InputError(f"{where}: {len(ids)} ids for {n} predictions; give one id each.")
        index: dict[str, int] = {}
        for i, v in enumerate(ids):
            if v is None:
                raise InputError(f"{where}: prediction {i} has no id; give every row its id.")
            if v in index:
                raise InputError(
                    f"{where}: id {v!r} has more than one prediction; give each row one."
                )
            index[v] = i
        return {"key": "id", "ids": index}
    return {"key": "row", "positional": True}


def _from_spec(spec: Mapping[str, Any], where: str) -> tuple[str, SplitPredictions, tuple]:
    given = [k for k in ("labels", "probabilities", "correct") if k in spec]
    if len(given) != 1:
        raise ConfigError(
            f"{where}: give exactly one of 'labels', 'probabilities' or 'correct' "
            f"(got {', '.join(given) or 'none'})."
        )
    kind = given[0]
    classes: tuple[str, ...] = ()
    values: dict[str, Any] = {}
    if kind == "labels":
        values["labels"] = _labels(spec["labels"], where)
        n = len(values["labels"])
    elif kind == "correct":
        values["correct"] = _correct(spec["correct"], where)
        n = len(values["correct"])
    else:
        values["proba"], classes = _proba(spec["probabilities"], spec.get("classes"), where)
        n = len(values["proba"])
    return kind, SplitPredictions(n=n, **_keys(spec, n, where), **values), classes


def _spec_of(value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping) and set(value) <= _SPEC_KEYS:
        return value
    arr = _values(value, "predictions")
    dtype = getattr(arr, "dtype", None)
    items = arr if dtype is not None else list(arr)
    if (
        dtype is not None
        and dtype.kind == "b"
        or (dtype is None and items and all(isinstance(v, bool) for v in items))
    ):
        return {"correct": arr}
    if dtype is not None and arr.ndim == 2:
        return {"probabilities": arr}  # fails with the hint to name the classes
    return {"labels": arr}


def _digest(parts: Iterable[bytes]) -> str:
    import xxhash

    h = xxhash.xxh3_64()
    for p in parts:
        h.update(p)
        h.update(b"\x00")
    return "xxh3:" + h.hexdigest()


def _split_digest(sp: SplitPredictions) -> list[bytes]:
    out = [sp.key.encode(), str(sp.n).encode()]
    if sp.rows is not None:
        out.append(sp.rows.tobytes())
    if sp.ids is not None:
        out.append("\x01".join(sp.ids).encode("utf-8", "surrogatepass"))
    if sp.labels is not None:
        out.append("\x01".join("\x02" if v is None else v for v in sp.labels).encode())
    for arr in (sp.proba, sp.correct):
        if arr is not None:
            out.append(np.ascontiguousarray(arr).tobytes())
    return out


def _from_python(value: Any, split_names: list[str]) -> Predictions:
    if isinstance(value, Mapping) and not (set(value) <= _SPEC_KEYS):
        per_split = {str(k): v for k, v in value.items()}
    else:
        per_split = {"": value}
    kinds: set[str] = set()
    classes: set[tuple[str, ...]] = set()
    splits: dict[str, SplitPredictions] = {}
    for name, v in per_split.items():
        where = f"predictions[{name!r}]" if name else "predictions"
        spec = _spec_of(v)
        if name and "split" in spec:
            raise ConfigError(f"{where}: a 'split' inside a split's predictions is redundant.")
        target = name or spec.get("split")
        kind, sp, cls = _from_spec(spec, where)
        kinds.add(kind)
        classes.add(cls)
        if target is None:
            if sp.key == "id":
                target = ANY_SPLIT
            elif len(split_names) == 1:
                target = split_names[0]
            else:
                raise ConfigError(
                    f"{where}: the dataset has the splits {', '.join(split_names)}; say which "
                    "one these predictions are for: predictions={'test': ...}."
                )
        splits[str(target)] = sp
    if len(kinds) > 1 or len(classes) > 1:
        raise ConfigError(
            "predictions: every split needs the same kind of predictions (labels, probabilities "
            "with the same classes, or correct)."
        )
    pred = Predictions(kinds.pop(), "array", splits, classes.pop())
    return _with_digest(pred)


def _with_digest(pred: Predictions) -> Predictions:
    parts = [pred.kind.encode(), "\x01".join(pred.classes).encode()]
    for name in sorted(pred.splits):
        parts.append(name.encode())
        parts.extend(_split_digest(pred.splits[name]))
    return Predictions(
        pred.kind, pred.source, pred.splits, pred.classes, pred.column, _digest(parts)
    )


def _read_file(path: Path) -> list[dict[str, Any]]:
    from ..inputs.files import file_batches

    try:
        batches = list(file_batches(path)(65536))
    except InputError as exc:
        raise InputError(f"predictions: {exc}") from None
    rows: list[dict[str, Any]] = []
    for rb in batches:
        rows.extend(rb.to_pylist())
    if not rows:
        raise InputError(f"predictions file {path}: no rows; write one prediction per row.")
    return rows


def _from_file(path: Path, id_column: str | None, split_names: list[str]) -> Predictions:
    rows = _read_file(path)
    cols = [c for c in rows[0] if not c.startswith("__dataaudit_type__")]
    where = f"predictions file {path.name}"
    key_cols = [c for c in ("row", "id", id_column) if c and c in cols]
    key_cols = list(dict.fromkeys(key_cols))
    if not key_cols:
        raise InputError(
            f"{where}: no key column; add `row` (the row's 0-based position in its split) or "
            f"`id` (the dataset's id column{f' {id_column!r}' if id_column else ''}). "
            f"Columns: {', '.join(cols)}."
        )
    if len(key_cols) > 1 and "row" in key_cols:
        key_cols = ["row"]
    key = "row" if key_cols[0] == "row" else "id"
    prob_cols = [c for c in cols if c.startswith(_PROB_PREFIX)]
    label_cols = [c for c in _LABEL_COLUMNS if c in cols]
    given = [
        *label_cols[:1],
        *(["correct"] if "correct" in cols else []),
        *(["probabilities"] if "probabilities" in cols else []),
        *(["prob_<class>"] if prob_cols else []),
    ]
    if len(given) != 1:
        raise InputError(
            f"{where}: give exactly one of `prediction` (a label), `correct` (bool or score), "
            f"`probabilities` ({{class: p}}) or `prob_<class>` columns; found "
            f"{', '.join(given) or 'none'} among {', '.join(cols)}."
        )
    groups: dict[str | None, list[int]] = {}
    has_split = "split" in cols
    for i, r in enumerate(rows):
        s = r.get("split") if has_split else None
        if has_split and s is None:
            raise InputError(f"{where}: row {i} has no split; fill the `split` column.")
        groups.setdefault(None if s is None else str(s), []).append(i)
    splits: dict[str, SplitPredictions] = {}
    kind = ""
    classes: tuple[str, ...] = ()
    for s, idx in groups.items():
        sub = [rows[i] for i in idx]
        spec: dict[str, Any] = {key: [r.get(key_cols[0]) for r in sub]}
        if label_cols:
            spec["labels"] = [r.get(label_cols[0]) for r in sub]
        elif "correct" in cols:
            spec["correct"] = [r.get("correct") for r in sub]
        elif prob_cols:
            spec["classes"] = [c[len(_PROB_PREFIX) :] for c in prob_cols]
            spec["probabilities"] = [[r.get(c) for c in prob_cols] for r in sub]
        else:
            dicts = [r.get("probabilities") for r in sub]
            names = sorted({k for d in dicts if isinstance(d, dict) for k in d})
            for j, d in enumerate(dicts):
                if not isinstance(d, dict) or set(d) != set(names):
                    raise InputError(
                        f"{where}: line {idx[j]} `probabilities` is {d!r:.80}; give each row "
                        f"an object with a probability for every class ({', '.join(names)})."
                    )
            spec["classes"] = names
            spec["probabilities"] = [[d[c] for c in names] for d in dicts]
        label = f"{where}" + (f" (split {s!r})" if s is not None else "")
        try:
            kind, sp, classes = _from_spec(spec, label)
        except ConfigError as exc:  # a file is input, not configuration
            raise InputError(str(exc)) from None
        if s is None:
            if key == "id":
                target = ANY_SPLIT
            elif len(split_names) == 1:
                target = split_names[0]
            else:
                raise InputError(
                    f"{where}: keyed by `row`, but the dataset has the splits "
                    f"{', '.join(split_names)}; add a `split` column naming each row's split."
                )
        else:
            target = s
        splits[target] = sp
    pred = Predictions(kind, f"file {path.name}", splits, classes)
    return _with_digest(pred)


def _looks_like_file(value: Any) -> bool:
    if isinstance(value, os.PathLike):
        return True
    return isinstance(value, str) and (
        os.path.exists(value) or value.lower().endswith(_FILE_SUFFIXES)
    )


def resolve_predictions(value: Any, corpus: Corpus) -> Predictions | None:
    """``value`` as :class:`Predictions` for ``corpus`` (None without predictions). Raises
    InputError/ConfigError for anything that can be told before the scan."""
    if value is None:
        return None
    if isinstance(value, Predictions):
        pred = value
    elif _looks_like_file(value):
        path = Path(os.fspath(value))
        if not path.exists():
            raise InputError(
                f"predictions file {path} does not exist; pass the path of a .csv, .jsonl or "
                ".parquet file of predictions (or the name of a dataset column)."
            )
        pred = _from_file(path, corpus.roles.id, list(corpus.splits))
    elif isinstance(value, str):
        names = list(corpus.schema.names) if corpus.schema is not None else []
        if value not in names:
            from ..errors import close_matches

            raise ConfigError(
                f"predictions={value!r} is neither a file nor a column of the dataset."
                + close_matches(value, names)
                + f" Columns: {', '.join(n for n in names if not n.startswith('__'))}."
            )
        role = next((r for r, c in corpus.roles.columns().items() if c == value), None)
        if role is not None:
            raise ConfigError(
                f"predictions={value!r} is the dataset's {role} column; name the column that "
                "holds the model's predictions."
            )
        import pyarrow as pa

        t = corpus.schema.field(value).type
        kind = "correct" if pa.types.is_boolean(t) or pa.types.is_floating(t) else "labels"
        if kind == "correct" and pa.types.is_floating(t) and corpus.roles.label is not None:
            kind = "labels"  # float labels against a float label column
        pred = Predictions(kind, f"column {value!r}", {}, column=value)
    else:
        pred = _from_python(value, list(corpus.splits))
    _check_before_scan(pred, corpus)
    return pred


def _check_before_scan(pred: Predictions, corpus: Corpus) -> None:
    names = list(corpus.splits)
    for name, sp in pred.splits.items():
        if name != ANY_SPLIT and name not in corpus.splits:
            from ..errors import close_matches

            raise InputError(
                f"predictions for split {name!r}, which the dataset does not have."
                + close_matches(name, names)
                + f" Splits: {', '.join(names)}."
            )
        if sp.key == "id" and corpus.roles.id is None:
            raise InputError(
                "predictions are keyed by id, but the dataset has no id column; pass "
                "id=COLUMN (--id COLUMN), or key the predictions by `row` position."
            )
        rows = corpus.splits[name].num_rows if name in corpus.splits else None
        if rows is not None:
            _check_rows(name, sp, rows)
    if pred.kind in ("labels", "probabilities") and corpus.roles.label is None:
        raise InputError(
            "predicted labels need the true labels: the dataset has no label column. Pass "
            "label=COLUMN (--label COLUMN), or give predictions as `correct` (bool or score) "
            "for a generative task."
        )


def _check_rows(split: str, sp: SplitPredictions, rows: int) -> None:
    if sp.positional and sp.n != rows:
        raise InputError(
            f"predictions for split {split!r} have {sp.n} values but the split has {rows} rows; "
            "give one prediction per row, in the split's order (or key them with `row` or `id`)."
        )
    if sp.rows is not None and len(sp.rows) and int(sp.rows.max()) >= rows:
        bad = sp.rows[sp.rows >= rows]
        raise InputError(
            f"predictions for split {split!r} name row {int(bad[0])} ({bad.size} rows past the "
            f"end), but the split has {rows} rows (0-{rows - 1}); `row` is the 0-based position "
            "in the split (are they for another split, or 1-based?)."
        )


class PredictionCheck:
    """Watches the batches the scan reads and checks, after it, what only the data can tell:
    row counts, that every id is a row, and that every predicted class is one of the dataset's
    labels. Reads only the id and label columns; the engine's scan is unchanged."""

    def __init__(self, pred: Predictions, corpus: Corpus):
        self.pred = pred
        self.roles = corpus.roles
        self.rows: dict[str, int] = {}
        self.labels: set[str] = set()
        self.column_labels: set[str] = set()
        self.matched: dict[str, np.ndarray] = {
            name: np.zeros(sp.n, bool) for name, sp in pred.splits.items() if sp.key == "id"
        }

    def watch(
        self, batches: Iterable[tuple[str, pa.RecordBatch]]
    ) -> Iterator[tuple[str, pa.RecordBatch]]:
        from ..features import Batch

        for split, rb in batches:
            offset = self.rows.get(split, 0)
            self.rows[split] = offset + rb.num_rows
            batch = Batch(split, rb, offset, self.roles)
            if self.roles.label is not None:
                self.labels.update(v for v in batch.feature("label").values if v is not None)
            if self.matched:
                values = id_strings(batch)
                for name in (split, ANY_SPLIT):
                    sp = self.pred.splits.get(name)
                    if sp is not None and sp.key == "id":
                        idx = sp.index_of_ids(values)
                        self.matched[name][idx[idx >= 0]] = True
            if self.pred.column is not None and self.pred.kind == "labels":
                col = batch.column(self.pred.column).to_pylist()
                self.column_labels.update(k for k in map(label_key, col) if k is not None)
            yield split, rb

    def check(self) -> None:
        for name, sp in self.pred.splits.items():
            if name in self.rows:
                _check_rows(name, sp, self.rows[name])
        for name, hit in self.matched.items():
            if hit.all():
                continue
            sp = self.pred.splits[name]
            assert sp.ids is not None
            missing = [k for k, i in sp.ids.items() if not hit[i]]
            where = "the dataset" if name == ANY_SPLIT else f"split {name!r}"
            raise InputError(
                f"{len(missing)} of {sp.n} prediction ids are not ids of {where} (e.g. "
                f"{', '.join(repr(m) for m in missing[:3])}); key the predictions by the "
                f"dataset's id column {self.roles.id!r} (or by `row` position), and check that "
                "they are for this dataset."
            )
        if self.roles.label is None:
            return
        predicted = self.pred.predicted_labels() | self.column_labels
        unknown = sorted(predicted - self.labels)
        if unknown:
            known = sorted(self.labels)
            raise InputError(
                f"predicted labels not in the dataset's label set: "
                f"{', '.join(repr(u) for u in unknown[:5])}"
                f"{f' (+{len(unknown) - 5} more)' if len(unknown) > 5 else ''}; the labels in "
                f"column {self.roles.label!r} are {', '.join(repr(k) for k in known[:20])}. Map "
                "the predictions to these values (e.g. class ids to names with the model's "
                "id2label), or name the right label column with label=COLUMN."
            )

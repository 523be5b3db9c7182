"""The row flags table: collected from the rules' outcomes, stored in the report column by column
(``Report.flags()`` decodes it); the file format it is written in, from the path's extension."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import is_special_file, is_stdout
from ..errors import ConfigError
from .escape import shorten

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from ..rule import RuleOutcome

#: the row flags table's columns and their polars types (see Report.flags)
FLAG_SCHEMA = {
    "split": "String",
    "row": "Int64",
    "id": "String",
    "code": "String",
    "severity": "String",
    "action": "String",
    "cluster": "String",
    "score": "Float64",
    "detail": "String",
}
FLAG_COLUMNS = tuple(FLAG_SCHEMA)
#: flag columns stored as a dictionary of distinct values and an index per row (few distinct)
DICT_COLUMNS = ("split", "code", "severity", "action", "detail")
FLAG_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl"}


def flags_format(path: str | Path) -> str:
    """The row-flags file format, from the extension (``-`` and devices get CSV)."""
    fmt = FLAG_FORMATS.get(Path(str(path)).suffix.lower())
    if fmt is not None:
        return fmt
    if is_stdout(path) or is_special_file(Path(path)):
        return "csv"
    raise ConfigError(
        f"flags file {path}: unknown extension {Path(str(path)).suffix or '(none)'!r}; the format "
        f"follows it: {', '.join(FLAG_FORMATS)} (or - for CSV on stdout)."
    )


_MAX_DETAIL = 200  # characters of a flag's detail kept in the report (it may quote the data)
_MAX_ID = 256  # characters of an id value kept in the report
#: values per piece of a column written as JSON (a column is never one Python list)
_CHUNK = 1 << 16
#: the order of the table: by row, then rule, then what tells two flags of one rule apart
_FLAG_ORDER = ["split", "row", "code", "cluster", "detail", "action", "severity", "id", "score"]


def flag_table(outcomes: list[RuleOutcome]) -> FlagTable:
    """Every rule's flags as the report's table: severity and action resolved, untrusted text
    bounded, duplicates removed, sorted by _FLAG_ORDER. Built from the rules' column blocks
    sorted as integer keys (text ranked by Arrow): flags can be millions, and a Python
    object or a row of strings per flag is what made the driver's peak grow with the corpus."""
    import numpy as np

    from .._arrow import take
    from ..rule import Flags

    coded: dict[str, list[tuple[list[Any], Any]]] = {name: [] for name in DICT_COLUMNS}
    rows, scores, ids, clusters = [], [], [], []
    for outcome in outcomes:
        if outcome.result is None or outcome.error is not None or not outcome.result.flags:
            continue
        default = outcome.severity.value
        for block in Flags.of(outcome.result.flags).blocks():
            n = len(block)
            severity = block.severity
            if isinstance(severity, list):
                severity = [default if v is None else v.value for v in severity]
            else:
                severity = default if severity is None else severity.value
            values, index = _coded(block.detail, n)
            coded["detail"].append((_bounded_values(values, _MAX_DETAIL), index))
            coded["split"].append(_coded(block.split, n))
            coded["code"].append(_coded(outcome.rule.code, n))
            coded["severity"].append(_coded(severity, n))
            coded["action"].append(_coded(block.action, n, null="review"))
            rows.append(block.row)
            scores.append(np.full(n, np.nan) if block.score is None else block.score)
            ids.append(_text(block.id, n))
            clusters.append(_text(block.group, n))
    ranks = {name: _ranks(parts) for name, parts in coded.items()}
    del coded
    row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    score = np.concatenate(scores) if scores else np.zeros(0, np.float64)
    text = {"id": _bounded_text(_concat(ids), _MAX_ID), "cluster": _concat(clusters)}
    del rows, scores, ids, clusters  # the blocks' copies: only the table's columns from here
    order = _sorted_unique({name: rank for name, (_, rank) in ranks.items()}, row, score, text)
    columns: dict[str, Any] = {
        name: _dictionary(distinct, rank[order]) for name, (distinct, rank) in ranks.items()
    }
    columns["row"] = row[order]
    columns["score"] = score[order]
    for name, array in text.items():
        columns[name] = take(array, order)
    return FlagTable(len(order), columns)


def _sorted_unique(
    ranks: dict[str, Any], row: Any, score: Any, text: dict[str, pa.ChunkedArray]
) -> Any:
    """The positions that sort the flags by _FLAG_ORDER, each distinct flag once. Sorted by
    split, row and code first; only the flags that tie on those (a row one rule flags more
    than once) are sorted by the other columns (the text ranked for them alone), and a
    duplicate is a flag equal to the one before it in every column."""
    import numpy as np

    from .._arrow import take

    first = [ranks["split"], row, ranks["code"]]
    order = np.lexsort(first[::-1])
    if order.size < 2:
        return order
    ties = np.ones(order.size - 1, bool)
    for key in first:
        ordered = key[order]
        ties &= ordered[1:] == ordered[:-1]
    if not ties.any():
        return order
    member = np.zeros(order.size, bool)  # in a run of flags that tie, in sorted order
    member[1:] |= ties
    member[:-1] |= ties
    run = np.cumsum(np.concatenate([[True], ~ties]))[member]
    sub = order[member]
    keys = [  # null first: ranks -1 or 0, scores -inf
        run,
        _text_ranks(take(text["cluster"], sub)),
        ranks["detail"][sub],
        ranks["action"][sub],
        ranks["severity"][sub],
        _text_ranks(take(text["id"], sub)),
        np.where(np.isnan(score[sub]), -np.inf, score[sub]),
    ]
    within = np.lexsort(keys[::-1])
    at = np.flatnonzero(member)
    order[at] = sub[within]
    same = np.ones(within.size - 1, bool)
    for key in keys:
        ordered = key[within]
        same &= ordered[1:] == ordered[:-1]
    keep = np.ones(order.size, bool)
    keep[at[1:][same]] = False
    return order[keep]


def _coded(value: Any, n: int, null: str | None = None) -> tuple[list[Any], Any]:
    """A field with few distinct values (a constant, a list or Arrow text) as its distinct
    values and each row's position in them (-1: null), without a Python object per row.
    ``null``: the value a null stands for."""
    import numpy as np
    import pyarrow as pa

    from .._arrow import fixed, strings

    if value is None or isinstance(value, str):
        return [null if value is None else value], np.zeros(n, np.int32)
    if isinstance(value, list):
        value = strings(value)
    if not pa.types.is_dictionary(value.type):
        from .._compute import call

        value = call("dictionary_encode", value)
    values = value.dictionary.to_pylist()
    index = fixed(value.indices, -1).astype(np.int32)  # -1: null
    if null is not None and value.null_count:  # the place of ``null`` among the values
        values.append(null)
        index[index < 0] = len(values) - 1
    return values, index


def _ranks(parts: list[tuple[list[Any], Any]]) -> tuple[list[str], Any]:
    """The blocks of one coded column as (its distinct values sorted, each row's position in
    them; -1: null). Values equal once bounded are one value."""
    import numpy as np

    distinct = sorted({v for values, _ in parts for v in values if v is not None})
    position = {v: i for i, v in enumerate(distinct)}
    out = []
    for values, index in parts:  # index -1 takes the trailing -1: null stays null
        lookup = np.array([-1 if v is None else position[v] for v in values] + [-1], np.int32)
        out.append(lookup[index])
    return distinct, np.concatenate(out) if out else np.zeros(0, np.int32)


def _dictionary(distinct: list[str], rank: Any) -> tuple[list[str | None], Any]:
    """A coded column as the report stores it: the values present, sorted, null last, and
    each row's index in them (see decode_flags)."""
    import numpy as np

    from .._arrays import sorted_unique

    used = sorted_unique(rank[rank >= 0], in_place=True)
    values: list[str | None] = [distinct[i] for i in used.tolist()]
    lookup = np.full(len(distinct) + 1, len(values), np.int32)  # the last: null
    lookup[used] = np.arange(len(values), dtype=np.int32)
    index = lookup[rank]  # -1 takes the last
    if (rank < 0).any():
        values.append(None)
    return values, index


def _text(value: Any, n: int) -> pa.Array:
    """A text field of a block (a constant, a list, Arrow text, or integers given for text:
    cluster ids) as n Arrow large strings."""
    import numpy as np
    import pyarrow as pa

    from .._arrow import numeric_array, strings, take
    from .._compute import cast

    if value is None:
        return pa.nulls(n, pa.large_string())
    if isinstance(value, str):
        return take(strings([value]), np.zeros(n, np.int64))
    if isinstance(value, list):
        return strings(value)
    if isinstance(value, np.ndarray):
        return cast(numeric_array(value), pa.large_string())
    return cast(value, pa.large_string())


def _concat(arrays: list[Any]) -> pa.ChunkedArray:
    import pyarrow as pa

    return pa.chunked_array(arrays, pa.large_string())


def _text_ranks(array: pa.ChunkedArray) -> Any:
    """Each value's dense rank among the column's values (0: null), to sort and compare by."""
    import numpy as np
    import pyarrow.compute as pc

    from .._arrow import fixed, nulls_to

    if not len(array):
        return np.zeros(0, np.int64)
    rank = fixed(pc.rank(array, sort_keys="ascending", tiebreaker="dense")).astype(np.int64)
    return nulls_to(rank, array, 0)


def _bounded_values(values: list[Any], limit: int) -> list[Any]:
    return [v if v is None else shorten(v, limit) for v in values]


def _bounded_text(array: pa.ChunkedArray, limit: int) -> pa.ChunkedArray:
    """escape.shorten for an Arrow text column (only its long values go through Python)."""
    import numpy as np
    import pyarrow as pa

    from .._arrow import fixed, mask_array, strings, take
    from .._compute import call

    if not len(array):
        return array
    long = fixed(call("utf8_length", array), 0) > limit  # null: not long
    at = np.flatnonzero(long)
    if not at.size:
        return array
    cut = strings([shorten(v, limit) for v in take(array, at).to_pylist()], array.type)
    whole = array.combine_chunks()
    return pa.chunked_array([call("replace_with_mask", whole, mask_array(long), cut)])


def _json_list(values: list[Any]) -> str:
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def column_json(flags: Mapping[str, Any], name: str) -> Iterator[str]:
    """One column of a report's flags table as compact JSON, in pieces (``json.dumps`` of the
    stored column, separators ``,`` and ``:``)."""
    if isinstance(flags, FlagTable) and flags.columnar:
        yield from flags.column_json(name)
    else:
        yield _json_list(flags[name])


class FlagTable(dict):
    """The report's row flags table (``Report.data["flags"]``), held as columns: numpy and
    Arrow arrays, ~65 bytes a flag, not the ~300 of the report's encoding as Python lists.

    It reads as the stored encoding (a dict: count, one list per column, the few-valued
    columns as ``{values, index}``), built the first time anything but ``count`` is read;
    the report's JSON, ``Report.flags()`` and the flags files are written from the columns,
    piece by piece. Copies and pickles are plain dicts.
    """

    def __init__(self, count: int, columns: dict[str, Any]):
        super().__init__(count=count)
        self._columns = columns
        self._filled = False

    @property
    def columnar(self) -> bool:
        """Whether its columns are what it holds: not yet read as a dict (once it is, what is
        written to it is what it holds, and it is read as any stored table)."""
        return not self._filled

    # -- from the columns ----------------------------------------------------------------------
    def frame(self) -> pl.DataFrame:
        """The table as ``Report.flags()`` returns it (what decode_flags makes of its JSON)."""
        import polars as pl

        columns = {}
        for name in FLAG_COLUMNS:
            dtype = getattr(pl, FLAG_SCHEMA[name])
            value = self._columns[name]
            if name in DICT_COLUMNS:
                values, index = value
                series = pl.Series(name, values, dtype=dtype)
                columns[name] = series.gather(pl.Series(index, dtype=pl.UInt32))
            elif name == "score":
                columns[name] = pl.Series(name, value, dtype=dtype, nan_to_null=True)
            elif name == "row":
                columns[name] = pl.Series(name, value, dtype=dtype)
            else:
                columns[name] = pl.from_arrow(value).cast(dtype).alias(name)
        return pl.DataFrame(columns)

    @property
    def arrays(self) -> dict[str, Any]:
        """The columns it holds (read only: the flags files are written from them)."""
        return self._columns

    def flagged_rows(self) -> int:
        """How many distinct (split, row) pairs are flagged (the table is sorted by them)."""
        import numpy as np

        split, row = self._columns["split"][1], self._columns["row"]
        if not row.size:
            return 0
        changes = (split[1:] != split[:-1]) | (row[1:] != row[:-1])
        return 1 + int(np.count_nonzero(changes))

    def column_json(self, name: str) -> Iterator[str]:
        """``json.dumps(self[name], separators=(",", ":"))`` in pieces of _CHUNK values."""
        value = self._columns[name]
        if name in DICT_COLUMNS:
            values, index = value
            yield f'{{"values":{_json_list(values)},"index":'
            yield from self._pieces(index, lambda part: part.tolist())
            yield "}"
            return
        yield from self._pieces(value, self._decoder(name))

    def _pieces(self, array: Any, decode: Any) -> Iterator[str]:
        yield "["
        for at in range(0, len(array), _CHUNK):
            piece = _json_list(decode(array[at : at + _CHUNK]))
            yield ("," if at else "") + piece[1:-1]
        yield "]"

    @staticmethod
    def _decoder(name: str) -> Any:
        if name == "score":
            return lambda part: [None if v != v else v for v in part.tolist()]
        if name == "row":
            return lambda part: part.tolist()
        return lambda part: part.to_pylist()

    def _encoded(self, name: str) -> Any:
        value = self._columns[name]
        if name in DICT_COLUMNS:
            return {"values": list(value[0]), "index": value[1].tolist()}
        return self._decoder(name)(value)

    # -- as the stored dict ----------------------------------------------------------------------
    def _fill(self) -> None:
        if not self._filled:
            self._filled = True
            dict.update(self, {name: self._encoded(name) for name in FLAG_COLUMNS})

    def __getitem__(self, key: str) -> Any:
        if key != "count":
            self._fill()
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        if key != "count":
            self._fill()
        return dict.get(self, key, default)

    def __reduce_ex__(self, protocol: Any) -> Any:
        self._fill()
        return dict, (dict(dict.items(self)),)

    def __repr__(self) -> str:
        return f"FlagTable({dict.__getitem__(self, 'count')} flags)"


def _filled(method: str) -> Any:
    def call(self: FlagTable, *args: Any, **kwargs: Any) -> Any:
        self._fill()
        return getattr(dict, method)(self, *args, **kwargs)

    call.__name__ = method
    return call


for _method in (
    "__contains__", "__eq__", "__ne__", "__iter__", "__len__", "__setitem__", "__delitem__",
    "__or__", "__ior__", "keys", "values", "items", "copy", "pop", "popitem", "setdefault",
    "update", "clear",
):  # fmt: skip
    setattr(FlagTable, _method, _filled(_method))


def decode_flags(stored: dict[str, Any]) -> pl.DataFrame:
    """The flags table from the report's encoding (see encode_flags)."""
    import polars as pl

    columns = {}
    for name in FLAG_COLUMNS:
        dtype = getattr(pl, FLAG_SCHEMA[name])
        value = stored[name]
        if name in DICT_COLUMNS:
            values = pl.Series(name, value["values"], dtype=dtype)
            columns[name] = values.gather(pl.Series(value["index"], dtype=pl.UInt32))
        else:
            columns[name] = pl.Series(name, value, dtype=dtype)
    return pl.DataFrame(columns)

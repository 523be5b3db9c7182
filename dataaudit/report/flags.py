"""The row flags table: collected from the rules' outcomes, stored in the report column by column
(``Report.flags()`` decodes it); the file format it is written in, from the path's extension."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import is_special_file, is_stdout
from ..errors import ConfigError

if TYPE_CHECKING:
    import polars as pl

    from ..rule import FlagColumns, RuleOutcome

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


def _bounded(values: pl.Series, limit: int) -> pl.Series:
    """escape.shorten for a whole column."""
    import polars as pl

    long = values.str.len_chars() > limit
    if not long.any():
        return values
    cut = values.str.slice(0, limit - 1) + "…"
    return pl.select(pl.when(long).then(cut).otherwise(values)).to_series().alias(values.name)


#: the order of the table: by row, then rule, then what tells two flags of one rule apart
_FLAG_ORDER = ["split", "row", "code", "cluster", "detail", "action", "severity", "id", "score"]


def collect_flags(outcomes: list[RuleOutcome]) -> pl.DataFrame:
    """Every rule's flags as a table of FLAG_COLUMNS: severity and action resolved, untrusted
    text bounded, duplicates removed, sorted (built block by block, column by column: flags
    can be millions)."""
    import polars as pl

    from ..rule import Flags

    frames = [_empty_frame()]
    for outcome in outcomes:
        if outcome.result is None or outcome.error is not None or not outcome.result.flags:
            continue
        default = outcome.severity.value
        for block in Flags.of(outcome.result.flags).blocks():
            frames.append(_block_frame(block, outcome.rule.code, default))
    frame = pl.concat(frames, how="vertical", rechunk=True)
    frame = frame.with_columns(
        _bounded(frame["id"], _MAX_ID), _bounded(frame["detail"], _MAX_DETAIL)
    )
    return _sorted_unique(frame)


def _sorted_unique(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame.unique().sort(_FLAG_ORDER)``, faster: sorted by every column, equal rows are
    neighbours, so a row equal to the one before it is a duplicate (rules add their flags
    mostly in row order, which the sort finds cheap; unique() scrambled it first)."""
    import polars as pl

    frame = frame.sort(_FLAG_ORDER, nulls_last=False)
    if frame.height < 2:
        return frame
    same = pl.all_horizontal(pl.col(c).eq_missing(pl.col(c).shift(1)) for c in _FLAG_ORDER)
    return frame.filter(~same.fill_null(False))


def _empty_frame() -> pl.DataFrame:
    import polars as pl

    return pl.DataFrame(
        {name: pl.Series(name, [], dtype=getattr(pl, FLAG_SCHEMA[name])) for name in FLAG_COLUMNS}
    )


def _block_frame(block: FlagColumns, code: str, default_severity: str) -> pl.DataFrame:
    """One block of flags as a table of FLAG_COLUMNS (a constant field repeated)."""
    import polars as pl

    n = len(block)

    def column(name: str, value: Any) -> pl.Series:
        dtype = getattr(pl, FLAG_SCHEMA[name])
        if isinstance(value, list):
            return pl.Series(name, value, dtype=dtype)
        if hasattr(value, "to_pylist"):  # Arrow strings
            return pl.from_arrow(value).cast(dtype).alias(name)
        if hasattr(value, "dtype"):  # integers given for a text field (cluster ids)
            return pl.Series(name, value).cast(dtype)
        return pl.repeat(value, n, dtype=dtype, eager=True).alias(name)

    severity = block.severity
    if isinstance(severity, list):
        severity = [default_severity if v is None else v.value for v in severity]
    else:
        severity = default_severity if severity is None else severity.value
    score = (
        pl.repeat(None, n, dtype=pl.Float64, eager=True).alias("score")
        if block.score is None
        else pl.Series("score", block.score, dtype=pl.Float64, nan_to_null=True)
    )
    return pl.DataFrame(
        [
            column("split", block.split),
            pl.Series("row", block.row, dtype=pl.Int64),
            column("id", block.id),
            column("code", code),
            column("severity", severity),
            column("action", block.action).fill_null("review"),  # None: review
            column("cluster", block.group),
            score,
            column("detail", block.detail),
        ]
    )


def encode_flags(frame: pl.DataFrame) -> dict[str, Any]:
    """The flags table as the report stores it: one array per column, the columns with few
    distinct values (split, code, severity, action, detail) as ``{"values", "index"}``."""
    import polars as pl

    out: dict[str, Any] = {"count": frame.height}
    for name in FLAG_COLUMNS:
        column = frame[name]
        if name not in DICT_COLUMNS:
            out[name] = column.to_list()
            continue
        distinct = sorted(column.drop_nulls().unique().to_list())
        index = column.cast(pl.Enum(distinct)).to_physical().cast(pl.Int64)
        if column.null_count():
            index = index.fill_null(len(distinct))
            distinct.append(None)
        out[name] = {"values": distinct, "index": index.to_list()}
    return out


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

"""Act on a report: remove the rows its flags say to drop, from the data the report audited.

``Report.apply(data)`` returns ``data`` without those rows in its own type (Hugging Face Dataset /
DatasetDict, polars, pandas, Arrow, list of dicts, a dict of splits); ``clean(report, paths, out)``
(``dataaudit clean``) writes a cleaned copy of files, one file per split in the input's format,
and a manifest of what was removed and why.

Which rows go: the flags of the selected rules (``drop``: codes, prefixes, names or groups, as
``select``) whose action is selected (``drop`` by default) and whose severity reaches
``severity``. A row goes if any selected flag says so; a rule's ``keep`` flag (a duplicate
cluster's representative, the eval side of a leak) never removes it. The data must be the data
the report audited: the splits, their row counts and their content hashes are checked first,
because a flag names a row by its position.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import ConfigError, InputError
from .rule import ACTIONS, Severity

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from .corpus import Corpus
    from .report import Report

__all__ = ["MANIFEST_NAME", "Plan", "apply", "clean", "plan"]

MANIFEST_NAME = "dataaudit-manifest.json"  # beside the cleaned files; readers skip it
BATCH_ROWS = 8192


# -- which rows go ---------------------------------------------------------------------------------
@dataclass
class Plan:
    """The rows to remove: per split, sorted positions; and the flags that remove them."""

    codes: list[str]  # the rules whose flags count
    drop: dict[str, np.ndarray]
    flags: pl.DataFrame  # the selected flags (split, row, id, code, ..., detail)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def removed(self) -> int:
        return sum(len(v) for v in self.drop.values())


def _as_list(value: list[str] | str | None, option: str) -> list[str] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str) else list(value)
    out = [s.strip() for item in items for s in str(item).split(",") if s.strip()]
    if not out:
        raise ConfigError(f"{option}: empty; give at least one value, or leave it out.")
    return out


def _selected_codes(report: Report, selectors: list[str] | None) -> list[str]:
    """The report's rules that ``selectors`` name (matched as ``select`` matches them)."""
    from .registry import _check_selectors, _specificity, load_rules

    ran = [r["code"] for r in report.results]
    if selectors is None:
        return ran
    ruleset = load_rules()

    def matches(sel: str, code: str) -> bool:
        cls = ruleset.rules.get(code)
        if cls is not None:
            return _specificity(sel, cls) is not None
        # a plugin rule that is not installed here: match its code and prefix
        return sel in ("ALL", code) or (sel.isupper() and code.startswith(sel))

    chosen: set[str] = set()
    for sel in selectors:
        hit = [code for code in ran if matches(sel, code)]
        if not hit:
            _check_selectors([sel], ruleset, "drop")  # a typo: close matches and the fix
            raise ConfigError(
                f"drop: {sel!r} selects no rule of this report (it ran "
                f"{', '.join(ran) or 'no rules'}); audit with that rule selected first."
            )
        chosen.update(hit)
    return [code for code in ran if code in chosen]


def plan(
    report: Report,
    *,
    drop: list[str] | str | None = None,
    severity: str | Severity = "info",
    action: list[str] | str = "drop",
    splits: list[str] | str | None = None,
) -> Plan:
    """Which rows of which splits the selected flags remove (see the module docstring)."""
    import polars as pl

    selectors = _as_list(drop, "drop")
    least = Severity.parse(severity, option="severity")
    actions = _as_list(action, "action") or []
    for a in actions:
        if a not in ACTIONS or a == "keep":
            raise ConfigError(
                f"action: {a!r} cannot remove rows; use drop and/or review (keep marks the rows "
                "a rule keeps)."
            )
    known = list(report.data["dataset"]["splits"])
    only = _as_list(splits, "splits")
    for name in only or []:
        if name not in known:
            raise ConfigError(
                f"splits: no split {name!r} in this report; it has {', '.join(known)}."
            )
    flags = report.flags()
    codes = _selected_codes(report, selectors)
    ranks = {s.value: s.rank for s in Severity}
    selected = flags.filter(
        pl.col("code").is_in(codes)
        & pl.col("action").is_in(actions)
        & pl.col("severity").replace_strict(ranks, return_dtype=pl.Int64).ge(least.rank)
        & (pl.col("split").is_in(only) if only else pl.lit(True))
    )
    drop_rows: dict[str, np.ndarray] = {}
    for name in known:
        rows = selected.filter(pl.col("split") == name)["row"].unique().sort().to_numpy()
        drop_rows[name] = np.asarray(rows, np.int64)
    settings = {
        "drop": selectors,
        "codes": codes,
        "severity": least.value,
        "action": actions,
        "splits": only,
    }
    return Plan(codes, drop_rows, selected, settings)


# -- is this the data the report audited? -----------------------------------------------------------
def load_audited(report: Report, data: Any) -> Corpus:
    """``data`` read as the audit read it: the report's split column, roles and bad-line policy."""
    from .corpus import load_corpus

    cfg = report.data.get("config", {})
    return load_corpus(
        data,
        split=cfg.get("split"),
        roles=cfg.get("columns") or None,
        on_bad_lines=cfg.get("on_bad_lines") or "error",
    )


def _keep_mask(rows: int, drop: np.ndarray) -> np.ndarray:
    keep = np.ones(rows, bool)
    keep[drop[drop < rows]] = False
    return keep


def check_same_data(
    report: Report, corpus: Corpus, drop: dict[str, np.ndarray] | None = None
) -> dict[str, tuple[int, int]]:
    """InputError unless ``corpus`` has the report's splits, row counts and content hashes.

    Returns, per split, the (rows, sum of row hashes) of the rows that ``drop`` keeps, which a
    cleaned copy must read back as.
    """
    from .identity import SplitIdentity, row_hashes

    expected = report.data["dataset"]["splits"]
    seen: dict[str, SplitIdentity] = {}
    kept: dict[str, list[int]] = {}
    for name, rb in corpus.stream(BATCH_ROWS):
        ident = seen.setdefault(name, SplitIdentity())
        start = ident.rows
        ident.update(rb)
        if drop is not None and rb.num_rows:
            keep = np.ones(rb.num_rows, bool)
            gone = drop.get(name, np.empty(0, np.int64))
            gone = gone[(gone >= start) & (gone < start + rb.num_rows)] - start
            keep[gone] = False
            acc = kept.setdefault(name, [0, 0])
            acc[0] += int(keep.sum())
            acc[1] = (acc[1] + int(row_hashes(rb)[keep].sum(dtype=np.uint64))) & ((1 << 64) - 1)
    hint = "Pass the data this report was made from, or audit this data again."
    if set(seen) != set(expected):
        raise InputError(
            f"the data has the splits {', '.join(seen) or '(none)'}, but the report audited "
            f"{', '.join(expected)}. {hint}"
        )
    for name, ident in seen.items():
        want = expected[name]
        if ident.rows != want["rows"]:
            raise InputError(
                f"split {name!r} has {ident.rows:,} rows, but the report audited {want['rows']:,}: "
                f"the flags name rows by position, so they cannot be applied. {hint}"
            )
        if ident.content_hash() != want["content_hash"]:
            raise InputError(
                f"split {name!r} has the report's {ident.rows:,} rows, but not their content "
                f"(content hash {ident.content_hash()}, the report's {want['content_hash']}). {hint}"
            )
    return {name: (v[0], v[1]) for name, v in kept.items()}


# -- apply: the same type back -----------------------------------------------------------------------
def apply(
    report: Report,
    data: Any,
    *,
    drop: list[str] | str | None = None,
    severity: str | Severity = "info",
    action: list[str] | str = "drop",
    splits: list[str] | str | None = None,
) -> Any:
    """``data`` without the rows the report's selected flags drop, in ``data``'s own type."""
    if isinstance(data, (str, os.PathLike)) or (
        isinstance(data, (list, tuple)) and data and isinstance(data[0], (str, os.PathLike))
    ):
        raise InputError(
            "apply() returns the data in its own type, and a path is not data: for files, write a "
            "cleaned copy with `dataaudit clean PATH --report REPORT.json --out DIR` (Python: "
            "dataaudit.remediate.clean(report, PATH, DIR))."
        )
    p = plan(report, drop=drop, severity=severity, action=action, splits=splits)
    corpus = load_audited(report, data)
    check_same_data(report, corpus)
    rows = {name: s["rows"] for name, s in report.data["dataset"]["splits"].items()}
    keep = {name: _keep_mask(rows[name], p.drop[name]) for name in rows}
    if corpus.split_column is not None:
        return _take(data, _split_column_keep(corpus, keep))
    if _is_multi_split(data):
        return _take_splits(data, keep)
    (name,) = corpus.splits
    return _take(data, keep[name])


def _module(obj: Any) -> str:
    return type(obj).__module__.split(".")[0]


def _is_hf_dict(obj: Any) -> bool:
    return _module(obj) == "datasets" and type(obj).__name__ in (
        "DatasetDict",
        "IterableDatasetDict",
    )


def _is_multi_split(obj: Any) -> bool:
    from .corpus import _looks_like_record

    return _is_hf_dict(obj) or (isinstance(obj, Mapping) and not _looks_like_record(obj))


def _take_splits(data: Any, keep: dict[str, np.ndarray]) -> Any:
    """A dict of splits (or DatasetDict) with each split's rows taken; names as load_corpus
    gives them (a dict value with several splits: ``key/split``)."""
    out = {}
    for key, value in data.items():
        if _is_hf_dict(value) and len(value) > 1:
            out[key] = type(value)({k: _take(v, keep[f"{key}/{k}"]) for k, v in value.items()})
        elif _is_hf_dict(value):
            out[key] = type(value)({k: _take(v, keep[str(key)]) for k, v in value.items()})
        else:
            out[key] = _take(value, keep[str(key)])
    return type(data)(out) if _is_hf_dict(data) else out


def _take(obj: Any, keep: np.ndarray) -> Any:
    """``obj``'s rows where ``keep``, in ``obj``'s type."""
    import pyarrow as pa

    name = type(obj).__name__
    module = _module(obj)
    if module == "polars" and name == "DataFrame":
        import polars as pl

        return obj.filter(pl.Series(keep))
    if module == "polars" and name == "LazyFrame":
        import polars as pl

        index = "__dataaudit_row__"
        gone = pl.Series(np.flatnonzero(~keep), dtype=pl.UInt32).implode()
        return obj.with_row_index(index).filter(~pl.col(index).is_in(gone)).drop(index)
    if module == "pandas" and name == "DataFrame":
        return obj[keep]
    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        return obj.filter(pa.array(keep))
    if module == "datasets" and name == "Dataset":
        return obj.select(np.flatnonzero(keep))
    if module == "datasets" and name == "IterableDataset":
        return obj.filter(lambda _, i: bool(keep[i]), with_indices=True)
    if isinstance(obj, list):
        return [row for row, k in zip(obj, keep) if k]
    if isinstance(obj, Mapping):  # a table of columns: {"text": [...], "label": [...]}
        return {k: [v for v, kk in zip(col, keep) if kk] for k, col in obj.items()}
    raise InputError(
        f"apply() cannot return a {type(obj).__module__}.{name}; pass a Dataset/DatasetDict, a "
        "polars or pandas DataFrame, a pyarrow Table, a list of dicts or a dict of splits, or "
        "write a cleaned copy of files with `dataaudit clean`."
    )


def _split_column_keep(corpus: Corpus, keep: dict[str, np.ndarray]) -> np.ndarray:
    """One input partitioned by a split column: the rows to keep, over the input's rows."""
    import pyarrow as pa

    from .inputs.arrow import plain_batch

    column = corpus.split_column
    source = next(iter(corpus.splits.values()))
    seen: dict[str, int] = {}
    out: list[bool] = []
    for _, batches in source.iter_parts():
        for rb in batches(BATCH_ROWS):
            rb = plain_batch(rb)
            idx = rb.schema.get_field_index(column)
            values = (
                [None] * rb.num_rows if idx < 0 else rb.column(idx).cast(pa.string()).to_pylist()
            )
            for v in values:
                name = "null" if v is None else v
                i = seen.get(name, 0)
                seen[name] = i + 1
                out.append(bool(keep[name][i]))
    return np.asarray(out, bool)


# -- clean: a cleaned copy of files ----------------------------------------------------------------
_EXT = {
    "jsonl": ".jsonl",
    "json": ".json",
    "parquet": ".parquet",
    "csv": ".csv",
    "tsv": ".tsv",
    "txt": ".txt",
    "arrow": ".arrow",
}
_CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}


def _split_format(paths: list[Any]) -> tuple[str, str] | None:
    """(format, compression suffix) shared by all of a split's files, or None (then Parquet)."""
    from .readers import file_format

    if not paths or any(not isinstance(p, Path) for p in paths):
        return None  # remote files or in-memory data: written as Parquet
    kinds = {(file_format(p), _codec_suffix(p)) for p in paths}
    return kinds.pop() if len(kinds) == 1 else None


def _codec_suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    return suffix if suffix in _CODECS else ""


def _check_out(out: Path, specs: list[Any]) -> None:
    """The output folder is new or empty, and neither holds nor sits inside the input."""
    target = Path(os.path.realpath(os.path.expanduser(out)))
    for spec in specs:
        text = str(spec)
        if text == "-" or "://" in text:
            continue
        src = Path(os.path.realpath(os.path.expanduser(text.split("*")[0] or ".")))
        if target == src or src.is_relative_to(target) or target.is_relative_to(src):
            raise ConfigError(
                f"--out {out}: it overlaps the input {spec}; writing there would change the data "
                "being cleaned (or be read as more data by the next audit). Choose a folder "
                "outside the input."
            )
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ConfigError(
            f"--out {out}: {'not a folder' if not target.is_dir() else 'the folder is not empty'}; "
            "give a new or empty folder for the cleaned copy."
        )


def clean(
    report: Report | str | os.PathLike,
    data: Any,
    out: str | os.PathLike,
    *,
    drop: list[str] | str | None = None,
    severity: str | Severity = "info",
    action: list[str] | str = "drop",
    splits: list[str] | str | None = None,
) -> dict[str, Any]:
    """Write ``data`` without the dropped rows into the folder ``out``, one file per split in
    the input's format (Parquet for inputs that are not local files), plus a manifest
    (:data:`MANIFEST_NAME`); returns the manifest.

    The copy is read back before it is published: each split must read as exactly the rows the
    plan keeps (row count and content hash), else nothing is written (InputError).
    """
    from .report import Report

    report_path = None
    if not isinstance(report, Report):
        report_path = str(report)
        report = Report.load(report)
    specs = list(data) if isinstance(data, (list, tuple)) else [data]
    out = Path(out)
    _check_out(out, [s for s in specs if isinstance(s, (str, os.PathLike))])
    p = plan(report, drop=drop, severity=severity, action=action, splits=splits)
    corpus = load_audited(report, data)
    expected = check_same_data(report, corpus, p.drop)
    rows = {name: s["rows"] for name, s in report.data["dataset"]["splits"].items()}
    keep = {name: _keep_mask(rows[name], p.drop[name]) for name in rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    on_bad = report.data.get("config", {}).get("on_bad_lines") or "error"
    try:
        files = _write_splits(corpus, keep, tmp, on_bad)
        _check_written(report, tmp, files, expected)
        manifest = _manifest(report, report_path, specs, p, keep, files, expected, corpus)
        _write_manifest(tmp / MANIFEST_NAME, manifest)
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)  # mkdtemp made it private; the copy is a normal folder
        if out.exists():
            out.rmdir()  # checked empty above
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def _write_splits(
    corpus: Corpus, keep: dict[str, np.ndarray], tmp: Path, on_bad: str
) -> dict[str, str]:
    """One file per split in ``tmp``; returns split -> file name."""
    for name in corpus.splits:
        if "/" in name or "\\" in name or name in ("", ".", ".."):
            raise InputError(
                f"split {name!r} cannot be a file name in the cleaned copy; pass the splits "
                "as files (train.jsonl, test.jsonl) or a dict with plain names."
            )
    if corpus.split_column is not None:
        # one input, partitioned: each split's rows to its file; the split column stays
        return _write_partitioned(corpus, _split_column_keep(corpus, keep), tmp)
    files: dict[str, str] = {}
    for name, source in corpus.splits.items():
        fmt = _split_format(source.paths)
        ext = _EXT[fmt[0]] + fmt[1] if fmt else ".parquet"
        target = tmp / f"{name}{ext}"
        if fmt is None:
            _write_parquet_stream(_batches_of(source), keep[name], target)
        elif fmt[0] in ("jsonl", "json"):
            _copy_json_split(source.paths, keep[name], fmt[0], on_bad, target)
        elif fmt[0] == "parquet":
            _copy_parquet(source.paths, keep[name], target)
        elif fmt[0] == "arrow":
            _copy_arrow(source.paths, keep[name], target)
        else:  # csv, tsv, txt: text cells; the reader's batches are the rows, in order
            columns = list(source.schema.names) if source.schema is not None else None
            _write_text_table(_batches_of(source), keep[name], target, fmt[0], columns)
        files[name] = target.name
    return files


def _batches_of(source: Any) -> Iterator[pa.RecordBatch]:
    """One split's batches as its reader gives them (the audit's rows, in order)."""
    from .inputs.arrow import plain_batch

    for _, batches in source.iter_parts():
        for rb in batches(BATCH_ROWS):
            if rb.num_rows:
                yield plain_batch(rb)


def _open_out(path: Path) -> Any:
    import pyarrow as pa

    codec = _CODECS.get(path.suffix.lower())
    return pa.CompressedOutputStream(str(path), codec) if codec else open(path, "wb")  # noqa: SIM115


def _copy_json_split(paths: list[Path], keep: np.ndarray, fmt: str, on_bad: str, target) -> None:
    """A JSON split's kept records: JSON Lines byte for byte; JSON arrays as one array (or, in
    a split that mixes arrays and lines, every record as a line, which the reader also reads)."""
    from .inputs.jsonl import starts_with_array

    arrays = [fmt == "json" and starts_with_array(p) for p in paths]
    start = 0
    kept: list[Any] = []
    with _open_out(target) as sink:
        for path, array in zip(paths, arrays):
            if array:
                records = _json_records(path, on_bad)
                mask = keep[start : start + len(records)]
                start += len(records)
                kept.extend(r for r, k in zip(records, mask) if k)
                if not all(arrays):
                    for r in kept:
                        sink.write(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n")
                    kept = []
                continue
            for line in _records_of_lines(path, on_bad):
                if start < len(keep) and keep[start]:
                    sink.write(line if line.endswith(b"\n") else line + b"\n")
                start += 1
        if arrays and all(arrays):
            body = ",\n".join(json.dumps(r, ensure_ascii=False) for r in kept)
            sink.write(("[\n" + body + "\n]\n").encode("utf-8"))
    if start != len(keep):
        raise InputError(
            f"{', '.join(map(str, paths))}: {start:,} records where the audit read {len(keep):,}; "
            "the files changed since the audit."
        )


def _records_of_lines(path: Path, on_bad: str) -> Iterator[bytes]:
    """The lines that are records: not blank (and, when unreadable lines were skipped, only
    the readable ones), as the JSON Lines reader counts them."""
    first = True
    for line in _lines(path):
        if first and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        first = False
        if not line.strip() or (on_bad == "skip" and not _is_record(line)):
            continue
        yield line


def _lines(path: Path, block: int = 1 << 20) -> Iterator[bytes]:
    """The file's lines, with their newline, read in blocks (compressed streams have no
    readline)."""
    from .inputs.location import open_binary

    with open_binary(path) as fh:
        tail = b""
        while chunk := fh.read(block):
            parts = (tail + chunk).split(b"\n")
            tail = parts.pop()
            yield from (p + b"\n" for p in parts)
        if tail:
            yield tail


def _is_record(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def _json_records(path: Path, on_bad: str) -> list[Any]:
    from .inputs.location import open_binary

    with open_binary(path) as fh:
        records = json.loads(fh.read().decode("utf-8-sig"))
    records = records if isinstance(records, list) else [records]
    return [r for r in records if on_bad != "skip" or isinstance(r, dict)]


def _copy_parquet(paths, keep, target) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .inputs.location import pyarrow_source

    writer = None
    i = 0
    try:
        for path in paths:
            pf = pq.ParquetFile(pyarrow_source(path))
            if writer is None:
                writer = pq.ParquetWriter(str(target), pf.schema_arrow)
            for group in range(pf.num_row_groups):
                for rb in pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[group]):
                    part = rb.filter(pa.array(keep[i : i + rb.num_rows]))
                    i += rb.num_rows
                    if part.num_rows:
                        writer.write_batch(part.cast(writer.schema))
    finally:
        if writer is not None:
            writer.close()


def _copy_arrow(paths, keep, target) -> None:
    import pyarrow as pa

    from .readers import iter_arrow

    writer = schema = None
    i = 0
    try:
        for path in paths:
            for rb in iter_arrow(path, BATCH_ROWS):
                if writer is None:
                    schema = rb.schema
                    writer = pa.ipc.new_stream(str(target), schema)
                part = rb.filter(pa.array(keep[i : i + rb.num_rows]))
                i += rb.num_rows
                writer.write_batch(part.cast(schema))
    finally:
        if writer is not None:
            writer.close()


def _plain(rb: pa.RecordBatch, columns: list[str] | None) -> pa.RecordBatch:
    """The batch without the readers' type markers (and, given, only ``columns``)."""
    import pyarrow as pa

    from .rule import TYPE_MARKER_PREFIX

    names = [
        n
        for n in rb.schema.names
        if not n.startswith(TYPE_MARKER_PREFIX) and (columns is None or n in columns)
    ]
    return pa.RecordBatch.from_arrays([rb.column(n) for n in names], names=names)


def _filtered(batches: Iterator[pa.RecordBatch], keep: np.ndarray) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    i = 0
    for rb in batches:
        part = rb.filter(pa.array(keep[i : i + rb.num_rows]))
        i += rb.num_rows
        yield part


def _write_parquet_stream(batches, keep, target: Path, columns: list[str] | None = None) -> None:
    import pyarrow.parquet as pq

    writer = None
    try:
        for part in _filtered(batches, keep):
            part = _plain(part, columns)
            if writer is None:
                writer = pq.ParquetWriter(str(target), part.schema)
            writer.write_batch(part.cast(writer.schema))
    finally:
        if writer is not None:
            writer.close()


def _write_text_table(batches, keep, target: Path, fmt: str, columns) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    with _open_out(target) as sink:
        writer = None
        for part in _filtered(batches, keep):
            part = _plain(part, columns)
            if fmt == "txt":
                for text in part.column("text").to_pylist():
                    sink.write(((text or "") + "\n").encode("utf-8"))
                continue
            if fmt == "tsv":  # no quoting in a TSV (the reader has none): cells as they are
                if writer is None:
                    writer = False
                    sink.write(("\t".join(part.schema.names) + "\n").encode("utf-8"))
                cols = [
                    part.column(i).cast(pa.string()).to_pylist() for i in range(part.num_columns)
                ]
                for row in zip(*cols):
                    line = "\t".join("" if v is None else v for v in row) + "\n"
                    sink.write(line.encode("utf-8"))
                continue
            part = part.cast(pa.schema([pa.field(f.name, pa.string()) for f in part.schema]))
            if writer is None:
                options = pacsv.WriteOptions(delimiter="\t" if fmt == "tsv" else ",")
                writer = pacsv.CSVWriter(sink, part.schema, write_options=options)
            writer.write_batch(part)
        if writer:
            writer.close()


def _write_partitioned(corpus: Corpus, mask: np.ndarray, tmp: Path) -> dict[str, str]:
    """A split-column input: each split's kept rows to ``tmp/<split>.parquet`` (Parquet keeps
    every column's type, whatever the input's format)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .inputs.arrow import plain_batch

    column = corpus.split_column
    source = next(iter(corpus.splits.values()))
    writers: dict[str, Any] = {}
    i = 0
    try:
        for _, batches in source.iter_parts():
            for rb in batches(BATCH_ROWS):
                rb = _plain(plain_batch(rb), None)
                part_keep = mask[i : i + rb.num_rows]
                i += rb.num_rows
                values = rb.column(rb.schema.get_field_index(column)).cast(pa.string())
                names = ["null" if v is None else v for v in values.to_pylist()]
                for name in dict.fromkeys(names):
                    sel = np.array([n == name for n in names]) & part_keep
                    part = rb.filter(pa.array(sel))
                    if name not in writers:
                        writers[name] = pq.ParquetWriter(str(tmp / f"{name}.parquet"), part.schema)
                    writers[name].write_batch(part.cast(writers[name].schema))
    finally:
        for w in writers.values():
            w.close()
    return {name: f"{name}.parquet" for name in writers}


def _check_written(report, tmp: Path, files: dict[str, str], expected) -> None:
    """The copy reads back as the kept rows of every split, or InputError (nothing published)."""
    from .corpus import load_corpus
    from .identity import row_hashes

    cfg = report.data.get("config", {})
    names = list(report.data["dataset"]["splits"])
    # a split that lost every row is an empty file, which no reader takes as a split
    written = {n: str(tmp / f) for n, f in files.items() if expected.get(n, (0, 0))[0]}
    if not written:
        return
    corpus = load_corpus(written, roles=cfg.get("columns") or None)
    columns = {c["name"] for s in report.data["dataset"]["splits"].values() for c in s["columns"]}
    got: dict[str, list[int]] = {name: [0, 0] for name in names}
    for name, rb in corpus.stream(BATCH_ROWS):
        rb = _with_columns(rb, columns)
        acc = got.setdefault(name, [0, 0])
        acc[0] += rb.num_rows
        acc[1] = (acc[1] + int(row_hashes(rb).sum(dtype=np.uint64))) & ((1 << 64) - 1)
    for name in names:
        want = expected.get(name, (0, 0))
        if tuple(got.get(name, (0, 0))) != tuple(want):
            raise InputError(
                f"the cleaned copy of split {name!r} does not read back as the rows it should "
                f"keep ({got[name][0]:,} rows read, {want[0]:,} expected); nothing was written. "
                "Please report this as a bug, with the input's format."
            )


def _with_columns(rb: pa.RecordBatch, columns: set[str]) -> pa.RecordBatch:
    """The batch with the audited columns a cleaned copy lost (only dropped rows had them) as
    nulls, so its row hashes compare with the audit's."""
    import pyarrow as pa

    missing = [c for c in sorted(columns) if rb.schema.get_field_index(c) < 0]
    if not missing:
        return rb
    arrays = list(rb.columns) + [pa.nulls(rb.num_rows) for _ in missing]
    return pa.RecordBatch.from_arrays(arrays, names=rb.schema.names + missing)


def _manifest(report, report_path, specs, p: Plan, keep, files, expected, corpus) -> dict:
    import polars as pl

    from . import __version__

    by_row = (
        p.flags.with_columns(
            reason=pl.format(
                "{} {}: {}{}",
                pl.col("code"),
                pl.col("severity"),
                pl.col("detail").fill_null(pl.col("action")),
                pl.when(pl.col("cluster").is_not_null())
                .then(pl.format(" (cluster {})", pl.col("cluster")))
                .otherwise(pl.lit("")),
            )
        )
        .group_by("split", "row", maintain_order=True)
        .agg(
            pl.col("id").drop_nulls().first(),
            pl.col("code").unique(maintain_order=True).alias("codes"),
            pl.col("reason").unique(maintain_order=True).alias("reasons"),
        )
        .sort("split", "row")
    )
    splits = {}
    for name, s in report.data["dataset"]["splits"].items():
        splits[name] = {
            "file": files.get(name),
            "rows_in": s["rows"],
            "rows_out": int(keep[name].sum()),
            "removed": int((~keep[name]).sum()),
        }
    skipped = [
        {**n.to_dict(), "message": n.text()} for n in corpus.log.notes if n.kind == "skipped_line"
    ]
    return {
        "tool": {"name": "dataaudit", "version": __version__},
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "report": {
            "path": report_path,
            "created": report.data.get("created"),
            "config_hash": report.data.get("config", {}).get("hash"),
        },
        "input": [str(s) if isinstance(s, (str, os.PathLike)) else type(s).__name__ for s in specs],
        "selection": p.settings,
        "splits": splits,
        "unreadable_records_not_copied": skipped,
        "removed": by_row.to_dicts(),
    }


def _write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    """Indented, but one removed row per line: a manifest can list many thousand rows."""
    removed = manifest["removed"]
    head = json.dumps({k: v for k, v in manifest.items() if k != "removed"}, indent=2)
    rows = ",\n".join("    " + json.dumps(r, ensure_ascii=False) for r in removed)
    body = f'  "removed": [\n{rows}\n  ]' if removed else '  "removed": []'
    path.write_text(head[: head.rindex("}")].rstrip() + ",\n" + body + "\n}\n", encoding="utf-8")

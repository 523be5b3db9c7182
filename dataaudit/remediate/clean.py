"""``dataaudit clean``: a cleaned copy of files, published only once it reads back right.

The copy is written into a temporary folder beside ``out``, read back (every split must hash to
exactly the rows the plan keeps), given a manifest of what was removed and why, and only then
renamed to ``out``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError, InputError
from ..rule import Severity
from . import copy
from .plan import BATCH_ROWS, Plan, check_same_data, keep_masks, load_audited, plan

if TYPE_CHECKING:
    import pyarrow as pa

    from ..report import Report

__all__ = ["MANIFEST_NAME", "clean"]

MANIFEST_NAME = "dataaudit-manifest.json"  # beside the cleaned files; readers skip it


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
    from ..report import Report

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
    keep = keep_masks(report, p)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    on_bad = report.data.get("config", {}).get("on_bad_lines") or "error"
    try:
        files = copy.write_splits(corpus, keep, tmp, on_bad)
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


def _check_written(report, tmp: Path, files: dict[str, str], expected) -> None:
    """The copy reads back as the kept rows of every split, or InputError (nothing published)."""
    from ..corpus import load_corpus
    from ..identity import row_hashes

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

    from .. import __version__

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

"""Paths → splits: a file, a glob, a folder of split files, shards; split names from the path."""

from __future__ import annotations

import glob as globlib
import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from .. import readers
from ..errors import InputError, close_matches
from .roles import split_kind
from .source import Reading, SplitSource

__all__ = ["path_splits", "split_label"]


_MAGIC = re.compile(r"[*?\[]")


def glob_root(pattern: str) -> Path:
    """The folder a glob pattern starts from: its path up to the first wildcard."""
    parts = Path(pattern).parts
    fixed = []
    for part in parts[:-1]:
        if _MAGIC.search(part):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def path_splits(spec: str | Path, reading: Reading) -> dict[str, SplitSource]:
    text = str(spec)
    if _MAGIC.search(text):
        root = glob_root(text)
        files = sorted(
            Path(p)
            for p in globlib.glob(text, recursive=True)
            if Path(p).is_file() and not Path(p).name.startswith(".")
        )
        if not files:
            raise InputError(f"{text}: the pattern matches no files.")
    else:
        path = Path(text).expanduser()
        if not path.exists():
            parent = path.parent if str(path.parent) else Path(".")
            hint = ""
            if parent.is_dir():
                hint = close_matches(path.name, [p.name for p in parent.iterdir()])
            raise InputError(f"{path}: no such file or folder.{hint}")
        if path.is_dir():
            root = path
            files = sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and known_format(p) and not p.name.startswith(".")
            )
            if not files:
                raise InputError(
                    f"{path}: the folder holds no .jsonl/.json/.parquet/.csv files to audit."
                )
        else:
            root = None
            files = [path]
    for f in files:
        readers.file_format(f)  # unknown formats fail early, naming the file
    groups: dict[str, list[Path]] = {}
    labels = {f: split_label(f, root) for f in files}
    kinds = {f: split_kind(label) for f, label in labels.items()}
    if all(k == "other" for k in kinds.values()):
        groups["train"] = files  # one file, or shards of one split
    else:
        for f in files:
            groups.setdefault(kinds[f] if kinds[f] != "other" else labels[f], []).append(f)
    order = {"train": 0, "validation": 1, "test": 2, "other": 3}
    names = sorted(groups, key=lambda n: (order[split_kind(n)], n))
    return {name: files_split(name, groups[name], reading) for name in names}


def known_format(p: Path) -> bool:
    try:
        readers.file_format(p)
        return True
    except InputError:
        return False


def split_label(path: Path, root: Path | None = None) -> str:
    """Split name from a file name (HF shards: train-00000-of-00004), else from its folders
    below the folder or glob root the user gave (data/train/part-0.parquet), else from that
    folder's own name (``data/test/*.jsonl``, ``audit("data/test")``)."""
    name = path.name
    for suffix in reversed(path.suffixes):
        name = name[: -len(suffix)] if name.endswith(suffix) else name
    name = re.sub(r"[-_]\d{3,}(-of-\d+)?$", "", name)
    if split_kind(name) == "other" and root is not None:
        try:
            parts = path.relative_to(root).parent.parts
        except ValueError:
            parts = ()
        for part in (*reversed(parts), root.resolve().name):
            if split_kind(part) != "other":
                return part
    return name


def files_split(name: str, paths: list[Path], reading: Reading) -> SplitSource:
    parts = [
        (str(p), readers.file_batches(p, on_bad_lines=reading.on_bad_lines, log=reading.log))
        for p in paths
    ]

    def source(batch_size: int) -> Iterator[pa.RecordBatch]:
        for _, s in parts:
            yield from s(batch_size)

    counts = [readers.file_num_rows(p) for p in paths]
    num_rows = sum(counts) if all(c is not None for c in counts) else None  # type: ignore[misc]
    return SplitSource(name, source, num_rows, None, ", ".join(str(p) for p in paths), parts=parts)

"""Paths → splits: a file, a glob, a folder of split files, shards; split names from the path.

Also: ``-`` (standard input, JSON Lines or a JSON array), a ``save_to_disk`` folder (loaded with
``datasets``), and folders of ``.txt`` files, read as one document per file unless each file
names a split (``train.txt``, ``test.txt``: one document per line, as a single ``.txt`` is).
"""

from __future__ import annotations

import glob as globlib
import re
from pathlib import Path
from typing import Any

from ..errors import InputError, close_matches
from .files import file_format, files_split, known_format
from .hf import hf_splits
from .hub import hub_splits, looks_like_hub_name
from .location import is_url, to_location
from .roles import split_kind
from .source import Reading, SplitSource
from .text import text_documents_split

__all__ = ["path_splits", "paths_splits", "split_label"]


_MAGIC = re.compile(r"[*?\[]")
_SPLIT_WORDS = {
    "train",
    "training",
    "validation",
    "valid",
    "val",
    "dev",
    "test",
    "eval",
    "evaluation",
    "holdout",
}
# files that sit beside Hugging Face data and describe it: never data themselves
# (and the manifest `dataaudit clean` writes beside the cleaned files, remediate.MANIFEST_NAME)
METADATA_FILES = {
    "dataset_info.json",
    "dataset_infos.json",
    "dataset_dict.json",
    "state.json",
    "dataaudit-manifest.json",
}


def glob_root(pattern: str) -> Any:
    """The folder a glob pattern starts from: its path up to the first wildcard (a string for
    a URL, a Path else)."""
    parts = pattern.split("/")
    fixed = []
    for part in parts[:-1]:
        if _MAGIC.search(part):
            break
        fixed.append(part)
    if is_url(pattern):
        return "/".join(fixed)
    return Path("/".join(fixed)) if fixed else Path(".")


def _is_data_file(p: Path) -> bool:
    return p.is_file() and not p.name.startswith(".") and p.name not in METADATA_FILES


def paths_splits(obj: Any, name: str, reading: Reading) -> dict[str, SplitSource] | None:
    """A path (its one split named ``name``) or a list of paths (their splits together, each
    name from one path only); None when ``obj`` is neither."""
    if isinstance(obj, (str, Path)):
        splits = path_splits(obj, reading)
        if len(splits) == 1 and name != "train":
            only = next(iter(splits.values()))
            only.name = name
            return {name: only}
        return splits
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(p, (str, Path)) for p in obj):
        out: dict[str, SplitSource] = {}
        for p in obj:
            for k, v in path_splits(p, reading).items():
                if k in out:
                    raise InputError(
                        f"split {k!r} comes from two inputs ({out[k].origin} and {v.origin}); "
                        "pass a dict {split_name: path} to name them."
                    )
                out[k] = v
        return out
    return None


def path_splits(spec: str | Path, reading: Reading) -> dict[str, SplitSource]:
    text = str(spec)
    if text == "-":
        split = files_split("train", [stdin_file()], reading)
        split.origin = "<stdin>"
        return {"train": split}
    if is_url(text):
        root, files = _remote_files(text)
    elif _MAGIC.search(text):
        root = glob_root(text)
        files = sorted(
            Path(p) for p in globlib.glob(text, recursive=True) if _is_data_file(Path(p))
        )
        if not files:
            raise InputError(f"{text}: the pattern matches no files.")
    else:
        path = to_location(text)
        if not path.exists() and looks_like_hub_name(text):
            return hub_splits(text, reading)
        if not path.exists():
            parent = path.parent if str(path.parent) else Path(".")
            hint = ""
            if parent.is_dir():
                hint = close_matches(path.name, [p.name for p in parent.iterdir()])
            raise InputError(f"{path}: no such file or folder.{hint}")
        if path.is_dir() and (
            (path / "state.json").is_file() or (path / "dataset_dict.json").is_file()
        ):
            return saved_dataset_splits(path, reading)
        if path.is_dir():
            root = path
            files = _folder_files(path)
        else:
            root = None
            files = [path]
    for f in files:
        file_format(f)  # unknown formats fail early, naming the file
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
    documents = {f for f in files if file_format(f) == "txt" and len(files) > 1}
    documents -= {f for f in documents if split_kind(split_label(f)) != "other"}
    return {
        name: (
            text_documents_split(name, groups[name])
            if set(groups[name]) <= documents
            else files_split(name, groups[name], reading)
        )
        for name in names
    }


def _folder_files(path: Any) -> list[Any]:
    files = sorted((p for p in path.rglob("*") if _is_data_file(p) and known_format(p)), key=str)
    if not files:
        raise InputError(f"{path}: the folder holds no .jsonl/.json/.parquet/.csv files to audit.")
    return files


def _remote_files(url: str) -> tuple[Any, list[Any]]:
    """(root, files) of a URL: a file, a folder or a glob on an fsspec filesystem. HTTP(S) URLs
    name one file each (a web server has no listing to glob)."""
    location = to_location(url)
    protocol = url.split("://", 1)[0].lower()
    try:
        if protocol in ("http", "https"):
            if not location.exists():
                raise InputError(
                    f"{url}: not found (the server answered that it has no such file)."
                )
            return None, [location]
        if _MAGIC.search(url):
            root = to_location(glob_root(url))
            prefix = f"{protocol}://"
            found = location.fs.glob(location.path)
            files = sorted(
                (to_location(prefix + p.lstrip("/")) for p in found),
                key=str,
            )
            files = [f for f in files if _is_data_file(f)]
            if not files:
                raise InputError(f"{url}: the pattern matches no files.")
            return root, files
        if location.is_dir():
            return location, _folder_files(location)
        if not location.exists():
            raise InputError(f"{url}: no such file or folder.")
        return None, [location]
    except InputError:
        raise
    except Exception as exc:  # network, permissions, a missing bucket: say which URL
        raise InputError(f"{url}: cannot list or open it ({type(exc).__name__}: {exc}).") from None


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
        for part in reversed(parts):
            if split_kind(part) != "other":
                return part
        if root.resolve().name.lower() in _SPLIT_WORDS:  # data/test given itself: exact names
            return root.resolve().name
    return name


def saved_dataset_splits(path: Path, reading: Reading) -> dict[str, SplitSource]:
    """A ``save_to_disk`` folder: a Dataset (state.json) or a DatasetDict (dataset_dict.json)."""
    try:
        import datasets
    except ImportError:  # pragma: no cover - a core dependency
        raise InputError(f"{path}: a save_to_disk folder needs the datasets package.") from None
    try:
        loaded = datasets.load_from_disk(str(path))
    except (OSError, ValueError, FileNotFoundError) as exc:
        raise InputError(f"{path}: cannot load the saved dataset ({exc}).") from None
    return hf_splits(loaded, "train", reading.log)


def stdin_file() -> Path:
    """Standard input, spooled to a temporary file (the corpus reads the first rows twice),
    named .jsonl or .json by its first byte; removed when the process exits."""
    import atexit
    import os
    import sys
    import tempfile

    stream = sys.stdin.buffer
    head = stream.read(1 << 16)
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if first not in (b"{", b"["):
        raise InputError(
            "-: standard input must be JSON Lines or a JSON array of records"
            + (f" (it starts with {head[:20]!r})" if head.strip() else " (it is empty)")
            + "; for other formats pass a file path."
        )
    fd, name = tempfile.mkstemp(
        prefix="dataaudit-stdin-", suffix=".jsonl" if first == b"{" else ".json"
    )
    atexit.register(lambda: Path(name).unlink(missing_ok=True))
    with os.fdopen(fd, "wb") as out:
        out.write(head)
        while chunk := stream.read(1 << 20):
            out.write(chunk)
    return Path(name)

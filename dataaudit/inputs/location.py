"""Where a file is: a local path, or a URL (``s3://``, ``gs://``, ``https://``, ``hf://``,
``memory://``) read through fsspec, streamed in blocks, never downloaded whole first.

Remote paths are ``upath.UPath`` objects: they have the pathlib API the readers use (name,
suffixes, parent, open, stat, glob), so one reader serves both. Local paths stay
``pathlib.Path``, so pyarrow can memory-map them.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import InputError

__all__ = ["is_remote", "is_url", "open_binary", "pyarrow_source", "size_of", "to_location"]

_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}
_EXTRAS = {  # protocol -> what to install for it
    "http": "fsspec[http] (pip install 'dataaudit[remote]')",
    "https": "fsspec[http] (pip install 'dataaudit[remote]')",
    "s3": "s3fs (pip install 'dataaudit[remote]')",
    "s3a": "s3fs (pip install 'dataaudit[remote]')",
    "gs": "gcsfs (pip install 'dataaudit[remote]')",
    "gcs": "gcsfs (pip install 'dataaudit[remote]')",
}


def is_url(text: str) -> bool:
    return bool(_URL.match(text)) and not text.startswith("file://")


def is_remote(path: Any) -> bool:
    return not isinstance(path, Path)


def to_location(text: str) -> Any:
    """A local Path, or a UPath for a URL (with a clear error when its filesystem is missing)."""
    if text.startswith("file://"):
        return Path(text[len("file://") :])
    if not is_url(text):
        return Path(text).expanduser()
    protocol = text.split("://", 1)[0].lower()
    try:
        from upath import UPath

        location = UPath(text)
        location.fs  # noqa: B018 - builds the filesystem: a missing package fails here
    except (ImportError, ValueError) as exc:
        need = _EXTRAS.get(protocol, f"the fsspec implementation for {protocol}://")
        raise InputError(f"{text}: reading {protocol}:// needs {need} ({exc}).") from None
    return location


def open_binary(path: Any) -> io.BufferedIOBase:
    """A binary stream of the file, decompressed by its suffix (.gz, .bz2, .zst)."""
    codec = _CODECS.get(path.suffix.lower())
    if is_remote(path):
        raw = path.open("rb")
        return pa.input_stream(raw, compression=codec) if codec else raw  # type: ignore[return-value]
    if codec:
        return pa.input_stream(str(path), compression=codec)  # type: ignore[return-value]
    return open(path, "rb")  # noqa: SIM115


def pyarrow_source(path: Any) -> Any:
    """What pyarrow readers take: the path for a local file (memory-mapped), a stream else."""
    return str(path) if not is_remote(path) else path.open("rb")


def size_of(path: Any) -> int | None:
    try:
        return int(path.stat().st_size)
    except (OSError, ValueError, NotImplementedError):
        return None

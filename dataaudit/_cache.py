"""Files a process derives once and later processes load (the lower-casing table, numba's
runtime module): where they live and how they are written, so a cache never breaks a run."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def cache_file(beside: Path, name: str) -> Path | None:
    """Where the file ``name`` is kept: in ``beside``'s ``__pycache__`` (as numba keeps the
    kernels), else in the user's cache folder; None if neither can be written (nor holds it)."""
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for folder in (beside / "__pycache__", Path(home) / "dataaudit"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK) or (folder / name).is_file():
            return folder / name
    return None


def write_quietly(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """``write`` into a file beside ``path``, renamed onto it (processes writing it at once each
    write a whole file); a cache that cannot be written is only slower."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=path.suffix)
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
            os.chmod(tmp, 0o644)  # readable as numba's cache files are (mkstemp gives 0600)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass

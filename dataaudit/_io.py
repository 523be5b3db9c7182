"""Output files: written atomically, checked before the audit runs, ``-`` for stdout.

A failed or interrupted run never leaves a half-written report nor a temporary file behind.
A path that is not a regular file (``/dev/stdout``, a FIFO) is written to directly, since a
temporary file cannot be renamed over it.
"""

from __future__ import annotations

import io
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from .errors import ConfigError

STDOUT = "-"


def is_stdout(path: str | Path | None) -> bool:
    return path is not None and str(path) == STDOUT


def writes_stdout(path: str | Path | None) -> bool:
    """``-``, or a path that is this process' stdout (``/dev/stdout``, ``/dev/fd/1``)."""
    if path is None:
        return False
    if is_stdout(path):
        return True
    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False


def is_special_file(path: str | Path) -> bool:
    """A path a temporary file must not be renamed over: a device, a FIFO, or anything under
    /dev or /proc (``/dev/stdout`` links to /proc/self/fd/1; renaming over it would replace the
    link itself with a file)."""
    p = Path(os.path.abspath(path))
    for _ in range(40):  # follow the chain of links, as the kernel does
        if p.parts[1:2] in (("dev",), ("proc",)):
            return True
        if not p.is_symlink():
            break
        p = Path(os.path.abspath(os.path.join(p.parent, os.readlink(p))))
    return p.exists() and not p.is_file() and not p.is_dir()


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` then rename the temporary file over ``path``.

    A symlink is followed (its target is replaced, the link stays); special files are written
    to directly.
    """
    path = Path(path)
    if is_special_file(path):
        sys.stdout.flush()  # keep order when the path is our own stdout
        write(path)
        return path
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp: str | None = None
    try:  # from the temp file's creation on, any exit (a signal too) removes it
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report is readable like any file
        write(Path(tmp))
        os.replace(tmp, target)
        tmp = None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return path


_SURROGATE = re.compile("[\ud800-\udfff]")
#: characters written at a time: a piece of a large report (its flags) can be tens of MB
_SLICE = 1 << 20


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path`` atomically, or to stdout (``-``, ``/dev/stdout``)."""
    return atomic_write_pieces(path, [text])


def atomic_write_pieces(path: str | Path, pieces: Iterable[str]) -> Path:
    """:func:`atomic_write_text` of ``"".join(pieces)`` without that text: each piece written
    as it comes, a slice of a long one at a time, so a large report is never held whole."""

    def write(fh: TextIO) -> None:
        for piece in pieces:
            for at in range(0, len(piece), _SLICE):
                # a lone surrogate (a plugin's message, say) cannot be encoded: U+FFFD, not a
                # lost report
                fh.write(_SURROGATE.sub("\ufffd", piece[at : at + _SLICE]))

    if writes_stdout(path):
        write(sys.stdout)
        sys.stdout.flush()
        return Path(path)

    def to_file(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            write(fh)

    return atomic_write(path, to_file)


def check_output_path(path: str | Path, option: str) -> None:
    """Fail before any work when ``path`` cannot be written; the message names the fix."""
    if is_stdout(path):
        return
    p = Path(path).expanduser()
    if is_special_file(p):  # written directly: it must exist and take writes
        if not p.exists() or not os.access(p, os.W_OK):
            raise ConfigError(f"{option} {path}: cannot be written (no such device or no access).")
        return
    if p.is_dir():
        raise ConfigError(
            f"{option} {path}: is a folder; give a file path, e.g. {p / ('report' + _ext(option))}."
        )
    parent = p.absolute().parent
    missing = parent
    while not missing.exists() and missing != missing.parent:
        missing = missing.parent
    if not missing.is_dir():
        raise ConfigError(
            f"{option} {path}: {missing} is a file, so the folder {parent} cannot be created; "
            "choose another path."
        )
    if missing != parent:
        if not os.access(missing, os.W_OK | os.X_OK):
            raise ConfigError(
                f"{option} {path}: the folder {parent} does not exist and cannot be created in "
                f"{missing} (permission denied); create it or choose a writable folder."
            )
        return
    try:  # a real probe: read-only file systems and ACLs fool os.access
        fd, probe = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"{option} {path}: cannot write in the folder {parent} ({reason}); "
            "choose a writable folder."
        ) from None


def _ext(option: str) -> str:
    return {"--html": ".html", "--junit": ".xml", "--flags": ".parquet"}.get(option, ".json")

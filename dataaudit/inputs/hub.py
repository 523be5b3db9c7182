"""Hub dataset names (``audit("stanfordnlp/imdb")``): the local cache first, else streamed from
the Hub with ``datasets`` (never downloaded whole first); offline and not cached, an error in
milliseconds that says what to do.

Also whether the Hub is reachable, and offline mode while the local cache is tried (the tokenizer
resolves hub names with them too): offline, libraries retry for tens of seconds before failing; a
check of the host name first fails in milliseconds, so the error can say what to do instead.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:  # the tokenizer uses hub_reachable without the input layer's pyarrow
    from .source import Reading, SplitSource

__all__ = ["hub_reachable", "hub_splits", "looks_like_hub_name", "offline"]

HUB_HOST = "huggingface.co"

_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")


def hub_reachable(host: str = HUB_HOST) -> bool:
    if os.environ.get("HF_HUB_OFFLINE") or os.environ.get("HF_DATASETS_OFFLINE"):
        return False
    try:
        socket.getaddrinfo(host, 443)
        return True
    except OSError:
        return False


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """Hub libraries in offline mode (they read these flags at call time): cache only."""
    import huggingface_hub.constants as hub_constants

    modules = [hub_constants]
    with contextlib.suppress(ImportError):
        import datasets.config

        modules.append(datasets.config)
    saved = [m.HF_HUB_OFFLINE for m in modules]
    for m in modules:
        m.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        for m, value in zip(modules, saved):
            m.HF_HUB_OFFLINE = value


def looks_like_hub_name(text: str) -> bool:
    """ORG/NAME that is not a local path."""
    return bool(_NAME.match(text)) and not Path(text).exists() and Path(text).suffix == ""


def _load(name: str, **kw: Any) -> Any:
    import datasets

    return datasets.load_dataset(name, **kw)


def _maybe_cached(name: str) -> bool:
    """Whether the datasets cache has a folder for ``name`` (checked before importing datasets,
    which takes a second: offline and not cached, the answer should come at once)."""
    root = os.environ.get("HF_DATASETS_CACHE") or os.path.join(
        os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface"),
        "datasets",
    )
    return Path(root, name.replace("/", "___")).is_dir()


def hub_splits(name: str, reading: Reading) -> dict[str, SplitSource]:
    from .hf import hf_splits

    loaded = None
    if _maybe_cached(name):
        try:
            with offline():
                loaded = _load(name)
        except Exception:  # not in the cache after all: datasets raises several types
            loaded = None
    if loaded is None:
        if not hub_reachable():
            raise InputError(
                f"{name}: not a local path, not in the local Hugging Face cache, and the Hub "
                "cannot be reached. Pass a local copy (a folder of .parquet/.jsonl files or a "
                "save_to_disk folder), or run once with network access so it is cached."
            )
        try:
            loaded = _load(name, streaming=True)
        except Exception as exc:
            raise InputError(
                f"{name}: could not load it from the Hugging Face Hub "
                f"({type(exc).__name__}: {str(exc)[:300]}). Check the name (ORG/NAME) and access."
            ) from None
    return hf_splits(loaded, "train", reading.log)

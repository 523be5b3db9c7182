"""Hub dataset names (``audit("stanfordnlp/imdb")``): the local cache first, else streamed from
the Hub with ``datasets`` (never downloaded whole first); offline and not cached, an error in
milliseconds that says what to do."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import InputError
from .source import Reading, SplitSource

__all__ = ["hub_splits", "looks_like_hub_name"]

_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")


def looks_like_hub_name(text: str) -> bool:
    """ORG/NAME that is not a local path."""
    return bool(_NAME.match(text)) and not Path(text).exists() and Path(text).suffix == ""


def _load(name: str, **kw: Any) -> Any:
    import datasets

    return datasets.load_dataset(name, **kw)


def _maybe_cached(name: str) -> bool:
    """Whether the datasets cache has a folder for ``name`` (checked before importing datasets,
    which takes a second: offline and not cached, the answer should come at once)."""
    import os

    root = os.environ.get("HF_DATASETS_CACHE") or os.path.join(
        os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface"),
        "datasets",
    )
    return Path(root, name.replace("/", "___")).is_dir()


def hub_splits(name: str, reading: Reading) -> dict[str, SplitSource]:
    from ..hub import hub_reachable, offline
    from .hf import hf_split

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
    if hasattr(loaded, "items"):
        return {str(k): hf_split(str(k), v, reading.log) for k, v in loaded.items()}
    return {"train": hf_split("train", loaded, reading.log)}

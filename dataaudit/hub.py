"""The Hugging Face Hub: is it reachable, and offline mode while the local cache is tried.

Offline, libraries retry for tens of seconds before failing; a check of the host name first
fails in milliseconds, so the error can say what to do instead.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator

__all__ = ["hub_reachable", "offline"]

HUB_HOST = "huggingface.co"


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

"""Progress bars for long stages (scanning, the reference scan, finishing each rule)."""

from __future__ import annotations

__all__ = ["Progress"]


class Progress:
    """A ``tqdm.auto`` bar when ``enabled``: a widget in Jupyter, text on stderr elsewhere.
    Whoever asks decides whether it shows (the CLI asks only when stderr is a terminal)."""

    def __init__(
        self, enabled: bool, total: int | None, desc: str = "scanning", unit: str = "rows"
    ):
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, unit=unit, desc=desc, leave=False, dynamic_ncols=True)

    def describe(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_description_str(text)

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

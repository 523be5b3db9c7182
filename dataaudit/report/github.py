"""GitHub Actions workflow annotations (``--output-format github``): one line per flagged
example, ``::error file=data/train.jsonl,line=13,title=LEAK001 ...::message``, so the run's page
and the pull request's files view point at the record.

Messages and examples come from the dataset: each value is shown as plain text (control and bidi
characters as escapes, bounded) and then escaped as GitHub's workflow commands require (``%``,
``\\r``, ``\\n``; in properties also ``:`` and ``,``), so no text can end the command or start
another one.
"""

from __future__ import annotations

from typing import Any

from .escape import plain
from .locate import Locator
from .signal_results import results_and_signals

__all__ = ["render_github"]

_LEVEL = {"error": "error", "warn": "warning", "info": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, **props: Any) -> str:
    """One workflow command line; ``props`` with a None value are left out."""
    shown = ",".join(f"{k}={_property(str(v))}" for k, v in props.items() if v is not None)
    return f"::{level}{' ' + shown if shown else ''}::{_data(message)}"


def render_github(data: dict[str, Any], locator: Locator | None = None) -> str:
    locator = locator or Locator(data)
    results = results_and_signals(data)
    locator.resolve(
        [
            (ex["split"], ex["row"])
            for r in results
            for f in r["findings"]
            if not f.get("suppressed")
            for ex in f.get("examples") or []
        ]
    )
    lines = []
    if not data.get("passed"):  # first: GitHub shows only the first ten errors of a step
        reasons = "; ".join(plain(x, 300) for x in (data.get("gate") or {}).get("reasons", []))
        lines.append(
            command(
                "error",
                f"gate failed (fail_on={plain(data.get('fail_on'), 10)}): {reasons}",
                title="dataaudit gate",
            )
        )
    for r in results:
        title = plain(f"{r['code']} {r['name']}", 100)
        if r["status"] == "error":
            lines.append(command("error", f"errored: {plain(r['message'], 500)}", title=title))
        for f in r["findings"]:
            if f.get("suppressed"):
                continue  # accepted in the baseline; the summary counts them
            level = _LEVEL.get(f["severity"], "warning")
            message = plain(f["message"], 500)
            examples = f.get("examples") or []
            if not examples:
                lines.append(command(level, message, title=title))
            for ex in examples:
                place = locator.place(ex["split"], ex["row"])
                where = f"{plain(ex['split'], 60)} row {ex['row']}"
                if place is None:
                    lines.append(command(level, f"{message} ({where})", title=title))
                    continue
                if place.line is None:  # Parquet, Arrow, JSON arrays, or lines not exact
                    where += f": row {place.row} of the file"
                lines.append(
                    command(
                        level,
                        f"{message} ({where})",
                        file=plain(place.path, 500),
                        line=place.line,
                        title=title,
                    )
                )
    return "\n".join(lines) + ("\n" if lines else "")

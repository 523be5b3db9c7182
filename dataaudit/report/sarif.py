"""SARIF 2.1.0 (``--output-format sarif``): what code-scanning services read.

One ``run`` of the ``dataaudit`` driver; its ``rules`` carry each rule's documentation (the
docstring ``dataaudit explain`` prints); one ``result`` per finding, with the finding's
fingerprint as ``partialFingerprints`` (stable across dataset versions, so a service tracks an
alert from run to run), its examples as locations (the file and, where exact, the line: see
:mod:`.locate`), and ``suppressions`` when the audit's baseline accepted it. Rules that errored
are tool notifications. Every string from the dataset is bounded and its unsafe characters are
escaped.
"""

from __future__ import annotations

import os
import urllib.parse
from typing import Any

from .escape import plain, shorten, visible
from .locate import Locator
from .signal_results import results_and_signals

__all__ = ["SARIF_SCHEMA", "rule_metadata", "render_sarif"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warn": "warning", "info": "note"}


def rule_metadata(codes: list[str]) -> dict[str, dict[str, Any]]:
    """Name, summary, documentation and groups of the installed rules with these codes."""
    import inspect

    from ..registry import load_rules

    rules = load_rules().rules
    out = {}
    for code in codes:
        cls = rules.get(code)
        if cls is None:
            continue
        doc = inspect.getdoc(cls) or ""
        out[code] = {
            "name": cls.name,
            "summary": doc.splitlines()[0] if doc else cls.name,
            "doc": doc,
            "groups": list(cls.groups),
        }
    return out


def _text(value: Any, limit: int = 2000) -> str:
    return shorten(visible(str(value)), limit)


def _uri(path: str) -> str:
    if "://" in path:
        return path
    if os.path.isabs(path):
        return "file://" + urllib.parse.quote(path.replace(os.sep, "/"))
    return urllib.parse.quote(path.replace(os.sep, "/"))


def _location(place: Any, split: str, row: int) -> dict[str, Any]:
    where = f"{plain(split, 100)} row {row}"
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(place.path)}}
    if place.line is not None:
        physical["region"] = {"startLine": place.line}
    else:
        where += f" (row {place.row} of the file)"
    return {
        "physicalLocation": physical,
        "message": {"text": where},
        "properties": {"split": _text(split, 200), "row": row, "fileRow": place.row},
    }


def render_sarif(
    data: dict[str, Any],
    rules: dict[str, dict[str, Any]] | None = None,
    locator: Locator | None = None,
) -> dict[str, Any]:
    """The report as one SARIF log (a dict ready for json.dumps)."""
    rules = rules or {}
    locator = locator or Locator(data)
    results = results_and_signals(data)
    locator.resolve(
        [(ex["split"], ex["row"]) for r in results for f in r["findings"] for ex in f["examples"]]
    )
    descriptors, sarif_results, notifications = [], [], []
    for index, r in enumerate(results):
        meta = rules.get(r["code"], {})
        descriptor: dict[str, Any] = {
            "id": r["code"],
            "name": _text(r["name"], 200),
            "shortDescription": {"text": _text(meta.get("summary") or r["name"], 1000)},
            "defaultConfiguration": {"level": _LEVEL.get(r["severity"], "warning")},
            "properties": {"tags": meta.get("groups", []), "status": r["status"]},
        }
        if meta.get("doc"):
            descriptor["fullDescription"] = {"text": _text(meta["doc"], 20000)}
            descriptor["help"] = {
                "text": f"{_text(meta['doc'], 20000)}\n\n`dataaudit explain {r['code']}` "
                "prints this and the rule's options."
            }
        descriptors.append(descriptor)
        if r["status"] == "error":
            notifications.append(
                {
                    "level": "error",
                    "message": {"text": f"{r['code']} errored: {_text(r['message'], 2000)}"},
                    "associatedRule": {"id": r["code"], "index": index},
                }
            )
        for f in r["findings"]:
            sarif_results.append(_result(f, r["code"], index, data, locator))
    stopped = (data.get("gate") or {}).get("scan_stopped")
    invocation: dict[str, Any] = {
        "executionSuccessful": not stopped and not notifications,
        "toolExecutionNotifications": notifications,
    }
    if stopped:
        notifications.insert(
            0, {"level": "error", "message": {"text": f"the scan stopped: {_text(stopped)}"}}
        )
    tool = data.get("tool") or {}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "dataaudit",
                        "version": str(tool.get("version", "")),
                        "rules": descriptors,
                    }
                },
                "invocations": [invocation],
                "results": sarif_results,
                "properties": {
                    "passed": bool(data.get("passed")),
                    "fail_on": data.get("fail_on"),
                    "gateReasons": [
                        _text(x, 1000) for x in (data.get("gate") or {}).get("reasons", [])
                    ],
                },
            }
        ],
    }


def _result(
    f: dict[str, Any], code: str, index: int, data: dict[str, Any], locator: Locator
) -> dict[str, Any]:
    locations = []
    for ex in f["examples"]:
        place = locator.place(ex["split"], ex["row"])
        if place is not None:
            locations.append(_location(place, ex["split"], ex["row"]))
    if not locations and f.get("split") and locator.files(f["split"]):
        # a finding about a whole split (a drift, a share): its first file
        first = locator.files(f["split"])[0]["path"]
        locations.append(
            {
                "physicalLocation": {"artifactLocation": {"uri": _uri(first)}},
                "message": {"text": f"split {plain(f['split'], 100)}"},
            }
        )
    result: dict[str, Any] = {
        "ruleId": code,
        "ruleIndex": index,
        "level": _LEVEL.get(f["severity"], "warning"),
        "message": {"text": _text(f["message"], 2000)},
        "locations": locations,
        "partialFingerprints": {"dataauditFinding/v1": f["fingerprint"]},
        "properties": {"split": f.get("split"), "count": f["count"]},
    }
    if f.get("suppressed"):
        path = ((data.get("gate") or {}).get("baseline") or {}).get("path", "the baseline")
        result["suppressions"] = [
            {
                "kind": "external",
                "status": "accepted",
                "justification": f"accepted in {_text(path, 500)}",
            }
        ]
    return result

"""Rule cases written as data: ``tests/rules/cases/<CODE>.yaml``, one file per rule, each case run
through ``audit()`` with only that rule selected (like sqlfluff's rule YAML test cases).

A case file::

    rule: TXT001                     # the file's name without .yaml
    cases:
      - name: whitespace-only text is empty          # the test id: TXT001-whitespace-only...
        rows:                                        # the input: one split, "train" ...
          - {text: "A whole sentence of text."}
          - {text: " \\t "}
        # splits: {train: [...], test: [...]}        # ... or several splits
        # files: {train.jsonl: '{"text": "a"}\\n'}    # ... or files in a folder (a string is
        #                                              # written as is, a list as JSON Lines)
        audit: {text: body}                          # optional: more audit() arguments
        options: {min_chars: 5}                      # optional: the rule's options
        expect:
          status: warn                               # pass | warn | fail | error | skipped
          flags:                                     # exactly these rows are flagged
            - {row: 1, action: drop, detail: empty_text}
          metrics: {empty_text_rows: 1}              # a metric, or name@split
          findings: 1                                # how many, or texts that findings say
          message: "..."                             # a substring of the rule's message
          # error: "not valid JSON"                  # or: audit() refuses the input (a
          #                                          # DataAuditError saying this), nothing else

Every key of ``expect`` is optional, but a case needs at least one. ``flags`` lists every flag
the rule raises: a flag names its row, and its split when the input has several; any other
column of ``report.flags()`` it gives (action, detail, cluster, severity, id, score) must match
(a row flagged twice, e.g. an empty prompt and an empty reply, is listed twice, told apart by
detail). ``flags: []`` means no row is flagged. ``findings`` as a list: each text is part of
some finding's message.
Unknown keys are errors, so a typo cannot turn a check off. YAML double-quoted strings take
escapes (``"\\u200b"``, ``"\\ud800"``, ``"\\x1b"``); ``null``, numbers and lists are values too.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from dataaudit import audit
from dataaudit.errors import DataAuditError
from dataaudit.registry import load_rules

CASES = Path(__file__).parent / "cases"
INPUTS = ("rows", "splits", "files")
CASE_KEYS = {"name", "audit", "options", "expect", *INPUTS}
EXPECT_KEYS = {"status", "flags", "metrics", "findings", "message", "error"}
FLAG_KEYS = {"split", "row", "id", "severity", "action", "cluster", "score", "detail"}


def load_cases() -> list[Any]:
    params = []
    for path in sorted(CASES.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        assert set(doc) == {"rule", "cases"}, f"{path.name}: top-level keys are rule and cases"
        assert doc["rule"] == path.stem, f"{path.name}: rule {doc['rule']!r} is not its file name"
        for case in doc["cases"]:
            params.append(pytest.param(doc["rule"], case, id=f"{doc['rule']}-{case['name']}"))
    return params


def check_case(code: str, case: dict[str, Any], tmp_path: Path) -> None:
    """Run one case and assert its expectations (AssertionError naming what differs)."""
    assert not set(case) - CASE_KEYS, f"unknown case keys {sorted(set(case) - CASE_KEYS)}"
    given = [k for k in INPUTS if k in case]
    assert len(given) == 1, f"a case has one of {INPUTS}, not {given}"
    expect = case.get("expect") or {}
    assert expect and not set(expect) - EXPECT_KEYS, f"expect: one or more of {EXPECT_KEYS}"
    kwargs = dict(case.get("audit") or {})
    assert not {"select", "rules"} & set(kwargs), "the case selects its rule and options itself"

    if "rows" in case:
        data: Any = case["rows"]
        splits = ["train"]
    elif "splits" in case:
        data, splits = case["splits"], list(case["splits"])
    else:
        for name, content in case["files"].items():
            if not isinstance(content, str):
                content = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in content)
            (tmp_path / name).write_text(content, encoding="utf-8", errors="surrogatepass")
        data, splits = str(tmp_path), None
    options = case.get("options")
    run = dict(select=[code], rules={code: options} if options else None, **kwargs)
    if "error" in expect:
        assert len(expect) == 1, "a case that expects an error expects nothing else"
        try:
            audit(data, **run)
        except DataAuditError as raised:
            assert expect["error"] in str(raised), str(raised)
            return
        raise AssertionError(
            f"audit() took the input; expected an error saying {expect['error']!r}"
        )
    report = audit(data, **run)
    result = report.result(code)

    if "status" in expect:
        assert result["status"] == expect["status"], f"status; message: {result['message']}"
    if "message" in expect:
        assert expect["message"] in (result["message"] or ""), result["message"]
    if "findings" in expect:
        messages = [f["message"] for f in result["findings"]]
        want = expect["findings"]
        if isinstance(want, int):
            assert len(messages) == want, f"findings: {messages}"
        else:
            for part in want:
                assert any(part in m for m in messages), f"no finding says {part!r}: {messages}"
    for key, value in (expect.get("metrics") or {}).items():
        name, _, split = key.partition("@")
        assert _same(report.metric(code, name, split or None), value), f"metric {key}"
    if "flags" in expect:
        _check_flags(report.flags().filter(code=code).to_dicts(), expect["flags"], splits)


def _check_flags(got: list[dict], want: list[dict], splits: list[str] | None) -> None:
    """Each expected flag matches its own flagged row (a row may carry several flags of one
    rule, told apart by detail); no flag is left over."""
    table = "\n".join(str({k: v for k, v in f.items() if v is not None}) for f in got) or "(none)"
    left = list(got)
    for flag in want:
        assert not set(flag) - FLAG_KEYS, f"unknown flag keys {sorted(set(flag) - FLAG_KEYS)}"
        split = flag.get("split") or (splits[0] if splits and len(splits) == 1 else None)
        assert split, f"a flag names its split when the input has several: {flag}"
        flag = {**flag, "split": split}
        match = next(
            (f for f in left if all(_same(f[k], v) for k, v in flag.items())),
            None,
        )
        assert match is not None, f"no flag {flag}; the rule flagged:\n{table}"
        left.remove(match)
    assert not left, f"flags the case does not expect: {left}; the rule flagged:\n{table}"


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, float) and isinstance(got, (int, float)):
        return math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9)
    return got == want


@pytest.mark.parametrize("code, case", load_cases())
def test_rule_case(code, case, tmp_path):
    check_case(code, case, tmp_path)


def test_every_case_file_is_a_registered_rule():
    files = {p.stem for p in CASES.glob("*.yaml")}
    assert files, "no case files"
    assert files <= set(load_rules().rules), sorted(files - set(load_rules().rules))


@pytest.mark.parametrize(
    "expect",
    [
        {"status": "pass"},
        {"flags": []},
        {"flags": [{"row": 1, "action": "review"}]},
        {"flags": [{"row": 1, "action": "drop"}, {"row": 0}]},
        {"metrics": {"empty_text_rows": 2}},
        {"findings": 0},
        {"findings": ["no such words"]},
        {"message": "no such words"},
        {"error": "no such words"},
    ],
)
def test_a_wrong_expectation_fails(expect, tmp_path):
    case = {"name": "-", "rows": [{"text": "a row"}, {"text": " "}], "expect": expect}
    with pytest.raises(AssertionError):
        check_case("TXT001", case, tmp_path)
    right = {"status": "warn", "flags": [{"row": 1, "action": "drop"}], "findings": 1}
    check_case("TXT001", {**case, "expect": right}, tmp_path)

"""The public row-check base: the plugin its docstring and the README show works as written,
passes the conformance suite, and reports the same whatever the batching."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

import dataaudit
from dataaudit import audit
from dataaudit.registry import load_rules
from dataaudit.rowcheck import RowCheckRule
from dataaudit.testing import check_rule

README = Path(__file__).resolve().parents[1] / "README.md"


def _docstring_example() -> str:
    doc = dataaudit.rowcheck.__doc__ or ""
    block = doc.split("::\n", 1)[1]
    lines = []
    for line in block.splitlines():
        if line and not line.startswith("    "):
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines))


def _readme_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    (block,) = [b for b in blocks if "(RowCheckRule)" in b]
    return block


def _rule(source: str) -> type[RowCheckRule]:
    namespace: dict = {}
    exec(compile(source, "<example>", "exec"), namespace)
    return namespace["ShoutingText"]


ROWS = {
    "train": [
        {"id": "a", "text": "BUY NOW, BUY TODAY"},
        {"id": "b", "text": "a quiet line"},
        {"id": "c", "text": "OK!"},  # too few letters
        {"id": "d", "text": None},
        {"id": "e", "text": "LIMITED OFFER " + "X" * 400},
        {"id": "f", "text": "THIRD SHOUT HERE"},
    ],
    "test": [{"id": "g", "text": "NOTHING TO SEE"}, {"id": "h", "text": "fine"}],
}


@pytest.mark.parametrize("source", [_docstring_example, _readme_example], ids=["doc", "readme"])
def test_the_documented_plugin_works_as_written(source):
    rule = _rule(source())
    assert issubclass(rule, dataaudit.RowCheckRule)
    report = audit(
        ROWS,
        extra_rules=[rule],
        select=["SHOUT"],
        config={"max_examples": 2, "example_chars": 20},
    )
    flags = report.flags().sort(["split", "row"])
    assert flags.select("split", "row", "id", "detail", "action").rows() == [
        ("test", 0, "g", "shouting", "review"),
        ("train", 0, "a", "shouting", "review"),
        ("train", 4, "e", "shouting", "review"),
        ("train", 5, "f", "shouting", "review"),
    ]
    findings = {f["split"]: f for f in report.result("SHOUT001")["findings"]}
    train = findings["train"]
    assert train["message"] == "train: 3 of 6 rows (50.00%) are written in capitals"
    assert [e["row"] for e in train["examples"]] == [0, 4]  # the first max_examples rows
    assert report.metric("SHOUT001", "shouting_rows", split="train") == 3
    assert report.metric("SHOUT001", "shouting_rate", split="test") == 0.5
    assert "SHOUT001" not in load_rules().rules


def test_the_documented_plugin_passes_the_conformance_suite():
    data = {
        "train": [{"text": "SHOUTING ROW NUMBER"} if i % 3 else {"text": "calm"} for i in range(60)]
    }
    report = check_rule(_rule(_docstring_example()), data=data)
    assert not report.skipped and report.findings


def test_examples_and_flags_do_not_depend_on_batching():
    rule = _rule(_docstring_example())
    rows = {"train": [{"text": "LOUD TEXT ROW" if i % 4 == 1 else "calm"} for i in range(200)]}

    def run(batch_size):
        result = audit(rows, extra_rules=[rule], select=["SHOUT"], batch_size=batch_size)
        return result.result("SHOUT001")

    one, many = run(1000), run(7)
    for res in (one, many):
        res.pop("seconds")
    assert one == many
    assert [e["row"] for e in one["findings"][0]["examples"]] == [1, 5, 9, 13, 17]

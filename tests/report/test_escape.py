"""One set of escaping rules for every renderer (report/escape.py), and one status order."""

from __future__ import annotations

import copy
import re
from xml.etree import ElementTree as ET

import pytest

import dataaudit
from dataaudit.report.diff import diff
from dataaudit.report.escape import html, html_id, plain, shorten, visible
from dataaudit.report.html import render_compact, render_html
from dataaudit.report.junit import render_junit
from dataaudit.report.text import render_summary
from dataaudit.rule import Status

# one of each kind the rules cover: C0, C1, bidi (incl. the Arabic letter mark), line
# separator, lone surrogate, the non-characters XML cannot carry
UNSAFE = ["\x1b", "\x07", "\r", "\x9b", "\u061c", "\u202e", "\u2067", "\u2028", "\ud800", "\ufffe"]


@pytest.fixture(scope="module")
def report():
    rows = [{"text": f"row {i}"} for i in range(6)] + [{"text": ""}]
    return dataaudit.audit(rows, select=["TXT001"], fail_on="warn")


def _with_message(data: dict, message: str, *, new: bool = False) -> dict:
    """``data`` with every finding's message ``message`` (``new``: another finding)."""
    data = copy.deepcopy(data)
    for r in data["results"]:
        for f in r["findings"]:
            f["message"] = message
            if new:
                f["fingerprint"] = f["fingerprint"][:-4] + "beef"
    return data


@pytest.mark.parametrize("char", UNSAFE)
def test_every_renderer_shows_an_unsafe_character_as_its_escape(report, char):
    data = _with_message(report.data, f"bad{char}text")
    escaped = f"bad\\x{ord(char):02x}text" if ord(char) < 256 else f"bad\\u{ord(char):04x}text"
    outputs = {
        "text": render_summary(data),
        "html": render_html(data),
        "compact": render_compact(data),
        "junit": render_junit(data),
        "diff": diff(report.data, _with_message(report.data, f"bad{char}text", new=True)).summary(),
    }
    for name, out in outputs.items():
        assert char not in out, name
        assert escaped in out, name
    ET.fromstring(outputs["junit"].split("\n", 1)[1])


def test_plain_bounds_and_keeps_or_marks_line_breaks():
    assert plain("a\tb\nc") == "a b⏎c"
    assert plain("a\nb\x1b", multiline=True) == "a\nb\\x1b"
    assert plain("x" * 50, 10) == "x" * 9 + "…"
    assert plain("\x1b" * 10, 10) == "\\x1b\\x1b\\…"  # bounded after escaping
    assert shorten("abc", 3) == "abc" and shorten("abcd", 3) == "ab…"
    assert visible("\t\n") == "\t\n"  # each format decides about tabs and newlines


def test_html_escapes_markup_and_says_what_it_cut():
    assert html(None) == ""
    assert html('<a href="x">&') == "&lt;a href=&quot;x&quot;&gt;&amp;"
    assert html("y" * 12, 10) == "y" * 10 + "… [+2 chars]"
    assert html_id('"><x\u202e') == "r-___x_"
    assert re.fullmatch(r"r-[A-Za-z0-9_-]+", html_id("\x00" * 200))


def test_status_order_is_the_enums():
    assert [s.value for s in Status.worst_first()] == ["error", "fail", "warn", "pass", "skipped"]
    assert [s.rank for s in Status] == [0, 1, 2, 3, None]  # pass < warn < fail < error


def _statuses(report) -> dict:
    """The report with one rule of each status, codes in the opposite order of the statuses."""
    data = copy.deepcopy(report.data)
    template = data["results"][0]
    data["results"] = []
    for code, status in zip(("AAA001", "BBB001", "CCC001", "DDD001", "EEE001"), list(Status)):
        r = copy.deepcopy(template)
        r.update(code=code, name=f"n.{status.value}", status=status.value, findings=[])
        data["results"].append(r)
    data["summary"].update({s.value: i + 1 for i, s in enumerate(Status)})
    data["passed"] = data["gate"]["passed"] = True
    data["gate"]["reasons"] = []
    return data


def test_renderers_list_rules_and_counts_worst_first(report):
    data = _statuses(report)
    worst_first_codes = ["DDD001", "CCC001", "BBB001", "AAA001", "EEE001"]  # skipped last
    text = render_summary(data)
    assert re.findall(r"^\S+ +([A-E]{3}001)", text, re.M) == worst_first_codes
    page = render_html(data)
    assert (
        re.findall(r'<section class="rule [^"]*" id="r-([A-E]{3}001)"', page) == worst_first_codes
    )
    attention = page[page.index('id="attention"') : page.index('id="rules"')]
    assert re.findall(r"<b>([A-E]{3}001)</b>", attention) == worst_first_codes[:3]
    verdict = page[page.index('id="verdict"') : page.index("</header>")]
    counts = re.findall(r"(\d+) (error|fail|warn|pass|skipped)\b", verdict)
    assert [name for _, name in counts] == ["error", "fail", "warn", "pass", "skipped"]
    # the notebook summary: the same order of counts (it listed fail before error)
    compact = render_compact(data)
    counts = re.findall(r"(\d+) (error|fail|warn|pass|skipped)\b", compact)
    assert [name for _, name in counts] == ["error", "fail", "warn", "pass", "skipped"]
    assert re.findall(r"<b>([A-E]{3}001)</b>", compact) == worst_first_codes[:3]

"""The HTML report: self-contained, complete, and safe against hostile dataset text."""

from __future__ import annotations

import copy
from html.parser import HTMLParser

import pytest

import dataaudit
from dataaudit.report.html import render_html

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "section", "h1", "h2", "h3",
    "h4", "p", "span", "div", "b", "a", "table", "thead", "tbody", "tr", "th", "td", "pre",
    "code", "ul", "li", "svg", "text", "rect",
}  # fmt: skip


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self.style: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        (self.style if self._in_style else self.text).append(data)


def _parse(page: str) -> _Collect:
    p = _Collect()
    p.feed(page)
    p.close()
    return p


@pytest.fixture(scope="module")
def hostile_report():
    col = IMG  # a column name that tries to break out of an attribute
    rows = [
        {col: SCRIPT, "label": "a"},
        {col: "", "label": "b"},
        {col: IMG + " \u202eevil\x1b[31m", "label": "a"},
        {col: "ordinary text here", "label": SCRIPT},
    ] * 3
    return dataaudit.audit(
        {SCRIPT: rows, "test" + IMG: rows[:4]},
        text=col,
        select=["TXT001", "TXT002", "TXT003", "FMT001"],
        fail_on="warn",
    )


def _assert_safe(page: str) -> _Collect:
    p = _parse(page)
    for tag, attrs in p.tags:
        assert tag in ALLOWED_TAGS, f"unexpected tag <{tag}> in the page"
        for name, value in attrs:
            assert not name.startswith("on"), f"event handler attribute {name} on <{tag}>"
            assert "alert" not in (value or ""), f"payload inside attribute {name} of <{tag}>"
    assert "<script" not in page.lower()
    assert "<img" not in page.lower()
    assert not any("alert" in s for s in p.style)
    return p


def test_hostile_text_split_and_column_names_are_escaped(hostile_report):
    page = hostile_report.to_html()
    p = _assert_safe(page)
    text = "".join(p.text)
    # the payloads are shown to the reader as text, not lost
    assert SCRIPT in text
    assert IMG in text
    # the bidi override and escape character are made visible, not executed by the terminal/page
    assert "\u202e" not in page and "\x1b" not in page
    assert "\\u202e" in text and "\\x1b" in text


def test_hostile_details_and_messages_are_escaped(hostile_report):
    data = copy.deepcopy(hostile_report.data)
    r = data["results"][0]
    r["message"] = SCRIPT
    r["details"] = {
        IMG: [{"source": SCRIPT, "share": 0.75}, {"source": IMG, "share": 0.25}],
        "notes": {SCRIPT: IMG},
    }
    r["findings"].append(
        {
            "fingerprint": IMG,
            "severity": IMG,  # not a severity: must not reach a class attribute
            "message": SCRIPT,
            "split": IMG,
            "count": 1,
            "examples": [{"split": SCRIPT, "row": 0, "text": IMG, IMG: SCRIPT}],
            "data": {SCRIPT: IMG},
        }
    )
    r["status"] = IMG
    data["plugin_errors"] = [SCRIPT]
    data["fail_on"] = IMG
    page = render_html(data)
    p = _assert_safe(page)
    assert "".join(p.text).count(SCRIPT) >= 5


def test_page_is_self_contained_and_has_the_sections(hostile_report, tmp_path):
    out = tmp_path / "report.html"
    page = hostile_report.to_html(out)
    assert out.read_text(encoding="utf-8") == page
    p = _parse(page)
    # no external assets: no src attributes, no links other than in-page anchors
    for tag, attrs in p.tags:
        for name, value in attrs:
            if name in ("src", "href"):
                assert name == "href" and value.startswith("#"), (tag, name, value)
    assert "Content-Security-Policy" in page
    assert "gate FAILED" in page  # fail_on=warn and empty rows → TXT001 fails
    text = "".join(p.text)
    for code in ("TXT001", "TXT002", "TXT003", "FMT001"):
        assert code in text
    assert "Dataset" in text and "content hash" in text
    assert any(tag == "svg" for tag, _ in p.tags), "expected an inline SVG chart"


def test_rules_sorted_by_status(hostile_report):
    data = copy.deepcopy(hostile_report.data)
    statuses = ["pass", "error", "skipped", "fail"]
    for r, st in zip(data["results"], statuses):
        r["status"] = st
    page = render_html(data)
    codes = [r["code"] for r in data["results"]]
    by_status = dict(zip(statuses, codes))
    positions = [page.index(f'id="r-{by_status[s]}"') for s in ("error", "fail", "pass", "skipped")]
    assert positions == sorted(positions)


def test_details_list_of_dicts_becomes_a_table_and_chart(hostile_report):
    data = copy.deepcopy(hostile_report.data)
    data["results"][0]["details"] = {
        "per_source": [
            {"source": "wiki", "rows": 30, "share": 0.6},
            {"source": "forum", "rows": 20, "share": 0.4},
        ]
    }
    page = render_html(data)
    p = _parse(page)
    text = "".join(p.text)
    assert "per_source" in text and "wiki" in text and "forum" in text
    assert "60.00%" in text and "40.00%" in text  # the share bars are labelled as percentages
    rects = [a for t, a in p.tags if t == "rect"]
    widths = sorted(float(dict(a)["width"]) for a in rects)
    assert len(widths) >= 2 and widths[-1] > widths[0]


def test_passing_report_says_passed():
    report = dataaudit.audit([{"text": "a perfectly fine sentence"}] * 4, select=["TXT001"])
    page = report.to_html()
    assert report.passed
    assert "gate PASSED" in page

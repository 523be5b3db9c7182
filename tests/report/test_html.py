"""The HTML report: what a reader sees first, the chart each rule gets, hostile dataset text kept
inert, and a page bounded in size whatever the dataset (the browser checks are in
test_html_browser.py)."""

from __future__ import annotations

import copy
import re
from html.parser import HTMLParser

import pytest

import dataaudit
from dataaudit.report.diff import diff
from dataaudit.report.html import MAX_BYTES, render_compact, render_diff_html, render_html
from dataaudit.report.html._base import FILTER_JS, fmt_metric
from dataaudit.report.html._examples import word_diff
from tests import ROOT

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
#: every element the pages may contain; anything else came from data that was not escaped
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "link", "body", "header", "section", "h1", "h2",
    "h3", "h4", "p", "span", "div", "b", "a", "br", "wbr", "table", "thead", "tbody", "tr", "th",
    "td", "ul", "li", "details", "summary", "label", "input", "select", "option", "del", "ins",
    "script", "svg", "text", "rect", "line", "polyline", "circle",
}  # fmt: skip


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self.raw: dict[str, list[str]] = {"style": [], "script": []}
        self._raw: str | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))
        self._raw = tag if tag in self.raw else None

    def handle_endtag(self, tag):
        self._raw = None

    def handle_data(self, data):
        (self.raw[self._raw] if self._raw else self.text).append(data)


def _parse(page: str) -> _Collect:
    p = _Collect()
    p.feed(page)
    p.close()
    return p


def _assert_safe(page: str) -> _Collect:
    p = _parse(page)
    for tag, attrs in p.tags:
        assert tag in ALLOWED_TAGS, f"unexpected tag <{tag}> in the page"
        for name, value in attrs:
            assert not name.startswith("on"), f"event handler attribute {name} on <{tag}>"
            assert "alert" not in (value or ""), f"payload inside attribute {name} of <{tag}>"
            if name in ("href", "src"):
                assert (value or "").startswith("#") or (tag, value) == ("link", "data:,")
    # one script, the page's own (the CSP allows its hash only)
    assert p.raw["script"] in ([FILTER_JS], [])
    assert not any("alert" in s for s in p.raw["style"])
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


@pytest.fixture(scope="module")
def fixture_report():
    return dataaudit.audit(str(ROOT / "fixtures" / "classification"))


@pytest.fixture(scope="module")
def fixture_page(fixture_report):
    return render_html(fixture_report.data)


def _section(page: str, code: str) -> str:
    start = page.index(f'id="r-{code}"')
    end = page.find('<section class="rule', start)
    return page[start : end if end > 0 else len(page)]


# -- hostile text -------------------------------------------------------------------------------
def test_hostile_text_split_and_column_names_are_escaped(hostile_report):
    page = hostile_report.to_html()
    p = _assert_safe(page)
    text = "".join(p.text)
    assert SCRIPT in text and IMG in text  # shown to the reader as text, not lost
    # the bidi override and escape character are made visible
    assert "\u202e" not in page and "\x1b" not in page
    assert "\\u202e" in text and "\\x1b" in text
    # split names never reach an attribute: the split filter uses their index
    assert re.findall(r'data-split="([^"]*)"', page) and all(
        v.isdigit() for v in re.findall(r'data-split="([^"]*)"', page)
    )


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


def test_charts_escape_labels_from_the_data(fixture_report):
    data = copy.deepcopy(fixture_report.data)
    r = {x["code"]: x for x in data["results"]}
    r["LBL002"]["details"]["matrix"]["labels"][0] = SCRIPT
    r["LBL003"]["details"]["classes"][0]["class"] = IMG
    for c in r["TOK001"]["details"]["comparisons"].values():
        c["over"][0]["token"] = SCRIPT
    for c in r["SHIFT001"]["details"]["comparisons"].values():
        c["eval_ngrams"][0] = IMG
    page = render_html(data)
    p = _assert_safe(page)
    assert "".join(p.text).count(SCRIPT) >= 3


def test_word_diff_marks_only_the_changed_words_and_escapes_them():
    left, right = word_diff("the cat <b>sat</b> here", "the dog <b>sat</b> here")
    assert left == "the <del>cat</del> &lt;b&gt;sat&lt;/b&gt; here"
    assert right == "the <ins>dog</ins> &lt;b&gt;sat&lt;/b&gt; here"
    # texts the report cut short are compared as far as both go: no false difference at the cut
    a, b = word_diff(
        "same words here labora… [+64 chars]", "same words here laboratory, … [+9 chars]"
    )
    assert "<del>" not in a and "<ins>" not in b and a.endswith("… [+64 chars]")


# -- what comes first ---------------------------------------------------------------------------
def test_verdict_and_failing_rules_come_before_the_details(fixture_page, fixture_report):
    page = fixture_page
    verdict = page.index('id="verdict"')
    attention = page.index('id="attention"')
    first_section = page.index('<section class="rule')
    assert verdict < attention < first_section
    table = page[attention:first_section]
    failing = [r["code"] for r in fixture_report.results if r["status"] in ("fail", "warn")]
    assert set(re.findall(r'href="#r-([A-Z0-9]+)"><b>', table)) == set(failing)
    # rules in order: fail before warn before pass before skipped
    order = re.findall(r'<section class="rule st-(\w+)"', page)
    rank = ["error", "fail", "warn", "pass", "skipped"]
    assert order == sorted(order, key=rank.index)
    # the dataset and run section is last and collapsed
    assert page.index('id="dataset"') > page.rindex('<section class="rule')


def test_each_rule_shows_findings_then_chart_then_collapsed_details(fixture_page):
    for code in ("LBL003", "DUP002", "MIX001", "LEN003"):
        section = _section(fixture_page, code)
        finding = section.index('class="finding"')
        chart = section.index('class="chart"')
        details = section.index("<details>")
        assert finding < chart < details, code
        assert "<h4>Options</h4>" in section[details:] and "<h4>Metrics</h4>" in section[details:]


def test_no_internal_state_and_no_raw_json(fixture_page, fixture_report):
    sketches = [r["code"] for r in fixture_report.results if "sketch" in (r["details"] or {})]
    assert sketches  # LEN003, LBL003, MIX001, TOK001 carry one: it must not be shown
    text = "".join(_parse(fixture_page).text)
    assert "sketch" not in text and "length-v1" not in text and "halves" not in text
    assert not re.search(r'[{\[]"\w+": ', text), "a JSON blob reached the page"


def test_near_duplicate_pairs_are_side_by_side_with_the_differences_marked(fixture_page):
    section = _section(fixture_page, "DUP002")
    assert section.index('<div class="pair">') < section.index('<div class="text">')
    left, right = re.findall(r'<div class="text">(.*?)</div>', section, re.S)[:2]
    assert "<del>" in left and "<ins>" in right  # planted near duplicates differ in a few words
    assert "<ins>" not in left and "<del>" not in right
    # most of the text is shared: the marks cover a small part of it
    marked = sum(len(m) for m in re.findall(r"<del>(.*?)</del>", left))
    assert marked < len(left) / 3


# -- the chart each rule gets -------------------------------------------------------------------
def test_class_shares_per_split(fixture_page, fixture_report):
    section = _section(fixture_page, "LBL003")
    classes = fixture_report.result("LBL003")["details"]["classes"]
    splits = fixture_report.data["dataset"]["splits"]
    assert "Class shares per split" in section
    # one bar per class and split that has the class, labelled as a share
    bars = re.findall(r"<rect [^>]*><title>([^<]*)</title>", section)
    assert len(bars) == sum(len(c["share_by_split"]) for c in classes)
    assert any(t.startswith("pets · test: 6.67%") for t in bars), bars[:5]
    assert all(f">{s}<" in section for s in splits)  # a legend names the splits


def test_label_matrix_is_a_heat_map(fixture_page, fixture_report):
    section = _section(fixture_page, "LBL002")
    m = fixture_report.result("LBL002")["details"]["matrix"]
    n = len(m["labels"])
    cells = re.findall(
        r'<rect x="\d+" y="\d+" width="33" height="33" fill="rgb\((\d+),(\d+),(\d+)\)"', section
    )
    assert len(cells) == n * n
    # the diagonal (agreement) is blue, the strongest confusion red
    i = max(range(n), key=lambda k: m["counts"][k][k])
    r, g, b = map(int, cells[i * n + i])
    assert b > r
    off = [(m["counts"][a][c], a * n + c) for a in range(n) for c in range(n) if a != c]
    r, g, b = map(int, cells[max(off)[1]])
    assert r > b


def test_length_histograms_overlay_the_splits(fixture_page, fixture_report):
    section = _section(fixture_page, "LEN003")
    lines = re.findall(r'<polyline points="[^"]+" fill="(#\w+)"', section)
    assert len(lines) == len(fixture_report.data["dataset"]["splits"]) == len(set(lines))
    assert "length in words (log scale)" in section
    # LEN002 draws each split's outlier bounds on the same histograms
    assert "train: long ≥ 576" in _section(fixture_page, "LEN002")


def test_max_seq_len_line_on_the_length_histograms(fixture_report):
    data = copy.deepcopy(fixture_report.data)
    len001 = next(r for r in data["results"] if r["code"] == "LEN001")
    len001.update(status="pass", thresholds={"max_seq_len": 512, "max_rate": 0.01})
    page = render_html(data)
    for code in ("LEN001", "LEN003"):
        section = _section(page, code)
        assert "max_seq_len 512" in section and 'stroke-dasharray="5 3"' in section, code


def test_source_shares_against_the_recipe(fixture_report):
    data = copy.deepcopy(fixture_report.data)
    mix = next(r for r in data["results"] if r["code"] == "MIX001")
    mix["thresholds"]["recipe"] = {"fortunes": 0.5, "pydoc": 0.4, "glossary": 0.1}
    page = render_html(data)
    section = _section(page, "MIX001")
    markers = re.findall(r"<line [^>]*><title>(recipe [^<]*)</title></line>", section)
    assert sorted(markers) == [
        "recipe fortunes: 50.0% ± 5.00%",
        "recipe glossary: 10.0% ± 5.00%",
        "recipe pydoc: 40.0% ± 5.00%",
    ]
    assert "Share of tokens per source" in section
    # without a recipe, the shares the drift verdict compares: rows
    assert "Share of rows per source" in _section(render_html(fixture_report.data), "MIX001")


def test_duplicate_cluster_sizes(fixture_page):
    for code, what in (("DUP001", "duplicate groups"), ("DUP002", "near-duplicate clusters")):
        section = _section(fixture_page, code)
        assert f"Number of {what} by size" in section
        assert re.search(r"<title>2 rows · train: \d+</title>", section), code


def test_drifting_tokens_and_domain_classifier(fixture_page, fixture_report):
    tok = _section(fixture_page, "TOK001")
    over = fixture_report.result("TOK001")["details"]["comparisons"]["test vs train"]["over"]
    assert f">{over[0]['token']}<" in tok and "more common in test than in train" in tok
    shift = _section(fixture_page, "SHIFT001")
    comps = fixture_report.result("SHIFT001")["details"]["comparisons"]
    assert shift.count("<circle") == len(comps)  # one AUC point per comparison, with its CI
    assert "chance 0.5" in shift and "null critical 0.6" in shift  # from the null (0.611)
    assert shift.count("<polyline") == len(comps)  # a ROC curve per comparison
    for c in comps.values():
        assert all(f"<span>{g}</span>" in shift for g in c["eval_ngrams"][:3])


def test_a_chart_whose_details_changed_shape_is_left_out_not_fatal(fixture_report):
    data = copy.deepcopy(fixture_report.data)
    r = {x["code"]: x for x in data["results"]}
    r["LBL002"]["details"]["matrix"] = {"labels": ["a", "b"], "counts": "not a matrix"}
    r["LBL003"]["details"]["classes"] = [{"class": "a", "share_by_split": ["not", "a", "dict"]}]
    r["SHIFT001"]["details"]["comparisons"] = {"x vs y": {"auc": "high"}}
    page = render_html(data)
    _assert_safe(page)
    assert "LBL002" in page and "LBL003" in page and "SHIFT001" in page


# -- numbers ------------------------------------------------------------------------------------
def test_ratios_are_ratios_and_shares_are_percentages(fixture_page):
    assert fmt_metric("imbalance_ratio", 8.0) == "8.0×"
    assert fmt_metric("duplicate_rate", 0.0016667) == "0.17%"
    assert fmt_metric("row_share[pydoc]", 0.48) == "48.0%"
    assert fmt_metric("text:null_rate", 0.005) == "0.50%"
    assert fmt_metric("label_chi2_pvalue", 3.557e-19) == "3.6e-19"
    assert fmt_metric("median_length", 27.0, "words") == "27 words"
    # LBL003's imbalance ratio of 8.0 in test: "8.0×", never "800.00%"
    section = _section(fixture_page, "LBL003")
    assert ">8.0×<" in section and "800" not in section


# -- size ---------------------------------------------------------------------------------------
def test_the_page_stays_under_2_mb_for_any_dataset(fixture_report):
    """200k flags, every rule with a thousand findings of long examples, 1 MB strings."""
    data = copy.deepcopy(fixture_report.data)
    n = 200_000
    data["flags"] = {
        "count": n,
        "split": {"values": ["train"], "index": [0] * n},
        "row": list(range(n)),
        "id": [f"id-{i:07d}" for i in range(n)],
        "code": {"values": ["DUP001"], "index": [0] * n},
        "severity": {"values": ["warn"], "index": [0] * n},
        "action": {"values": ["drop"], "index": [0] * n},
        "cluster": [None] * n,
        "score": [None] * n,
        "detail": {"values": [None], "index": [0] * n},
    }
    long_text = "word " * 200_000
    examples = [{"split": "train", "row": k, "text": long_text} for k in range(50)]
    for r in data["results"]:
        template = r["findings"][0] if r["findings"] else None
        base = {"fingerprint": f"{r['code']}-0000000000000000", "severity": "warn",
                "split": "train", "count": 1, "data": {"rows": list(range(1000))}}  # fmt: skip
        r["findings"] = [
            {**(template or base), "message": long_text, "examples": examples}
            for _ in range(1000)
        ]  # fmt: skip
        r["metrics"] = r["metrics"] * 200
        r["details"]["big"] = [{"k": i, "text": long_text[:5000]} for i in range(2000)]
        r["message"] = long_text
    page = render_html(data)
    size = len(page.encode())
    assert size <= 2_000_000 and size <= MAX_BYTES * 1.1, size
    _assert_safe(page)
    # the worst rules still show findings with examples; the page says what it left out
    assert page.count('class="pair"') + page.count('<div class="text">') > 20
    assert "more findings in the JSON report" in page


# -- the rest -----------------------------------------------------------------------------------
def test_page_is_self_contained(hostile_report, tmp_path):
    out = tmp_path / "report.html"
    page = hostile_report.to_html(out)
    assert out.read_text(encoding="utf-8") == page
    _assert_safe(page)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp
    assert "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    assert "gate FAILED" in page  # fail_on=warn and empty rows → TXT001 fails


def test_passing_report_says_passed():
    report = dataaudit.audit([{"text": "a perfectly fine sentence"}] * 4, select=["TXT001"])
    page = report.to_html()
    assert report.passed
    assert "gate PASSED" in page and "No rule fails or warns" in page
    assert "2 rules: 2 pass · 0 rows flagged" in page
    data = copy.deepcopy(report.data)
    data["summary"].update(rules=1, flagged_rows=1)
    assert "1 rule: 2 pass · 1 row flagged" in render_html(data)  # not "1 rules", "1 rows"


def test_the_notebook_summary_is_still_compact(fixture_report):
    compact = render_compact(fixture_report.data)
    assert "<script" not in compact and "LEAK001" in compact
    assert len(compact) < len(fixture_report.to_html()) / 10


def test_a_diff_renders_as_html_with_regressions_first(fixture_report):
    old = copy.deepcopy(fixture_report.data)
    new = copy.deepcopy(fixture_report.data)
    lbl = next(r for r in new["results"] if r["code"] == "LBL001")
    lbl["findings"][0]["message"] = SCRIPT
    lbl["findings"][0]["fingerprint"] = "LBL001-" + "f" * 16  # a new finding
    lbl["findings"][0]["severity"] = "error"
    result = diff(old, new)
    page = render_diff_html(result.to_dict())
    _assert_safe(page)
    assert result.regressed and "REGRESSED" in page
    text = "".join(_parse(page).text)
    assert SCRIPT in text
    assert page.index('class="reasons"') < page.index("<h2>Rules</h2>")
    # unchanged rules and metrics are collapsed, changed findings are not
    assert "rules unchanged</summary>" in page
    new_row = re.search(r'<tr data-status="new" data-severity="error">(.*?)</tr>', page, re.S)
    assert new_row and "LBL001" in new_row.group(1)
    assert render_diff_html({}).startswith("<!DOCTYPE html>")  # a diff missing keys still renders


def test_diff_to_html_and_the_cli_flag(fixture_report, tmp_path, capsys):
    from dataaudit.cli import main

    old, new = tmp_path / "old.json", tmp_path / "new.json"
    fixture_report.to_json(old)
    data = copy.deepcopy(fixture_report.data)
    next(r for r in data["results"] if r["code"] == "TOK001")["status"] = "fail"
    dataaudit.Report(data).to_json(new)
    page = diff(str(old), str(new)).to_html(tmp_path / "api.html")
    assert (tmp_path / "api.html").read_text(encoding="utf-8") == page and "REGRESSED" in page
    out = tmp_path / "diff.html"
    assert main(["diff", str(old), str(new), "--html", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == page
    # the page may not overwrite a report it compares, nor share stdout with another output
    assert main(["diff", str(old), str(new), "--html", str(new)]) == 2
    assert "--html" in capsys.readouterr().err
    assert main(["diff", str(old), str(new), "--html", "-", "--json", "-"]) == 2
    assert main(["diff", str(old), str(new), "--html", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("<!DOCTYPE html>") and "REGRESSED" in captured.out
    assert "TOK001" in captured.err  # the text account moved to stderr


def test_diff_page_shows_tolerances_worse_and_suppressed():
    page = render_diff_html(
        {
            "regressed": False,
            "fail_on": "warn",
            "tolerance": {"relative": 0.05, "noise_sigmas": 3.0},
            "metrics": [
                {"code": "MIX001", "name": "source_mix_v", "split": "test", "old": 0.045,
                 "new": 0.048, "delta": 0.003, "relative": 0.06, "direction": "lower",
                 "verdict": "worse", "tolerance": 0.0024, "basis": "relative", "threshold": 0.1},
                {"code": "TOK001", "name": "js", "split": "test", "old": 0.0074, "new": 0.0075,
                 "delta": 0.0001, "relative": 0.01, "direction": "lower", "verdict": "within",
                 "tolerance": 0.002, "basis": "noise"},
            ],
            "findings": [
                {"code": "DUP001", "fingerprint": "DUP001-" + "a" * 16, "state": "new",
                 "severity": "warn", "message": "accepted", "split": "train", "old_count": 0,
                 "new_count": 2, "suppressed": True},
            ],
        }
    )  # fmt: skip
    worse = re.search(r'<tr data-status="worse">(.*?)</tr>', page, re.S).group(1)
    assert "±0.0024" in worse and "(relative)" in worse and "0.1" in worse
    # a metric within its tolerance is folded away with the unchanged ones
    details = page[page.index("<details><summary>1 metric unchanged") :]
    assert '<tr data-status="within">' in details and "(noise)" in details
    assert "suppressed by the baseline" in page
    assert "new findings count from severity warn" in page


def test_findings_suppressed_by_a_baseline_are_shown_as_such(tmp_path):
    from dataaudit.report.baseline import baseline_json

    rows = [{"text": f"row number {i} of the set"} for i in range(8)] + [{"text": ""}] * 2
    first = dataaudit.audit(rows, select=["TXT001"], fail_on="warn")
    accepted = tmp_path / "accepted.json"
    accepted.write_text(baseline_json(first.data), encoding="utf-8")
    report = dataaudit.audit(rows, select=["TXT001"], fail_on="warn", baseline=accepted)
    page = report.to_html()
    assert report.passed and "gate PASSED" in page
    # the accepted finding is still on the page, marked, and the verdict line says why it passed
    finding = re.search(r'<div class="finding suppressed"[^>]*>(.*?)</div>', page, re.S)
    assert finding and "empty or whitespace-only" in finding.group(1)
    assert "(suppressed by the baseline)" in finding.group(1)
    verdict = page[page.index('id="verdict"') : page.index("</header>")]
    assert "1 finding suppressed by the baseline" in verdict and "1 accepted" in verdict


def test_len001_draws_its_own_histograms_without_len003():
    """LEN001 carries per-split length histograms with max_seq_len: the chart needs no LEN003."""
    data = {
        "train": [{"text": " ".join(["word"] * (5 + i % 40))} for i in range(200)],
        "test": [{"text": " ".join(["word"] * (20 + i % 60))} for i in range(80)],
    }
    report = dataaudit.audit(
        data, select=["LEN001", "LEN002"], rules={"LEN001": {"max_seq_len": 40}}
    )
    page = render_html(report.data)
    section = _section(page, "LEN001")
    assert "No length histogram" not in section
    lines = re.findall(r'<polyline points="[^"]+" fill="(#\w+)"', section)
    assert len(lines) == 2 == len(set(lines))  # one curve per split, overlaid
    assert "max_seq_len 40" in section and 'stroke-dasharray="5 3"' in section
    assert len(re.findall(r"<polyline", _section(page, "LEN002"))) >= 2

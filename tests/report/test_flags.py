"""The row flags table: documented columns, both sides of a leak, ids, and a lossless round trip
through the report JSON (schema 1.2), which older reports (1.0/1.1) still load without."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import jsonschema
import polars as pl
import pytest

from dataaudit import audit, registry
from dataaudit.errors import InputError
from dataaudit.report import Report
from dataaudit.report.load import report_problems
from dataaudit.report.schema import report_schema
from dataaudit.rule import Flag, Rule, RuleResult
from tests import ROOT

FIXTURE = ROOT / "fixtures" / "classification"
COLUMNS = ["split", "row", "id", "code", "severity", "action", "cluster", "score", "detail"]


@pytest.fixture(scope="module")
def report():
    return audit(str(FIXTURE))


@pytest.fixture(scope="module")
def flags(report):
    return report.flags()


@pytest.fixture(scope="module")
def rows():
    return {
        s: [json.loads(line) for line in (FIXTURE / f"{s}.jsonl").read_text().splitlines()]
        for s in ("train", "validation", "test")
    }


def _code(flags, code):
    return flags.filter(pl.col("code") == code)


def test_the_table_has_the_documented_columns_and_types(flags):
    assert flags.columns == COLUMNS
    assert flags.schema["row"] == pl.Int64 and flags.schema["score"] == pl.Float64
    assert set(flags["action"].unique()) <= {"drop", "keep", "review"}
    assert set(flags["severity"].unique()) <= {"info", "warn", "error"}
    assert flags.height == flags.unique().height  # one row per distinct flag


def test_duplicates_keep_one_row_per_cluster_and_drop_the_rest(flags):
    for code in ("DUP001", "DUP002"):
        fl = _code(flags, code)
        per_cluster = fl.group_by("cluster").agg(
            keep=(pl.col("action") == "keep").sum(),
            smallest=pl.col("row").min(),
            kept_row=pl.col("row").filter(pl.col("action") == "keep").first(),
        )
        assert (per_cluster["keep"] == 1).all(), code
        assert (per_cluster["smallest"] == per_cluster["kept_row"]).all()
        assert set(fl["action"]) == {"keep", "drop"}
    near = _code(flags, "DUP002").filter(pl.col("action") == "drop")
    assert near["score"].null_count() == 0 and near["score"].max() <= 1.0
    # planted: train rows 13 and 494 are near duplicates with Jaccard 0.8615
    (score,) = near.filter(pl.col("row") == 494)["score"].to_list()
    assert score == pytest.approx(0.8615, abs=1e-4)


def test_a_leak_flags_both_sides_and_drops_the_train_copy(flags):
    leak = _code(flags, "LEAK001")
    test74 = leak.filter(pl.col("cluster") == "test:74").sort("split")
    assert test74.select("split", "row", "action", "score", "severity").rows() == [
        ("test", 74, "keep", 1.0, "error"),
        ("train", 122, "drop", 1.0, "error"),
    ]
    # a near leak: validation 96 ~ train 589 (Jaccard 0.8333)
    v96 = leak.filter(pl.col("cluster") == "validation:96").sort("split")
    assert v96.select("split", "row", "action").rows() == [
        ("train", 589, "drop"),
        ("validation", 96, "keep"),
    ]
    assert v96["score"].to_list() == pytest.approx([0.8333, 0.8333], abs=1e-4)
    # no eval row is ever dropped by a leak: the benchmark stays intact
    assert leak.filter(pl.col("split") != "train")["action"].unique().to_list() == ["keep"]


def test_every_flag_carries_the_id_of_its_row(flags, rows):
    assert flags["id"].null_count() == 0
    for split, row, row_id in flags.select("split", "row", "id").iter_rows():
        assert rows[split][row]["id"] == row_id


def test_actions_and_scores_per_rule(flags):
    actions = dict(flags.group_by("code").agg(pl.col("action").unique().sort()).iter_rows())
    assert actions["TXT001"] == ["drop"]  # empty text
    assert actions["FMT001"] == ["drop"]  # a null and a non-string text
    assert actions["TXT002"] == ["review"]
    assert actions["LBL001"] == ["review"]
    assert actions["LEN002"] == ["review"]
    lbl2 = _code(flags, "LBL002")
    assert lbl2.height and lbl2["score"].is_between(0, 1).all()
    assert lbl2["detail"].str.contains(r"^given=.* likely=").all()
    short = _code(flags, "LEN002").filter(pl.col("detail") == "short")
    assert short.height and set(short["severity"]) == {"info"}  # as its finding


def test_flags_survive_the_json_round_trip(report, flags, tmp_path):
    path = tmp_path / "r.json"
    report.to_json(path)
    loaded = Report.load(path).flags()
    assert loaded.equals(flags)
    text = path.read_text()
    # one line per column, not one per value (a report can hold a million flags)
    lines = text.splitlines()
    start = lines.index('  "flags": {')
    assert lines[start + 1 :] == [
        f'    "count": {flags.height},',
        *[
            f'    "{name}": {json.dumps(report.data["flags"][name], separators=(",", ":"), ensure_ascii=False)}'
            + ("," if name != "detail" else "")
            for name in COLUMNS
        ],
        "  }",
        "}",
    ]
    assert json.loads(text)["flags"]["count"] == flags.height


def test_the_report_schema_describes_the_flags(report):
    jsonschema.validate(report.to_dict(), report_schema())
    assert report_problems(report.to_dict()) == []
    broken = report.to_dict()
    broken["flags"]["row"] = broken["flags"]["row"][:-1]
    (problem,) = report_problems(broken)
    assert problem.startswith("$.flags.row:") and "count" in problem
    bad = report.to_dict()
    bad["flags"]["action"]["values"][0] = "delete"
    assert any(p.startswith("$.flags.action.values[0]") for p in report_problems(bad))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, report_schema())
    for value, where in ((True, "row[3]"), (-1, "row[3]"), ([], "row[3]")):
        mangled = report.to_dict()
        mangled["flags"]["row"][3] = value
        assert [p for p in report_problems(mangled) if p.startswith(f"$.flags.{where}")]
    mangled = report.to_dict()
    mangled["flags"]["severity"]["index"][0] = 99
    assert [p for p in report_problems(mangled) if p.startswith("$.flags.severity.index[0]")]
    missing = {k: v for k, v in report.to_dict().items() if k != "flags"}
    assert report_problems(missing) == ["$: missing key 'flags'"]


@pytest.mark.parametrize("version", ["1.0", "1.1"])
def test_older_reports_load_and_say_they_have_no_flags(report, tmp_path, version):
    old = {k: v for k, v in report.to_dict().items() if k != "flags"}
    old["schema_version"] = version
    if version == "1.0":
        old.pop("gate")
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    loaded = Report.load(path)
    assert loaded.passed is report.passed
    with pytest.raises(InputError, match=rf"schema {version}\) does not store the row flags"):
        loaded.flags()


class PositionalFlags(Rule):
    """What it does: flags row 1 the way plugins did. Why it matters: -. Example: -. Options: -."""

    code = "PLG001"
    name = "test.positional-flags"
    requires = ()

    def start(self, ctx):
        return 0

    def update(self, state, batch):
        return state

    def merge(self, a, b):
        return a

    def finish(self, state, ctx):
        result = RuleResult()
        result.flags.append(Flag("train", 1, "g1", "old style"))
        return result


class BadAction(PositionalFlags):
    code = "PLG002"
    name = "test.bad-action"

    def finish(self, state, ctx):
        result = RuleResult()
        result.flags.append(Flag("train", 1, action="delete"))
        return result


@pytest.fixture
def register(monkeypatch):
    ruleset = registry.load_rules()
    for cls in (PositionalFlags, BadAction):
        monkeypatch.setitem(ruleset.rules, cls.code, cls)
        monkeypatch.setitem(ruleset.origin, cls.code, "test")


def test_plugin_flags_built_positionally_still_work(register):
    report = audit([{"text": "a"}, {"text": "b"}], select=["PLG001"])
    (row,) = report.flags().rows(named=True)
    assert row == {
        "split": "train",
        "row": 1,
        "id": None,
        "code": "PLG001",
        "severity": "warn",  # the rule's configured severity
        "action": "review",  # never dropped unless asked for
        "cluster": "g1",
        "score": None,
        "detail": "old style",
    }


def test_a_flag_with_an_unknown_action_is_an_error_of_its_rule(register):
    report = audit([{"text": "a"}, {"text": "b"}], select=["PLG002", "TXT001"])
    assert report.status("PLG002") == "error"
    assert "action='delete'" in report.result("PLG002")["message"]
    assert report.status("TXT001") == "pass" and not report.passed


def test_scores_are_finite_or_null():
    assert Flag("s", 0, score=float("nan")).score is None
    assert Flag("s", 0, score=True if False else 3).score == 3.0
    with pytest.raises(ValueError, match="score"):
        Flag("s", 0, score="high")
    assert Flag("s", 0, severity="error", id=7).id == "7"


def test_untrusted_flag_text_is_bounded_in_the_report():
    rows = [{"text": "same", "label": "x" * 5000}, {"text": "same", "label": "y"}]
    report = audit(
        rows, select=["LBL001"], config={"rules": {"LBL001": {"near_duplicates": False}}}
    )
    details = report.flags()["detail"].to_list()
    assert len(details) == 2 and max(map(len, details)) <= 200


# -- notebooks -------------------------------------------------------------------------------------
class _Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_repr_shows_the_verdict_and_counts(report):
    text = repr(report)
    # LBL003 (a class only test has), LEAK001, and LEN003 (validation's length cut-off, KS D 0.45)
    assert text.startswith("<Report FAILED ") and "fail=3" in text and "flagged_rows=" in text
    assert repr(audit([{"text": "fine text"}], select=["TXT001"])).startswith("<Report PASSED ")


def test_repr_html_is_compact_and_escaped():
    hostile = "<script>alert(1)</script>"
    report = audit(
        {"train": [{"text": "row one"}, {"text": ""}], hostile: [{"text": "row two"}]},
        select=["TXT001"],
        fail_on="warn",
    )
    page = report._repr_html_()
    parser = _Tags()
    parser.feed(page)
    assert "script" not in parser.tags and "style" not in parser.tags
    text = "".join(parser.text)
    assert "gate failed" in text and hostile in text  # shown as text, never as markup
    assert "TXT001" in text and "empty or whitespace-only" in text
    assert len(page) < len(report.to_html()) / 3

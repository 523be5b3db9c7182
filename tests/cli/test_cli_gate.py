"""The CLI in a CI pipeline: a diff gate that does not fail a pure improvement, the baseline
workflow, ``--output-format`` and ``diff --format``, and the pre-commit hook."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from dataaudit.cli import main
from tests import ROOT

FIXTURE = ROOT / "fixtures" / "classification"


@pytest.fixture(scope="module")
def fixture_report(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("gate") / "r.json"
    assert main(["audit", str(FIXTURE), "--json", str(path), "-q"]) == 1  # planted leaks
    return path


@pytest.fixture(scope="module")
def deduplicated_report(fixture_report, tmp_path_factory) -> Path:
    """The fixture with only its DUP-flagged duplicates removed, audited again."""
    work = tmp_path_factory.mktemp("dedup")
    cleaned = work / "x"
    args = ["clean", str(FIXTURE), "--report", str(fixture_report), "--out", str(cleaned)]
    assert main([*args, "--drop", "DUP", "-q"]) == 0
    path = work / "r2.json"
    assert main(["audit", str(cleaned), "--json", str(path), "-q"]) == 1  # the leaks remain
    return path


def test_removing_only_duplicates_is_no_regression(fixture_report, deduplicated_report, capsys):
    # issue #12: this pure improvement was called REGRESSED (exit 1) for rates that rose only
    # because their denominator shrank, drift metrics moving deep inside their passing band, and
    # probe noise
    code = main(["diff", str(fixture_report), str(deduplicated_report), "--fail-on-regression"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verdict: no regression" in out
    assert "DUP001   duplicates.exact: warn → pass  [improved]" in out
    assert "DUP002   duplicates.near: warn → pass  [improved]" in out
    # the same diff with every metric judged exactly fails, as it did before
    strict = ["--tolerance", "FMT001.text:null_rate=0"]
    assert main(["diff", str(fixture_report), str(deduplicated_report), *strict, "-q",
                 "--fail-on-regression"]) == 1  # fmt: skip


def test_diff_formats_json_and_markdown(fixture_report, deduplicated_report, capsys):
    old, new = str(fixture_report), str(deduplicated_report)
    assert main(["diff", old, new, "--format", "json", "-q"]) == 0
    captured = capsys.readouterr()
    d = json.loads(captured.out)
    assert d["regressed"] is False and d["diff_schema_version"] == "1.1"
    assert captured.err == ""
    by_name = {(m["code"], m["name"], m["split"]): m for m in d["metrics"]}
    rate = by_name[("FMT001", "text:null_rate", "train")]
    assert (rate["verdict"], rate["basis"]) == ("within", "binomial")
    assert main(["diff", old, new, "--format", "markdown"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("### dataaudit diff: ✅ no regression")
    assert "| `DUP001` duplicates.exact | warn → pass | improved |" in captured.out
    assert "verdict: no regression" in captured.err  # the text account, off stdout
    assert main(["diff", old, new, "--format", "json", "--json", "-"]) == 2
    assert "both write to stdout" in capsys.readouterr().err


def test_tolerance_and_fail_on_options_are_checked(fixture_report, capsys):
    old = str(fixture_report)
    for bad in ("TOK001.js", "js=0.1", "TOK001.js=-1", "TOK001.js=lots"):
        assert main(["diff", old, old, "--tolerance", bad]) == 2
        err = capsys.readouterr().err
        assert "--tolerance" in err and "Traceback" not in err
    assert main(["diff", old, old, "--tolerance", "TOK001.jss=0.1"]) == 0
    assert "TOK001.jss matches no metric" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["diff", old, old, "--fail-on", "info"])
    assert exc.value.code == 2 and "invalid choice: 'info'" in capsys.readouterr().err


def test_baseline_workflow(fixture_report, tmp_path, capsys):
    accepted = tmp_path / "accepted.json"
    assert main(["baseline", str(fixture_report), "-o", str(accepted)]) == 0
    assert main(["baseline", str(fixture_report)]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(accepted.read_text())
    out = tmp_path / "r.json"
    code = main(["audit", str(FIXTURE), "--baseline", str(accepted), "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0  # every known finding accepted: the gate passes
    report = json.loads(out.read_text())
    suppressed = [f for r in report["results"] for f in r["findings"] if f["suppressed"]]
    assert (
        len(suppressed)
        == report["summary"]["suppressed"]
        == len(json.loads(accepted.read_text())["findings"])
    )
    assert f"{len(suppressed)} findings suppressed" in printed
    assert main(["baseline", str(fixture_report), "-o", str(fixture_report)]) == 2
    assert "it is the report" in capsys.readouterr().err
    assert main(["audit", str(FIXTURE), "--baseline", str(fixture_report), "-q"]) == 2
    assert "not a baseline" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["json", "github", "sarif", "junit", "markdown"])
def test_output_format_prints_only_that_format_on_stdout(tmp_path, capsys, fmt, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("train.jsonl").write_text('{"text": "a good row"}\n{"text": ""}\n{"text": "one more"}\n')
    assert main(["audit", "train.jsonl", "--output-format", fmt, "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "gate PASSED" in captured.err  # the summary moves to stderr
    if fmt in ("json", "sarif"):
        json.loads(captured.out)
    elif fmt == "github":
        assert (
            "::warning file=train.jsonl,line=2,title=TXT001 content.empty-text::train: 1 of 3 "
            "rows (33.33%25) have empty or whitespace-only text (train row 1)\n"
        ) in captured.out
        assert all(
            line.startswith(("::warning ", "::notice ")) for line in captured.out.splitlines()
        )
    elif fmt == "junit":
        assert captured.out.startswith("<?xml")
    else:
        assert captured.out.startswith("### dataaudit: ✅ passed")
    assert main(["audit", "train.jsonl", "--output-format", fmt, "--json", "-"]) == 2
    assert "only one output can go to stdout" in capsys.readouterr().err


def _toml(path: Path) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib.loads(path.read_text())


def test_pre_commit_hooks_yaml_names_the_console_entry_point():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = hooks
    scripts = _toml(ROOT / "pyproject.toml")["project"]["scripts"]
    entry = hook["entry"].split()
    assert entry[:2] == ["dataaudit", "audit"] and entry[0] in scripts
    assert scripts[entry[0]] == "dataaudit.cli:run"  # main(), then the process ends
    assert hook["id"] == "dataaudit" and hook["language"] == "python"
    assert hook["pass_filenames"] is True
    import re

    files = re.compile(hook["files"])
    for name in ("data/train.jsonl", "d/x.parquet", "a.csv", "b.jsonl.gz", "t.tsv", "x.arrow"):
        assert files.search(name), name
    # .json and .txt are mostly configuration and requirements files: a repository adds them
    for name in ("src/main.py", "README.md", "package.json", "requirements.txt", "a.csv.bak"):
        assert not files.search(name), name
    assert hook["require_serial"] is True  # one audit sees every split (train.jsonl, test.jsonl)
    # the hook's arguments are ones the audit command accepts
    from dataaudit.cli import build_parser

    args = build_parser().parse_args([*entry[1:], *hook.get("args", []), "data/train.jsonl"])
    assert args.paths == ["data/train.jsonl"]

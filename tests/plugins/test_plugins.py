"""Installed plugin packages: the example plugin (examples/dataaudit-shouting) is listed, runs and
passes its own tests; broken, exiting and colliding entries (tests/plugins/fake_plugin) are
reported, never fatal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT

EXAMPLE = ROOT / "examples" / "dataaudit-shouting"
FAKE = Path(__file__).parent / "fake_plugin"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[dict[str, str], Path]:
    """Both packages pip-installed into a folder of their own (copied first, so the build leaves
    nothing in the repository); the environment that puts it on the path, and the example's
    copy."""
    work = tmp_path_factory.mktemp("plugins")
    example, fake = work / "example", work / "fake"
    for src, dst in ((EXAMPLE, example), (FAKE, fake)):
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*pip, "--target", str(work / "site"), str(example), str(fake)], check=True, cwd=work
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = str(work / "site") + os.pathsep + env.get("PYTHONPATH", "")
    return env, example


def run(args, env, **kw):
    return subprocess.run(
        [sys.executable, "-m", "dataaudit.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        **kw,
    )


@pytest.mark.slow
def test_plugins_are_listed_and_broken_or_colliding_ones_reported(installed):
    env, _ = installed
    listing = json.loads(run(["rules", "--json"], env).stdout)
    shout = [r for r in listing["rules"] if r["code"] == "SHOUT001"]
    assert shout and shout[0]["origin"] == "dataaudit-shouting"
    errors = "\n".join(listing["plugin_errors"])
    assert "broken on purpose" in errors
    assert "TXT901" in errors and "belongs to dataaudit" in errors
    assert "TXT901" not in [r["code"] for r in listing["rules"]]


@pytest.mark.slow
def test_a_plugin_rule_runs_when_selected_and_plugin_errors_do_not_stop_the_audit(
    installed, tmp_path
):
    env, _ = installed
    data = tmp_path / "train.jsonl"
    data.write_text('{"text": "BUY NOW"}\n{"text": "a calm sentence"}\n')
    out = run(
        ["audit", str(data), "--select", "TXT,SHOUT", "--json", str(tmp_path / "r.json")], env
    )
    assert out.returncode == 0, out.stderr  # SHOUT001 warns; the gate fails on errors
    assert "plugin error" in out.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert len(report["plugin_errors"]) == 3
    (shout,) = [r for r in report["results"] if r["code"] == "SHOUT001"]
    assert shout["status"] == "warn" and shout["metrics"][0]["value"] == 1


@pytest.mark.slow
def test_a_plugin_that_exits_at_import_does_not_take_over_the_exit_code(installed, tmp_path):
    env, _ = installed
    data = tmp_path / "train.jsonl"
    data.write_text('{"text": "fine"}\n{"text": ""}\n')  # an empty row: a warn
    report = tmp_path / "r.json"
    out = run(["audit", str(data), "--fail-on", "warn", "--json", str(report)], env)
    assert out.returncode == 1, out.stderr  # the gate failed; sys.exit(0) did not make it pass
    errors = json.loads(report.read_text())["plugin_errors"]
    assert any("exits" in e and "called sys.exit(0) while loading" in e for e in errors)
    assert "gate FAILED" in out.stdout and "sys.exit(0)" in out.stdout


@pytest.mark.slow
def test_the_example_plugin_passes_its_own_tests_installed(installed):
    """Its tests (the conformance suite among them) run against the installed package, from
    outside its folder, as a plugin author's CI would."""
    env, example = installed
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(example / "tests")],
        env=env,
        cwd=example.parent,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "4 passed" in out.stdout


@pytest.mark.parametrize(
    "exc", [SystemExit(3), GeneratorExit(), type("Odd", (BaseException,), {})("odd")]
)
def test_every_plugin_import_error_is_reported(monkeypatch, exc):
    from importlib import metadata

    from dataaudit import registry

    class FakeEntryPoint:
        name, value, dist = "bad", "bad_plugin:Rule", None

        def load(self):
            raise exc

    monkeypatch.setattr(metadata, "entry_points", lambda group: [FakeEntryPoint()])
    monkeypatch.setattr(registry, "_no_plugins_known", lambda: False)
    registry.load_rules.cache_clear()
    try:
        ruleset = registry.load_rules()
    finally:
        registry.load_rules.cache_clear()
    assert (
        len(ruleset.plugin_errors) == 1
        and "plugin bad (bad = bad_plugin:Rule)" in (ruleset.plugin_errors[0])
    )
    assert "TXT001" in ruleset.rules  # the built-in rules are all there


def test_ctrl_c_during_plugin_loading_still_stops(monkeypatch):
    from importlib import metadata

    from dataaudit import registry

    class FakeEntryPoint:
        name, value, dist = "slow", "slow_plugin:Rule", None

        def load(self):
            raise KeyboardInterrupt

    monkeypatch.setattr(metadata, "entry_points", lambda group: [FakeEntryPoint()])
    monkeypatch.setattr(registry, "_no_plugins_known", lambda: False)
    registry.load_rules.cache_clear()
    try:
        with pytest.raises(KeyboardInterrupt):
            registry.load_rules()
    finally:
        registry.load_rules.cache_clear()


def test_a_look_that_found_no_plugin_is_remembered_until_an_import_path_changes(
    monkeypatch, tmp_path
):
    """Looking for entry points imports importlib.metadata and reads every installed
    package's metadata; when none of ours is there, later processes skip it, until a package is
    installed or removed in an import path entry (its folder's modification time changes)."""
    from importlib import metadata

    from dataaudit import registry

    looks = []

    def entry_points(group):
        looks.append(group)
        return []

    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setattr(metadata, "entry_points", entry_points)
    monkeypatch.setattr(registry, "_no_plugins_file", lambda: tmp_path / "no-plugins.json")
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    assert registry._plugin_entry_points() == [] and len(looks) == 1
    assert registry._plugin_entry_points() == [] and len(looks) == 1  # remembered
    (site / "newpkg-1.0.dist-info").mkdir()  # pip installs a package there
    os.utime(site, ns=(0, os.stat(site).st_mtime_ns + 10**9))  # coarse clocks
    assert registry._plugin_entry_points() == [] and len(looks) == 2
    monkeypatch.setattr(sys, "path", sys.path[:-1])  # another environment's path
    assert registry._plugin_entry_points() == [] and len(looks) == 3
    if not sys.flags.safe_path:  # the program's folder first: where reports are written
        monkeypatch.setattr(sys, "path", [str(site), *sys.path])
        assert registry._plugin_entry_points() == [] and len(looks) == 4
        (site / "report.json").write_text("{}")
        os.utime(site, ns=(0, os.stat(site).st_mtime_ns + 10**9))
        assert registry._plugin_entry_points() == [] and len(looks) == 4
        (site / "myplugin.egg-info").mkdir()  # a plugin's metadata beside its source
        assert registry._plugin_entry_points() == [] and len(looks) == 5
        monkeypatch.setattr(sys, "path", sys.path[1:])

    class Found:
        name, value, dist = "x", "x:Rule", None

    monkeypatch.setattr(metadata, "entry_points", lambda group: [Found()])
    (tmp_path / "no-plugins.json").unlink()
    assert registry._plugin_entry_points()[0].name == "x"
    assert not (tmp_path / "no-plugins.json").exists()  # found ones are looked for each time

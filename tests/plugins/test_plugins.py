"""A real installed plugin package: its rule runs; broken and colliding entries are reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory) -> dict[str, str]:
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(HERE / "fake_plugin"),
        ],
        check=True,
        cwd=build,
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = str(target) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run(args, env, **kw):
    return subprocess.run(
        [sys.executable, "-m", "dataaudit.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        **kw,
    )


@pytest.mark.slow
def test_installed_plugin_rule_is_listed_and_runs(plugin_env, tmp_path):
    out = run(["rules", "--json"], plugin_env)
    assert out.returncode == 0, out.stderr
    listing = json.loads(out.stdout)
    fake = [r for r in listing["rules"] if r["code"] == "FAKE001"]
    assert fake and fake[0]["origin"] == "dataaudit-fake-plugin"
    data = tmp_path / "train.jsonl"
    data.write_text('{"text": "BUY NOW"}\n{"text": "a calm sentence"}\n')
    out = run(
        ["audit", str(data), "--select", "FAKE", "--json", str(tmp_path / "r.json")], plugin_env
    )
    assert out.returncode == 0, out.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["results"][0]["code"] == "FAKE001"
    assert report["results"][0]["metrics"][0]["value"] == 1
    assert out.returncode == 0


@pytest.mark.slow
def test_broken_and_colliding_plugins_are_reported_not_fatal(plugin_env, tmp_path):
    listing = json.loads(run(["rules", "--json"], plugin_env).stdout)
    errors = "\n".join(listing["plugin_errors"])
    assert "broken on purpose" in errors
    assert "TXT901" in errors and "belongs to dataaudit" in errors
    assert "TXT901" not in [r["code"] for r in listing["rules"]]
    data = tmp_path / "train.jsonl"
    data.write_text('{"text": "fine"}\n')
    out = run(["audit", str(data), "--json", str(tmp_path / "r.json")], plugin_env)
    assert out.returncode == 0
    assert "plugin error" in out.stdout
    assert len(json.loads((tmp_path / "r.json").read_text())["plugin_errors"]) == 3


@pytest.mark.slow
def test_a_plugin_that_exits_at_import_does_not_take_over_the_exit_code(plugin_env, tmp_path):
    data = tmp_path / "train.jsonl"
    data.write_text('{"text": "fine"}\n{"text": ""}\n')  # an empty row: a warn
    report = tmp_path / "r.json"
    out = run(["audit", str(data), "--fail-on", "warn", "--json", str(report)], plugin_env)
    assert out.returncode == 1, out.stderr  # the gate failed; sys.exit(0) did not make it pass
    errors = json.loads(report.read_text())["plugin_errors"]
    assert any("exits" in e and "called sys.exit(0) while loading" in e for e in errors)
    assert "gate FAILED" in out.stdout and "sys.exit(0)" in out.stdout


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
    registry.load_rules.cache_clear()
    try:
        with pytest.raises(KeyboardInterrupt):
            registry.load_rules()
    finally:
        registry.load_rules.cache_clear()


@pytest.mark.slow
def test_plugin_passes_the_conformance_suite(plugin_env):
    code = "from dataaudit.testing import check_rule; from dataaudit_fake_plugin import ShoutingText; check_rule(ShoutingText); print('ok')"
    out = subprocess.run(
        [sys.executable, "-c", code], env=plugin_env, capture_output=True, text=True
    )
    assert out.stdout.strip() == "ok", out.stderr

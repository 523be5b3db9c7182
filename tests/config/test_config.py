"""Rule selection (ruff-style), packs, pyproject, and validation errors that list valid values."""

from __future__ import annotations

import pytest

from dataaudit import audit
from dataaudit.config import available_packs, load_config
from dataaudit.errors import ConfigError
from dataaudit.registry import load_rules, select_rules

ROWS = [{"text": "hello there"}, {"text": ""}]


def codes(select=None, extend=None, ignore=None):
    return [c.code for c in select_rules(load_rules(), select, extend, ignore)]


def test_selection_specificity_and_ties():
    all_txt = codes(["TXT"])
    assert all_txt and all(c.startswith("TXT") for c in all_txt)
    assert "TXT002" not in codes(["TXT"], ignore=["TXT002"])
    assert codes(["TXT002"], ignore=["TXT"]) == [
        "TXT002"
    ]  # the code is more specific than the prefix
    assert codes(["TXT002"], ignore=["TXT002"]) == []  # ignore wins ties
    assert codes(["content.empty-text"]) == ["TXT001"]  # by name
    assert set(codes(["content"])) == set(all_txt)  # by group
    assert "FMT001" in codes(None, extend=None) and "FMT001" in codes(["TXT"], extend=["FMT"])
    assert codes(["ALL"], ignore=["default"]) == [
        c.code for c in load_rules().rules.values() if "default" not in c.groups and c.stable
    ]


def test_unknown_selector_lists_valid_ones():
    with pytest.raises(ConfigError, match=r"'TXT0099' matches no rule.*Did you mean"):
        codes(["TXT0099"])
    with pytest.raises(ConfigError, match="content"):
        codes(["contnet"])


def test_unknown_option_value_and_key_are_errors():
    with pytest.raises(
        ConfigError, match=r"no option 'max_char'.*Did you mean 'max_chars'.*Its options"
    ):
        audit(ROWS, rules={"TXT003": {"max_char": 5}})
    with pytest.raises(ConfigError, match=r"TXT003.max_chars='many'"):
        audit(ROWS, rules={"TXT003": {"max_chars": "many"}})
    with pytest.raises(ConfigError, match="min_chars"):
        audit(ROWS, rules={"TXT003": {"min_chars": -1}})
    with pytest.raises(ConfigError, match="'TXT999' is not a rule"):
        audit(ROWS, rules={"TXT999": {}})
    with pytest.raises(ConfigError, match="not a severity"):
        audit(ROWS, rules={"TXT001": {"severity": "fatal"}})
    with pytest.raises(ConfigError, match=r"unknown key 'selct'.*Did you mean 'select'"):
        load_config({"selct": ["TXT"]})
    with pytest.raises(ConfigError, match="fail_on"):
        audit(ROWS, fail_on="sometimes")


def test_packs_by_name_and_from_files(tmp_path):
    assert "default" in available_packs()
    assert load_config("default").select == ["default"]
    pack = tmp_path / "strict.yaml"
    pack.write_text("extends: default\nfail_on: warn\nrules:\n  TXT003: {max_chars: 50}\n")
    cfg = load_config(pack)
    assert cfg.fail_on == "warn" and cfg.rules["TXT003"] == {"max_chars": 50, "min_chars": 3}
    assert not audit(ROWS, config=str(pack)).passed  # the empty row is a warn; fail_on=warn
    with pytest.raises(ConfigError, match="neither a file nor a rule pack"):
        load_config("defualt")


def test_pyproject_tool_table(tmp_path):
    py = tmp_path / "pyproject.toml"
    py.write_text(
        '[project]\nname = "x"\n\n[tool.dataaudit]\nselect = ["TXT001"]\nfail_on = "warn"\n'
    )
    report = audit(ROWS, config=str(py))
    assert [r["code"] for r in report.results] == ["INPUT001", "TXT001"]  # INPUT001 always runs
    assert not report.passed
    (tmp_path / "bad.toml").write_text("select = [\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(tmp_path / "bad.toml")


def test_pack_cycles_are_reported(tmp_path):
    (tmp_path / "a.yaml").write_text(f"extends: {tmp_path / 'b.yaml'}\n")
    (tmp_path / "b.yaml").write_text(f"extends: {tmp_path / 'a.yaml'}\n")
    with pytest.raises(ConfigError, match="cycle"):
        load_config(tmp_path / "a.yaml")


def test_resolved_config_and_hash_in_report():
    a = audit(ROWS, select=["TXT"]).data["config"]
    b = audit(ROWS, select=["TXT"], rules={"TXT003": {"max_chars": 10}}).data["config"]
    assert a["select"] == ["TXT"] and a["hash"] != b["hash"]


def test_a_pack_is_read_from_its_json_copy_while_its_yaml_is_unchanged(tmp_path, monkeypatch):
    """The YAML parser's import costs every audit ~0.01 s: a pack's parsed copy is kept as JSON,
    keyed by the YAML's bytes; an edited pack is parsed again, one JSON cannot hold as it is
    never copied."""
    import sys

    from dataaudit import _cache, config

    packs = tmp_path / "packs"
    packs.mkdir()
    monkeypatch.setattr(config, "pack_dir", lambda: packs)
    monkeypatch.setattr(_cache, "cache_file", lambda beside, name: tmp_path / name)
    (packs / "mine.yaml").write_text("select: [DUP002]\nrules:\n  DUP002: {threshold: 0.9}\n")
    first = config._read_pack("mine")
    assert first == {"select": ["DUP002"], "rules": {"DUP002": {"threshold": 0.9}}}
    assert (tmp_path / "pack-mine.json").is_file()
    monkeypatch.setitem(sys.modules, "yaml", None)  # importing it now fails
    assert config._read_pack("mine") == first
    monkeypatch.delitem(sys.modules, "yaml")
    (packs / "mine.yaml").write_text("select: [TXT001]\n")
    assert config._read_pack("mine") == {"select": ["TXT001"]}  # edited: parsed again
    (packs / "odd.yaml").write_text("rules:\n  1: x\n")  # an int key: JSON would make it "1"
    assert config._read_pack("odd") == {"rules": {1: "x"}}
    assert not (tmp_path / "pack-odd.json").exists()

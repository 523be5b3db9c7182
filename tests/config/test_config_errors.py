"""Config values are checked where they are written: every wrong type is a ConfigError naming the
source (file, "config dict", "audit() arguments") and the key; nothing is silently dropped."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataaudit import audit
from dataaudit.api import resolve_rules
from dataaudit.cli import main
from dataaudit.config import _KEYS, AuditConfig, load_config
from dataaudit.errors import ConfigError

ROWS = [{"text": "hello there"}, {"text": ""}]


@pytest.fixture()
def data(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "a good row"}\n{"text": ""}\n')
    return path


# -- pyproject discovery ---------------------------------------------------------------------------
def test_broken_pyproject_with_our_table_is_an_error_not_ignored(
    tmp_path, monkeypatch, data, capsys
):
    (tmp_path / "pyproject.toml").write_text('[tool.dataaudit]\nfail_on = "warn\n')
    monkeypatch.chdir(tmp_path)
    assert main(["audit", str(data), "-q"]) == 2
    err = capsys.readouterr().err
    assert "pyproject.toml" in err and "invalid TOML" in err and "line 2" in err


def test_broken_pyproject_that_is_not_ours_is_ignored(tmp_path, monkeypatch, data):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x\n')
    monkeypatch.chdir(tmp_path)
    assert main(["audit", str(data), "-q"]) == 0  # the default config: the empty row is a warn


def test_pyproject_table_of_the_wrong_type(tmp_path, monkeypatch, data, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool]\ndataaudit = "warn"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["audit", str(data), "-q"]) == 2
    assert "tool.dataaudit must be a table" in capsys.readouterr().err


def test_pyproject_values_are_checked_with_the_file_named(tmp_path, monkeypatch, data, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.dataaudit]\nseed = 1.5\n")
    monkeypatch.chdir(tmp_path)
    assert main(["audit", str(data), "-q"]) == 2
    err = capsys.readouterr().err
    assert "pyproject.toml: seed=1.5: expected a non-negative integer" in err


# -- extends ---------------------------------------------------------------------------------------
def test_extends_resolves_against_the_including_file(tmp_path, monkeypatch):
    conf = tmp_path / "conf"
    (conf / "team").mkdir(parents=True)
    (conf / "base.yaml").write_text("extends: default\nfail_on: warn\n")
    (conf / "team" / "child.yaml").write_text("extends: ../base.yaml\nignore: [TXT003]\n")
    (conf / "child.yaml").write_text("extends: base.yaml\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the working directory has no base.yaml
    cfg = load_config(str(conf / "team" / "child.yaml"))
    assert cfg.fail_on == "warn" and cfg.ignore == ["TXT003"] and cfg.select == ["default"]
    assert load_config(str(conf / "child.yaml")).fail_on == "warn"


def test_extends_missing_file_names_where_it_looked(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "base.yaml").write_text("fail_on: warn\n")  # in the cwd, not beside the child
    (tmp_path / "sub" / "child.yaml").write_text("extends: base.yaml\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"sub/base.yaml: config file not found \(relative to"):
        load_config("sub/child.yaml")


def test_extends_cycle_through_relative_paths(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: ./a.yaml\n")
    with pytest.raises(ConfigError, match="cycle"):
        load_config(tmp_path / "a.yaml")


# -- types of every field --------------------------------------------------------------------------
BAD = [
    ("rules: {DUP002: 5}\n", "rules.DUP002=5: expected a mapping of options"),
    ("rules: [DUP002]\n", "rules=['DUP002']: expected a mapping of rule code"),
    ("rules: {DUP002: {1: 2}}\n", "option name 1 is not a string"),
    ("columns: text\n", "columns='text': expected a mapping of role to column"),
    ("columns: {lable: y}\n", "'lable' is not a column role. Did you mean 'label'"),
    ("columns: {label: 3}\n", "columns.label=3: expected a column name"),
    ("seed: abc\n", "seed='abc': expected a non-negative integer"),
    ("seed: 1.5\n", "seed=1.5: expected a non-negative integer"),
    ("seed: true\n", "seed=True: expected a non-negative integer"),
    ("seed: -1\n", "seed=-1: expected a non-negative integer"),
    ("workers: 0\n", "workers=0: expected a positive integer"),
    ("batch_size: '100'\n", "batch_size='100': expected a positive integer"),
    ("contamination_ref: [a.jsonl, 3]\n", "contamination_ref: item 3 is not a benchmark file"),
    ("contamination_ref: {a: b}\n", "contamination_ref={'a': 'b'}: expected a list"),
    ("tokenizer: [a, b]\n", "tokenizer=['a', 'b']: expected a string or nothing"),
    ("tokenizer: 5\n", "tokenizer=5: expected a string"),
    ("reference: {a: 1}\n", "reference={'a': 1}: expected a string"),
    ("split: 7\n", "split=7: expected a string"),
    ("split: ''\n", "split='': expected a string"),
    ("select: 5\n", "select=5: expected a list of rule codes"),
    ("ignore: [TXT001, [x]]\n", "ignore: item ['x'] is not a rule code"),
    ("fail_on: 5\n", "fail_on=5 is not a severity"),
    ("fail_on: info\n", "fail_on='info' would fail on every note"),
    ("extends: [a, b]\n", "extends=['a', 'b']: expected one pack name"),
    ("require_rules: 5\n", "require_rules=5: expected a list"),
    ("require_roles: [lable]\n", "'lable' is not a column role. Did you mean 'label'"),
    ("1: x\n", "unknown key '1'"),
]


@pytest.mark.parametrize(("text", "needle"), BAD)
def test_wrong_types_in_a_file_name_the_file_and_key(tmp_path, text, needle):
    path = tmp_path / "my.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: "), str(info.value)
    assert needle in str(info.value)


@pytest.mark.parametrize(("text", "needle"), BAD[:5])
def test_wrong_types_in_a_parent_name_the_parent(tmp_path, text, needle):
    (tmp_path / "base.yaml").write_text(text)
    (tmp_path / "child.yaml").write_text("extends: base.yaml\n")
    with pytest.raises(ConfigError, match=str(tmp_path / "base.yaml")):
        load_config(tmp_path / "child.yaml")


def test_wrong_types_in_a_dict_and_in_arguments():
    with pytest.raises(ConfigError, match=r"^config dict: seed='1': expected"):
        load_config({"seed": "1"})
    with pytest.raises(ConfigError, match=r"^audit\(\) arguments: seed=0.5"):
        audit(ROWS, seed=0.5)
    with pytest.raises(ConfigError, match=r"^audit\(\) arguments: rules.TXT003=5"):
        audit(ROWS, rules={"TXT003": 5})
    with pytest.raises(ConfigError, match=r"^AuditConfig: workers=-2"):
        load_config(AuditConfig(workers=-2))


def test_one_contamination_file_is_one_item_not_characters(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("contamination_ref: bench/mmlu.jsonl\n")
    assert load_config(path).contamination_ref == ["bench/mmlu.jsonl"]
    assert load_config({"contamination_ref": "x.jsonl"}).contamination_ref == ["x.jsonl"]


def test_null_option_only_where_the_rule_allows_it():
    with pytest.raises(ConfigError, match=r"TXT003.max_chars=None: expected a value like"):
        audit(ROWS, rules={"TXT003": {"max_chars": None}})
    with pytest.raises(ConfigError, match=r"TXT003.max_chars=5.5"):
        audit(ROWS, rules={"TXT003": {"max_chars": 5.5}})
    audit(ROWS, select=["LEN001"], rules={"LEN001": {"max_seq_len": None}})  # int | None


def test_non_utf8_yaml_is_a_config_error(tmp_path, data, capsys):
    path = tmp_path / "latin.yaml"
    path.write_bytes("# caf\xe9\nfail_on: warn\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"latin.yaml: not UTF-8 text \(byte 5 is 0xe9\)"):
        load_config(path)
    assert main(["audit", str(data), "--config", str(path), "-q"]) == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_deeply_nested_yaml_is_a_config_error(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("rules: " + "[" * 20000 + "]" * 20000 + "\n")
    with pytest.raises(ConfigError, match="deep.yaml"):
        load_config(path)


@pytest.mark.parametrize(
    "option", ["DUP002.threshold=[1,", "DUP002.threshold={a", "TXT003.max_chars=*x"]
)
def test_option_values_that_do_not_parse_exit_2(data, capsys, option):
    assert main(["audit", str(data), "--option", option, "-q"]) == 2
    err = capsys.readouterr().err
    assert f"--option {option!r}" in err and "not valid YAML" in err


# -- property: any config is loaded or refused with a ConfigError, never a crash -------------------
_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 10**6)
    | st.floats(allow_nan=True)
    | st.text(max_size=8)
    | st.sampled_from(["TXT", "TXT003", "default", "warn", "label", "max_chars", "ALL"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.text(max_size=6) | st.sampled_from(["TXT003", "max_chars", "severity", "label"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=8,
)
_config = st.dictionaries(
    st.sampled_from(sorted(k for k in _KEYS if k != "extends")) | st.text(max_size=6),
    _value,
    max_size=5,
)


@settings(max_examples=400, deadline=None)
@given(_config)
def test_any_config_dict_is_loaded_or_refused_cleanly(data):
    try:
        config = load_config(data)
        resolve_rules(config)  # rule codes, selectors and every rule's options
    except ConfigError as exc:
        assert str(exc)
        return
    assert isinstance(config.seed, int) and isinstance(config.rules, dict)
    assert all(isinstance(v, str) for v in config.contamination_ref)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=80))
def test_any_yaml_text_is_loaded_or_refused_cleanly(tmp_path, text):
    path = tmp_path / "fuzz.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        load_config(path)
    except ConfigError as exc:
        assert str(exc).startswith(str(path))

"""A tokenizer given as a local path that does not exist fails at once with a hint; it is never
looked up on the Hugging Face Hub (a typo in a path must not turn into a download)."""

from __future__ import annotations

import pytest

from dataaudit.cli import main
from dataaudit.resources import tokenizer as tk
from dataaudit.resources.tokenizer import TokenizerError, resolve_tokenizer


@pytest.fixture()
def no_hub(monkeypatch):
    from tokenizers import Tokenizer

    def never(*a, **k):
        raise AssertionError("a local path was looked up on the Hub")

    monkeypatch.setattr(tk, "_cached_hub_file", never)
    monkeypatch.setattr(tk, "_hub_reachable", never)
    monkeypatch.setattr(Tokenizer, "from_pretrained", staticmethod(never))


@pytest.mark.parametrize(
    "spec",
    [
        "./tok.json",
        "tok.json",
        "TOK.JSON",
        "~/no-such-dir/tok.json",
        "../tok",
        ".",
        "a/b/c",
        "a//b",
    ],
)
def test_path_like_specs_are_never_looked_up_on_the_hub(tmp_path, monkeypatch, no_hub, spec):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TokenizerError, match="no such file|has no tokenizer.json"):
        resolve_tokenizer(spec)


def test_absolute_path_and_close_match_hint(tmp_path, no_hub):
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(TokenizerError) as info:
        resolve_tokenizer(str(tmp_path / "tokenzier.json"))
    msg = str(info.value)
    assert "not found: no such file or folder" in msg and "Did you mean 'tokenizer.json'" in msg
    with pytest.raises(TokenizerError, match=r"the folder .*nope does not exist either"):
        resolve_tokenizer(str(tmp_path / "nope" / "tokenizer.json"))


def test_org_slash_name_is_a_path_when_its_first_folder_exists(tmp_path, monkeypatch, no_hub):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "tok-v1").mkdir()
    with pytest.raises(TokenizerError, match=r"models/tok not found.*Did you mean 'tok-v1'"):
        resolve_tokenizer("models/tok")
    with pytest.raises(TokenizerError, match=r"the folder models/tok-v1 has no tokenizer.json"):
        resolve_tokenizer("models/tok-v1")


def test_hub_names_still_go_to_the_cache(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    asked = []
    monkeypatch.setattr(tk, "_cached_hub_file", lambda repo: asked.append(repo))
    monkeypatch.setattr(tk, "_hub_reachable", lambda host="huggingface.co": False)
    for name in ("gpt2", "openai-community/gpt2"):
        with pytest.raises(TokenizerError, match="not in the local Hugging Face cache"):
            resolve_tokenizer(name)
    assert asked == ["gpt2", "openai-community/gpt2"]


def test_cli_missing_tokenizer_path_is_exit_2(tmp_path, monkeypatch, capsys, no_hub):
    data = tmp_path / "train.jsonl"
    data.write_text('{"text": "a b c"}\n')
    monkeypatch.chdir(tmp_path)
    assert main(["audit", str(data), "--tokenizer", "./tok.json", "-q"]) == 2
    err = capsys.readouterr().err
    assert "tokenizer: ./tok.json not found: no such file" in err and "Traceback" not in err

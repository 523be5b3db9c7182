from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.errors import DataAuditError
from dataaudit.resources.tokenizer import TokenizerError, resolve_tokenizer


def test_tokenizer_object_path_and_duck_typed_agree(bpe, bpe_path):
    a = resolve_tokenizer(bpe)
    b = resolve_tokenizer(str(bpe_path))
    c = resolve_tokenizer(bpe_path.parent)  # a folder holding tokenizer.json

    class FastTokenizer:  # what transformers' fast tokenizers look like, duck-typed
        backend_tokenizer = bpe
        name_or_path = "tiny"

    d = resolve_tokenizer(FastTokenizer())
    assert a.key == b.key == c.key == d.key
    assert a.unit == "tokens"
    texts = pa.array(["the function returns None", None, ""], pa.large_string())
    ids, lengths = a.encode(texts)
    expected = [len(e) for e in bpe.encode_batch(["the function returns None"])]
    assert lengths.tolist() == [expected[0], -1, 0]
    assert ids.size == expected[0]


def test_truncation_on_the_callers_tokenizer_is_ignored_and_untouched(bpe):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(bpe.to_str())
    tok.enable_truncation(max_length=3)
    handle = resolve_tokenizer(tok)
    _, lengths = handle.encode(pa.array(["one two three four five six seven eight"]))
    assert lengths[0] > 3  # full length, not the caller's truncation
    assert tok.truncation is not None and tok.truncation["max_length"] == 3


def test_word_fallback_is_labelled_words():
    h = resolve_tokenizer(None)
    assert h.unit == "words" and h.tokenizer is None
    ids, lengths = h.encode(pa.array(["a b  c", None, "", "a"], pa.large_string()))
    assert lengths.tolist() == [3, -1, 0, 1]
    assert ids[0] == ids[3] and len(set(ids[:3].tolist())) == 3
    _, _, (buckets, words) = h.encode_named(pa.array(["b a", "a c"], pa.large_string()))
    assert words == ["b", "a", "c"] and buckets[1] == ids[0]  # first occurrence first


def test_missing_file_and_bad_objects_are_clear_errors(tmp_path):
    with pytest.raises(TokenizerError, match="not found"):
        resolve_tokenizer(str(tmp_path / "nope" / "tokenizer.json"))
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(TokenizerError, match="not a valid tokenizer.json"):
        resolve_tokenizer(str(bad))
    with pytest.raises(TokenizerError, match="not supported"):
        resolve_tokenizer(42)
    assert issubclass(TokenizerError, DataAuditError)


def test_hub_name_offline_says_pass_a_local_file(monkeypatch):
    from tokenizers import Tokenizer

    def offline(name, *a, **k):
        raise RuntimeError("error sending request for url (https://huggingface.co/...)")

    monkeypatch.setattr(Tokenizer, "from_pretrained", staticmethod(offline))
    with pytest.raises(TokenizerError, match="pass a local file"):
        resolve_tokenizer("some-org/some-model")


def test_audit_rejects_an_unloadable_tokenizer_before_scanning(tmp_path):
    from dataaudit import audit

    with pytest.raises(TokenizerError):
        audit([{"text": "a b c"}], tokenizer=str(tmp_path / "missing.json"))


def test_unknown_table_marks_unk(bpe):
    h = resolve_tokenizer(bpe)
    assert h.can_produce_unknown
    unk = bpe.token_to_id("[UNK]")
    assert h.unknown_table[unk] and h.unknown_table.sum() == 1
    ids, _ = h.encode(pa.array(["the 💥 function"]))
    assert np.any(h.unknown_table[ids])


def test_hub_name_uses_the_local_cache_and_fails_fast_offline(monkeypatch, bpe_path):
    from dataaudit.resources import tokenizer as tk

    def never(*a, **k):
        raise AssertionError("must not go to the network")

    monkeypatch.setattr(tk, "_hub_reachable", lambda host="huggingface.co": False)
    monkeypatch.setattr(tk, "_cached_hub_file", lambda repo, name="tokenizer.json": None)
    from tokenizers import Tokenizer

    monkeypatch.setattr(Tokenizer, "from_pretrained", staticmethod(never))
    with pytest.raises(TokenizerError, match="not in the local Hugging Face cache"):
        resolve_tokenizer("some-org/some-model")
    monkeypatch.setattr(tk, "_cached_hub_file", lambda repo, name="tokenizer.json": str(bpe_path))
    assert resolve_tokenizer("some-org/some-model") is not None

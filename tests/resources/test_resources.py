"""What audit() resolves once reaches rules and features as typed, picklable resources."""

from __future__ import annotations

import json
import pickle
import shutil

import pyarrow as pa
import pytest

from dataaudit import audit
from dataaudit.cli import main
from dataaudit.context import AuditContext
from dataaudit.corpus import load_corpus
from dataaudit.errors import InputError
from dataaudit.features import Batch
from dataaudit.resources import Resources, resolve_resources
from dataaudit.resources.tokenizer import resolve_tokenizer
from dataaudit.rule import Roles
from dataaudit.rules.leakage.contamination import NgramContamination
from dataaudit.testing._io_guard import record_io

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
)
TEXTS = ["the function returns None", "a zebra quietly xylophones", None, ""]


def test_a_tokenizer_travels_whole_and_never_reads_its_files_again(bpe, tmp_path):
    folder = tmp_path / "tok"
    folder.mkdir()
    bpe.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": CHATML}))
    handle = resolve_tokenizer(str(folder / "tokenizer.json"))
    blob = pickle.dumps(Resources(tokenizer=handle), protocol=pickle.HIGHEST_PROTOCOL)
    shutil.rmtree(folder)  # what a worker process gets must be enough on its own
    with record_io() as seen:
        back = pickle.loads(blob).tokenizer
    assert not seen.events, seen.describe()
    texts = pa.array(TEXTS, pa.large_string())
    ids, lengths = handle.encode(texts)
    ids2, lengths2 = back.encode(texts)
    assert ids.tolist() == ids2.tolist() and lengths.tolist() == lengths2.tolist()
    assert back.key == handle.key and back.describe() == handle.describe()
    assert back.unknown_table.tolist() == handle.unknown_table.tolist()
    chat = [{"role": "user", "content": "hi"}]
    assert back.chat_template.render(chat) == handle.chat_template.render(chat)


def test_features_find_the_tokenizer_in_the_batch_resources(bpe):
    resources = Resources(tokenizer=resolve_tokenizer(bpe))
    key = resources.tokenizer.key
    rb = pa.RecordBatch.from_pylist([{"text": t} for t in TEXTS])
    batch = Batch("train", rb, 0, Roles(text="text"), resources=resources)
    _, expected = resources.tokenizer.encode(rb.column(0))
    assert batch.feature("token_lengths", tokenizer=key).tolist() == expected.tolist()
    # a batch built without the audit's resources has only the word fallback, and says so
    bare = Batch("train", rb, 0, Roles(text="text"))
    assert bare.feature("token_lengths", tokenizer="words").tolist() == [4, 4, -1, 0]
    with pytest.raises(LookupError, match="not this audit's tokenizer"):
        bare.feature("tokens", tokenizer=key)


def _bench_context(tmp_path, rows: list[dict]) -> AuditContext:
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    corpus = load_corpus({"train": [{"text": "a b c"}], "test": [{"text": "d e f"}]})
    resources = resolve_resources(contamination_ref=[bench])
    return AuditContext.from_corpus(corpus, resources=resources)


def test_benchmarks_are_hashed_once_and_workers_get_them_hashed(tmp_path, monkeypatch):
    long = " ".join(f"w{i}" for i in range(20))
    ctx = _bench_context(tmp_path, [{"text": long}, {"text": "too short"}])
    (bench,) = ctx.resources.benchmarks
    assert (bench.name, bench.rows) == ("bench.jsonl", 2)
    rule = NgramContamination(ngram=13)
    rule.start(ctx)
    hashes, owner = bench.ngrams(13)
    assert len(hashes) == 8 and set(owner.tolist()) == {0}  # 20 words: 8 13-grams of item 0

    def hashed_again(*args, **kwargs):
        raise AssertionError("the benchmark was hashed again")

    monkeypatch.setattr("dataaudit.features.minhash.ngram_hashes", hashed_again)
    shipped = pickle.loads(pickle.dumps(ctx))  # as the parallel engine sends the context
    with record_io() as seen:
        state = rule.start(shipped)  # once per chunk in each worker: no I/O, no hashing
    assert not seen.events, seen.describe()
    assert state["origin"]["benchmarks"] == [("bench.jsonl", 2)]


def test_a_benchmark_file_that_cannot_be_read_stops_the_audit_before_the_scan(tmp_path, capsys):
    rows = {"train": [{"text": "a b c"}], "test": [{"text": "d e f"}]}
    with pytest.raises(InputError, match=r"contamination_ref: .*nope\.jsonl: cannot read"):
        audit(rows, contamination_ref=[str(tmp_path / "nope.jsonl")])
    numbers = tmp_path / "numbers.jsonl"
    numbers.write_text('{"n": 1}\n')
    with pytest.raises(InputError, match=r"numbers\.jsonl: no text column"):
        audit(rows, select=["DUP001"], contamination_ref=[str(numbers)])
    data = tmp_path / "train.jsonl"
    data.write_text('{"text": "a b c"}\n')
    assert main(["audit", str(data), "--contamination-ref", str(numbers), "--no-progress"]) == 2
    assert "no text column" in capsys.readouterr().err

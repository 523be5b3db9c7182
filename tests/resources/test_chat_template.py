"""Chat rows are measured through the tokenizer's chat template, and the report says which."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataaudit import audit
from dataaudit.resources.chat_template import ChatTemplate, TemplateRejected

# ChatML, as many tokenizer_config.json files carry it; it refuses roles it does not know
CHATML = (
    "{% for m in messages %}"
    "{% if m['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('unknown role ' + m['role']) }}{% endif %}"
    "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def chat(user: str, reply: str, role: str = "user") -> dict:
    return {"messages": [{"role": role, "content": user}, {"role": "assistant", "content": reply}]}


ROWS = [chat(f"Please summarise paragraph {i} of the report.", "It is short.") for i in range(30)]


@pytest.fixture
def templated_tokenizer(bpe, tmp_path) -> Path:
    from tokenizers import AddedToken

    tok = bpe.__class__.from_str(bpe.to_str())
    tok.add_special_tokens([AddedToken("<|im_start|>"), AddedToken("<|im_end|>")])
    folder = tmp_path / "tok"
    folder.mkdir()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"chat_template": CHATML, "eos_token": "<|im_end|>"})
    )
    return folder / "tokenizer.json"


def test_template_renders_like_transformers_and_refuses_what_it_refuses():
    template = ChatTemplate("test", CHATML)
    text = template.render(ROWS[0]["messages"])
    assert text.startswith("<|im_start|>user\nPlease summarise") and text.endswith("<|im_end|>\n")
    prompt = template.render(ROWS[0]["messages"][:1], add_generation_prompt=True)
    assert prompt.endswith("<|im_start|>assistant\n")
    with pytest.raises(TemplateRejected, match="unknown role tool"):
        template.render(chat("x", "y", role="tool")["messages"])
    # ShareGPT turns are read as role/content
    sharegpt = [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]
    assert "<|im_start|>assistant\nhello" in template.render(sharegpt)


def test_lengths_use_the_template_and_the_report_says_so(bpe_path, templated_tokenizer):
    options = {"LEN001": {"max_seq_len": 12}}
    plain = audit(ROWS, select=["LEN001"], rules=options, tokenizer=str(bpe_path))
    templated = audit(ROWS, select=["LEN001"], rules=options, tokenizer=str(templated_tokenizer))
    assert "no chat template" in plain.result("LEN001")["details"]["measured_on"]
    details = templated.result("LEN001")["details"]
    assert "tokenizer_config.json" in details["measured_on"]
    # the template's role headers and markers make every row longer than the plain rendering
    assert templated.metric("LEN001", "tokens_lost", "train") > plain.metric(
        "LEN001", "tokens_lost", "train"
    )
    tok = templated.data["resources"]["tokenizer"]
    assert tok["chat_template"]["source"].endswith("tokenizer_config.json (chat_template)")
    assert tok["vocab_size"] > 600 and tok["hash"].startswith("tok-")
    assert plain.data["resources"]["tokenizer"]["chat_template"] is None
    assert audit(ROWS, select=["TXT001"]).data["resources"]["tokenizer"] is None


def test_rows_the_template_rejects_are_reported(templated_tokenizer):
    rows = ROWS[:10] + [chat("call the weather tool", "ok", role="tool")]
    report = audit(
        rows,
        select=["LEN001"],
        rules={"LEN001": {"max_seq_len": 4096}},
        tokenizer=str(templated_tokenizer),
    )
    (finding,) = [f for f in report.result("LEN001")["findings"] if "rejects" in f["message"]]
    assert finding["count"] == 1 and "unknown role tool" in finding["message"]
    assert finding["examples"][0]["row"] == 10
    assert report.metric("LEN001", "template_rejected_rows", "train") == 1


def test_a_template_that_does_not_compile_is_a_usage_error(bpe, tmp_path):
    from dataaudit.errors import DataAuditError

    bpe.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{% for %}"}))
    with pytest.raises(DataAuditError, match="does not compile"):
        audit(
            ROWS, select=["LEN001"], rules={"LEN001": {"max_seq_len": 64}}, tokenizer=str(tmp_path)
        )


def test_templates_are_sandboxed_and_dated_reproducibly():
    hostile = ChatTemplate("test", "{{ messages.__class__.__mro__ }}")
    with pytest.raises(TemplateRejected):
        hostile.render([{"role": "user", "content": "x"}])
    dated = ChatTemplate("test", "{{ strftime_now('%d %b %Y') }}")
    assert dated.render([]) == "01 Jan 2024"

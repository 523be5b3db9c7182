"""A ChatML tokenizer built in-process (no hub): byte-level BPE trained on fixture text, the
special tokens <|im_start|> / <|im_end|>, and a chat template saved beside it as
``save_pretrained`` would."""

from __future__ import annotations

import json
from pathlib import Path

from tests import ROOT

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def _texts() -> list[str]:
    out = []
    for path in sorted((ROOT / "fixtures" / "chat_sft").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            for m in json.loads(line)["messages"]:
                if isinstance(m.get("content"), str):
                    out.append(m["content"])
    return out


def chatml_tokenizer(folder: Path, *, lowercase: bool = False, template: bool = True) -> Path:
    """Write ``tokenizer.json`` (and ``tokenizer_config.json`` with the chat template) into
    ``folder``; ``lowercase`` adds a lowercasing normalizer (a lossy round trip)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_texts(), trainer)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    if template:
        config = {"chat_template": CHATML, "eos_token": "<|im_end|>", "bos_token": None}
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder / "tokenizer.json"

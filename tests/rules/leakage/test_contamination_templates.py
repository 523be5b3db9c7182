"""LEAK002 and templates: a system prompt every row shares is not a leak, a copied answer is."""

from __future__ import annotations

import random

import dataaudit

SYSTEM = "You are a careful assistant for a hardware store. Answer in two sentences and be polite."
WORDS = [
    "anvil",
    "bracket",
    "chisel",
    "dowel",
    "epoxy",
    "flange",
    "gasket",
    "hinge",
    "inlay",
    "joist",
    "kerf",
    "lathe",
    "mallet",
    "nozzle",
    "orbital",
    "plinth",
    "quoin",
    "rasp",
    "shim",
    "tenon",
    "umber",
    "vise",
    "washer",
    "xylene",
    "yoke",
    "zinc",
]


def _chat(rng: random.Random, answer: str | None = None) -> dict:
    question = " ".join(rng.choice(WORDS) for _ in range(8))
    answer = answer or " ".join(rng.choice(WORDS) for _ in range(40))
    return {
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Tell me about {question}"},
            {"role": "assistant", "content": answer},
        ]
    }


def _data(leaks: int) -> dict[str, list[dict]]:
    rng = random.Random(7)
    train = [_chat(rng) for _ in range(400)]
    test = [_chat(rng) for _ in range(120)]
    for i in range(leaks):  # the answer of a train row, asked differently
        test[i] = _chat(rng, train[i]["messages"][2]["content"])
    return {"train": train, "test": test}


def _leak002(data: dict, **options) -> dict:
    report = dataaudit.audit(
        data, select=["LEAK002"], rules={"LEAK002": options} if options else None
    )
    (res,) = [r for r in report.to_dict()["results"] if r["code"] == "LEAK002"]
    return res


def _rows(res: dict) -> int:
    return next(m["value"] for m in res["metrics"] if m["name"] == "contaminated_rows")


def test_a_shared_system_prompt_is_a_template_not_a_leak():
    res = _leak002(_data(0))
    assert _rows(res) == 0 and res["status"] == "pass"
    (note,) = res["findings"]
    assert note["severity"] == "info" and "template" in note["message"]
    assert "120 distinct rows" in note["message"]


def test_copied_answers_are_found_exactly_beside_the_template():
    res = _leak002(_data(6))
    assert _rows(res) == 6
    (leak,) = [f for f in res["findings"] if f["severity"] == "warn"]
    assert leak["data"]["rows"] == [0, 1, 2, 3, 4, 5]


def test_template_share_1_counts_every_ngram():
    res = _leak002(_data(0), template_share=1)
    assert _rows(res) == 120  # every row shares the system prompt with train

"""SFT structure and JSON rules (FMT002 + FMT003) against parsing the JSON alone, on real text.

Text: paragraphs of the Python 3.11 documentation sources (``apt-get install -y python3.11-doc``),
assembled into chats: plain question/answer rows (some with a system turn, some two-turn), rows
that call a ``search_docs`` tool (OpenAI ``tool_calls`` with a ``tool`` result, every row
declaring its tools) and JSON targets (replies to "Respond in JSON ..." prompts). The JSONL file
is written first (not timed).

Timed, side by side in one process, each ``--repeat`` times (the best is printed; the machine
is shared, so the ratio of the two, measured back to back, is the number to read):

  * json: read the file and ``json.loads`` every line — parsing the JSON alone;
  * rules: what FMT002 and FMT003 cost inside ``audit(select=["FMT002", "FMT003"])``: their
    update and finish phases plus the shared features they asked for (the messages parsed from
    Arrow), from the report's timings;
  * audit: the whole ``audit()`` call (reading the file into Arrow, role detection, the scan).

    python bench/bench_sft.py              # 100k rows
    python bench/bench_sft.py --rows 20000
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

PY_DOCS = Path("/usr/share/doc/python3.11-doc/html/_sources")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_docs",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "section": {"type": "string", "enum": ["faq", "howto", "library", "tutorial"]},
                },
                "required": ["query"],
            },
        },
    }
]


def paragraphs() -> list[tuple[str, str]]:
    """(document, paragraph) of prose paragraphs, 20-150 words."""
    if not PY_DOCS.is_dir():
        sys.exit(f"{PY_DOCS} is missing: apt-get install -y python3.11-doc")
    out = []
    for path in sorted(PY_DOCS.rglob("*.rst.txt")):
        doc = str(path.relative_to(PY_DOCS))[: -len(".rst.txt")]
        for para in path.read_text(encoding="utf-8", errors="replace").split("\n\n"):
            text = " ".join(para.split())
            if 20 <= len(text.split()) <= 150 and not re.match(r"^[.:=*\-#`|+]", text):
                out.append((doc, text))
    return out


def chats(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    paras = paragraphs()
    rows = []
    for i in range(n):
        doc, text = paras[rng.randrange(len(paras))]
        section = doc.split("/")[0]
        kind = i % 10
        if kind < 2:
            cid = f"call_{i}"
            args = {
                "query": doc.rsplit("/", 1)[-1],
                "section": section
                if section in ("faq", "howto", "library", "tutorial")
                else "library",
            }
            msgs = [
                {"role": "user", "content": f"Find what the docs say in {doc}."},
                {"role": "assistant", "content": None, "tool_calls": [{"id": cid, "type": "function", "function": {"name": "search_docs", "arguments": json.dumps(args)}}]},
                {"role": "tool", "tool_call_id": cid, "content": json.dumps({"page": doc, "text": text})},
                {"role": "assistant", "content": text},
            ]  # fmt: skip
        elif kind == 2:
            msgs = [
                {"role": "user", "content": f"Summarize {doc}. Respond in JSON with the keys topic and summary."},
                {"role": "assistant", "content": json.dumps({"topic": doc, "summary": text})},
            ]  # fmt: skip
        else:
            msgs = (
                [{"role": "system", "content": "You answer from the Python docs."}]
                if kind == 3
                else []
            )
            msgs += [
                {"role": "user", "content": f"What does {doc} say?"},
                {"role": "assistant", "content": text},
            ]
            if kind == 4:
                doc2, text2 = paras[rng.randrange(len(paras))]
                msgs += [
                    {"role": "user", "content": f"And {doc2}?"},
                    {"role": "assistant", "content": text2},
                ]
        rows.append({"id": f"r{i}", "messages": msgs, "tools": TOOLS})
    return rows


def time_json(path: Path) -> float:
    t0 = time.perf_counter()
    with path.open(encoding="utf-8") as f:
        for line in f:
            json.loads(line)
    return time.perf_counter() - t0


def time_rules(path: Path) -> tuple[float, float, dict]:
    from dataaudit import audit

    t0 = time.perf_counter()
    report = audit(str(path), select=["FMT002", "FMT003"])
    wall = time.perf_counter() - t0
    timings = report.to_dict()["timings"]
    rules = sum(
        sum(phases.values())
        for code, phases in timings["rules"].items()
        if code in ("FMT002", "FMT003")
    )
    features = timings["scan"].get("features", {})
    rules += sum(v for k, v in features.items() if k in ("messages", "text", "chat_turns"))
    flagged = {r["code"]: r["flagged_rows"] for r in report.to_dict()["results"]}
    return rules, wall, flagged


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = chats(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chats.jsonl"
        with path.open("w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        size = path.stat().st_size / 1e6
        print(f"{args.rows:,} chat rows, {size:.0f} MB of JSON Lines")
        best = {"json": float("inf"), "rules": float("inf"), "audit": float("inf")}
        ratios = []
        for k in range(args.repeat):
            j = time_json(path)
            r, wall, flagged = time_rules(path)
            best["json"], best["rules"], best["audit"] = (
                min(best["json"], j),
                min(best["rules"], r),
                min(best["audit"], wall),
            )
            ratios.append(r / j)
            print(
                f"  run {k + 1}: json.loads {j:.2f} s | FMT002+FMT003 {r:.2f} s ({r / j:.2f}x) | audit() {wall:.2f} s ({wall / j:.2f}x) | flagged {flagged}"
            )
        print(
            f"best: json.loads {best['json']:.2f} s, rules {best['rules']:.2f} s, audit() {best['audit']:.2f} s"
        )
        print(
            f"rules / json.loads: {best['rules'] / best['json']:.2f}x (per run: {', '.join(f'{x:.2f}' for x in ratios)}); audit() / json.loads: {best['audit'] / best['json']:.2f}x"
        )


if __name__ == "__main__":
    main()

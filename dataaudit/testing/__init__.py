"""Conformance checks every rule passes, built-in or plugin (like scikit-learn's estimator checks).

    from dataaudit.testing import check_rule
    check_rule(MyRule)               # raises AssertionError naming the broken contract

Checks: options stored verbatim; the docstring has its sections; empty input finishes;
``merge(start, s) == s`` both ways; splitting the batches into shards and merging equals one pass
(and merging is associative); rules do not mutate the batch or the shared features they read.
"""

from __future__ import annotations

import inspect
import json
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import asdict
from typing import Any

import pyarrow as pa

from ..context import AuditContext
from ..corpus import Corpus, load_corpus
from ..features import Batch
from ..rule import Rule, RuleResult

__all__ = ["CHECKS", "check_rule", "rule_checks", "sample_corpus", "sample_data"]

DOC_SECTIONS = ("What it does", "Why it matters", "Example", "Options")

_WORDS = [
    "the",
    "model",
    "reads",
    "every",
    "token",
    "of",
    "the",
    "corpus",
    "before",
    "training",
    "starts",
    "and",
    "a",
    "small",
    "error",
    "in",
    "the",
    "data",
    "becomes",
    "a",
    "large",
    "error",
    "in",
    "the",
    "weights",
    "because",
    "duplicated",
    "samples",
    "count",
    "twice",
    "while",
    "leaked",
    "test",
    "rows",
    "make",
    "evaluation",
    "scores",
    "look",
    "better",
    "than",
    "the",
    "model",
    "really",
    "is",
    "so",
    "engineers",
    "audit",
    "data",
    "early",
    "check",
    "labels",
    "sources",
    "lengths",
    "encodings",
    "and",
    "splits",
    "then",
    "fix",
    "the",
    "pipeline",
    "that",
    "produced",
    "the",
    "problem",
]


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def sample_data(kind: str = "classification", seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """A small deterministic corpus with planted duplicates, a leak, a conflict and an empty row."""
    rng = random.Random(seed)
    labels = ["alpha", "beta", "gamma"]
    splits: dict[str, list[dict[str, Any]]] = {}
    for name, n in (("train", 64), ("validation", 20), ("test", 20)):
        rows = []
        for i in range(n):
            text = _sentence(rng, rng.randint(8, 40))
            if kind == "chat":
                rows.append(
                    {
                        "id": f"{name}-{i}",
                        "messages": [
                            {"role": "user", "content": _sentence(rng, rng.randint(4, 12))},
                            {"role": "assistant", "content": text},
                        ],
                        "source": rng.choice(["web", "books"]),
                    }
                )
            else:
                rows.append(
                    {
                        "id": f"{name}-{i}",
                        "text": text,
                        "label": labels[(len(text) + i) % 3],
                        "source": rng.choice(["web", "books", "code"]),
                    }
                )
        splits[name] = rows
    train = splits["train"]
    train[5] = {**train[3], "id": "train-5"}  # exact duplicate
    train[7] = {**train[3], "id": "train-7"}
    if kind != "chat":
        train[9] = {
            **train[4],
            "id": "train-9",
            "label": "gamma" if train[4]["label"] != "gamma" else "beta",
        }
        words = train[10]["text"].split()
        words[len(words) // 2] = "changed"
        train[11] = {**train[10], "id": "train-11", "text": " ".join(words)}  # near duplicate
        train[12] = {**train[12], "text": "   "}
        splits["test"][2] = {**train[20], "id": "test-2"}  # leaked
    else:
        splits["test"][2] = {**train[20], "id": "test-2"}
    return splits


def sample_corpus(kind: str = "classification", seed: int = 0) -> Corpus:
    return load_corpus({k: v for k, v in sample_data(kind, seed).items()})


def _context(corpus: Corpus, seed: int = 0) -> AuditContext:
    return AuditContext.from_corpus(
        corpus,
        seed=seed,
        options={"tokenizer": None, "contamination_ref": [], "reference": None},
    )


def _batches(corpus: Corpus, batch_size: int) -> list[tuple[str, int, pa.RecordBatch]]:
    out, offsets = [], {}
    for split, rb in corpus.stream(batch_size):
        out.append((split, offsets.get(split, 0), rb))
        offsets[split] = offsets.get(split, 0) + rb.num_rows
    return out


def _fold(rule: Rule, ctx: AuditContext, batches, state=None) -> Any:
    state = rule.start(ctx) if state is None else state
    for split, offset, rb in batches:
        state = rule.update(state, Batch(split, rb, offset, ctx.roles, ctx.splits[split].kind))
    return state


def _canonical(result: RuleResult) -> Any:
    assert isinstance(result, RuleResult), (
        f"finish() returned {type(result).__name__}, not RuleResult"
    )
    return json.loads(json.dumps(asdict(result), sort_keys=True, default=str))


def _same(a: Any, b: Any, path: str = "result") -> None:
    if isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float)), (
            f"{path}: {a!r} != {b!r}"
        )
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            _same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{path}: {len(a)} items != {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _finish(rule: Rule, state: Any, ctx: AuditContext, counts: dict[str, int]) -> Any:
    for name, n in counts.items():
        ctx.splits[name].num_rows = n
    return _canonical(rule.finish(state, ctx))


def _setup(cls: type[Rule], options: dict[str, Any] | None, kind: str | None):
    rule = cls(**(options or {}))
    kinds = [kind] if kind else ["classification", "chat"]
    for k in kinds:
        corpus = sample_corpus(k)
        ctx = _context(corpus)
        if rule.skip_reason(ctx) is None:
            return rule, corpus, ctx
    return rule, corpus, ctx  # the last one; checks that need data will skip-check


# -- the checks --------------------------------------------------------------------------------


def check_options_stored_verbatim(cls: type[Rule], options=None, kind=None) -> None:
    specs = cls.option_specs()
    for name, spec in specs.items():
        assert spec.default is not inspect.Parameter.empty, (
            f"{cls.code}: option {name!r} needs a default so the rule runs unconfigured"
        )
    sentinel_values = {name: spec.default for name, spec in specs.items()}
    rule = cls(**sentinel_values)
    for name, value in sentinel_values.items():
        assert hasattr(rule, name), f"{cls.code}: option {name!r} is not stored as an attribute"
        assert getattr(rule, name) is value, (
            f"{cls.code}: option {name!r} is not stored verbatim (the constructor must only store options)"
        )
    for name, value in (options or {}).items():
        assert cls(**{name: value}).get_params()[name] is value


def check_docstring(cls: type[Rule], options=None, kind=None) -> None:
    doc = inspect.getdoc(cls) or ""
    missing = [s for s in DOC_SECTIONS if f"{s}:" not in doc]
    assert not missing, f"{cls.code}: docstring lacks section(s) {', '.join(missing)}"
    assert cls.name and cls.groups, f"{cls.code}: needs a name and at least one group"


def check_empty_input(cls: type[Rule], options=None, kind=None) -> None:
    rule, corpus, ctx = _setup(cls, options, kind)
    if rule.skip_reason(ctx) is not None:
        return
    _finish(rule, rule.start(ctx), ctx, {n: 0 for n in ctx.splits})


def check_merge_identity(cls: type[Rule], options=None, kind=None) -> None:
    rule, corpus, ctx = _setup(cls, options, kind)
    if rule.skip_reason(ctx) is not None:
        return
    batches = _batches(corpus, 16)
    counts = _counts(batches)
    full = _finish(rule, _fold(rule, ctx, batches), ctx, counts)
    left = _finish(rule, rule.merge(rule.start(ctx), _fold(rule, ctx, batches)), ctx, counts)
    right = _finish(rule, rule.merge(_fold(rule, ctx, batches), rule.start(ctx)), ctx, counts)
    _same(full, left, f"{cls.code} merge(start, s)")
    _same(full, right, f"{cls.code} merge(s, start)")


def _counts(batches) -> dict[str, int]:
    counts: dict[str, int] = {}
    for split, _, rb in batches:
        counts[split] = counts.get(split, 0) + rb.num_rows
    return counts


def check_split_and_merge(cls: type[Rule], options=None, kind=None) -> None:
    rule, corpus, ctx = _setup(cls, options, kind)
    if rule.skip_reason(ctx) is not None:
        return
    batches = _batches(corpus, 7)
    counts = _counts(batches)
    one_pass = _finish(rule, _fold(rule, ctx, batches), ctx, counts)
    a, b, c = (
        batches[: len(batches) // 3],
        batches[len(batches) // 3 : 2 * len(batches) // 3],
        batches[2 * len(batches) // 3 :],
    )
    sa, sb, sc = (_fold(rule, ctx, part) for part in (a, b, c))
    left = rule.merge(rule.merge(sa, sb), sc)
    sa, sb, sc = (_fold(rule, ctx, part) for part in (a, b, c))
    right = rule.merge(sa, rule.merge(sb, sc))
    _same(
        one_pass, _finish(rule, left, ctx, counts), f"{cls.code} shards merged (a+b)+c vs one pass"
    )
    _same(
        one_pass, _finish(rule, right, ctx, counts), f"{cls.code} shards merged a+(b+c) vs one pass"
    )


def check_batch_not_mutated(cls: type[Rule], options=None, kind=None) -> None:
    rule, corpus, ctx = _setup(cls, options, kind)
    if rule.skip_reason(ctx) is not None:
        return
    state = rule.start(ctx)
    for split, offset, rb in _batches(corpus, 32):
        before = pa.Table.from_batches([rb]).to_pylist()
        batch = Batch(split, rb, offset, ctx.roles, ctx.splits[split].kind)
        state = rule.update(state, batch)
        assert pa.Table.from_batches([rb]).to_pylist() == before, (
            f"{cls.code}: update() changed the input batch"
        )
        fresh = Batch(split, rb, offset, ctx.roles, ctx.splits[split].kind)
        for (name, params), value in list(batch._cache.items()):
            again = fresh.feature(name, **dict(params))
            assert _feature_equal(value, again), (
                f"{cls.code}: update() changed the shared feature {name!r}"
            )


def _feature_equal(a: Any, b: Any) -> bool:
    import numpy as np

    if isinstance(a, (pa.Array, pa.ChunkedArray)):
        return a.equals(b)
    if isinstance(a, np.ndarray):
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    try:
        return bool(a == b)
    except Exception:
        return True


CHECKS: dict[str, Callable[..., None]] = {
    "options_stored_verbatim": check_options_stored_verbatim,
    "docstring_sections": check_docstring,
    "empty_input": check_empty_input,
    "merge_identity": check_merge_identity,
    "split_and_merge": check_split_and_merge,
    "batch_not_mutated": check_batch_not_mutated,
}


def rule_checks(cls: type[Rule]) -> Iterator[tuple[str, Callable[[], None]]]:
    for name, fn in CHECKS.items():
        yield name, (lambda fn=fn: fn(cls))


def check_rule(
    cls: type[Rule], *, options: dict[str, Any] | None = None, kind: str | None = None
) -> None:
    """Run every conformance check on ``cls``; raises AssertionError on the first broken contract."""
    cls.validate_class()
    for fn in CHECKS.values():
        fn(cls, options, kind)

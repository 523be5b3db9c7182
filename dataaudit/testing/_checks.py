"""The conformance checks: one function per contract, each taking a :class:`Case`.

A check raises AssertionError naming the rule and the broken contract, or
:class:`ConformanceSkip` with the reason it cannot apply; it never passes without checking.
"""

from __future__ import annotations

import copy
import inspect
import pickle
import types
import typing
from collections.abc import Callable
from typing import Any

from ._case import Case, ConformanceSkip, canonical, merge_grouped, thirds
from ._compare import first_difference
from ._io_guard import record_io

__all__ = ["CHECKS", "DOC_SECTIONS", "smoke_value"]

DOC_SECTIONS = ("What it does", "Why it matters", "Example", "Options")
RESULT_TOLERANCE = 1e-9  # relative; float sums merged in another order may differ in the last bits


# -- options ---------------------------------------------------------------------------------------
class _Smoke:
    """A value of no known type: a constructor that does anything but store it fails."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<smoke value of {self.name}>"


def _declared_types(cls: type, name: str, spec: inspect.Parameter) -> tuple[Any, ...]:
    try:
        hint = typing.get_type_hints(cls.__init__).get(name, spec.annotation)
    except Exception:  # an annotation that does not evaluate: use the default's type alone
        hint = inspect.Parameter.empty
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return tuple(a for a in typing.get_args(hint) if a is not type(None))
    return () if hint is inspect.Parameter.empty else (hint,)


def smoke_value(cls: type, name: str, spec: inspect.Parameter) -> Any:
    """A value of the option's type that is not its default and that no coercion, clamp or
    copy leaves as the same object (fresh, not small cached ints, mixed case, out of range)."""
    default = spec.default
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        return default * 7 + 1_000_003
    if isinstance(default, float):
        return default * 1.5 + 0.125
    if isinstance(default, str):
        return f"{default}-Smoke "
    declared = [typing.get_origin(t) or t for t in _declared_types(cls, name, spec)]
    for kind, value in (
        (bool, True),
        (int, 1_000_003),
        (float, 1.5e9 + 0.125),
        (str, " Smoke-Value "),
        (dict, {"smoke": 1.5e9 + 0.125}),
        (list, ["smoke"]),
        (tuple, ("smoke",)),
    ):
        if kind in declared:
            return value
    return _Smoke(name)


def check_options_stored_verbatim(case: Case) -> None:
    """The constructor stores every option as given (scikit-learn style), so a rule is rebuilt
    from its resolved config; validation belongs in ``check_options``, coercion where used."""
    cls, specs = case.cls, case.cls.option_specs()
    if not specs:
        raise ConformanceSkip("the rule has no options")
    for name, spec in specs.items():
        assert spec.default is not inspect.Parameter.empty, (
            f"{cls.code}: option {name!r} needs a default so the rule runs unconfigured"
        )
    for label, values in (
        ("smoke value", {n: smoke_value(cls, n, s) for n, s in specs.items()}),
        ("default", {n: s.default for n, s in specs.items()}),
        ("given value", case.options),
    ):
        try:
            rule = cls(**values)
        except Exception as exc:
            raise AssertionError(
                f"{cls.code}: the constructor raised {type(exc).__name__}: {exc} on the "
                f"{label}s {values!r}; it must only store options (validate them in "
                "check_options)"
            ) from exc
        params = rule.get_params()
        for name, value in values.items():
            assert hasattr(rule, name), f"{cls.code}: option {name!r} is not stored as an attribute"
            stored = getattr(rule, name)
            assert stored is value and params[name] is value, (
                f"{cls.code}: option {name!r} was given the {label} {value!r} and stored "
                f"{stored!r}: not verbatim (the constructor must only store options; coerce, "
                "clamp or copy where they are used)"
            )


def check_docstring(case: Case) -> None:
    """``dataaudit explain`` prints the docstring: it has the sections users look for."""
    cls = case.cls
    doc = inspect.getdoc(cls) or ""
    missing = [s for s in DOC_SECTIONS if f"{s}:" not in doc]
    assert not missing, f"{cls.code}: docstring lacks section(s) {', '.join(missing)}"
    assert cls.name and cls.groups, f"{cls.code}: needs a name and at least one group"


# -- state contract --------------------------------------------------------------------------------
def check_empty_input(case: Case) -> None:
    """A split with no rows (or a shard that saw none) finishes with a result."""
    rule, _ = case.runnable()
    ctx = case.context(rule=rule, grouping="empty")  # its prepass, if any, saw no rows either
    zeros = dict.fromkeys(ctx.splits, 0)
    canonical(case.finish(rule, rule.start(ctx), ctx, zeros))
    ctx = case.context(rule=rule, grouping="empty")
    canonical(case.finish(rule, rule.merge(rule.start(ctx), rule.start(ctx)), ctx, zeros))


def check_merge_identity(case: Case) -> None:
    """``start`` is the identity of ``merge``: merging an empty shard changes nothing."""
    full = canonical(case.verdict())
    rule, _ = case.runnable()
    batches = case.batches(16)
    counts = case.counts(batches)
    for label, left in (("merge(start, s)", True), ("merge(s, start)", False)):
        ctx = case.context()
        state, empty = case.fold(rule, ctx, batches), rule.start(ctx)
        merged = rule.merge(empty, state) if left else rule.merge(state, empty)
        diff = first_difference(
            full,
            canonical(case.finish(rule, merged, ctx, counts, batches)),
            "result",
            rel_tol=RESULT_TOLERANCE,
        )
        assert diff is None, f"{case.code}: {label} differs from s: {diff}"


def check_split_and_merge(case: Case) -> None:
    """Shards merged in any grouping equal one pass (workers and batch sizes do not matter;
    for a keyed rule neither do the shuffle's partitions or the order its rows arrive in; for
    a rule with a prepass, neither does how its prepass was cut and merged)."""
    full = canonical(case.verdict())
    rule, _ = case.runnable()
    batches = case.batches(7)
    counts = case.counts(batches)
    parts = thirds(batches)
    for label in ("(a+b)+c", "a+(b+c)"):
        ctx = case.context(rule=rule, grouping=label)  # a prepass merged the same way
        state = merge_grouped(rule.merge, *(case.fold(rule, ctx, part) for part in parts), label)
        diff = first_difference(
            full,
            canonical(case.finish(rule, state, ctx, counts, batches[::-1], partitions=3)),
            "result",
            rel_tol=RESULT_TOLERANCE,
        )
        assert diff is None, f"{case.code}: shards merged {label} differ from one pass: {diff}"


def check_state_pickles(case: Case) -> None:
    """States travel to and from worker processes: a pickled state finishes the same."""
    full = canonical(case.verdict())
    rule, ctx = case.runnable()
    batches = case.batches(16)
    try:
        state = pickle.loads(pickle.dumps(case.fold(rule, ctx, batches)))
    except Exception as exc:
        raise AssertionError(
            f"{case.code}: the state does not pickle ({type(exc).__name__}: {exc}); the "
            "engine sends states between processes"
        ) from exc
    diff = first_difference(
        full, canonical(case.finish(rule, state, ctx, case.counts(batches), batches)), "result"
    )
    assert diff is None, (
        f"{case.code}: a state that went through pickle finishes differently: {diff}"
    )


def check_batch_not_mutated(case: Case) -> None:
    """``update`` leaves the batch and the shared features it read as it found them: other
    rules read them after it. Features are compared field by field with a fresh computation."""
    rule, ctx = case.runnable()
    state = rule.start(ctx)
    for split, offset, rb in case.batches(32):
        before = rb.to_pylist()
        kind = ctx.splits[split].kind
        batch = ctx.batch(split, rb, offset)
        state = rule.update(state, batch)
        assert rb.to_pylist() == before, f"{case.code}: update() changed the input batch"
        assert batch.data is rb and (batch.split, batch.offset, batch.kind) == (
            split,
            offset,
            kind,
        ), f"{case.code}: update() replaced the batch's data, split, offset or kind"
        fresh = ctx.batch(split, rb, offset)
        for (name, params), value in list(batch._cache.items()):
            again = fresh.feature(name, **dict(params))
            diff = first_difference(value, again, f"{name}{dict(params) or ''}")
            assert diff is None, (
                f"{case.code}: the shared feature {name!r} after update() is not what the "
                f"batch gives other rules ({diff}); copy a feature before changing it"
            )


def check_start_does_no_io(case: Case) -> None:
    """``start`` runs once per chunk and per worker: it must not read files, list folders or
    use the network (resources are resolved once by ``audit()`` and reach rules in the
    context)."""
    rule, ctx = case.runnable()
    rule.start(ctx)  # the first call may import modules; that is not the rule's I/O
    for _ in range(2):  # reads counted for the whole process must show twice (not a stray)
        ctx = case.context()
        with record_io() as seen:
            rule.start(ctx)
        if not seen or seen.events:
            break
    assert not seen, (
        f"{case.code}: start() did I/O: {seen.describe()}; the engine calls start() once per "
        "chunk, so read files once when the audit resolves its resources and take them from "
        "the context"
    )


# -- merge refuses incompatible states -------------------------------------------------------------
def _alternatives(value: Any) -> list[Any]:
    """Valid-looking other values of an option, to build a state that should not merge."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value * 2, max(1, value // 2)]
    if isinstance(value, float):
        return [value / 2, min(1.0, value * 1.5) if value < 1 else value * 2]
    if isinstance(value, str):
        return [f"{value}-other"]
    return []


def _variations(case: Case, rule: Any) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(description, option overrides, context arguments) of each incompatible setup."""
    out = [(f"seed={case.seed + 1} (not {case.seed})", {}, {"seed": case.seed + 1})]
    if case.tokenizer is not None:
        out.append(("no tokenizer (the word fallback)", {}, {"tokenizer": False}))
    params = rule.get_params()
    for name in case.cls.option_specs():
        for alt in _alternatives(params[name]):
            candidate = case.rule(**{name: alt})
            try:
                getattr(candidate, "check_options", lambda: None)()
            except (ValueError, TypeError):
                continue
            out.append((f"{name}={alt!r} (not {params[name]!r})", {name: alt}, {}))
            break
    return out


def check_merge_refuses_incompatible_states(case: Case) -> None:
    """Like datasketch's ``MinHash.merge``: two states built with different options, seeds or
    tokenizers do not merge into a silently wrong state; ``merge`` raises ValueError."""
    base, ctx = case.runnable()
    batches = case.batches(16)
    own = case.fold(base, ctx, batches)
    not_run: list[str] = []
    shaped: list[tuple[str, Any, str]] = []  # (what, its state, where it differs from own)
    variations = _variations(case, base)
    for what, overrides, ctx_args in variations:
        other = case.rule(**overrides)
        other_ctx = case.context(rule=other, **ctx_args)
        reason = other.skip_reason(other_ctx)
        try:
            variant = None if reason else case.fold(other, other_ctx, batches)
        except Exception as exc:  # the other value does not run on this data: nothing to merge
            reason = f"{type(exc).__name__}: {exc}"
        if reason:
            not_run.append(f"{what}: {reason}")
            continue
        diff = first_difference(own, variant, "state")
        if diff is not None:  # else the variation does not shape the state: merging is fine
            shaped.append((what, variant, diff))
    if len(not_run) == len(variations):
        raise ConformanceSkip(
            "no other option value, seed or tokenizer ran on this data: " + "; ".join(not_run)
        )
    problems = []  # merged only now: copying a state may compact it (NgramIndex folds itself)
    for what, variant, diff in shaped:
        for label, pair in (
            ("merge(s, other)", (own, variant)),
            ("merge(other, s)", (variant, own)),
        ):
            problem = _merge_problem(base, *map(_copy, pair))
            if problem:
                problems.append(
                    f"{label} {problem} a state built with {what} (differing at {diff})"
                )
    assert not problems, (
        f"{case.code}: merge() must raise ValueError for states that cannot be combined: "
        + "; ".join(problems)
        + " (keep what shapes the state, e.g. options, seed and tokenizer, in it and compare)"
    )


def _copy(state: Any) -> Any:
    """A copy to merge (merge may change its inputs); a state that cannot be copied is used
    as it is (state_pickles reports it)."""
    try:
        return copy.deepcopy(state)
    except Exception:
        return state


def _merge_problem(rule: Any, a: Any, b: Any) -> str | None:
    """None when ``merge(a, b)`` raises ValueError, else what it did instead."""
    try:
        rule.merge(a, b)
    except ValueError:
        return None
    except Exception as exc:
        return f"raised {type(exc).__name__}: {exc} instead of a ValueError, for"
    return "accepted"


CHECKS: dict[str, Callable[[Case], None]] = {
    "options_stored_verbatim": check_options_stored_verbatim,
    "docstring_sections": check_docstring,
    "empty_input": check_empty_input,
    "merge_identity": check_merge_identity,
    "split_and_merge": check_split_and_merge,
    "state_pickles": check_state_pickles,
    "batch_not_mutated": check_batch_not_mutated,
    "start_does_no_io": check_start_does_no_io,
    "merge_refuses_incompatible_states": check_merge_refuses_incompatible_states,
}

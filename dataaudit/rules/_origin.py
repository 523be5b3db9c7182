"""What a rule's state was built with, so ``merge`` refuses states that cannot be combined.

Shards of one audit always agree; states built with other options, another seed or another
tokenizer would merge into a result that belongs to neither (as datasketch's ``MinHash.merge``
refuses signatures of another seed or size). Each state carries its origin and ``merge``
compares the two before combining.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..context import AuditContext
    from ..rule import Rule

__all__ = ["check_origin", "state_origin"]


def state_origin(rule: Rule, ctx: AuditContext, **extra: Any) -> dict[str, Any]:
    """The rule's options and the audit's seed, plus ``extra`` (e.g. the tokenizer key)."""
    return {"options": rule.get_params(), "seed": ctx.seed, **extra}


def check_origin(rule: Rule, a: dict[str, Any], b: dict[str, Any]) -> None:
    """ValueError naming what differs when states ``a`` and ``b`` have different origins."""
    oa, ob = a.get("origin") or {}, b.get("origin") or {}
    if oa == ob:
        return
    diffs = []
    for key in sorted(set(oa) | set(ob)):
        x, y = oa.get(key), ob.get(key)
        if key == "options" and isinstance(x, dict) and isinstance(y, dict):
            diffs += [f"{n}={x.get(n)!r} vs {y.get(n)!r}" for n in x if x.get(n) != y.get(n)]
        elif x != y:
            diffs.append(f"{key} {x!r} vs {y!r}")
    raise ValueError(
        f"{rule.code}: cannot merge states built with different settings ({'; '.join(diffs)}); "
        "merge only the states of one audit"
    )

"""What a rule knows about the audit beyond its batches: splits, roles, report bounds and the
resources ``audit()`` resolved (tokenizer, reference sketches, benchmark files)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .resources import Resources

if TYPE_CHECKING:
    import pyarrow as pa

    from .corpus import Corpus
    from .features import Batch
    from .inputs.notes import InputLog
    from .rule import Roles, RuleResult


@dataclass
class SplitInfo:
    name: str
    kind: str  # train / validation / test / other
    num_rows: int | None = None  # known after the scan (finish), maybe before


@dataclass
class AuditContext:
    splits: dict[str, SplitInfo]
    roles: Roles
    max_examples: int = 5
    example_chars: int = 200
    seed: int = 0
    #: resolved once by audit(): typed, picklable (see dataaudit.resources)
    resources: Resources = field(default_factory=Resources)
    #: what the readers could not take as given; filled while the corpus streams (INPUT001)
    input_log: InputLog | None = None
    #: results of the rules the finishing rule declared in ``Rule.after`` (code -> RuleResult);
    #: set by the engine right before that rule's ``finish``, empty otherwise
    results: dict[str, RuleResult] = field(default_factory=dict)

    @classmethod
    def from_corpus(cls, corpus: Corpus, **settings: Any) -> AuditContext:
        """A context for ``corpus``: its splits (name, kind, rows if known) and roles."""
        splits = {n: SplitInfo(n, s.kind, s.num_rows) for n, s in corpus.splits.items()}
        return cls(splits=splits, roles=corpus.roles, input_log=corpus.log, **settings)

    def batch(self, split: str, data: pa.RecordBatch, offset: int) -> Batch:
        """A batch of ``split`` starting at row ``offset``, with the audit's roles and resources."""
        from .features import Batch

        info = self.splits.get(split)
        return Batch(
            split, data, offset, self.roles, info.kind if info else "other", self.resources
        )

    def train_split(self) -> str | None:
        for name, info in self.splits.items():
            if info.kind == "train":
                return name
        return None

    def eval_splits(self) -> list[str]:
        """Splits compared against train (validation/test first, then others)."""
        train = self.train_split()
        if train is None:
            return []
        rest = [n for n in self.splits if n != train]
        return sorted(
            rest, key=lambda n: (self.splits[n].kind not in ("validation", "test"), rest.index(n))
        )

    def truncate(self, text: str | None) -> str | None:
        """Dataset text is untrusted: bound its length before it goes into a report."""
        if text is None:
            return None
        if len(text) <= self.example_chars:
            return text
        return text[: self.example_chars] + f"… [+{len(text) - self.example_chars} chars]"

    def example(
        self, split: str, row: int, text: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        out: dict[str, Any] = {"split": split, "row": int(row)}
        if text is not None:
            out["text"] = self.truncate(text)
        out.update(extra)
        return out

"""LEAK002: eval rows (and benchmark files) sharing long word n-grams with the training data."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from ..._arrow import one_chunk, strings, take
from ...context import AuditContext
from ...features import Batch
from ...features.minhash import ngram_hashes, words_only
from ...rule import Direction, Finding, Flag, Rule, RuleResult, Severity
from ...sketches.minhash import Shingles
from ...sketches.ngram_index import NgramIndex, in_sorted
from ...sketches.state import PerSplit
from ...wording import noun, plural
from .._columns import append
from .._ids import id_column, ids_at
from .._origin import check_origin, state_origin

U64 = np.uint64
ZSTD_LEVEL = 3  # eval text: about a third of its size for prose, ~150 MB/s
#: an exact set never turns into a Bloom filter: the eval side's is capped by its own check
_UNBOUNDED = 1 << 62


def _pack(text: pa.Array) -> bytes:
    """A string array zstd-compressed (Arrow IPC): eval text waits for ``finish`` in this form."""
    batch = pa.record_batch([text], names=["text"])
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=pa.Codec("zstd", ZSTD_LEVEL))
    with pa.ipc.new_stream(sink, batch.schema, options=options) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _unpack(blob: bytes) -> pa.Array:
    return one_chunk(pa.ipc.open_stream(blob).read_all().column(0))


def _span(text: str, positions: list[int], n: int, limit: int = 400) -> tuple[str, int]:
    """The longest run of consecutive matched n-gram positions as words, and its length."""
    words = words_only(strings([text]))[0].as_py().split()
    positions = sorted(set(positions))
    best = (positions[0], positions[0])
    start = prev = positions[0]
    for p in positions[1:] + [None]:
        if p is not None and p == prev + 1:
            prev = p
            continue
        if prev - start > best[1] - best[0]:
            best = (start, prev)
        if p is not None:
            start = prev = p
    span = " ".join(words[best[0] : best[1] + n])
    return span[:limit], best[1] - best[0] + n


def _near_template(template: np.ndarray, row: np.ndarray, first: np.ndarray, n: int) -> np.ndarray:
    """Per n-gram (rows' n-grams in order), whether it shares a word with a template n-gram of
    its row: the n-grams that cross from a system prompt into the row's own text are the
    template's too, not evidence of a leak."""
    if not template.any():
        return template
    j = np.arange(len(template))
    row = np.asarray(row)
    lo = np.maximum(j - n + 1, first[row])
    hi = np.minimum(j + n - 1, first[row + 1] - 1)
    cs = np.concatenate([[0], np.cumsum(template)])
    return cs[hi + 1] - cs[lo] > 0


def _longest_runs(hit: np.ndarray, row: np.ndarray, nrows: int) -> np.ndarray:
    """Per row, the longest run of consecutive n-grams that ``hit`` (rows' n-grams in order)."""
    out = np.zeros(nrows, np.int64)
    idx = np.flatnonzero(hit)
    if not idx.size:
        return out
    r = np.asarray(row)[idx]
    new = np.ones(idx.size, bool)
    new[1:] = (idx[1:] != idx[:-1] + 1) | (r[1:] != r[:-1])
    np.maximum.at(out, r[new], np.bincount(np.cumsum(new) - 1))
    return out


class NgramContamination(Rule):
    """Eval rows and benchmark items that share a long word n-gram (default 13) with the data.

    What it does:
        Splits the normalized text (NFKC, casefold, whitespace collapsed; punctuation and symbols
        removed) into words and hashes every run of ``ngram`` consecutive words. An eval row
        (validation/test) that shares any such n-gram with the train split is contaminated; the
        matched span is the evidence. With ``contamination_ref`` files (``--contamination-ref
        bench.jsonl`` / ``audit(..., contamination_ref=[...])``; jsonl/json/parquet/csv with a
        ``text`` column) every benchmark item that shares an n-gram with any split is reported,
        with the dataset rows and spans. Rows with fewer than ``ngram`` words are not checked.

        How: the eval splits are read first (the engine's prepass) and their distinct n-grams
        are broadcast to every worker as one sorted array; train batches stream through it and
        each worker keeps only the eval n-grams train has, merged by union (as datatrove's
        ``NGramsDecontIndexer`` -> ``NGramsDecontFilter``). ``finish`` hashes the eval text again
        and matches it against those. ``details.index.mode`` says which index ran:
        ``eval-index`` (sizes: ``eval_ngrams``, ``shared_ngrams``), or ``train-index``, the
        previous way (every distinct train n-gram indexed), when the eval side has more than
        ``max_index_ngrams`` distinct n-grams (``why`` says so) or the engine runs no prepass.

        Flags: a contaminated eval row has the action ``review`` (a shared 13-gram can be a
        quotation or boilerplate; the eval row stays) and its longest shared span in words as
        score. The train rows it shares n-grams with are not flagged: only n-gram hashes are
        kept, not their rows, to stay within the memory bound below. Rows that
        share an n-gram with a benchmark item are flagged in the cluster ``ref:FILE:ROW`` of
        that item: train rows with the action ``drop`` (decontamination against the
        benchmark), rows of other splits with ``review``.

        Memory (eval-index): bounded by the eval side, whatever the size of train, and exact:
        8 bytes per distinct eval n-gram for the broadcast array, held once by each worker
        process (and by the driver on Ray), plus up to as much again for the eval n-grams
        train has; building the array in the prepass takes about twice its size for a moment.
        Train n-grams are not kept. A 5,000-row eval set of 200-word rows is ~1M n-grams, 8 MB.
        Memory (train-index, the fallback): the train n-grams go into an index that is exact,
        8 bytes per distinct n-gram, up to ``max_index_ngrams`` (400 MB at the default), and a
        Bloom filter of ``bloom_mb`` above (4 probes; its false-positive rate is reported): at
        most ``8 B x max_index_ngrams``, or ``bloom_mb`` once it is a filter; both (~0.9 GB at
        the defaults) only while it switches. The filter bounds the memory, not the error: at
        512 MB its false-positive rate per n-gram is 6e-5 at 100M distinct train n-grams, 8e-4
        at 200M and 2e-2 at 500M, so an eval row of 100 n-grams matches by chance with
        probability 0.6%, 8% and 86% (``details.index.false_positive_rate`` reports it).
        New n-grams wait until there are 4M (32 MB) or 1/16 of the index, whichever is
        more; folding them in takes about as much again for a moment. Eval splits keep only their
        normalized text, zstd-compressed (about a third of its size for prose); ``finish``
        hashes it again one batch at a time. Reference files are read once by the audit, before
        the scan (their text and 16 bytes per n-gram), and each batch is checked against them as
        it streams.
        On top of that comes the working memory of one batch (its text, normalized text and
        n-gram hashes, 8 bytes per word); with ``workers``, the main process also holds up to
        2 x workers chunk states on their way to being merged (at most 16k rows each; on the
        train index, their n-grams at 8 bytes per word). Measured (``bench/bench_memory.py``,
        200k train + 5k test rows of 1k characters, workers=1): peak 593 MB on the train
        index, 374 MB on the eval side's (363 MB without any index), the same CPU time.

    Why it matters:
        A 13-word overlap is the standard test (GPT-3, PaLM) for benchmark contamination: an eval
        item whose text was trained on measures recall, not skill.

    Example:
        A test row quoting 15 consecutive words of a train document is reported with the quoted
        span, even though the two rows are otherwise different (Jaccard 0.15).

    Options:
        ngram: words per n-gram (default 13).
        max_index_ngrams: distinct eval n-grams broadcast at most (above, the train index
            runs), and distinct train n-grams that index keeps exactly before switching to a
            Bloom filter (default 50,000,000 ~ 400 MB).
        bloom_mb: size of the train index's Bloom filter in MB (default 512).
        max_examples_per_finding: spans shown per finding (default: the audit's max_examples).
        template_share: an n-gram that train has and that at least this share of an eval
            split's distinct rows (and at least ``template_rows`` of them) share is a template
            (a system prompt, a chat format, a form's boilerplate), not a leak: it is left out of
            the matches and listed in an info finding with its span (default 0.2; 1 counts
            every n-gram). A leaked passage sits in few eval rows; a template in most of them.
        template_rows: the fewest distinct eval rows that make a template (default 10).
    """

    code = "LEAK002"
    name = "leakage.ngram-contamination"
    groups = ("default", "leakage")
    severity = Severity.WARN
    requires = ("text",)

    def __init__(
        self,
        ngram: int = 13,
        max_index_ngrams: int = 50_000_000,
        bloom_mb: int = 512,
        max_examples_per_finding: int | None = None,
        template_share: float = 0.2,
        template_rows: int = 10,
    ):
        self.ngram = ngram
        self.max_index_ngrams = max_index_ngrams
        self.bloom_mb = bloom_mb
        self.max_examples_per_finding = max_examples_per_finding
        self.template_share = template_share
        self.template_rows = template_rows

    def check_options(self) -> None:
        if int(self.ngram) < 1:
            raise ValueError(f"ngram={self.ngram}: must be >= 1")
        if int(self.bloom_mb) < 1:
            raise ValueError(f"bloom_mb={self.bloom_mb}: must be >= 1")
        if not 0 < float(self.template_share) <= 1:
            raise ValueError(f"template_share={self.template_share}: must be in (0, 1]")
        if int(self.template_rows) < 2:
            raise ValueError(f"template_rows={self.template_rows}: must be >= 2")

    def skip_reason(self, ctx: AuditContext) -> str | None:
        reason = super().skip_reason(ctx)
        if reason is None and not ctx.eval_splits() and not ctx.resources.benchmarks:
            return "needs a train split and a validation/test split, or contamination_ref files"
        return reason

    # -- prepass: the eval side's n-grams, broadcast to every worker ----------------------------
    def prepass_splits(self, ctx: AuditContext) -> list[str]:
        return ctx.eval_splits()  # none without a train split

    def prepass_start(self, ctx: AuditContext) -> NgramIndex | None:
        return NgramIndex(_UNBOUNDED)

    def prepass_update(self, pre: NgramIndex | None, batch: Batch) -> NgramIndex | None:
        if pre is not None:
            pre.add(batch.feature("ngram_hashes", ngram=int(self.ngram)).hashes)
        return self._capped(pre)

    def prepass_merge(self, a: NgramIndex | None, b: NgramIndex | None) -> NgramIndex | None:
        return None if a is None or b is None else self._capped(a.merge(b))

    def prepass_finish(self, pre: NgramIndex | None, ctx: AuditContext) -> dict[str, Any]:
        """The eval splits' distinct n-grams (sorted uint64), or None: more than
        ``max_index_ngrams`` of them (the train index runs instead)."""
        pre = self._capped(pre, compact=True)
        return {"hashes": None if pre is None else pre.exact}

    def _capped(self, pre: NgramIndex | None, compact: bool = False) -> NgramIndex | None:
        """None once the eval n-grams seen are more than ``max_index_ngrams`` (a part above the
        cap means the union is above it too: the same verdict whatever the chunks)."""
        if pre is None:
            return None
        size = pre.size if compact else len(pre.exact)
        return None if size > int(self.max_index_ngrams) else pre

    # -- state ---------------------------------------------------------------------------------
    def start(self, ctx: AuditContext) -> dict[str, Any]:
        n = int(self.ngram)
        for bench in ctx.resources.benchmarks:
            bench.ngrams(n)  # hashed once per audit; workers get them hashed with the context
        bits = max(64, int(self.bloom_mb) * 8 * 1024 * 1024)
        pre = ctx.resources.prepared(self.code)
        eval_side = None if pre is None else pre["hashes"]
        mode = "train-index" if eval_side is None else "eval-index"
        return {
            "origin": state_origin(
                self,
                ctx,
                benchmarks=[(b.name, b.rows) for b in ctx.resources.benchmarks],
                mode=mode,
            ),
            "train": ctx.train_split(),
            "mode": mode,
            # eval-index: the eval n-grams train has (at most the eval side's); train-index:
            # every train n-gram
            "index": NgramIndex(int(self.max_index_ngrams), bits),
            "eval_ngrams": None if eval_side is None else len(eval_side),
            "over_cap": pre is not None and eval_side is None,
            "hits": [],
            "splits": PerSplit(dict),
        }

    def update(self, state: dict[str, Any], batch: Batch) -> dict[str, Any]:
        n = int(self.ngram)
        train = batch.split == state["train"]
        benchmarks = batch.resources.benchmarks
        sh: Shingles | None = None
        if train or benchmarks:
            sh = batch.feature("ngram_hashes", ngram=n)
        if train and state["mode"] == "eval-index":
            # sorted, not np.unique: numpy 2's hash-based unique is ~6x slower on 800k hashes
            seen = np.sort(sh.hashes)
            state["index"].add(seen[in_sorted(self._eval_side(batch), seen)])
        elif train:
            state["index"].add(sh.hashes)
        elif state["train"] is not None:
            # not the n-gram hashes (8 bytes a word, more than the text): finish hashes again
            cols = {"offset": batch.offset, "rows": batch.num_rows, "text": _pack(batch.normalized)}
            ids = id_column(batch)
            if ids is not None:
                cols["ids"] = ids
            append(state, batch.split, **cols)
        if sh is None:
            return state
        if benchmarks and len(sh.hashes):
            first = sh.offsets()
            norm = None
            for fi, bench in enumerate(benchmarks):
                hashes, owner = bench.ngrams(n)
                idx = np.searchsorted(hashes, sh.hashes)
                idx = np.minimum(idx, max(len(hashes) - 1, 0))
                hit = (hashes[idx] == sh.hashes) if len(hashes) else np.zeros(len(idx), bool)
                for row in np.unique(sh.row[hit]):
                    sel = np.flatnonzero(hit & (sh.row == row))
                    ref_rows = sorted({int(owner[idx[s]]) for s in sel})
                    if norm is None:
                        norm = batch.normalized
                    span, words = _span(norm[int(row)].as_py(), (sel - first[row]).tolist(), n)
                    (row_id,) = ids_at(batch, [int(row)]) or [None]
                    state["hits"].append(
                        (batch.split, int(batch.offset + row), fi, ref_rows, span, words, row_id)
                    )
        return state

    def _eval_side(self, batch: Batch) -> np.ndarray:
        pre = batch.resources.prepared(self.code)
        if pre is None or pre["hashes"] is None:
            raise RuntimeError(
                f"{self.code}: the state was started on the eval side's n-grams, but this "
                "batch's resources have none (an engine must ship the prepass value with "
                "every batch of the scan)"
            )
        return pre["hashes"]

    def merge(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        check_origin(self, a, b)
        return {
            **a,
            "splits": a["splits"].merge(b["splits"]),
            "index": a["index"].merge(b["index"]),
            "hits": a["hits"] + b["hits"],
        }

    # -- result --------------------------------------------------------------------------------
    def finish(self, state: dict[str, Any], ctx: AuditContext) -> RuleResult:
        n = int(self.ngram)
        shown_max = int(self.max_examples_per_finding or ctx.max_examples)
        index: NgramIndex = state["index"]
        result = RuleResult(thresholds={"ngram": n, "template_share": self.template_share})
        details: dict[str, Any] = {"index": self._index_details(state, index)}
        train = state["train"]
        for split in ctx.eval_splits():
            sp = state["splits"].get(split, {})
            nrows = sum(sp.get("rows", []))
            scan = self._scan(sp, index, ctx, split, shown_max, None)
            templates = self._templates(scan.pop("pairs"), nrows)
            if len(templates):
                scan = self._scan(sp, index, ctx, split, shown_max, templates["hashes"])
                self._template_finding(result, split, train, templates, nrows)
            bad_parts, spans, bad_ids = scan["bad"], scan["spans"], scan["ids"]
            examples = scan["examples"]
            bad = np.concatenate(bad_parts) if bad_parts else np.empty(0, np.int64)
            rate = len(bad) / nrows if nrows else 0.0
            result.metric("contaminated_rows", len(bad), Direction.LOWER, split=split)
            result.metric("contaminated_rate", rate, Direction.LOWER, split=split)
            words = np.concatenate(spans) if spans else np.empty(0, np.int64)
            for r, w, row_id in zip(bad, words, bad_ids):
                result.flags.append(
                    Flag(
                        split,
                        int(r),
                        None,
                        f"{n}-gram overlap with {train}",
                        action="review",
                        score=int(w),
                        id=row_id,
                    )
                )
            details[split] = {"rows": nrows, "contaminated_rows": int(len(bad))}
            if not len(bad):
                continue
            result.findings.append(
                Finding(
                    message=(
                        f"{split}: {len(bad):,} of {plural(nrows, 'row')} ({rate:.2%}) "
                        f"{noun(len(bad), 'shares', 'share')} a {n}-word "
                        f"span with {train}"
                    ),
                    key=f"{split}:{train}:{n}",
                    count=int(len(bad)),
                    split=split,
                    examples=examples,
                    data={"rows": [int(r) for r in bad[:1000]], "rate": rate},
                )
            )
        self._refs(state, ctx, result, details, shown_max)
        result.details = details
        return result

    def _index_details(self, state: dict[str, Any], index: NgramIndex) -> dict[str, Any]:
        """Which index ran and its sizes: the eval side's n-grams and those train has (exact),
        or every train n-gram (exact, or a Bloom filter and its false-positive rate)."""
        if state["mode"] == "eval-index":
            return {
                "mode": "eval-index",
                "exact": True,
                "eval_ngrams": state["eval_ngrams"],
                "shared_ngrams": index.size,
                "false_positive_rate": 0.0,
            }
        out = {
            "mode": "train-index",
            "exact": index.size is not None,
            "train_ngrams": index.size,
            "false_positive_rate": index.false_positive_rate(),
        }
        if state["over_cap"]:
            out["why"] = f"the eval splits have more than {int(self.max_index_ngrams):,} n-grams"
        return out

    def _scan(self, sp, index, ctx, split, shown_max, exclude) -> dict[str, Any]:
        """One eval split against the train index, part by part: its matching rows, their
        longest spans and ids, examples, and (hashed n-gram, row text) pairs of the matches;
        ``exclude``: template n-grams that do not count as matches."""
        n = int(self.ngram)
        out: dict[str, Any] = {"bad": [], "spans": [], "ids": [], "examples": [], "pairs": []}
        id_parts = sp.get("ids") or [None] * len(sp.get("offset", []))
        for offset, blob, ids in zip(sp.get("offset", []), sp.get("text", []), id_parts):
            norm = _unpack(blob)
            sh = ngram_hashes(norm, n)
            hit = index.contains(sh.hashes)
            first = sh.offsets()
            if exclude is not None and hit.any():
                hit &= ~_near_template(np.isin(sh.hashes, exclude), sh.row, first, n)
            bad = np.unique(sh.row[hit])
            if exclude is None and len(bad):
                texts = {
                    int(r): xxhash.xxh3_64_intdigest(
                        norm[int(r)].as_py().encode("utf-8", "surrogatepass")
                    )
                    for r in bad
                }
                rows = sh.row[hit]
                out["pairs"].append(
                    (sh.hashes[hit], np.fromiter((texts[int(r)] for r in rows), U64, len(rows)))
                )
            out["bad"].append(offset + bad)
            out["spans"].append(_longest_runs(hit, sh.row, len(norm))[bad] + n - 1)
            out["ids"].extend([None] * len(bad) if ids is None else take(ids, bad).to_pylist())
            for r in bad[: max(0, shown_max - len(out["examples"]))]:
                pos = np.flatnonzero(hit[first[r] : first[r + 1]]).tolist()
                span, words = _span(norm[int(r)].as_py(), pos, n)
                out["examples"].append(
                    ctx.example(split, offset + int(r), span=ctx.truncate(span), span_words=words)
                )
        return out

    def _templates(self, pairs: list[tuple[np.ndarray, np.ndarray]], nrows: int) -> dict:
        """Matched n-grams that at least ``template_share`` of the split's distinct rows (and at
        least ``template_rows``) share: {hashes (sorted), rows (distinct rows per hash)}."""
        if not pairs or float(self.template_share) >= 1:
            return {}
        grams = np.concatenate([p[0] for p in pairs])
        texts = np.concatenate([p[1] for p in pairs])
        with np.errstate(over="ignore"):  # one key per (n-gram, row text) pair
            mixed = grams ^ (texts * U64(0x9E3779B97F4A7C15))
        _, first = np.unique(mixed, return_index=True)
        hashes, rows = np.unique(grams[first], return_counts=True)
        need = max(int(self.template_rows), float(self.template_share) * nrows)
        keep = rows >= need
        if not keep.any():
            return {}
        return {"hashes": hashes[keep], "rows": rows[keep]}

    def _template_finding(self, result, split, train, templates, nrows) -> None:
        count = len(templates["hashes"])
        most = int(templates["rows"].max())
        result.findings.append(
            Finding(
                message=(
                    f"{split}: {plural(count, f'{self.ngram}-gram')} that train has "
                    f"{noun(count, 'is', 'are')} shared by up to {plural(most, 'distinct row')} "
                    f"of {nrows:,} (a template such as a system prompt, not a leak) and "
                    f"{noun(count, 'was', 'were')} left out of the matches "
                    f"(template_share={self.template_share})"
                ),
                key=f"{split}:{train}:{self.ngram}:template",
                severity=Severity.INFO,
                count=count,
                split=split,
                data={"ngrams": count, "most_rows": most},
            )
        )

    def _refs(self, state, ctx, result, details, shown_max) -> None:
        n = int(self.ngram)
        for fi, ref in enumerate(ctx.resources.benchmarks):
            hits = sorted((h for h in state["hits"] if h[2] == fi), key=lambda h: (h[0], h[1]))
            ref_rows = sorted({r for h in hits for r in h[3]})
            rate = len(ref_rows) / ref.rows if ref.rows else 0.0
            result.metric(f"ref_contaminated_rows[{ref.name}]", len(ref_rows), Direction.LOWER)
            for split, row, _, rr, _, w, row_id in hits:
                kind = ctx.splits[split].kind if split in ctx.splits else "other"
                result.flags.append(
                    Flag(
                        split,
                        row,
                        f"ref:{ref.name}:{rr[0]}",
                        f"{n}-gram overlap with {ref.name} row {rr[0]}",
                        action="drop" if kind == "train" else "review",
                        score=w,
                        id=row_id,
                    )
                )
            details[f"ref:{ref.name}"] = {
                "rows": ref.rows,
                "contaminated_rows": len(ref_rows),
            }
            if not ref_rows:
                continue
            by_split: dict[str, int] = {}
            for h in hits:
                by_split[h[0]] = by_split.get(h[0], 0) + 1
            result.findings.append(
                Finding(
                    message=(
                        f"{ref.name}: {len(ref_rows)} of {plural(ref.rows, 'benchmark row')} "
                        f"({rate:.1%}) {noun(len(ref_rows), 'shares', 'share')} a {n}-word span "
                        "with the data ("
                        + ", ".join(f"{s}: {plural(c, 'row')}" for s, c in sorted(by_split.items()))
                        + ")"
                    ),
                    key=f"ref:{ref.name}:{n}",
                    count=len(ref_rows),
                    examples=[
                        ctx.example(
                            split, row, span=ctx.truncate(span), span_words=w, ref_row=rr[0]
                        )
                        for split, row, _, rr, span, w, _ in hits[:shown_max]
                    ],
                    data={
                        "reference": ref.name,
                        "ref_rows": ref_rows,
                        "dataset_rows": [[h[0], h[1]] for h in hits[:1000]],
                        "rate": rate,
                    },
                )
            )

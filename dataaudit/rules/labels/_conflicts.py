"""Groups of rows with the same input (exact after normalization, optionally near-duplicate
clusters too) but different labels. LBL001 finds them in the engine's keyed stage (the keyed
form, below); LBL003 (the per-class conflict rate) folds its exact groups in one state:

State, per split, as chunk lists (a merge concatenates a's chunks then b's):
``h`` uint64 normalized-input hash, ``y`` uint64 label id (xxh3 of the class key, or of the
normalized response in response mode), ``row`` int64, optional ``snip`` (input text cut to the
example bound) and ``ids`` (the id column, when there is one, for the row flags).
Rows with a null/empty input or a null label are not stored: they can conflict with nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from ..._arrow import fixed, indices, mask_array, nulls_like, numeric_array, one_chunk
from ..._compute import pc
from ...features import Batch
from ...sketches.minhash import EMPTY_HASH
from ...sketches.state import PerSplit
from .._columns import SNIPPET_EXTRA, cat
from .._ids import id_column, take_ids
from .._keyed_minhash import bucket_pairs
from .._minhash import DEFAULTS as MINHASH


def start(mode: str, *, snippets: int = 0) -> dict[str, Any]:
    splits = PerSplit(_empty_split)
    return {"mode": mode, "snip": int(snippets), "vocab": {}, "splits": splits}


def _empty_split() -> dict[str, list[Any]]:
    return {
        "h": [],
        "y": [],
        "row": [],
        "snip": [],
        "ids": [],
    }


def _label_ids(batch: Batch, mode: str, vocab: dict[int, str]) -> np.ndarray:
    if mode == "response":
        return np.asarray(batch.feature("normalized_hash", view="response_text"), np.uint64)
    values = batch.feature("label").values
    h = xxhash.xxh3_64_intdigest
    # each distinct class key hashed once (a batch has few classes and many rows)
    codes: dict[str | None, int] = {None: 0}
    for v in dict.fromkeys(values):
        if v is not None:
            k = codes[v] = h(v.encode("utf-8", "surrogatepass")) or 1
            vocab.setdefault(k, v)
    return np.fromiter((codes[v] for v in values), np.uint64, len(values))


def update(state: dict[str, Any], batch: Batch) -> dict[str, Any]:
    if batch.num_rows == 0:
        return state
    hashes = np.asarray(batch.feature("normalized_hash", view="input_text"), np.uint64)
    ids = _label_ids(batch, state["mode"], state["vocab"])
    keep = (hashes != 0) & (hashes != EMPTY_HASH) & (ids != 0)
    idx = np.flatnonzero(keep)
    sp = state["splits"].at(batch.split)
    if not idx.size:
        return state
    sp["h"].append(hashes[idx])
    sp["y"].append(ids[idx])
    sp["row"].append(batch.row_ids[idx])
    row_ids = id_column(batch)
    if row_ids is not None:
        sp["ids"].append(row_ids.take(indices(idx)))
    if state["snip"]:
        text = batch.input_text.take(indices(idx))
        sp["snip"].append(pc.utf8_slice_codeunits(text, 0, state["snip"] + SNIPPET_EXTRA))
    return state


def merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {**a, "splits": a["splits"].merge(b["splits"]), "vocab": {**b["vocab"], **a["vocab"]}}


@dataclass
class Group:
    """One conflict group: rows (positions in the split) and their label ids."""

    split: str
    key: str
    kind: str  # exact | near
    rows: list[int]
    labels: list[int]
    snippet: str | None = None
    label_counts: dict[int, int] = field(default_factory=dict)
    ids: list[str | None] = field(default_factory=list)  # the id column at ``rows``


@dataclass
class SplitConflicts:
    rows: int  # rows with an input and a label
    label_rows: dict[int, int]  # label id -> rows with an input
    groups: list[Group]


def find(state: dict[str, Any]) -> dict[str, SplitConflicts]:
    """Exact conflict groups per split, largest first then by key (deterministic)."""
    out: dict[str, SplitConflicts] = {}
    for split in sorted(state["splits"]):
        sp = state["splits"][split]
        h = cat(sp["h"], np.uint64)
        y = cat(sp["y"], np.uint64)
        rows = cat(sp["row"], np.int64)
        order = np.argsort(rows, kind="stable")
        h, y, rows = h[order], y[order], rows[order]
        ids, counts = np.unique(y, return_counts=True)
        label_rows = {int(i): int(c) for i, c in zip(ids, counts)}
        comp = _components(h)
        groups = _conflict_groups(split, h, y, rows, comp, sp, order)
        out[split] = SplitConflicts(int(rows.size), label_rows, groups)
    return out


def _components(h: np.ndarray) -> np.ndarray:
    """Component id per row: its exact-hash group."""
    return np.unique(h, return_inverse=True)[1].astype(np.int64)


def _conflict_groups(split, h, y, rows, comp, sp, order) -> list[Group]:
    if not rows.size:
        return []
    # components with more than one distinct label id
    o = np.lexsort((y, comp))
    c_sorted, y_sorted = comp[o], y[o]
    new_pair = np.ones(o.size, bool)
    new_pair[1:] = (c_sorted[1:] != c_sorted[:-1]) | (y_sorted[1:] != y_sorted[:-1])
    comps, n_labels = np.unique(c_sorted[new_pair], return_counts=True)
    bad = set(comps[n_labels > 1].tolist())
    if not bad:
        return []
    # exact (hash) groups with more than one label id: "exact" conflicts
    o2 = np.lexsort((y, h))
    hs, ys = h[o2], y[o2]
    new2 = np.ones(o2.size, bool)
    new2[1:] = (hs[1:] != hs[:-1]) | (ys[1:] != ys[:-1])
    hh, nl = np.unique(hs[new2], return_counts=True)
    exact_bad = set(hh[nl > 1].tolist())
    snips = None
    if sp["snip"]:
        snips = pa.concat_arrays([c.cast(pa.large_string()) for c in sp["snip"]]).take(
            indices(order)
        )
    members: dict[int, list[int]] = {}
    flagged = np.flatnonzero(np.isin(comp, np.fromiter(bad, np.int64, len(bad))))
    for i in flagged.tolist():
        members.setdefault(int(comp[i]), []).append(i)
    row_ids = dict(zip(flagged.tolist(), take_ids(sp.get("ids", []), order[flagged])))
    groups = []
    for idx in members.values():
        gh = h[idx]
        kind = "exact" if any(int(x) in exact_bad for x in gh) else "near"
        counts: dict[int, int] = {}
        for lab in y[idx].tolist():
            counts[int(lab)] = counts.get(int(lab), 0) + 1
        groups.append(
            Group(
                split=split,
                key=f"{int(gh.min()):016x}",
                kind=kind,
                rows=rows[idx].tolist(),
                labels=y[idx].tolist(),
                snippet=None if snips is None else snips[idx[0]].as_py(),
                label_counts=counts,
                ids=[row_ids[i] for i in idx],
            )
        )
    groups.sort(key=lambda g: (-len(g.rows), g.key))
    return groups


# -- the keyed form (LBL001): rows meet by key in the engine's keyed stage ----------------------
# Keys: per labeled row with an input, its normalized-input hash (``band`` -1), so an exact
# group meets in one partition; with near-duplicate grouping, per row with shingles (labeled or
# not: two labeled rows also join through a row without a label) one key per LSH band (the key
# ``signature_keys`` gives that band, ``band`` its index) with the hash of its whole signature
# (``full``): 25 bytes a key, no signature. A partition names the candidate pairs of its
# buckets, the ones :func:`dataaudit.sketches.lsh.near_duplicate_pairs` takes from them; the
# engine brings each pair to its ends' payload (``emit_rows``: label id ``y``, input hash ``h``,
# snippet, id and signature, stored once per row), where :func:`verify_pairs` keeps it. The same
# buckets, candidates and verification as the in-process search, hence the same clusters.

EXACT_BAND = -1
SIG_BYTES = MINHASH["num_perm"] * 4
MEMBER_COLUMNS = ("y", "h", "id")  # what every cluster member brings to the finish
FETCH_COLUMNS = ("snip",)  # read for each conflict group's first row only (its example)


def keyed_start(mode: str, *, snippets: int = 0, near: bool = False) -> dict[str, Any]:
    """Counts only: per split, the rows with an input and a label (the conflict rate's base)."""
    return {
        "mode": mode,
        "snip": int(snippets),
        "near": bool(near),
        "vocab": {},
        "splits": PerSplit(dict),
    }


def _kept(batch: Batch, mode: str, vocab: dict[int, str]) -> tuple[np.ndarray, np.ndarray]:
    """(input hash, label id) per row, label id 0 where the row can conflict with nothing."""
    hashes = np.asarray(batch.feature("normalized_hash", view="input_text"), np.uint64)
    ids = _label_ids(batch, mode, vocab)
    keep = (hashes != 0) & (hashes != EMPTY_HASH) & (ids != 0)
    return hashes, np.where(keep, ids, np.uint64(0))


def keyed_update(state: dict[str, Any], batch: Batch) -> dict[str, Any]:
    if batch.num_rows == 0:
        return state
    _, ids = _kept(batch, state["mode"], state["vocab"])
    sp = state["splits"].at(batch.split)
    sp["rows"] = sp.get("rows", 0) + int(np.count_nonzero(ids))
    return state


def keyed_merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {**a, "splits": a["splits"].merge(b["splits"]), "vocab": {**b["vocab"], **a["vocab"]}}


def _signature_column(sig: np.ndarray, valid: np.ndarray) -> pa.Array:
    """(n, num_perm) uint32 signatures as one binary value per row, empty where not ``valid``."""
    data = np.ascontiguousarray(sig[valid], np.uint32)
    offsets = np.zeros(len(valid) + 1, np.int64)
    np.cumsum(np.where(valid, SIG_BYTES, 0), out=offsets[1:])
    return pa.Array.from_buffers(
        pa.large_binary(), len(valid), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def _signatures(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Back from :func:`_signature_column`: the signatures of the rows that have one,
    (m, num_perm) uint32 in row order, and per row its index there (-1 without one)."""
    arr = one_chunk(col)
    if not pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())
    n, k = len(arr), MINHASH["num_perm"]
    if n == 0:
        return np.empty((0, k), np.uint32), np.empty(0, np.int64)
    offsets = np.frombuffer(arr.buffers()[1], np.int64)[arr.offset : arr.offset + n + 1]
    lengths = np.diff(offsets)
    valid = lengths == SIG_BYTES
    if not ((lengths == 0) | valid).all():
        raise ValueError("LBL001: a MinHash signature of the wrong length")
    at = np.where(valid, np.cumsum(valid) - 1, -1)
    # the rows' values are one run of bytes (rows without a signature have none)
    lo, hi = int(offsets[0]), int(offsets[-1])
    data = (
        np.frombuffer(arr.buffers()[2], np.uint8, hi - lo, lo) if hi > lo else np.empty(0, np.uint8)
    )
    if data.ctypes.data % 4:
        data = data.copy()
    return data.view(np.uint32).reshape(-1, k), at


def _rows_of(state: dict[str, Any], batch: Batch):
    """(input hash, label id, positions of labeled rows, signatures, positions with shingles)."""
    hashes, ids = _kept(batch, state["mode"], {})
    labeled = np.flatnonzero(ids != 0)
    near, sig = np.empty(0, np.int64), None
    if state["near"]:
        from ...sketches.minhash import empty_rows

        sig = np.asarray(batch.feature("minhash", **MINHASH))
        near = np.flatnonzero(~empty_rows(sig)) if len(sig) else near
    return hashes, ids, labeled, sig, near


def emit(state: dict[str, Any], batch: Batch, bands: int, per_band: int) -> pa.Table | None:
    """The batch's keys (see above); ``bands`` x ``per_band``: the LSH banding."""
    if batch.num_rows == 0:
        return None
    hashes, _, labeled, sig, near = _rows_of(state, batch)
    if not labeled.size and not near.size:
        return None
    keys, band, at = [hashes[labeled]], [np.full(labeled.size, EXACT_BAND, np.int8)], [labeled]
    full = [np.zeros(labeled.size, np.uint64)]
    if near.size:
        from ...sketches.lsh import band_matrix, signature_keys

        whole = signature_keys(sig, rows=near)  # identical signatures: the same key
        by_band = band_matrix(sig, bands, per_band, near)
        for b in range(bands):
            keys.append(by_band[:, b])
            band.append(np.full(near.size, b, np.int8))
            at.append(near)
            full.append(whole)
    rows = np.asarray(batch.row_ids, np.int64)
    return pa.table(
        {
            "key": numeric_array(np.concatenate(keys).astype(np.uint64, copy=False)),
            "row": numeric_array(rows[np.concatenate(at)]),
            "band": numeric_array(np.concatenate(band).astype(np.int8, copy=False)),
            "full": numeric_array(np.concatenate(full).astype(np.uint64, copy=False)),
        }
    )


def emit_rows(state: dict[str, Any], batch: Batch) -> pa.Table | None:
    """Per row that emitted a key, once: its label id (0 without one), input hash, snippet and
    id (labeled rows), and its signature (rows with shingles, with near-duplicate grouping)."""
    if batch.num_rows == 0:
        return None
    hashes, ids, labeled, sig, near = _rows_of(state, batch)
    has = np.zeros(batch.num_rows, bool)
    has[labeled] = True
    has[near] = True
    take = np.flatnonzero(has)
    if not take.size:
        return None
    idx = indices(take)
    is_labeled = ids[take] != 0
    cols: dict[str, Any] = {
        "row": numeric_array(np.asarray(batch.row_ids, np.int64)[take]),
        "y": numeric_array(np.asarray(ids[take], np.uint64)),
        "h": numeric_array(np.where(is_labeled, hashes[take], np.uint64(0)).astype(np.uint64)),
    }
    if state["snip"]:
        text = batch.input_text.take(idx).cast(pa.large_string())
        text = pc.utf8_slice_codeunits(text, 0, state["snip"] + SNIPPET_EXTRA)
        cols["snip"] = pc.if_else(mask_array(is_labeled), text, nulls_like(text))
    row_ids = id_column(batch)
    if row_ids is not None:
        cols["id"] = row_ids.take(idx)
    if sig is not None:
        with_sig = np.zeros(batch.num_rows, bool)
        with_sig[near] = True
        cols["sig"] = _signature_column(sig[take], with_sig[take])
    return pa.table(cols)


def edges(part: pa.Table) -> pa.Table:
    """Candidate pairs of one partition (sorted by key, split, row): exact groups chained, and
    per LSH band bucket the pairs :func:`dataaudit.sketches.lsh.near_duplicate_pairs` takes
    from it (rows with identical signatures to their first row, the bucket's other rows to its
    first and previous one)."""
    band = fixed(part.column("band"))
    row = fixed(part.column("row"))
    key = fixed(part.column("key"))
    split = one_chunk(part.column("split"))
    scode = np.asarray(fixed(split.dictionary_encode().indices), np.int64)
    a_parts: list[np.ndarray] = []
    b_parts: list[np.ndarray] = []
    # exact: the labeled rows of one (key, split), in row order, each to the one before
    ex = np.flatnonzero(band == EXACT_BAND)
    if ex.size > 1:
        same = (key[ex][1:] == key[ex][:-1]) & (scode[ex][1:] == scode[ex][:-1])
        link = np.flatnonzero(same)
        a_parts.append(ex[link])
        b_parts.append(ex[link + 1])
    nr = np.flatnonzero(band != EXACT_BAND)
    if nr.size > 1:
        full = fixed(part.column("full"))[nr]
        a, b = _band_pairs(scode[nr], band[nr], key[nr], full, row[nr])
        a_parts.append(nr[a])
        b_parts.append(nr[b])
    a = np.concatenate(a_parts) if a_parts else np.empty(0, np.int64)
    b = np.concatenate(b_parts) if b_parts else np.empty(0, np.int64)
    ia, ib = indices(a), indices(b)
    rows = part.column("row")
    return pa.table(
        {
            "split_a": split.take(ia),
            "row_a": rows.take(ia),
            "split_b": split.take(ib),
            "row_b": rows.take(ib),
        }
    )


def _band_pairs(scode, band, key, full, row):
    """Positions (a, b) of the candidate pairs among band rows (see :func:`edges`); the rows
    come sorted by (key, split, row)."""
    # buckets (band, key, split): a stable sort by band keeps each bucket in row order
    o = np.argsort(band, kind="stable")
    bd, k, s = band[o], key[o], scode[o]
    new_bucket = np.ones(len(row), bool)
    new_bucket[1:] = (bd[1:] != bd[:-1]) | (k[1:] != k[:-1]) | (s[1:] != s[:-1])
    a, b, _ = bucket_pairs(new_bucket, full[o], bd)
    return o[a], o[b]


def verify_pairs(pairs: pa.Table, rows: pa.Table, threshold: float) -> pa.Table:
    """The candidate pairs to keep: two labeled rows with the same input (an exact group), two
    identical signatures (joined unverified, as in-process), or a signature estimate >=
    ``threshold``. Decided from the rows alone, so a pair named twice (an exact and a band
    candidate) is kept or dropped the same way whichever copy the engine keeps."""
    from ...sketches.minhash import jaccard_estimate

    a = fixed(pairs.column("at_a"))
    b = fixed(pairs.column("at_b"))
    y = fixed(rows.column("y"))
    h = fixed(rows.column("h"))
    ok = (y[a] != 0) & (y[b] != 0) & (h[a] == h[b])
    if "sig" in rows.column_names:
        sig, at = _signatures(rows.column("sig"))
        check = np.flatnonzero(~ok & (at[a] >= 0) & (at[b] >= 0))
        sa, sb = sig[at[a[check]]], sig[at[b[check]]]
        ok[check] = (sa == sb).all(axis=1) | (jaccard_estimate(sa, sb) >= threshold)
    return pairs.select(["split_a", "row_a", "split_b", "row_b"]).filter(mask_array(ok))


def find_keyed(state: dict[str, Any], clusters: Any) -> dict[str, SplitConflicts]:
    """Conflict groups per split from the keyed stage's clusters (each within one split, rows
    sorted): a cluster's labeled rows, when they carry more than one label; ordered like
    :func:`find` (largest first, then by key)."""
    table = clusters.rows if clusters else None
    by_split: dict[str, list[Group]] = {}
    made: list[Group] = []
    firsts: list[int] = []  # each group's first labeled row in ``table`` (its snippet's)
    if table is not None and table.num_rows:
        y = fixed(table.column("y"))
        h = fixed(table.column("h"))
        ids = table.column("id") if "id" in table.column_names else None
        for cluster in clusters:
            at = cluster.at
            idx = at + np.flatnonzero(y[at : at + len(cluster)] != 0)
            if idx.size < 2 or np.unique(y[idx]).size < 2:
                continue
            gy, gh = y[idx], h[idx]
            # an exact conflict: one input hash with two labels (its rows are all here)
            o = np.lexsort((gy, gh))
            hs, ys = gh[o], gy[o]
            same_h = hs[1:] == hs[:-1]
            kind = "exact" if (same_h & (ys[1:] != ys[:-1])).any() else "near"
            labels = gy.tolist()
            counts: dict[int, int] = {}
            for lab in labels:
                counts[int(lab)] = counts.get(int(lab), 0) + 1
            split = cluster[0][0]
            made.append(
                Group(
                    split=split,
                    key=f"{int(gh.min()):016x}",
                    kind=kind,
                    rows=[cluster[i - at][1] for i in idx.tolist()],
                    labels=labels,
                    snippet=None,
                    label_counts=counts,
                    ids=[None] * idx.size if ids is None else ids.take(indices(idx)).to_pylist(),
                )
            )
            by_split.setdefault(split, []).append(made[-1])
            firsts.append(int(idx[0]))
    if firsts and state["snip"]:  # the snippets of the groups' first rows, fetched at once
        snips = clusters.fetch(list(FETCH_COLUMNS), firsts).column("snip").to_pylist()
        for g, snip in zip(made, snips):
            g.snippet = snip
    out: dict[str, SplitConflicts] = {}
    for split in sorted(state["splits"]):
        groups = by_split.get(split, [])
        groups.sort(key=lambda g: (-len(g.rows), g.key))
        out[split] = SplitConflicts(int(state["splits"][split].get("rows", 0)), {}, groups)
    return out

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
import pyarrow.compute as pc
import xxhash

from ...features import Batch
from ...sketches.minhash import EMPTY_HASH
from ...sketches.state import PerSplit
from .._columns import SNIPPET_EXTRA, cat
from .._ids import id_column, take_ids
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
    ids = np.zeros(len(values), np.uint64)
    for i, v in enumerate(values):
        if v is not None:
            k = h(v.encode("utf-8", "surrogatepass")) or 1
            ids[i] = k
            vocab.setdefault(k, v)
    return ids


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
        sp["ids"].append(row_ids.take(pa.array(idx)))
    if state["snip"]:
        text = batch.input_text.take(pa.array(idx))
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
            pa.array(order)
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
# Per labeled row with an input: its normalized-input hash as key (``band`` -1), so an exact group
# meets in one partition. With near-duplicate grouping, every row with shingles (labeled or not:
# two labeled rows also join through a row without a label) emits one key per LSH band (the key
# ``signature_keys`` gives that band, ``band`` its index) with its whole signature, so a
# partition holds every row of a band bucket and verifies its candidate pairs by estimate where
# they meet: the same buckets, candidates and verification as the in-process search
# (:func:`dataaudit.sketches.lsh.near_duplicate_pairs`), hence the same clusters. Every emitted
# row of a row carries the same payload (``y`` label id, 0 without one; ``h`` input hash; ``snip``;
# ``id``), so a cluster's members show theirs whichever key brought them.

EXACT_BAND = -1
SIG_BYTES = MINHASH["num_perm"] * 4


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


def _signature_column(sig: np.ndarray) -> pa.Array:
    """(n, num_perm) uint32 signatures as one binary value per row (no copy beyond one)."""
    data = np.ascontiguousarray(sig, np.uint32)
    n = len(data)
    offsets = np.arange(n + 1, dtype=np.int64) * SIG_BYTES
    return pa.Array.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data.reshape(-1))]
    )


def _signatures(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Back from :func:`_signature_column`: (n, num_perm) uint32 (rows of equal length)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())
    n = len(arr)
    if n == 0:
        return np.empty((0, MINHASH["num_perm"]), np.uint32)
    offsets = np.frombuffer(arr.buffers()[1], np.int64)[arr.offset : arr.offset + n + 1]
    if arr.null_count or not (np.diff(offsets) == SIG_BYTES).all():
        raise ValueError("LBL001: a band row without its full MinHash signature")
    data = np.frombuffer(arr.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
    return data.view(np.uint32).reshape(n, MINHASH["num_perm"])


def emit(state: dict[str, Any], batch: Batch, bands: int, per_band: int) -> pa.Table | None:
    """The batch's keyed rows (see above); ``bands`` x ``per_band``: the LSH banding."""
    if batch.num_rows == 0:
        return None
    hashes, ids = _kept(batch, state["mode"], {})
    labeled = np.flatnonzero(ids != 0)
    rows = np.asarray(batch.row_ids, np.int64)
    near = np.empty(0, np.int64)
    sig = None
    if state["near"]:
        from ...sketches.minhash import empty_rows

        sig = np.asarray(batch.feature("minhash", **MINHASH))
        near = np.flatnonzero(~empty_rows(sig)) if len(sig) else near
    if not labeled.size and not near.size:
        return None
    # the payload per row of the batch (then taken per emitted row)
    snip = None
    if state["snip"]:
        text = pc.utf8_slice_codeunits(batch.input_text, 0, state["snip"] + SNIPPET_EXTRA)
        mask = np.zeros(batch.num_rows, bool)
        mask[labeled] = True
        snip = pc.if_else(
            pa.array(mask), text.cast(pa.large_string()), pa.scalar(None, pa.large_string())
        )
    row_ids = id_column(batch)
    keys, band, at = [hashes[labeled]], [np.full(labeled.size, EXACT_BAND, np.int8)], [labeled]
    if near.size:
        from ...sketches.lsh import signature_keys

        for b in range(bands):
            keys.append(signature_keys(sig, b * per_band, (b + 1) * per_band, near))
            band.append(np.full(near.size, b, np.int8))
            at.append(near)
    take = np.concatenate(at)
    idx = pa.array(take)
    cols: dict[str, Any] = {
        "key": pa.array(np.concatenate(keys), pa.uint64()),
        "row": pa.array(rows[take], pa.int64()),
        "band": pa.array(np.concatenate(band), pa.int8()),
        "y": pa.array(ids[take], pa.uint64()),
        "h": pa.array(hashes[take], pa.uint64()),
    }
    if snip is not None:
        cols["snip"] = snip.take(idx)
    if row_ids is not None:
        cols["id"] = row_ids.take(idx)
    if sig is not None:
        # the signature on band rows only (the exact rows' are null: nothing reads them)
        one = _signature_column(sig[near] if near.size else sig[:0])
        nulls = pa.nulls(labeled.size, pa.large_binary())
        cols["sig"] = pa.concat_arrays([nulls, *([one] * bands)]) if near.size else nulls
    return pa.table(cols)


def edges(part: pa.Table, threshold: float) -> pa.Table:
    """Verified edges of one partition (sorted by key, split, row): exact groups chained, and
    per LSH band bucket what :func:`dataaudit.sketches.lsh.near_duplicate_pairs` takes from it
    (identical signatures joined to their first row unverified, the other rows of the bucket
    paired with its first and previous row and kept at estimate >= ``threshold``)."""
    band = part.column("band").to_numpy()
    row = part.column("row").to_numpy()
    key = part.column("key").to_numpy()
    split = part.column("split")
    scode = np.asarray(pc.dictionary_encode(split).combine_chunks().indices, np.int64)
    a_parts: list[np.ndarray] = []
    b_parts: list[np.ndarray] = []
    # exact: the label rows of one (key, split), in row order, each to the one before
    ex = np.flatnonzero(band == EXACT_BAND)
    if ex.size > 1:
        same = (key[ex][1:] == key[ex][:-1]) & (scode[ex][1:] == scode[ex][:-1])
        link = np.flatnonzero(same)
        a_parts.append(ex[link])
        b_parts.append(ex[link + 1])
    nr = np.flatnonzero(band != EXACT_BAND)
    if nr.size > 1:
        from ...sketches.lsh import signature_keys

        sig = _signatures(part.column("sig").take(pa.array(nr)))
        full = signature_keys(sig)  # identical signatures: the same full key
        a, b = _band_pairs(scode[nr], band[nr], key[nr], full, row[nr], sig, threshold)
        a_parts.append(nr[a])
        b_parts.append(nr[b])
    a = np.concatenate(a_parts) if a_parts else np.empty(0, np.int64)
    b = np.concatenate(b_parts) if b_parts else np.empty(0, np.int64)
    ia, ib = pa.array(a), pa.array(b)
    return pa.table(
        {
            "split_a": split.take(ia),
            "row_a": part.column("row").take(ia),
            "split_b": split.take(ib),
            "row_b": part.column("row").take(ib),
        }
    )


def _band_pairs(scode, band, key, full, row, sig, threshold):
    """Positions (a, b) of the verified pairs among band rows (see :func:`edges`)."""
    from ...sketches.minhash import jaccard_estimate

    # buckets (split, band, key); within one, identical signatures (full key) then rows
    o = np.lexsort((row, full, key, band, scode))
    s, bd, k, f = scode[o], band[o], key[o], full[o]
    new_bucket = np.ones(len(o), bool)
    new_bucket[1:] = (s[1:] != s[:-1]) | (bd[1:] != bd[:-1]) | (k[1:] != k[:-1])
    new_group = new_bucket.copy()
    new_group[1:] |= f[1:] != f[:-1]
    # identical signatures (seen in band 0, where every row with shingles is): each to its first
    group_first = o[np.maximum.accumulate(np.where(new_group, np.arange(len(o)), 0))]
    dup = np.flatnonzero(~new_group & (bd == 0))
    ea, eb = group_first[dup], o[dup]
    # the bucket's representatives (first of their signature) in row order: each to the first
    # and to the previous one, then verified
    reps = o[new_group]
    o2 = np.lexsort((row[reps], key[reps], band[reps], scode[reps]))
    r = reps[o2]
    same = (
        (scode[r][1:] == scode[r][:-1])
        & (band[r][1:] == band[r][:-1])
        & (key[r][1:] == key[r][:-1])
    )
    new = np.concatenate([[True], ~same])
    first = r[np.maximum.accumulate(np.where(new, np.arange(len(r)), 0))]
    member = np.flatnonzero(~new)
    ca = np.concatenate([first[member], r[member - 1]])
    cb = np.concatenate([r[member], r[member]])
    # one check per distinct pair of rows (a pair meets in several bands); any entry of a row
    # holds its signature
    ra, rb = row[ca], row[cb]
    lo, hi = np.minimum(ra, rb), np.maximum(ra, rb)
    keep = np.flatnonzero(lo != hi)
    if keep.size:
        order = np.lexsort((hi[keep], lo[keep], scode[ca[keep]]))
        k = keep[order]
        distinct = np.ones(k.size, bool)
        distinct[1:] = (
            (lo[k][1:] != lo[k][:-1])
            | (hi[k][1:] != hi[k][:-1])
            | (scode[ca[k]][1:] != scode[ca[k]][:-1])
        )
        k = k[distinct]
        ok = jaccard_estimate(sig[ca[k]], sig[cb[k]]) >= threshold
        ca, cb = ca[k[ok]], cb[k[ok]]
    else:
        ca, cb = ca[:0], cb[:0]
    return np.concatenate([ea, ca]), np.concatenate([eb, cb])


def find_keyed(state: dict[str, Any], clusters: Any) -> dict[str, SplitConflicts]:
    """Conflict groups per split from the keyed stage's clusters (each within one split, rows
    sorted): a cluster's labeled rows, when they carry more than one label; ordered like
    :func:`find` (largest first, then by key)."""
    table = clusters.rows if clusters else None
    by_split: dict[str, list[Group]] = {}
    if table is not None and table.num_rows:
        y = table.column("y").to_numpy()
        h = table.column("h").to_numpy()
        snips = table.column("snip") if "snip" in table.column_names else None
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
            by_split.setdefault(split, []).append(
                Group(
                    split=split,
                    key=f"{int(gh.min()):016x}",
                    kind=kind,
                    rows=[cluster[i - at][1] for i in idx.tolist()],
                    labels=labels,
                    snippet=None if snips is None else snips[int(idx[0])].as_py(),
                    label_counts=counts,
                    ids=[None] * idx.size if ids is None else ids.take(pa.array(idx)).to_pylist(),
                )
            )
    out: dict[str, SplitConflicts] = {}
    for split in sorted(state["splits"]):
        groups = by_split.get(split, [])
        groups.sort(key=lambda g: (-len(g.rows), g.key))
        out[split] = SplitConflicts(int(state["splits"][split].get("rows", 0)), {}, groups)
    return out

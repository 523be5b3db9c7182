"""The near-duplicate features: one fused pass per batch, whatever order rules ask in."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from dataaudit.features import Batch
from dataaudit.rule import Roles

ROWS = ["Near duplicate text, five words or more", "near  DUPLICATE text, five words or more!"]
ROWS += ["中文文本测试数据的句子", "Ｆｕｌｌｗｉｄｔｈ，text", "", None]


def _batch() -> Batch:
    return Batch(
        "train", pa.RecordBatch.from_pylist([{"text": r} for r in ROWS]), 0, Roles(text="text")
    )


def test_sets_units_and_signatures_come_from_one_pass_in_any_order():
    params = {"ngram": 5, "unit": "auto", "seed": 1}
    orders = (("shingle_unit", "shingle_sets", "minhash"), ("minhash", "shingle_sets"))
    seen = []
    for order in orders:
        batch = _batch()
        got = {
            name: batch.feature(name, **params, **({"num_perm": 128} if name == "minhash" else {}))
            for name in order
        }
        assert len(batch.cached_any("_sketch")) == 1, order  # computed once
        assert batch.feature("shingle_unit", **params).tolist() == [1, 1, 2, 1, 0, 0]
        seen.append((got["minhash"], got["shingle_sets"]))
    assert (seen[0][0] == seen[1][0]).all()
    assert (seen[0][1].values == seen[1][1].values).all()


def test_a_batch_with_its_normalized_text_sketches_that_text():
    """When another rule normalized the batch already, the pass reads that text (same tokens)."""
    plain, normalized = _batch(), _batch()
    normalized.feature("normalized")
    a = plain.feature("minhash", num_perm=64, unit="auto")
    b = normalized.feature("minhash", num_perm=64, unit="auto")
    assert np.array_equal(a, b)
    assert np.array_equal(plain.feature("normalized_hash"), normalized.feature("normalized_hash"))

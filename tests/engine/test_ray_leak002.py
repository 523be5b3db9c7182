"""LEAK002 on Ray: the eval side's n-grams indexed by the prepass (read on the workers, merged
on the driver), train streamed through them, gives the train index's report."""

from __future__ import annotations

import pytest

from tests.engine.test_ray import small_chunks as small_chunks  # the fixture
from tests.rules.leakage.test_leak002_eval_index import CASES, real_text, same_as_train_index

pytestmark = pytest.mark.slow


def test_ray_gives_the_train_index_report(ray_cluster, small_chunks, monkeypatch):
    for data, options in [CASES["classification"], CASES["split-column"], (real_text(), {})]:
        same_as_train_index(data, monkeypatch, [{"engine": "ray"}], **options)

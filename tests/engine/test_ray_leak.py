"""LEAK001 on Ray: the eval index built by the prepass on the driver, train streamed through it
on the workers, gives the local engine's report (and the in-process search's), at any
chunking."""

from __future__ import annotations

import pytest

from tests.engine.test_ray import _same
from tests.engine.test_ray import small_chunks as small_chunks  # the fixture
from tests.rules.leakage.test_leak_broadcast import generated

pytestmark = pytest.mark.slow


def test_leak001_broadcast_join_on_ray(ray_cluster, small_chunks, fixtures_dir):
    for data in (str(fixtures_dir / "classification"), generated(fixtures_dir)):
        remote = _same(data, select=["LEAK001"], batch_size=16)
        res = remote.result("LEAK001")
        assert res["details"]["mode"] == "broadcast" and res["findings"]

"""The engine tests' shared fixtures: one local Ray cluster for the session."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def ray_cluster():
    """A local Ray cluster with 2 CPUs, started once; the tests skip without Ray, except in CI
    (DATAAUDIT_REQUIRE_RAY, set by .ci/run, which installs the [ray] extra): there they fail."""
    if os.environ.get("DATAAUDIT_REQUIRE_RAY"):
        import ray
    else:
        ray = pytest.importorskip("ray")
    from dataaudit.engine.ray import _THREAD_VARS

    started = not ray.is_initialized()
    if started:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": dict(_THREAD_VARS)},
        )
    yield ray
    if started:
        ray.shutdown()

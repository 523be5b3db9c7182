"""Finding fingerprints name their evidence by content, so a diff matches findings across
versions of a dataset: row numbers and cluster order may change, the fingerprints may not."""

from __future__ import annotations

import random

import pytest

import dataaudit
from dataaudit.report.diff import diff

CLUSTER_RULES = ["DUP001", "DUP002", "LEAK001", "LBL001"]


def _splits(fixtures_dir, shuffle: int | None = None) -> dict[str, list[dict]]:
    import json

    out = {}
    for name in ("train", "validation", "test"):
        lines = (fixtures_dir / "classification" / f"{name}.jsonl").read_text().splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        if shuffle is not None:
            random.Random(shuffle).shuffle(rows)
        out[name] = rows
    return out


@pytest.fixture(scope="module")
def reports(fixtures_dir):
    as_given = dataaudit.audit(_splits(fixtures_dir), select=CLUSTER_RULES)
    shuffled = dataaudit.audit(_splits(fixtures_dir, shuffle=1), select=CLUSTER_RULES)
    return as_given, shuffled


def _fingerprints(report, code: str) -> set[str]:
    return {f["fingerprint"] for f in report.result(code)["findings"]}


@pytest.mark.parametrize("code", CLUSTER_RULES)
def test_shuffled_rows_keep_every_fingerprint(reports, code):
    as_given, shuffled = reports
    assert _fingerprints(as_given, code)  # the fixture plants clusters for each of these rules
    assert _fingerprints(as_given, code) == _fingerprints(shuffled, code)


def test_diff_of_a_shuffled_copy_has_no_new_or_resolved_cluster_findings(reports):
    d = diff(*reports)
    assert [f for f in d.findings if f.state != "persisting"] == []
    assert not d.regressed

"""Progress: tqdm.auto bars for the scan, the reference scan and the finish phase (which can
take longer than the scan), naming the rule being finished; nothing at all without progress."""

from __future__ import annotations

import json

import pytest
import tqdm.auto

from dataaudit import audit


class _Bar:
    """Records what the engine asks of a tqdm bar."""

    made: list[_Bar] = []

    def __init__(self, total=None, unit="it", desc=None, **kwargs):
        self.total, self.unit, self.descs, self.n, self.closed = total, unit, [desc], 0, False
        _Bar.made.append(self)

    def set_description_str(self, desc=None, refresh=True):
        self.descs.append(desc)

    def update(self, n=1):
        self.n += n

    def close(self):
        self.closed = True


@pytest.fixture
def bars(monkeypatch):
    _Bar.made = []
    monkeypatch.setattr(tqdm.auto, "tqdm", _Bar)
    return _Bar.made


@pytest.fixture
def reference(fixtures_dir):
    lines = (fixtures_dir / "classification" / "validation.jsonl").read_text().splitlines()
    return {"train": [json.loads(line) for line in lines]}


def test_every_stage_has_a_bar_and_finishing_names_each_rule_in_order(
    bars, fixtures_dir, reference
):
    report = audit(fixtures_dir / "classification", reference=reference, progress=True)
    pre, scan, ref, fin = bars
    # LEAK002 indexes the eval splits first (validation and test: 300 rows), then the scan
    assert (pre.descs, pre.unit, pre.n) == (["prepass"], "rows", 300)
    assert (scan.descs, scan.unit, scan.n) == (["scanning"], "rows", 900)  # JSONL: no total
    assert (ref.descs, ref.unit, ref.total, ref.n) == (["scanning the reference"], "rows", 150, 150)
    ran = [r for r in report.to_dict()["results"] if r["status"] != "skipped"]
    assert len(ran) >= 15
    assert fin.descs == ["finishing"] + [f"finishing {r['code']} ({r['name']})" for r in ran]
    assert (fin.unit, fin.total, fin.n) == ("rules", len(ran), len(ran))
    assert all(bar.closed for bar in bars)


@pytest.mark.slow
def test_a_parallel_scan_has_the_same_stages(bars, fixtures_dir):
    audit(fixtures_dir / "classification", select=["TXT001", "LEN002"], workers=2, progress=True)
    scan, fin = bars
    assert (scan.descs, scan.n) == (["scanning"], 900)
    assert fin.descs[1:] == [
        "finishing INPUT001 (input.integrity)",
        "finishing LEN002 (length.outliers)",
        "finishing TXT001 (content.empty-text)",
    ]
    assert all(bar.closed for bar in bars)


def test_no_bar_without_progress(bars, fixtures_dir, reference):
    audit(fixtures_dir / "classification", reference=reference)
    assert bars == []


def test_the_real_bar_writes_the_stages_to_stderr(fixtures_dir, capsys):
    # outside a notebook tqdm.auto is the text bar on stderr, shown because progress was asked
    audit(fixtures_dir / "classification", select=["TXT", "DUP002"], progress=True)
    err = capsys.readouterr().err
    assert "scanning" in err
    assert "finishing DUP002 (duplicates.near)" in err

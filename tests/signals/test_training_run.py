"""The planted run: every bad batch is found at its step, for the reason it was planted, with
its own rows as the worst; the clean run with the same seed: no spike at all."""

from __future__ import annotations

import json

import jsonschema
import pytest

from dataaudit.report.schema import report_schema
from tests import FIXTURES

#: the measure each planted batch must be unusual for, first (strongest) among its reasons
REASON = {
    "mojibake": {"encoding"},
    "label_flip": {"label_doubts"},
    "long": {"length_outliers", "length"},
    "one_source": {"source"},
}
SPIKES = ("SIG001", "SIG002")


def _spikes(report):
    return [f for f in report.signals["findings"] if f["code"] in SPIKES]


@pytest.mark.parametrize("name", sorted(REASON))
def test_every_planted_batch_is_found_for_its_reason(planted, truth, name):
    plant = truth["planted"][name]
    found = [f for f in _spikes(planted) if f["step"] == plant["step"]]
    assert len(found) == 1, f"no spike at step {plant['step']} ({name})"
    f = found[0]
    assert f["data"]["z"] >= 6
    reasons = f["batch"]["reasons"]
    assert reasons and reasons[0]["measure"] in REASON[name], reasons
    assert reasons[0]["z"] >= 4
    # the worst rows listed are rows of the planted batch, by their ids
    ids = [e["id"] for e in f["examples"]]
    assert ids and set(ids) <= set(plant["rows"])
    assert f["batch"]["rows"] == len(plant["rows"])
    assert reasons[0]["text"] in f["message"]


def test_the_planted_run_has_no_other_spike(planted, truth):
    steps = sorted(f["step"] for f in _spikes(planted))
    assert steps == sorted(p["step"] for p in truth["planted"].values())
    # a step where both spiked is one finding and counts as a spike of each
    m, spikes = planted.signals["metrics"], _spikes(planted)
    assert m["loss_spikes"] == sum("loss" in f["data"] for f in spikes) >= 1
    assert m["grad_norm_spikes"] == sum("grad_norm" in f["data"] for f in spikes) >= 1
    assert len(steps) <= m["loss_spikes"] + m["grad_norm_spikes"]


def test_the_clean_run_with_the_same_seed_has_no_spike(clean):
    s = clean.signals
    assert not _spikes(clean)
    assert s["metrics"]["loss_spikes"] == s["metrics"]["grad_norm_spikes"] == 0
    assert not [f for f in s["findings"] if f["severity"] != "info"], s["findings"]
    assert s["status"] == "pass"


def test_the_reasons_name_what_was_planted(planted, truth):
    by_step = {f["step"]: f for f in _spikes(planted)}
    moji = by_step[truth["planted"]["mojibake"]["step"]]["message"]
    assert "encoding damage (TXT002): 16 of 16 rows" in moji
    flip = by_step[truth["planted"]["label_flip"]["step"]]["message"]
    assert "label doubts (LBL002)" in flip
    src = by_step[truth["planted"]["one_source"]["step"]]["message"]
    assert "16 of 16 rows are 'pydoc'" in src
    long = by_step[truth["planted"]["long"]["step"]]
    assert "longer rows" in long["message"] and long["data"]["grad_norm"]["z"] >= 6


def test_the_gate_counts_signals_as_fail_on_says(planted):
    from dataaudit import Report

    # default fail_on=error: the spikes warn, and no gate reason comes from them
    assert not [r for r in planted.data["gate"]["reasons"] if r.startswith("SIG")]
    assert planted.signals["status"] == "warn"
    data = planted.to_dict()
    section = data.pop("signals")
    section.pop("status")
    data["fail_on"] = data["gate"]["fail_on"] = "warn"
    strict = Report(data).add_signals(section)
    assert not strict.passed and strict.signals["status"] == "fail"
    assert "SIG001 failed: 2 warn findings (fail_on=warn)" in strict.data["gate"]["reasons"]
    assert "SIG002 failed: 2 warn findings (fail_on=warn)" in strict.data["gate"]["reasons"]


def test_the_report_validates_and_renders(planted, truth):
    data = planted.to_dict()
    jsonschema.validate(data, report_schema())
    assert json.loads(planted.to_json())["signals"]["findings"]
    html = planted.to_html()
    assert 'id="signals"' in html
    for plant in truth["planted"].values():
        assert f"at step {plant['step']}" in html  # a marked point on the curves
    assert "<script>alert" not in html


def test_same_input_same_signals(run_dir, planted):
    from dataaudit import signals

    again = signals(
        run_dir / "planted" / "trainer_state.json",
        run_dir / "data.jsonl",
        order=run_dir / "planted" / "order.jsonl",
        max_grad_norm=4.0,
    )
    assert again.signals == planted.signals


def test_the_generator_is_deterministic(tmp_path, run_dir):
    from tests.signals.conftest import load_generator

    load_generator().write(tmp_path)
    for name in ("data.jsonl", "truth.json", "planted/trainer_state.json", "clean/order.jsonl"):
        assert (tmp_path / name).read_bytes() == (run_dir / name).read_bytes(), name


def test_the_sampler_order_maps_the_same_batches(run_dir, planted, tmp_path):
    from dataaudit import signals

    ids = [json.loads(line)["id"] for line in (run_dir / "data.jsonl").open()]
    position = {i: k for k, i in enumerate(ids)}
    flat = []
    for line in (run_dir / "planted" / "order.jsonl").open():
        flat += [position[i] for i in json.loads(line)["rows"]]
    sampler = tmp_path / "sampler.json"
    sampler.write_text(json.dumps(flat))
    report = signals(
        run_dir / "planted" / "trainer_state.json",
        run_dir / "data.jsonl",
        sampler_order=sampler,
        batch_size=8,
        gradient_accumulation_steps=2,
        max_grad_norm=4.0,
    )
    got = [(f["step"], f["batch"]["reasons"][0]["measure"]) for f in _spikes(report)]
    want = [(f["step"], f["batch"]["reasons"][0]["measure"]) for f in _spikes(planted)]
    assert got == want and report.signals["order"]["kind"] == "sampler order"


def test_a_nan_in_the_log_fails_the_gate_and_names_its_batch(run_dir, tmp_path):
    from dataaudit import signals

    state = json.loads((run_dir / "clean" / "trainer_state.json").read_text())
    for entry in state["log_history"]:
        if entry["step"] == 150 and "loss" in entry:
            entry["loss"] = float("nan")
    log = tmp_path / "trainer_state.json"
    log.write_text(json.dumps(state))
    report = signals(log, run_dir / "data.jsonl", order=run_dir / "clean" / "order.jsonl")
    bad = [f for f in report.signals["findings"] if f["code"] == "SIG003"]
    assert len(bad) == 1 and bad[0]["step"] == 150 and bad[0]["batch"]["rows"] == 16
    assert not report.passed
    assert "SIG003 failed: 1 error finding (fail_on=error)" in report.data["gate"]["reasons"]
    # without an order the log is still read; findings have no batch
    alone = signals(log, run_dir / "data.jsonl")
    assert alone.signals["order"] is None
    assert [f["batch"] for f in alone.signals["findings"] if f["code"] == "SIG003"] == [None]


def test_the_markdown_summary_lists_the_signals(planted, clean, truth):
    text = planted.to_markdown()
    assert "**Training signals**: 🟡 warn" in text
    for plant in truth["planted"].values():
        assert f"[warn] step {plant['step']}:" in text
    assert "- no findings in the training log" in clean.to_markdown()
    plain = {k: v for k, v in planted.data.items() if k != "signals"}
    from dataaudit import Report

    assert "Training signals" not in Report(plain).to_markdown()


def test_an_audit_report_is_reused_not_redone(run_dir, planted, tmp_path):
    from dataaudit import audit, signals
    from dataaudit.errors import ConfigError, InputError

    audit(run_dir / "data.jsonl").to_json(tmp_path / "audit.json")
    log, order = run_dir / "planted" / "trainer_state.json", run_dir / "planted" / "order.jsonl"
    again = signals(
        log, run_dir / "data.jsonl", order=order, max_grad_norm=4.0, report=tmp_path / "audit.json"
    )
    assert again.signals["findings"] == planted.signals["findings"]
    assert again.data["gate"]["reasons"] == planted.data["gate"]["reasons"]
    # a report of other data, a signals report, another fail_on: each says what to do
    other = FIXTURES / "classification" / "train.jsonl"
    with pytest.raises(InputError, match="the report audited other data: split 'train' has 512"):
        signals(log, other, report=tmp_path / "audit.json")
    planted.to_json(tmp_path / "signals.json")
    with pytest.raises(ConfigError, match="already has a signals section"):
        signals(log, run_dir / "data.jsonl", report=tmp_path / "signals.json")
    with pytest.raises(ConfigError, match="gated at fail_on=error"):
        signals(log, run_dir / "data.jsonl", report=tmp_path / "audit.json", fail_on="warn")

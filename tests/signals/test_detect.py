"""What the log alone shows, on synthetic logs whose every anomaly is placed by the test."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dataaudit.signals.detect import SignalOptions, detect, robust_z
from dataaudit.signals.log import read_log


def write_log(path, steps, **columns):
    """A CSV training log: one line per step, empty cells where a column has None."""
    names = list(columns)
    lines = ["step," + ",".join(names)]
    for i, step in enumerate(steps):
        cells = []
        for name in names:
            v = columns[name][i]
            cells.append("" if v is None else repr(float(v)))
        lines.append(f"{step}," + ",".join(cells))
    path.write_text("\n".join(lines) + "\n")
    return path


def noisy_loss(n=200, seed=0):
    rng = np.random.default_rng(seed)
    return 2.0 * np.exp(-np.arange(n) / 80) + 0.5 + rng.normal(0, 0.03, n)


def codes(events):
    return sorted(e.code for e in events)


def test_a_clean_curve_has_no_finding(tmp_path):
    n = 200
    lr = [1e-3 * min(1, (s + 1) / 20) for s in range(n)]
    log = read_log(
        write_log(tmp_path / "l.csv", range(1, n + 1), loss=noisy_loss(n), learning_rate=lr)
    )
    events, metrics = detect(log, SignalOptions())
    assert events == [] and metrics["steps"] == n and metrics["loss_spikes"] == 0


def test_a_spike_is_found_at_its_step_and_only_there(tmp_path):
    loss = noisy_loss()
    loss[120] += 0.6
    gn = np.full(200, 1.0) + np.random.default_rng(1).normal(0, 0.05, 200)
    gn[60] = 9.0
    log = read_log(write_log(tmp_path / "l.csv", range(1, 201), loss=loss, grad_norm=gn))
    events, metrics = detect(log, SignalOptions())
    spikes = {e.step: e for e in events}
    assert sorted(spikes) == [61, 121]
    assert spikes[121].code == "SIG001" and spikes[121].data["z"] > 6
    assert spikes[61].code == "SIG002" and "gradient norm 9" in spikes[61].message
    assert metrics["loss_spikes"] == metrics["grad_norm_spikes"] == 1


def test_a_step_where_both_spike_counts_as_a_spike_of_each(tmp_path):
    """One event (SIG001, both in its message); the header said 'gradient-norm spikes 0'."""
    loss = noisy_loss()
    loss[120] += 0.6
    gn = np.full(200, 1.0) + np.random.default_rng(1).normal(0, 0.05, 200)
    gn[120] = 9.0
    log = read_log(write_log(tmp_path / "l.csv", range(1, 201), loss=loss, grad_norm=gn))
    events, metrics = detect(log, SignalOptions())
    assert [(e.code, e.step) for e in events] == [("SIG001", 121)]
    assert "gradient norm 9" in events[0].message
    assert metrics["loss_spikes"] == metrics["grad_norm_spikes"] == 1


def test_robust_z_ignores_the_point_itself_and_floors_a_flat_curve():
    flat = np.full(60, 1.0)
    flat[30] = 1.005  # half a percent on a flat curve is no spike
    z, med, scale = robust_z(flat, 25, 10)
    assert abs(z[30]) < 1 and med[30] == 1.0 and scale[30] == pytest.approx(0.01)
    flat[30] = 2.0
    assert robust_z(flat, 25, 10)[0][30] == pytest.approx(100)


def test_nan_and_inf_are_errors_with_their_first_step(tmp_path):
    loss = list(noisy_loss(60))
    loss[40] = math.nan
    loss[41] = math.inf
    log = read_log(write_log(tmp_path / "l.csv", range(1, 61), loss=loss))
    events, metrics = detect(log, SignalOptions())
    bad = [e for e in events if e.code == "SIG003"]
    assert len(bad) == 1 and bad[0].severity == "error" and bad[0].step == 41
    assert "NaN/inf at 2 steps (first at step 41)" in bad[0].message
    assert metrics["nonfinite_steps"] == 2


def test_a_missing_value_is_not_a_nan(tmp_path):
    gn = [1.0 if s % 2 else None for s in range(60)]
    log = read_log(write_log(tmp_path / "l.csv", range(1, 61), loss=noisy_loss(60), grad_norm=gn))
    assert "SIG003" not in codes(detect(log, SignalOptions())[0])


def test_clipped_share(tmp_path):
    gn = [5.0 + 0.1 * (s % 3) for s in range(60)]
    path = write_log(tmp_path / "l.csv", range(1, 61), loss=noisy_loss(60), grad_norm=gn)
    log = read_log(path)
    events, metrics = detect(log, SignalOptions(max_grad_norm=1.0))
    assert metrics["clipped_share"] == 1.0 and "SIG004" in codes(events)
    events, metrics = detect(log, SignalOptions(max_grad_norm=10.0))
    assert metrics["clipped_share"] == 0.0 and "SIG004" not in codes(events)
    assert detect(log, SignalOptions())[1]["clipped_share"] is None  # threshold unknown


@pytest.mark.parametrize(
    ("lr", "kind", "step"),
    [
        ([1e-3] * 100, "no_warmup", 1),
        ([1e-3 * min(1, (s + 1) / 10) for s in range(50)] + [0.0] * 10 + [5e-4] * 40, "zero", 51),
        ([1e-3 * min(1, (s + 1) / 10) for s in range(50)] + [1e-2] * 50, "jump", 51),
    ],
)
def test_learning_rate_anomalies(tmp_path, lr, kind, step):
    log = read_log(
        write_log(tmp_path / "l.csv", range(1, 101), loss=noisy_loss(100), learning_rate=lr)
    )
    found = [e for e in detect(log, SignalOptions())[0] if e.code == "SIG005"]
    assert [(e.data["kind"], e.step) for e in found] == [(kind, step)]


def test_a_decay_to_zero_and_a_warmup_from_zero_are_fine(tmp_path):
    lr = [0.0] + [1e-3 * min(1, s / 10) * (99 - s) / 99 for s in range(1, 100)]
    log = read_log(
        write_log(tmp_path / "l.csv", range(1, 101), loss=noisy_loss(100), learning_rate=lr)
    )
    assert "SIG005" not in codes(detect(log, SignalOptions())[0])


def test_divergence_names_the_step_where_overfitting_starts(tmp_path):
    n = 200
    entries = [{"step": s, "loss": float(v)} for s, v in zip(range(1, n + 1), noisy_loss(n))]
    evals = [1.2, 1.0, 0.9, 0.85, 0.84, 0.86, 0.9, 0.95, 1.0, 1.05]
    entries += [{"step": 20 * (i + 1), "eval_loss": v} for i, v in enumerate(evals)]
    entries.sort(key=lambda e: e["step"])
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": entries, "global_step": n}))
    found = [e for e in detect(read_log(path), SignalOptions())[0] if e.code == "SIG006"]
    assert len(found) == 1 and found[0].data["best_step"] == 100
    assert "overfitting starts there" in found[0].message
    # a validation loss that keeps falling: nothing
    entries = [e for e in entries if "eval_loss" not in e] + [
        {"step": 20 * (i + 1), "eval_loss": 1.2 - 0.05 * i} for i in range(10)
    ]
    path.write_text(json.dumps({"log_history": sorted(entries, key=lambda e: e["step"])}))
    assert "SIG006" not in codes(detect(read_log(path), SignalOptions())[0])


def test_a_loss_that_never_goes_down_is_a_plateau(tmp_path):
    loss = 2.3 + np.random.default_rng(3).normal(0, 0.01, 100)
    log = read_log(write_log(tmp_path / "l.csv", range(1, 101), loss=loss))
    found = [e for e in detect(log, SignalOptions())[0] if e.code == "SIG007"]
    assert len(found) == 1 and found[0].severity == "warn"


def test_the_three_formats_read_alike(tmp_path):
    loss = noisy_loss(50)
    entries = [
        {"step": s, "loss": float(v), "grad_norm": 1.0, "learning_rate": 1e-4, "epoch": s / 50}
        for s, v in zip(range(1, 51), loss)
    ]
    entries.append({"step": 50, "train_runtime": 12.0, "train_loss": 1.0, "total_flos": 1})
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": entries}))
    (tmp_path / "log.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries[:-1]))
    write_log(
        tmp_path / "log.csv",
        range(1, 51),
        loss=loss,
        grad_norm=[1.0] * 50,
        learning_rate=[1e-4] * 50,
    )
    logs = [read_log(tmp_path / n) for n in ("trainer_state.json", "log.jsonl", "log.csv")]
    assert [lg.format for lg in logs] == ["trainer_state", "jsonl", "csv"]
    for lg in logs:
        assert sorted(lg.columns) == ["grad_norm", "learning_rate", "loss"]
        assert list(lg.steps) == list(range(1, 51))
        np.testing.assert_allclose(lg.columns["loss"], loss)


def test_aliases_name_the_same_columns(tmp_path):
    path = tmp_path / "wandb.csv"
    path.write_text("train/global_step,train/loss,lr,val_loss\n1,2.0,0.1,\n2,1.9,0.1,2.1\n")
    log = read_log(path)
    assert sorted(log.columns) == ["learning_rate", "loss"]
    assert list(log.eval_steps) == [2] and log.eval_columns["eval_loss"][0] == 2.1


def test_a_fast_start_without_warmup_is_no_spike(tmp_path):
    rng = np.random.default_rng(0)
    loss = 2.3 * np.exp(-np.arange(200) / 3) + 0.6 + rng.normal(0, 0.03, 200)
    log = read_log(write_log(tmp_path / "l.csv", range(1, 201), loss=loss))
    assert robust_z(loss, 25, 10)[0][0] > 20  # without the guard, step 1 would be a spike
    assert detect(log, SignalOptions())[0] == []

"""``dataaudit signals LOG --data DATA``: the subcommand's arguments, its run and its summary."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

__all__ = ["add_parser", "cmd_signals", "render_summary"]


def add_parser(sub: Any) -> None:
    from ..rule import ROLE_NAMES, Severity

    p = sub.add_parser(
        "signals",
        help="read a training log against its data: spikes, NaNs, schedule, divergence, bad batches",
        description="Read a training log (a Hugging Face trainer_state.json, or a CSV/JSONL of "
        "step metrics) and find loss and gradient-norm spikes, NaN/inf, clipping, learning-rate "
        "schedule anomalies, train/validation divergence and plateaus. With the sample order "
        "(--order, or --sampler-order and --batch-size), each spike's batch is compared with the "
        "corpus (length, tokens, source and label mix, duplicates, encoding damage, label "
        "doubts, from an audit of DATA) and its worst rows are listed. Exit 1 when a finding "
        "reaches --fail-on.",
    )
    p.add_argument(
        "log", metavar="LOG", help="trainer_state.json, or a .csv/.jsonl of step metrics"
    )
    p.add_argument(
        "--data", required=True, nargs="+", metavar="DATA", help="the data the run trained on"
    )
    p.add_argument(
        "--order",
        metavar="FILE",
        help='rows per step: .jsonl of {"step": N, "rows": [...]}, JSON or CSV',
    )
    p.add_argument(
        "--sampler-order",
        metavar="FILE",
        help="the sampler's row order over the run (JSON list, .npy, or one per line); needs "
        "--batch-size",
    )
    p.add_argument(
        "--batch-size",
        type=int,
        metavar="ROWS",
        help="rows per forward pass over all devices (with --sampler-order)",
    )
    p.add_argument(
        "--gradient-accumulation-steps", type=int, default=1, metavar="N", help="(default 1)"
    )
    p.add_argument("--train-split", metavar="NAME", help="the split the run trained on")
    p.add_argument(
        "--max-grad-norm", type=float, metavar="X", help="the clipping threshold of the run"
    )
    p.add_argument(
        "--z", type=float, default=6.0, help="robust z-score from which a step is a spike (6)"
    )
    p.add_argument(
        "--window", type=int, default=25, help="steps on each side a step is compared with (25)"
    )
    p.add_argument(
        "--batch-z",
        type=float,
        default=4.0,
        help="z against random batches from which a batch measure is a reason (4)",
    )
    p.add_argument(
        "--report",
        metavar="FILE",
        help="the audit of DATA already made (dataaudit audit --json): its flags and gate are "
        "used instead of auditing again (checked to be of this data)",
    )
    p.add_argument("--config", help="rule pack name or YAML/TOML file for the audit of DATA")
    p.add_argument("--fail-on", choices=Severity.fail_on_choices())
    for role in ROLE_NAMES:
        p.add_argument(f"--{role}", metavar="COLUMN", help=f"column to use as the {role}")
    p.add_argument("--json", metavar="FILE", help="write the JSON report (- for stdout)")
    p.add_argument("--html", metavar="FILE", help="write the HTML report (curves, spikes)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing; use the exit code")
    p.set_defaults(func=cmd_signals)


def cmd_signals(args: argparse.Namespace) -> int:
    from .._io import check_output_path, writes_stdout
    from ..config import discover_pyproject
    from ..errors import ConfigError
    from ..rule import ROLE_NAMES
    from .api import signals

    inputs = [args.log, *args.data, args.order, args.sampler_order, args.report]
    outputs = [(o, p) for o, p in (("--json", args.json), ("--html", args.html)) if p]
    if sum(writes_stdout(p) for _, p in outputs) > 1:
        raise ConfigError("--json - and --html - both write to stdout; give one a file.")
    for opt, path in outputs:
        if writes_stdout(path):
            continue
        check_output_path(path, opt)
        target = os.path.realpath(path)
        if any(p and os.path.realpath(p) == target for p in inputs):
            raise ConfigError(f"{opt} {path}: it is an input of this command; write elsewhere.")
    data: Any = args.data[0] if len(args.data) == 1 else list(args.data)
    report = signals(
        args.log,
        data,
        order=args.order,
        sampler_order=args.sampler_order,
        batch_size=args.batch_size,
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        train_split=args.train_split,
        max_grad_norm=args.max_grad_norm,
        z=args.z,
        window=args.window,
        batch_z=args.batch_z,
        config=args.config or discover_pyproject(),
        fail_on=args.fail_on,
        progress=False,
        report=args.report,
        **{r: getattr(args, r) for r in ROLE_NAMES if getattr(args, r) is not None},
    )
    args.verdict = 0 if report.passed else 1
    console = sys.stderr if any(writes_stdout(p) for _, p in outputs) else sys.stdout
    if args.json:
        report.to_json(args.json)
    if args.html:
        report.to_html(args.html)
    if not args.quiet:
        print(render_summary(report.data), file=console)
    return args.verdict


def render_summary(data: dict[str, Any]) -> str:
    """The signals section as text: the log, each finding with its batch's worst rows, and
    the verdict (the audit's own findings are counted, see ``dataaudit audit`` for them)."""
    from ..report.escape import plain

    s = data["signals"]
    log = s["log"]
    lines = [
        f"training log {plain(log['path'], 300)} ({log['format']}): {log['steps']} steps "
        f"({log['first_step']}-{log['last_step']}), columns {', '.join(log['columns'])}"
        + (f"; {log['eval_steps']} evaluations" if log["eval_steps"] else "")
    ]
    order = s.get("order")
    if order:
        lines.append(
            f"sample order: {order['kind']} {plain(order['path'], 300)}, {order['steps']} steps "
            f"of split {plain(order['split'], 100)}"
        )
    else:
        lines.append("sample order: not given; spikes are not mapped to rows (--order)")
    m = s["metrics"]
    clipped = "n/a" if m["clipped_share"] is None else f"{m['clipped_share']:.1%}"
    lines.append(
        f"loss spikes {m['loss_spikes']}, gradient-norm spikes {m['grad_norm_spikes']}, "
        f"non-finite steps {m['nonfinite_steps']}, clipped {clipped}"
    )
    for f in s["findings"]:
        lines.append(f"  {f['code']} [{f['severity']}] {plain(f['message'], 2000)}")
        for e in f["examples"]:
            ident = f" id {plain(e['id'], 60)}" if e.get("id") else ""
            why = f" ({plain(e['why'], 200)})" if e.get("why") else ""
            lines.append(f"      row {e['row']}{ident}{why}: {plain(e.get('text') or '', 100)}")
    if not s["findings"]:
        lines.append("  no findings in the training log")
    summary = data["summary"]
    lines.append(
        f"audit of the data: {summary['fail']} failed, {summary['warn']} warned, "
        f"{summary['error']} errored of {summary['rules']} rules"
    )
    verdict = "PASSED" if data["passed"] else "FAILED"
    lines.append(f"{verdict} (fail_on={data['fail_on']})")
    for reason in data["gate"]["reasons"]:
        lines.append(f"  {plain(reason, 500)}")
    return "\n".join(lines)

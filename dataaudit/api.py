"""audit(): resolve input, config, rules and resources; run the engine; return a Report."""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

from . import engine as _engine
from ._process import resume_collection
from .config import AuditConfig, build_rule, check_required_roles, load_config
from .context import AuditContext
from .corpus import load_corpus
from .engine import prepass as _prepass
from .errors import ConfigError, close_matches
from .registry import RuleSet, load_rules, required_codes, select_rules, with_extra_rules
from .report import Report
from .resources import resolve_resources
from .rule import ROLE_NAMES, Rule, Severity


def resolve_rules(
    config: AuditConfig, extra_rules: list[type[Rule]] | None = None
) -> tuple[list[tuple[Rule, Severity]], list[str]]:
    """The selected rules, built from their options, and any plugin errors."""
    ruleset = with_extra_rules(load_rules(), extra_rules)
    names = ruleset.names()  # options by code or name; only the selected rules' modules load
    for code in config.rules:
        if code.upper() not in ruleset.rules and code not in names:
            known = list(ruleset.rules)
            raise ConfigError(
                f"rules: {code!r} is not a rule."
                + close_matches(code, known)
                + " Run `dataaudit rules`."
            )
    options = {
        code.upper() if code.upper() in ruleset.rules else names[code]: opts
        for code, opts in config.rules.items()
    }
    chosen = select_rules(ruleset, config.select, config.extend_select, config.ignore)
    required_codes(ruleset, config.require_rules)  # a selector that names no rule fails here
    chosen = _with_input_integrity(ruleset, chosen, config.ignore)
    built = [build_rule(cls, options.get(cls.code, {})) for cls in chosen]
    return built, list(ruleset.plugin_errors)


ALWAYS_RUN = "INPUT001"  # what the readers could not read: reported whatever is selected


def _with_input_integrity(
    ruleset: RuleSet, chosen: list[type[Rule]], ignore: list[str]
) -> list[type[Rule]]:
    """INPUT001 runs in every audit, unless ignored by its own code, name or prefix: a
    ``select`` of one rule must not hide that part of the data was never read."""
    cls = ruleset.rules.get(ALWAYS_RUN)
    if cls is None or cls in chosen:
        return chosen
    if any(sel in (cls.code, cls.name, "INPUT") for sel in ignore or []):
        return chosen
    return sorted([*chosen, cls], key=lambda c: c.code)


def audit(
    data: Any,
    *,
    config: Any = None,
    select: list[str] | str | None = None,
    extend_select: list[str] | str | None = None,
    ignore: list[str] | str | None = None,
    fail_on: str | None = None,
    split: str | None = None,
    rules: dict[str, dict[str, Any]] | None = None,
    batch_size: int | None = None,
    seed: int | None = None,
    progress: bool = False,
    workers: int | None = None,
    tokenizer: Any = None,
    contamination_ref: list[str] | str | None = None,
    reference: Any = None,
    on_bad_lines: str | None = None,
    require_rules: list[str] | str | None = None,
    require_roles: list[str] | str | None = None,
    extra_rules: list[type[Rule]] | None = None,
    baseline: str | os.PathLike | None = None,
    predictions: Any = None,
    engine: str = "local",
    expectations: Any = None,
    ray_address: str | None = None,
    **columns: str,
) -> Report:
    """Audit a dataset and return a Report; ``report.passed`` is the gate.

    ``data``: a path (file, glob, folder of split files), a Hugging Face Dataset / DatasetDict /
    IterableDataset, a polars or pandas DataFrame, a pyarrow Table, a list of dicts, or a dict of
    split name → any of those. ``config``: a pack name (``"default"``, ``"sft"``…), a YAML/TOML
    path, a dict or an AuditConfig. Column roles (``text=``, ``label=``, ``source=``, ``prompt=``,
    ``response=``, ``messages=``, ``input=``, ``id=``) override auto-detection.
    ``on_bad_lines="skip"`` skips records that cannot be read (INPUT001 lists each) instead of
    stopping at the first. ``require_rules`` (selectors) fail the gate unless those rules ran;
    ``require_roles`` are column roles the data must have (InputError before the scan).
    ``extra_rules``: Rule classes to run in this audit as if installed (select them by code,
    prefix or group like any rule; with ``workers`` > 1 they must live in an importable module).
    ``baseline``: a file of accepted findings (``dataaudit baseline``): they are reported as
    suppressed and do not count towards a rule's status or the gate.
    ``predictions``: a model's predictions for the EVAL rules (which then run): a dataset column
    name, a file (.csv/.jsonl/.parquet keyed by ``row`` or ``id``), an array per row, or
    ``{"probabilities": P, "classes": [...]}``; see dataaudit/resources/predictions.py.
    ``expectations``: a Great Expectations suite (a JSON path or the suite object) that GX001
    runs on the columns and per-row features (``pip install 'dataaudit[gx]'``).
    ``engine="ray"``: fold, merge and finish on a Ray cluster (``pip install 'dataaudit[ray]'``):
    the one at ``ray_address`` (``"auto"``, ``"ray://host:10001"``), the one this process is
    connected to, or a local one; same report as the local engine. A ``ray_address`` other than
    the cluster this process is already connected to is a ConfigError (Ray connects a process
    to one cluster).
    """
    t0 = time.perf_counter()
    _check_engine(engine)
    unknown = sorted(set(columns) - set(ROLE_NAMES))
    if unknown:
        raise ConfigError(
            f"audit() got an unexpected argument {unknown[0]!r}."
            + close_matches(unknown[0], ROLE_NAMES)
            + f" Column roles: {', '.join(ROLE_NAMES)}."
        )
    if expectations is not None:  # GX001 runs the suite (rules/expectations/suite.py)
        rules, extend_select = _with_expectations(expectations, rules, extend_select)
    cfg = load_config(
        config,
        select=select,
        extend_select=extend_select,
        ignore=ignore,
        fail_on=fail_on,
        split=split,
        rules=rules,
        batch_size=batch_size,
        seed=seed,
        workers=workers,
        columns={k: v for k, v in columns.items() if v is not None} or None,
        tokenizer=tokenizer if isinstance(tokenizer, str) else None,
        contamination_ref=[contamination_ref]
        if isinstance(contamination_ref, str)
        else contamination_ref,
        reference=str(reference) if isinstance(reference, (str, os.PathLike)) else None,
        on_bad_lines=on_bad_lines,
        require_rules=require_rules,
        require_roles=require_roles,
        baseline=os.fspath(baseline) if baseline is not None else None,
        predictions=os.fspath(predictions) if isinstance(predictions, (str, os.PathLike)) else None,
    )
    accepted = None
    if cfg.baseline is not None:  # read before the scan: a bad file fails in a second
        from .report.baseline import load_baseline

        accepted = load_baseline(cfg.baseline)
    predictions = predictions if predictions is not None else cfg.predictions
    # given predictions, the EVAL rules run (group "predictions"; ignore them like any rule)
    selecting = (
        dataclasses.replace(cfg, extend_select=[*cfg.extend_select, "predictions"])
        if predictions is not None
        else cfg
    )
    built, plugin_errors = resolve_rules(selecting, extra_rules)
    corpus = load_corpus(data, split=cfg.split, roles=cfg.columns, on_bad_lines=cfg.on_bad_lines)
    check_required_roles(cfg, corpus)
    from .resources.predictions import PredictionCheck, resolve_predictions

    joined = resolve_predictions(predictions, corpus)  # checked before the scan
    # objects (a Tokenizer, a Dataset) come as arguments; the config keeps only what serializes
    reference = reference if reference is not None else cfg.reference
    ctx = AuditContext.from_corpus(
        corpus,
        max_examples=cfg.max_examples,
        example_chars=cfg.example_chars,
        seed=cfg.seed,
        resources=resolve_resources(
            tokenizer=tokenizer if tokenizer is not None else cfg.tokenizer,
            reference=reference is not None,
            contamination_ref=cfg.contamination_ref,
        ),
    )
    watch = None
    if joined is not None:
        ctx.resources = dataclasses.replace(ctx.resources, predictions=joined)
        watch = PredictionCheck(joined, corpus)
    stages = {"load": time.perf_counter() - t0}  # config, rules, input schema, resources
    clock = time.perf_counter()
    state = _engine.start(built, ctx)
    known = [s.num_rows for s in corpus.splits.values()]
    total = (
        sum(known) if all(k is not None for k in known) and corpus.split_column is None else None
    )
    batches = corpus.stream(cfg.batch_size)
    if watch is not None:  # ids, row counts and the label set, checked right after the scan
        batches = watch.watch(batches)
    # rules that index a few splits first (the eval side): one read of those, before the scan
    plan = _prepass.plan(state, ctx)
    first = (plan, _prepass.stream(corpus, plan.splits, cfg.batch_size)) if plan else None
    remote = None
    if engine == "ray" or cfg.workers > 1:  # their scans run in other processes, for long
        resume_collection()
    if engine == "ray":  # the rule states stay on the cluster until each rule finishes there
        from .engine.ray import scan_ray

        remote = scan_ray(
            state,
            corpus,
            ctx,
            batches=batches if watch is not None else None,
            batch_size=cfg.batch_size,
            address=ray_address,
            progress=progress,
            total_rows=total,
            prepass_input=first,
        )
    elif cfg.workers > 1:
        _engine.scan_parallel(
            state,
            batches,
            ctx,
            workers=cfg.workers,
            progress=progress,
            total_rows=total,
            prepass_input=first,
        )
    else:
        if first is not None:
            _prepass.run_local(state, *first, ctx, progress=progress)
        _engine.scan(state, batches, ctx, progress=progress, total_rows=total)
    _check_not_empty(state)
    if watch is not None and state.stopped is None:
        watch.check()
    if plan:  # the prepass is its own stage (the engines ran it first)
        stages["prepass"] = plan.seconds
    stages["scan"], clock = time.perf_counter() - clock - plan.seconds, time.perf_counter()
    if reference is not None:
        # the drift rules that ran compare with the reference's sketches at finish
        from .resources.reference import build_reference

        active = [run.rule for run in state.runs if run.active]
        sketches = build_reference(reference, active, cfg, ctx, progress=progress)
        ctx.resources = dataclasses.replace(ctx.resources, reference=sketches)
        stages["reference"], clock = time.perf_counter() - clock, time.perf_counter()
    resume_collection()  # if the scan did not (no batch at all)
    if remote is not None:
        remote.finish(state, ctx, progress=progress)
    else:
        _engine.finish(state, ctx, progress=progress)
    stages["finish"] = time.perf_counter() - clock
    return Report.build(
        [run.outcome() for run in state.runs],
        state.identity,
        ctx,
        cfg,
        stopped=state.stopped,
        plugin_errors=plugin_errors,
        seconds=time.perf_counter() - t0,
        resources=ctx.resources.describe(),
        files=corpus.files,
        baseline=accepted,
        timings={
            "stages": {k: round(v, 6) for k, v in stages.items()},
            "scan": state.timings.to_dict(),
        },
        engine=remote.engine if remote is not None else None,
    )


def _with_expectations(
    suite: Any, rules: dict[str, dict[str, Any]] | None, extend_select: list[str] | str | None
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """``expectations=``: select GX001 with the suite as its option."""
    suite = os.fspath(suite) if isinstance(suite, os.PathLike) else suite
    rules = dict(rules or {})
    rules["GX001"] = {**(rules.get("GX001") or {}), "suite": suite}
    extra = [extend_select] if isinstance(extend_select, str) else list(extend_select or [])
    return rules, [*extra, "GX001"]


def _check_engine(engine: str) -> None:
    """A known engine, and Ray installed for ``engine="ray"``, before any data is read."""
    if engine == "ray":
        from .engine.ray import require_ray

        require_ray()
    elif engine != "local":
        raise ConfigError(f"engine={engine!r}: use 'local' (with workers=N) or 'ray'.")


def _check_not_empty(state: _engine.ScanState) -> None:
    from .errors import InputError

    for name, ident in state.identity.items():
        if ident.rows == 0:
            raise InputError(f"split {name!r} has no rows; remove it or check the input.")

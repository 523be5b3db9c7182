"""dataaudit audit | diff | baseline | rules | explain | schema | clean | gx-suite | signals.

Exit codes: 0 passed, 1 gate failed (or a diff regressed with --fail-on-regression),
2 usage / input / config error, 3 internal error.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_GATE, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def _csv(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _parse_option(text: str) -> tuple[str, str, Any]:
    import yaml

    from .errors import ConfigError

    key, sep, raw = text.partition("=")
    code, dot, option = key.partition(".")
    if not sep or not dot or not option:
        raise ConfigError(
            f"--option {text!r}: expected CODE.option=value, e.g. TXT003.max_chars=20000."
        )
    try:
        value = yaml.safe_load(raw)
    except (yaml.YAMLError, RecursionError) as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(
            f"--option {text!r}: the value {raw!r} is not valid YAML ({detail}); quote strings "
            "and close brackets, e.g. LEAK001.pairs='[[train, test]]'."
        ) from None
    return code.strip(), option.strip(), value


OUTPUTS = (("json", "--json"), ("html", "--html"), ("flags", "--flags"), ("junit", "--junit"))
OUTPUT_FORMATS = ("text", "json", "github", "sarif", "junit", "markdown")


def _parse_tolerance(text: str) -> tuple[str, float | str]:
    from .config import parse_tolerance
    from .errors import ConfigError

    key, sep, raw = text.partition("=")
    if not sep:
        raise ConfigError(
            f"--tolerance {text!r}: expected CODE.METRIC=VALUE, e.g. TOK001.js=0.005 or "
            "LBL003.label_cramers_v=10%."
        )
    try:
        value: float | str = float(raw)
    except ValueError:
        value = raw.strip()
    return parse_tolerance(key, value, "--tolerance")


def _read_by_audit(out: str, specs: list[str]) -> str | None:
    """Why the audit reads (or, for a folder input, would read) the file ``out``, or None."""
    import fnmatch
    import glob

    from .errors import DataAuditError
    from .inputs.files import file_format

    target = os.path.realpath(os.path.expanduser(out))
    for spec in specs:
        text = os.path.expanduser(str(spec))
        if any(ch in text for ch in "*?["):
            matches = {os.path.realpath(m) for m in glob.glob(text, recursive=True)}
            if target in matches or fnmatch.fnmatch(target, os.path.abspath(text)):
                return f"the input pattern {spec} matches it"
            continue
        source = os.path.realpath(text)
        if source == target:
            return f"it is the input {spec}"
        if os.path.isdir(source) and target.startswith(source.rstrip(os.sep) + os.sep):
            if Path(target).name.startswith("."):
                continue  # hidden files are not read from folders
            try:
                file_format(Path(target))
            except DataAuditError:
                continue
            return f"it is a data file inside the input folder {spec}, which the audit reads"
    return None


def _check_outputs(args: argparse.Namespace, reads: list[str]) -> None:
    """Before the scan: every output path is writable, distinct, and not a file the audit reads."""
    from ._io import check_output_path, is_stdout, writes_stdout
    from .errors import ConfigError
    from .report.flags import flags_format

    outputs = [(opt, getattr(args, attr)) for attr, opt in OUTPUTS if getattr(args, attr)]
    to_stdout = [opt for opt, path in outputs if writes_stdout(path)]
    if args.output_format != "text":
        to_stdout.append(f"--output-format {args.output_format}")
    if len(to_stdout) > 1:
        raise ConfigError(
            f"{' and '.join(to_stdout)} all write to stdout (-); only one output can go to stdout, "
            "give the others file paths."
        )
    if args.flags:
        flags_format(args.flags)
    seen: dict[str, str] = {}
    for opt, path in outputs:
        if is_stdout(path):
            continue
        check_output_path(path, opt)
        reason = _read_by_audit(path, reads)
        if reason:
            raise ConfigError(
                f"{opt} {path}: {reason}; writing there would overwrite the data the audit reads. "
                "Write the report somewhere else."
            )
        key = os.path.realpath(os.path.expanduser(path))
        if key in seen:
            raise ConfigError(f"{seen[key]} and {opt} both write {path}; give each its own file.")
        seen[key] = opt


def cmd_audit(args: argparse.Namespace) -> int:
    from ._io import writes_stdout
    from .api import audit
    from .config import discover_pyproject
    from .errors import DataAuditError
    from .rule import ROLE_NAMES

    rules: dict[str, dict[str, Any]] = {}
    for text in args.option or []:
        code, option, value = _parse_option(text)
        rules.setdefault(code, {})[option] = value
    data: Any = args.paths[0] if len(args.paths) == 1 else list(args.paths)
    config = args.config or discover_pyproject()
    reads = [*args.paths, *(args.contamination_ref or [])]
    reads += [p for p in (args.reference, config, args.tokenizer, args.predictions) if p]
    reads += [args.expectations] if args.expectations else []
    _check_outputs(args, reads)
    # with a report on stdout, the summary goes to stderr so stdout stays one valid document
    to_stdout = any(writes_stdout(getattr(args, a)) for a, _ in OUTPUTS)
    console = sys.stderr if to_stdout or args.output_format != "text" else sys.stdout
    progress = not args.no_progress and sys.stderr.isatty()
    report = audit(
        data,
        config=config,
        select=_csv(args.select),
        extend_select=_csv(args.extend_select),
        ignore=_csv(args.ignore),
        fail_on=args.fail_on,
        split=args.split,
        rules=rules or None,
        batch_size=args.batch_size,
        workers=args.workers,
        engine=args.engine,
        ray_address=args.ray_address,
        progress=progress,
        tokenizer=args.tokenizer,
        contamination_ref=args.contamination_ref,
        reference=args.reference,
        on_bad_lines=args.on_bad_lines,
        require_rules=_csv(args.require_rules),
        require_roles=_csv(args.require_roles),
        baseline=args.baseline,
        predictions=args.predictions,
        expectations=args.expectations,
        **{r: getattr(args, r) for r in ROLE_NAMES if getattr(args, r) is not None},
    )
    # the verdict stands even if a reader closes stdout early (``| head``): see main()
    args.verdict = EXIT_OK if report.passed else EXIT_GATE
    writers = {
        "json": report.write_json,  # piece by piece: millions of row flags
        "html": report.to_html,
        "flags": report.write_flags,
        "junit": report.to_junit,
    }
    written, failed = [], []
    for attr, opt in OUTPUTS:
        path = getattr(args, attr)
        if not path:
            continue
        try:
            writers[attr](path)
            written.append(path)
        except OSError as exc:  # checked before the scan; a full disk can still happen
            failed.append(f"{opt} {path}: could not be written ({exc.strerror or exc})")
    if args.output_format != "text":
        formats = {
            "json": lambda: report.to_json() + "\n",
            "github": report.to_github,
            "sarif": report.to_sarif,
            "junit": report.to_junit,
            "markdown": report.to_markdown,
        }
        sys.stdout.write(formats[args.output_format]())
        sys.stdout.flush()
    if not args.quiet:
        color = console.isatty() and "NO_COLOR" not in os.environ
        print(report.summary(color=color), file=console)
        files = [str(p) for p in written if not writes_stdout(p)]
        if files:
            print("wrote " + ", ".join(files), file=console)
    if failed:
        raise DataAuditError("; ".join(failed) + ". The audit ran but its report is incomplete.")
    return args.verdict


def cmd_rules(args: argparse.Namespace) -> int:
    from .registry import load_rules

    ruleset = load_rules()
    rows = []
    for code, cls in sorted(ruleset.rules.items()):
        rows.append(
            {
                "code": code,
                "name": cls.name,
                "groups": list(cls.groups),
                "severity": cls.severity.value,
                "stable": cls.stable,
                "requires": list(cls.requires),
                "origin": ruleset.origin[code],
                "summary": _summary_line(cls),
            }
        )
    if args.json:
        print(json.dumps({"rules": rows, "plugin_errors": ruleset.plugin_errors}, indent=2))
    else:
        print(f"{'code':<8} {'name':<32} {'severity':<8} {'groups':<28} summary")
        for r in rows:
            name = r["name"] + ("" if r["stable"] else " (preview)")
            print(
                f"{r['code']:<8} {name:<32} {r['severity']:<8} {','.join(r['groups']):<28} {r['summary']}"
            )
    from .report.escape import plain

    for err in ruleset.plugin_errors:
        print(f"warning: {plain(err, 1000)}", file=sys.stderr)
    return EXIT_OK


def _summary_line(cls: Any) -> str:
    doc = inspect.getdoc(cls) or ""
    return doc.splitlines()[0] if doc else ""


def cmd_explain(args: argparse.Namespace) -> int:
    from .registry import _check_selectors, _specificity, load_rules, select_rules

    ruleset = load_rules()
    one_rule = args.code.upper() in ruleset.rules or args.code in ruleset.names()
    if not one_rule and not re.fullmatch(r"[A-Za-z]{2,5}[0-9]{3}", args.code):
        # a prefix, a name prefix or a group: the rules it selects, one line each
        _check_selectors([args.code], ruleset, "explain")
        chosen = select_rules(ruleset, [args.code])
        preview = [
            cls
            for cls in ruleset.rules.values()
            if not cls.stable and cls not in chosen and _specificity(args.code, cls) is not None
        ]
        print(f"{args.code} selects {len(chosen)} rule{'s' * (len(chosen) != 1)}:")
        for cls in chosen:
            print(f"  {cls.code:<9} {cls.name:<32} {_summary_line(cls)}")
        for cls in preview:
            print(f"  {cls.code:<9} {cls.name + ' (preview)':<32} {_summary_line(cls)}")
        if preview:
            print("preview rules run only when selected by their code.")
        print("`dataaudit explain CODE` shows one rule's documentation and options.")
        return EXIT_OK
    cls = ruleset.get(args.code)
    doc = inspect.getdoc(cls) or "(no documentation)"
    print(f"{cls.code} · {cls.name}")
    print(
        f"groups: {', '.join(cls.groups)} · default severity: {cls.severity.value} · "
        f"needs: {', '.join(cls.requires) or 'nothing'} · {'stable' if cls.stable else 'preview'} · "
        f"from: {ruleset.origin[cls.code]}"
    )
    print()
    print(doc)
    specs = cls.option_specs()
    print()
    print("Configure (YAML pack or pyproject [tool.dataaudit]):")
    print("  rules:")
    print(f"    {cls.code}:")
    print(f"      severity: {cls.severity.value}")
    for name, spec in specs.items():
        print(f"      {name}: {json.dumps(spec.default)}")
    return EXIT_OK


def cmd_clean(args: argparse.Namespace) -> int:
    from .remediate import MANIFEST_NAME, clean

    data: Any = args.paths[0] if len(args.paths) == 1 else list(args.paths)
    manifest = clean(
        args.report,
        data,
        args.out,
        drop=_csv(args.drop),
        severity=args.severity,
        action=_csv(args.action) or "drop",
        splits=_csv(args.splits),
    )
    if not args.quiet:
        from .report.escape import plain

        splits = manifest["splits"]
        removed = sum(s["removed"] for s in splits.values())
        total = sum(s["rows_in"] for s in splits.values())
        per = "; ".join(
            f"{plain(name, 200)}: {s['removed']:,} of {s['rows_in']:,}"
            for name, s in splits.items()
        )
        print(f"removed {removed:,} of {total:,} rows ({per})")
        files = [str(Path(args.out) / s["file"]) for s in splits.values() if s["file"]]
        files.append(str(Path(args.out) / MANIFEST_NAME))
        print("wrote " + ", ".join(plain(f, 500) for f in files))
    return EXIT_OK


def cmd_gx_suite(args: argparse.Namespace) -> int:
    from .report.model import Report
    from .resources.expectations import suite_from_report

    suite = suite_from_report(Report.load(args.report).data)
    sys.stdout.write(json.dumps(suite, indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from .report.schema import schema_json

    sys.stdout.write(schema_json())
    return EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    from ._io import check_output_path, writes_stdout
    from .errors import ConfigError
    from .report.diff import diff

    tolerances = dict(_parse_tolerance(t) for t in args.tolerance or [])
    console = sys.stdout if args.format == "text" else sys.stderr
    if args.json:
        check_output_path(args.json, "--json")
        reason = _read_by_audit(args.json, [args.old, args.new])
        if reason:
            raise ConfigError(
                f"--json {args.json}: it is a report being compared; write the diff elsewhere."
            )
        if writes_stdout(args.json) and args.format != "text":
            raise ConfigError(
                f"--json - and --format {args.format} both write to stdout; give --json a file."
            )
        console = sys.stderr if writes_stdout(args.json) else console
    if args.html:  # a page like the report's: what got worse first
        check_output_path(args.html, "--html")
        if _read_by_audit(args.html, [args.old, args.new]):
            raise ConfigError(
                f"--html {args.html}: it is a report being compared; write the page elsewhere."
            )
        if writes_stdout(args.html):
            json_out = bool(args.json and writes_stdout(args.json))
            if json_out or getattr(args, "format", "text") != "text":
                raise ConfigError("--html - and another output both write to stdout: give a file.")
            console = sys.stderr
    result = diff(args.old, args.new, tolerances=tolerances, fail_on=args.fail_on)
    if args.json:
        result.to_json(args.json)
    if args.html:
        result.to_html(args.html)
    if args.format == "json":
        sys.stdout.write(result.to_json() + "\n")
    elif args.format == "markdown":
        sys.stdout.write(result.to_markdown())
    if not args.quiet:
        print(result.summary(), file=console)
    if args.fail_on_regression and result.regressed:
        return EXIT_GATE
    return EXIT_OK


def cmd_baseline(args: argparse.Namespace) -> int:
    from ._io import atomic_write_text, check_output_path
    from .errors import ConfigError
    from .report.baseline import baseline_json
    from .report.model import Report

    text = baseline_json(Report.load(args.report).data)
    if args.output and args.output != "-":
        check_output_path(args.output, "--output")
        if os.path.realpath(args.output) == os.path.realpath(args.report):
            raise ConfigError(
                f"--output {args.output}: it is the report; write the baseline elsewhere."
            )
        atomic_write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .rule import ROLE_NAMES, Severity

    parser = argparse.ArgumentParser(
        prog="dataaudit",
        description="Audit LLM/NLP training data; the report gates training.",
        epilog="Exit codes: 0 passed, 1 gate failed, 2 usage/input/config error, 3 internal error.",
    )
    parser.add_argument("--version", action="version", version=f"dataaudit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("audit", help="audit a dataset and gate on the result")
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="files, globs or folders of split files"
    )
    p.add_argument("--config", help="rule pack name (default, sft, ...) or a YAML/TOML file")
    p.add_argument(
        "--select",
        action="append",
        metavar="RULES",
        help="codes, prefixes or groups (comma-separated)",
    )
    p.add_argument("--extend-select", action="append", metavar="RULES")
    p.add_argument("--ignore", action="append", metavar="RULES")
    p.add_argument(
        "--fail-on",
        choices=Severity.fail_on_choices(),
        help="finding severity that fails the gate",
    )
    p.add_argument(
        "--option", action="append", metavar="CODE.OPTION=VALUE", help="set a rule option"
    )
    p.add_argument(
        "--require-rules",
        action="append",
        metavar="RULES",
        help="codes, prefixes or groups that must run: skipped, errored or unselected fails the gate",
    )
    p.add_argument(
        "--require-roles",
        action="append",
        metavar="ROLES",
        help="column roles the data must have, e.g. label,source (exit 2 if one is missing)",
    )
    p.add_argument("--split", metavar="COLUMN", help="column that names each row's split")
    for role in ROLE_NAMES:
        p.add_argument(f"--{role}", metavar="COLUMN", help=f"column to use as the {role}")
    p.add_argument("--tokenizer", help="tokenizer.json path (or hub name, if cached locally)")
    p.add_argument(
        "--expectations",
        metavar="SUITE",
        help="Great Expectations suite JSON to run on the columns and per-row features (GX001)",
    )
    p.add_argument(
        "--contamination-ref",
        action="append",
        metavar="FILE",
        help="benchmark file to check n-gram overlap against",
    )
    p.add_argument(
        "--reference", metavar="PATH", help="baseline dataset (or saved report) to compare against"
    )
    p.add_argument(
        "--predictions",
        metavar="FILE",
        help="a model's predictions (.csv/.jsonl/.parquet keyed by row or id, or a column name): "
        "runs the EVAL rules (failing classes, failure slices, error types)",
    )
    p.add_argument(
        "--on-bad-lines",
        choices=["error", "skip"],
        help="a record that cannot be read: stop with an error (default) or skip it and list it "
        "in the report (INPUT001)",
    )
    p.add_argument("--batch-size", type=int, metavar="ROWS")
    p.add_argument("--workers", type=int, metavar="N", help="processes for the scan (same report)")
    p.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="local: this machine (--workers N); ray: a Ray cluster (pip install "
        "'dataaudit[ray]'); same report",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="the Ray cluster for --engine ray ('auto', ray://host:10001); default: a local one",
    )
    p.add_argument("--json", metavar="FILE", help="write the JSON report (- for stdout)")
    p.add_argument("--html", metavar="FILE", help="write the HTML report")
    p.add_argument(
        "--flags", metavar="FILE", help="write row flags: .parquet, .csv or .jsonl (- for CSV)"
    )
    p.add_argument(
        "--junit", metavar="FILE", help="write JUnit XML (one test case per rule) for CI"
    )
    p.add_argument(
        "--output-format",
        choices=OUTPUT_FORMATS,
        default="text",
        help="what to print on stdout: text (the summary, default), json (the report), github "
        "(workflow annotations at each flagged record's file and line), sarif (SARIF 2.1.0), "
        "junit, markdown (a job summary); other than text, the summary goes to stderr",
    )
    p.add_argument(
        "--baseline",
        metavar="FILE",
        help="accepted findings (`dataaudit baseline`): reported as suppressed, not counted",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing; use the exit code")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("diff", help="compare two reports (old baseline, new candidate)")
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--json", metavar="FILE", help="write the diff as JSON")
    p.add_argument("--html", metavar="FILE", help="write the diff as a self-contained HTML page")
    p.add_argument(
        "--format",
        choices=("text", "json", "markdown"),
        default="text",
        help="what to print on stdout: text (default), json, or markdown (a pull-request "
        "comment; the text account then goes to stderr unless -q)",
    )
    p.add_argument(
        "--tolerance",
        action="append",
        metavar="CODE.METRIC=VALUE",
        help="how far a metric may move and count as unchanged: an amount in its units or N%% "
        "of its value (over the pack's tolerances:), e.g. TOK001.js=0.005",
    )
    p.add_argument(
        "--fail-on",
        choices=Severity.fail_on_choices(),
        help="the severity from which a new finding is a regression (default: the new report's)",
    )
    p.add_argument("--fail-on-regression", action="store_true", help="exit 1 if anything regressed")
    p.add_argument(
        "-q", "--quiet", action="store_true", help="no text account (only a --format output)"
    )
    p.set_defaults(func=cmd_diff)

    p = sub.add_parser(
        "baseline",
        help="write the findings of a report as accepted (for audit --baseline)",
        description="Print a baseline of accepted findings: every finding of REPORT by "
        "fingerprint. `dataaudit audit ... --baseline FILE` then reports those findings as "
        "suppressed and leaves them out of the rules' statuses and the gate.",
    )
    p.add_argument("report", metavar="REPORT", help="a report JSON (`dataaudit audit --json`)")
    p.add_argument("-o", "--output", metavar="FILE", help="write it here instead of stdout")
    p.set_defaults(func=cmd_baseline)

    p = sub.add_parser("rules", help="list the available rules")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rules)

    p = sub.add_parser(
        "explain",
        help="show a rule's documentation and options (a prefix or group: the rules it selects)",
    )
    p.add_argument(
        "code", metavar="RULE", help="a code or name; or a prefix or group (DUP, default)"
    )
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser(
        "clean",
        help="write a copy of the data without the rows a report's flags drop",
        description="Write DATA without the rows the report's flags drop, one file per split in "
        "the input's format, and a manifest of what was removed and why, into a new folder. "
        "DATA must be what the report audited (its splits, row counts and content are checked).",
    )
    p.add_argument("paths", nargs="+", metavar="DATA", help="what `dataaudit audit` was given")
    p.add_argument("--report", required=True, metavar="FILE", help="the audit's JSON report")
    p.add_argument("--out", required=True, metavar="DIR", help="a new or empty folder")
    p.add_argument(
        "--drop",
        action="append",
        metavar="RULES",
        help="codes, prefixes or groups whose flags count, e.g. DUP,LEAK001 (default: all)",
    )
    p.add_argument(
        "--severity",
        choices=[s.value for s in Severity],
        default="info",
        help="the least severity of a flag that counts (default info: all)",
    )
    p.add_argument(
        "--action",
        action="append",
        metavar="ACTIONS",
        help="flag actions that remove a row: drop (default), review",
    )
    p.add_argument("--splits", action="append", metavar="SPLITS", help="only clean these splits")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    p.set_defaults(func=cmd_clean)

    from .signals.cli import add_parser as add_signals_parser

    add_signals_parser(sub)

    p = sub.add_parser(
        "gx-suite", help="print a Great Expectations suite that encodes a report's thresholds"
    )
    p.add_argument("report", help="a report JSON (dataaudit audit --json)")
    p.set_defaults(func=cmd_gx_suite)

    p = sub.add_parser("schema", help="print the report's JSON Schema")
    p.set_defaults(func=cmd_schema)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so cleanup (temporary files) runs and nothing swallows it."""


def _on_sigterm(signum: int, frame: Any) -> None:
    if os.getpid() != _MAIN_PID:  # a forked worker: die as the default action would
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    raise Terminated


_MAIN_PID = os.getpid()


def _install_sigterm() -> Any:
    global _MAIN_PID
    _MAIN_PID = os.getpid()
    try:
        return signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (e.g. main() called from a thread): leave it
        return None


def _one_blas_thread() -> None:
    """OpenBLAS starts a thread per core when numpy loads, which spins ~0.1 s waiting for work
    (2-5% of a 40k-document DUP002 audit's CPU, on the core the scan needs); no rule multiplies
    dense matrices large enough to use it (their models are sparse). Set before numpy loads,
    so worker processes inherit it; a value the user set is kept."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv: list[str] | None = None) -> int:
    from ._process import arrow_in_jemalloc, defer_collection, reuse_freed_memory

    _one_blas_thread()
    reuse_freed_memory()
    parser = build_parser()
    args = parser.parse_args(argv)
    if argv is None and args.command == "audit":  # the program: its scan resumes collection
        defer_collection()
        arrow_in_jemalloc()
    from .errors import DataAuditError

    previous = _install_sigterm()
    try:
        return args.func(args)
    except DataAuditError as exc:
        from .report.escape import plain

        # messages quote column names and values from the data: escape them for the terminal
        print(f"error: {plain(exc, 4000, multiline=True)}", file=sys.stderr)
        return EXIT_USAGE
    except Terminated:
        print("terminated (SIGTERM); no partial output was left behind", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (``| head``); keep the verdict, and no noise at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return getattr(args, "verdict", EXIT_OK)
    except Exception as exc:  # never a bare traceback for users; keep it for bug reports
        import traceback

        detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        if os.environ.get("DATAAUDIT_DEBUG"):
            print(detail, file=sys.stderr)
        from .report.escape import plain

        print(
            f"internal error: {type(exc).__name__}: {plain(exc, 1000)}\n"
            "(set DATAAUDIT_DEBUG=1 for the traceback and report it as a bug)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if argv is None:  # the program, not a caller in Python: the process ends next
            _skip_exit_collection()


def _skip_exit_collection() -> None:
    """Python's exit runs a garbage collection over every object still alive (numba's and
    pyarrow's modules: ~0.05 s of a 0.4 s audit); frozen, they are left to the process's end.
    Finalizers registered to run at exit (spill folders, Ray, logging) and the closing of what
    the modules hold still run; what the audit wrote is closed already."""
    import gc

    gc.freeze()


def run() -> None:
    """The program (the ``dataaudit`` command, ``python -m dataaudit``): :func:`main`, then the
    process ends without Python's teardown of its modules (numpy's, pyarrow's, LLVM's: ~0.012 s
    of every run). What runs at exit still runs first (atexit: spill folders, Ray, logging,
    multiprocessing), then the standard streams are flushed; what the audit wrote is closed
    already. A caller of :func:`main` in Python keeps its process."""
    code = main()
    import atexit

    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_functions is None:  # pragma: no cover - not CPython
        sys.exit(code)
    run_exit_functions()
    import contextlib

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing left to say
            stream.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()

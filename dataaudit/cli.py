"""dataaudit audit | diff | rules | explain | schema.

Exit codes: 0 passed, 1 gate failed (or a diff regressed with --fail-on-regression),
2 usage / input / config error, 3 internal error.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import textwrap
from typing import Any

EXIT_OK, EXIT_GATE, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
ROLE_FLAGS = ("text", "prompt", "input", "response", "messages", "label", "source", "id")


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


def cmd_audit(args: argparse.Namespace) -> int:
    from .api import audit
    from .config import discover_pyproject

    rules: dict[str, dict[str, Any]] = {}
    for text in args.option or []:
        code, option, value = _parse_option(text)
        rules.setdefault(code, {})[option] = value
    data: Any = args.paths[0] if len(args.paths) == 1 else list(args.paths)
    config = args.config or discover_pyproject()
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
        progress=progress,
        tokenizer=args.tokenizer,
        contamination_ref=args.contamination_ref,
        reference=args.reference,
        **{r: getattr(args, r) for r in ROLE_FLAGS if getattr(args, r) is not None},
    )
    if args.json:
        report.to_json(args.json)
    if args.html:
        report.to_html(args.html)
    if args.flags:
        report.write_flags(args.flags)
    if args.junit:
        report.to_junit(args.junit)
    if not args.quiet:
        print(report.summary(color=sys.stdout.isatty() and "NO_COLOR" not in os.environ))
        written = [p for p in (args.json, args.html, args.flags, args.junit) if p]
        if written:
            print("wrote " + ", ".join(str(p) for p in written))
    return EXIT_OK if report.passed else EXIT_GATE


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
                "summary": (inspect.getdoc(cls) or "").splitlines()[0]
                if inspect.getdoc(cls)
                else "",
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
    for err in ruleset.plugin_errors:
        print(f"warning: {err}", file=sys.stderr)
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from .registry import load_rules

    ruleset = load_rules()
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


def cmd_schema(args: argparse.Namespace) -> int:
    from .report.schema import schema_json

    sys.stdout.write(schema_json())
    return EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    from .report.diff import diff

    result = diff(args.old, args.new)
    if args.json:
        result.to_json(args.json)
    print(result.summary())
    if args.fail_on_regression and result.regressed:
        return EXIT_GATE
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

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
        "--fail-on", choices=["warn", "error"], help="finding severity that fails the gate"
    )
    p.add_argument(
        "--option", action="append", metavar="CODE.OPTION=VALUE", help="set a rule option"
    )
    p.add_argument("--split", metavar="COLUMN", help="column that names each row's split")
    for role in ROLE_FLAGS:
        p.add_argument(f"--{role}", metavar="COLUMN", help=f"column to use as the {role}")
    p.add_argument("--tokenizer", help="tokenizer.json path (or hub name, if cached locally)")
    p.add_argument(
        "--contamination-ref",
        action="append",
        metavar="FILE",
        help="benchmark file to check n-gram overlap against",
    )
    p.add_argument(
        "--reference", metavar="PATH", help="baseline dataset (or saved report) to compare against"
    )
    p.add_argument("--batch-size", type=int, metavar="ROWS")
    p.add_argument("--workers", type=int, metavar="N", help="processes for the scan (same report)")
    p.add_argument("--json", metavar="FILE", help="write the JSON report")
    p.add_argument("--html", metavar="FILE", help="write the HTML report")
    p.add_argument("--flags", metavar="FILE", help="write row flags as Parquet")
    p.add_argument(
        "--junit", metavar="FILE", help="write JUnit XML (one test case per rule) for CI"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing; use the exit code")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("diff", help="compare two reports (old baseline, new candidate)")
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--json", metavar="FILE", help="write the diff as JSON")
    p.add_argument("--fail-on-regression", action="store_true", help="exit 1 if anything regressed")
    p.set_defaults(func=cmd_diff)

    p = sub.add_parser("rules", help="list the available rules")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rules)

    p = sub.add_parser("explain", help="show a rule's documentation and options")
    p.add_argument("code")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("schema", help="print the report's JSON Schema")
    p.set_defaults(func=cmd_schema)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from .errors import DataAuditError

    try:
        return args.func(args)
    except DataAuditError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # never a bare traceback for users; keep it for bug reports
        import traceback

        detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        if os.environ.get("DATAAUDIT_DEBUG"):
            print(detail, file=sys.stderr)
        print(
            f"internal error: {type(exc).__name__}: {exc}\n"
            + textwrap.indent(
                "(set DATAAUDIT_DEBUG=1 for the traceback and report it as a bug)", ""
            ),
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

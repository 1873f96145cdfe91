"""``stitchgen`` console script: ``demo``, ``golden`` and ``show``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo
    from .rendering import Templates

    templates = Templates(args.template_dir or (), variant=args.variant)
    return 0 if run_demo(args.layers, templates=templates) else 1


def _golden(args: argparse.Namespace) -> int:
    from . import golden

    options: dict[str, Any] = {}
    regen = golden.REGEN
    if args.cases:
        if not args.dir:
            print(
                "stitchgen golden: --cases needs --dir (where the golden files live)",
                file=sys.stderr,
            )
            return 2
        from .rendering import Templates

        templates = None
        if args.template_dir or args.variant:
            templates = Templates(args.template_dir or (), variant=args.variant)
        directory = Path(args.dir).resolve()
        cases = golden.load_cases(args.cases)
        options = {
            "all_entries": golden.entries_from_cases(cases, directory, templates),
            "directory": directory,
        }
        flags = [f"--cases {args.cases}", f"--dir {args.dir}"]
        flags += [f"--template-dir {d}" for d in args.template_dir or ()]
        flags += [f"--variant {args.variant}"] if args.variant else []
        regen = f"stitchgen golden {' '.join(flags)} --update"
        root = directory
    else:
        if args.template_dir or args.variant or args.dir:
            print(
                "stitchgen golden: --dir, --template-dir and --variant go with --cases",
                file=sys.stderr,
            )
            return 2
        root = Path(args.root) if args.root else golden.find_root()
    if args.update:
        changed = golden.update(root, args.k, **options)
        names = f": {', '.join(changed)}" if changed else ""
        print(f"updated {len(changed)} golden file(s){names}")
        return 0
    problems = golden.check(root, args.k, regen=regen, **options)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"golden check: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("golden check: all files match")
    return 0


def _show(args: argparse.Namespace) -> int:
    from .viewer import describe_artifact

    text, ok = describe_artifact(args.artifact, format=args.format, show_ir=args.ir)
    sys.stdout.write(text)
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    from .rendering import VARIANTS  # the shipped template sets: one registry

    parser = argparse.ArgumentParser(prog="stitchgen", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="trace, split and compile a small decoder; compare and time")
    demo.add_argument("--layers", type=int, default=2)
    demo.add_argument(
        "--template-dir",
        action="append",
        metavar="DIR",
        help="searched before the built-in templates (repeatable)",
    )
    demo.add_argument("--variant", choices=sorted(VARIANTS), help="a shipped template set")
    demo.set_defaults(run=_demo)
    gold = sub.add_parser(
        "golden",
        help="check or regenerate golden files",
        description="Check or regenerate golden files: this repository's registry by default, "
        "or any project's cases with --cases MODULE[:ATTR] --dir DIR.",
    )
    mode = gold.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 with a diff on drift")
    mode.add_argument("--update", action="store_true", help="rewrite the golden files")
    gold.add_argument(
        "--cases",
        metavar="MODULE[:ATTR]",
        help="a module (or .py path) whose ATTR (default CASES) maps case names to functions "
        "returning a GraphModule",
    )
    gold.add_argument("--dir", metavar="DIR", help="the golden files' directory (with --cases)")
    gold.add_argument(
        "--template-dir", action="append", metavar="DIR", help="your templates (with --cases)"
    )
    gold.add_argument("--variant", choices=sorted(VARIANTS), help="a shipped template set")
    gold.add_argument("--root", help="project root (default: found from the current directory)")
    gold.add_argument("-k", action="append", metavar="CASE", help="only this case (repeatable)")
    gold.set_defaults(run=_golden)
    show = sub.add_parser(
        "show",
        help="print a saved artifact's code, bindings and versions; verify its digests",
        description="Read an artifact without executing anything; exit 1 if a digest fails.",
    )
    show.add_argument("artifact", help="the artifact directory (Generated.save)")
    show.add_argument("--format", action="store_true", help="black-format the code")
    show.add_argument("--ir", action="store_true", help="print the stored IR too")
    show.set_defaults(run=_show)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())

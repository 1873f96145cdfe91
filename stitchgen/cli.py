"""``stitchgen`` console script: ``demo``, ``golden`` and ``show``.

An error about the input is one line on stderr, ``stitchgen <command>:
error: <what, naming the input>``, and no traceback. The exit code says
which kind: 2 when the command line is wrong (an option, or a file,
directory, module, attribute, case or template directory it names that is
missing or unusable), 1 when the input was read and failed (drift, a graph
or file stitchgen refuses, an artifact that is not one or does not verify).
``STITCHGEN_DEBUG=1`` raises instead, with the traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from .errors import StitchgenError

__all__ = ["main"]

PROG = "stitchgen"


class _Stop(Exception):
    """Ends a command with one line on stderr and ``code``."""

    def __init__(self, prog: str, message: str, code: int) -> None:
        super().__init__(message)
        self.prog, self.message, self.code = prog, message, code


class _Parser(argparse.ArgumentParser):
    """argparse, answering a usage error in one line (exit 2), no usage block."""

    def error(self, message: str) -> NoReturn:
        raise _Stop(self.prog, f"{message} (see `{self.prog} --help`)", 2)


@contextmanager
def _usage(prog: str) -> Iterator[None]:
    """What an argument names, resolved: a refusal is a usage error (exit 2)."""
    try:
        yield
    except StitchgenError as exc:
        if _debug():
            raise
        raise _Stop(prog, str(exc), 2) from exc


def _debug() -> bool:
    """``STITCHGEN_DEBUG=1``: errors raise, with their traceback."""
    return os.environ.get("STITCHGEN_DEBUG", "") not in ("", "0")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return value


def _directory(text: str) -> str:
    if not os.path.isdir(text):
        what = "is not a directory" if os.path.lexists(text) else "does not exist"
        raise argparse.ArgumentTypeError(f"{text!r} {what}")
    return text


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo
    from .rendering import Templates

    with _usage(args.prog):
        templates = Templates(args.template_dir or (), variant=args.variant)
    return 0 if run_demo(args.layers, templates=templates) else 1


def _golden(args: argparse.Namespace) -> int:
    from . import golden

    prog = args.prog
    if args.cases and not args.dir:
        raise _Stop(prog, "--cases needs --dir (where the golden files live)", 2)
    if not args.cases and (args.template_dir or args.variant or args.dir):
        raise _Stop(prog, "--dir, --template-dir and --variant go with --cases", 2)
    directory: Path | None = None
    regen = golden.REGEN
    with _usage(prog):
        if args.cases:
            from .rendering import Templates

            if os.path.lexists(args.dir) and not os.path.isdir(args.dir):
                raise _Stop(prog, f"argument --dir: {args.dir!r} is not a directory", 2)
            templates = None
            if args.template_dir or args.variant:
                templates = Templates(args.template_dir or (), variant=args.variant)
            directory = Path(args.dir).resolve()
            cases = golden.load_cases(args.cases)
            all_entries = golden.entries_from_cases(cases, directory, templates)
            flags = [f"--cases {args.cases}", f"--dir {args.dir}"]
            flags += [f"--template-dir {d}" for d in args.template_dir or ()]
            flags += [f"--variant {args.variant}"] if args.variant else []
            regen = f"stitchgen golden {' '.join(flags)} --update"
            root = directory
        else:
            root = Path(args.root) if args.root else golden.find_root()
            all_entries = golden.entries(root)
        golden.selected(all_entries, args.k)  # an unknown -k is a usage error
    options: dict[str, Any] = {"all_entries": all_entries, "directory": directory}
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


def _parser() -> argparse.ArgumentParser:
    from .rendering import VARIANTS  # the shipped template sets: one registry

    parser = _Parser(
        prog=PROG, description="Plain Python functions from FX stitching graphs (split_module)."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, run: Any, **kwargs: Any) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, **kwargs)
        cmd.set_defaults(run=run, prog=cmd.prog)
        return cmd

    templates_help = "your templates, searched before the built-ins (repeatable)"
    demo = command("demo", _demo, help="trace, split and compile a small decoder; compare and time")
    demo.add_argument(
        "--layers", type=_positive_int, default=2, help="decoder layers (a positive integer)"
    )
    demo.add_argument(
        "--template-dir", type=_directory, action="append", metavar="DIR", help=templates_help
    )
    demo.add_argument("--variant", choices=sorted(VARIANTS), help="a shipped template set")
    gold = command(
        "golden",
        _golden,
        help="check or regenerate golden files",
        description="Check or regenerate golden files: this repository's registry by default, "
        "or any project's cases with --cases MODULE[:ATTR] --dir DIR. --update replaces or "
        "removes only the golden files it wrote (recorded in DIR/FILES).",
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
        "--template-dir",
        type=_directory,
        action="append",
        metavar="DIR",
        help=templates_help + " (with --cases)",
    )
    gold.add_argument("--variant", choices=sorted(VARIANTS), help="a shipped template set")
    gold.add_argument(
        "--root", type=_directory, help="project root (default: found from the current directory)"
    )
    gold.add_argument("-k", action="append", metavar="CASE", help="only this case (repeatable)")
    show = command(
        "show",
        _show,
        help="print a saved artifact's code, bindings and versions; verify its digests",
        description="Read an artifact without executing anything; exit 1 if a digest fails.",
    )
    show.add_argument("artifact", type=_directory, help="the artifact directory (Generated.save)")
    show.add_argument("--format", action="store_true", help="black-format the code")
    show.add_argument("--ir", action="store_true", help="print the stored IR too")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv``; the exit code (see the module docstring)."""
    debug = _debug()
    prog = PROG
    try:
        args = _parser().parse_args(argv)
        prog = args.prog
        return int(args.run(args))
    except _Stop as stop:
        if debug:
            raise
        print(f"{stop.prog}: error: {_one_line(stop.message)}", file=sys.stderr)
        return stop.code
    except (StitchgenError, OSError) as exc:
        if debug:
            raise
        print(f"{prog}: error: {_one_line(_said(exc))}", file=sys.stderr)
        return 1


def _said(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


if __name__ == "__main__":
    sys.exit(main())

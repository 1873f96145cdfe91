"""``stitchgen`` console script: ``demo``, ``golden``, ``export``, ``show``
and ``templates`` (``blocks``, ``check``, ``diff``, ``lock``).

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
_TEMPLATES_HELP = (
    "your project's Templates (or a function returning one), as its engine renders with "
    "(default: [tool.stitchgen] templates in pyproject.toml)"
)


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
    from .project import find_project, load_templates
    from .rendering import Templates

    prog = args.prog
    if args.cases and not args.dir:
        raise _Stop(prog, "--cases needs --dir (where the golden files live)", 2)
    if args.templates and (args.template_dir or args.variant):
        raise _Stop(prog, "--templates names the whole set: no --template-dir or --variant", 2)
    with _usage(prog):
        project = find_project()  # its templates hold for --cases too, unless named otherwise
        cases_spec = args.cases or (project.cases if project else None)
        if cases_spec is None:
            raise _Stop(
                prog,
                f"no cases: name them with --cases MODULE[:ATTR] --dir DIR, or as cases in "
                f"[tool.stitchgen] of a pyproject.toml at or above {Path.cwd()}",
                2,
            )
        dir_arg = args.dir or str(project.golden_dir)  # type: ignore[union-attr]
        if os.path.lexists(dir_arg) and not os.path.isdir(dir_arg):
            raise _Stop(prog, f"argument --dir: {dir_arg!r} is not a directory", 2)
        spec = args.templates or (project.templates if project else None)
        templates: Any = None
        if args.template_dir or args.variant:
            templates = Templates(args.template_dir or (), variant=args.variant)
        elif spec:
            templates = load_templates(spec, project.root if project else Path.cwd())
        directory = Path(dir_arg).resolve()
        cases = golden.load_cases(cases_spec)
        all_entries = golden.entries_from_cases(cases, directory, templates)
        golden.selected(all_entries, args.k)  # an unknown -k is a usage error
    if args.update:
        changed = golden.update(all_entries, directory, args.k)
        names = f": {', '.join(changed)}" if changed else ""
        print(f"updated {len(changed)} golden file(s){names}")
        return 0
    flags = [f"--cases {args.cases}", f"--dir {args.dir}"] if args.cases else []
    flags += [f"--templates {args.templates}"] if args.templates else []
    flags += [f"--template-dir {d}" for d in args.template_dir or ()]
    flags += [f"--variant {args.variant}"] if args.variant else []
    regen = f"stitchgen golden {' '.join([*flags, '--update'])}"
    problems = golden.check(all_entries, directory, args.k, regen=regen)
    if problems and templates is not None:
        problems += _stale_hint(templates)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"golden check: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("golden check: all files match")
    return 0


def _templates(args: argparse.Namespace) -> Any:
    """The ``Templates`` an invocation names: ``--templates MODULE:ATTR``,
    else a DIR (or ``--template-dir``) with ``--variant``, else the project's
    ``[tool.stitchgen] templates``, else the shipped ones. A refusal is a
    usage error."""
    from .project import find_project, load_templates
    from .rendering import Templates

    dirs = (
        [args.dir] if getattr(args, "dir", None) else list(getattr(args, "template_dir", ()) or ())
    )
    with _usage(args.prog):
        project = find_project()
        spec: str | None = getattr(args, "templates", None)
        if spec and (dirs or args.variant):
            raise _Stop(args.prog, "--templates names the whole set: no DIR or --variant", 2)
        if not (spec or dirs or args.variant) and project is not None:
            spec = project.templates
        if spec:
            args.known = ":" in spec  # a project's object: its filters and globals are known
            return load_templates(spec, project.root if project else None)
        if not dirs and hasattr(args, "dir"):  # check, diff, lock: a set of yours
            raise _Stop(
                args.prog,
                "the following arguments are required: DIR (or --templates MODULE:ATTR, or "
                "templates in [tool.stitchgen] of pyproject.toml)",
                2,
            )
        return Templates(dirs, variant=args.variant)


def _outputs(templates: Any) -> Any:
    """What the shipped blocks of ``templates``' variant write on the specimens
    (:func:`stitchgen.authoring.specimens.emitted`, for the lock)."""
    import functools

    from .authoring.specimens import emitted

    return functools.partial(emitted, templates.template_set)


def _report(args: argparse.Namespace, templates: Any) -> Any:
    """The templates' check, the stale overrides judged by what the shipped
    blocks write on the specimens too (rendering cannot lower them)."""
    import dataclasses

    from .authoring.lock import stale

    # from a DIR, the filters and globals your Python passes are not known
    report = templates.check(known=getattr(args, "known", False))
    found = stale(_library(templates), templates.dirs, _outputs(templates))
    return dataclasses.replace(report, stale=found)


def _renders(args: argparse.Namespace, templates: Any) -> bool:
    """Can the specimens render with ``templates`` here? Not from a DIR whose
    templates use filters or names of the project's own, which it does not bring."""
    return getattr(args, "known", False) or not templates.check().problems


def _problems(args: argparse.Namespace, templates: Any, stale: bool = False) -> bool:
    """Print the templates' problems (and stale blocks, with ``stale``), one
    line each on stderr; were there any?"""
    report = _report(args, templates)
    lines = report.lines() if stale else [str(p) for p in report.problems]
    for line in lines:
        print(line, file=sys.stderr)
    if lines:
        count = len(report.problems) + (len(report.stale) if stale else 0)
        print(f"{args.prog}: {count} problem(s)", file=sys.stderr)
    return bool(lines)


def _where(templates: Any) -> str:
    return " ".join(templates.dirs) or "the shipped templates"


def _library(templates: Any) -> Any:
    from .authoring.sources import Library

    return Library(templates.environment, templates.dirs)


def _blocks(args: argparse.Namespace) -> int:
    from .authoring import catalogue

    templates = _templates(args)
    if _problems(args, templates):
        return 1
    entries = catalogue.catalogue(_library(templates), templates.variant)
    print((catalogue.markdown if args.markdown else catalogue.text)(entries).rstrip("\n"))
    return 0


def _specimens_fail(args: argparse.Namespace, templates: Any) -> bool:
    """Render ``templates`` on the specimens and print what they get (code
    that is not Python, and notes on the guarantees), one line each on
    stderr; was any of it a problem?"""
    from .authoring.specimens import rendered

    if _renders(args, templates):
        problems, notes = rendered(templates)  # what the specimens get: Python, the guarantees
    else:  # filters or names of the project's own, which a DIR does not bring
        problems, notes = (
            [],
            [
                "note: not rendered on the specimen graphs: the templates use filters or names of "
                "your project's; name its Templates (--templates MODULE:ATTR) to render them"
            ],
        )
    for line in [*problems, *notes]:
        print(line, file=sys.stderr)
    if problems:
        print(f"{args.prog}: {len(problems)} problem(s)", file=sys.stderr)
    return bool(problems)


def _check_templates(args: argparse.Namespace) -> int:
    templates = _templates(args)
    if _problems(args, templates, stale=True) or _specimens_fail(args, templates):
        return 1
    print(f"templates check: {_where(templates)}: no problems")
    return 0


def _diff(args: argparse.Namespace) -> int:
    import functools

    from . import golden
    from .authoring.preview import preview
    from .project import find_project
    from .rendering import Templates

    mine = _templates(args)
    with _usage(args.prog):
        project = None if args.cases else find_project()
        spec = args.cases or (project.cases if project else None)
        chosen = []
        if spec is not None:
            entries = golden.entries_from_cases(golden.load_cases(spec), Path("."))
            chosen = golden.selected(entries, args.k)
        elif args.k:
            raise _Stop(args.prog, "-k names cases: name them with --cases MODULE[:ATTR]", 2)
    if _problems(args, mine):
        return 1
    cases: list[tuple[str, Any]] = []
    for entry in chosen:
        case = entry.case()
        if case[2] is None:  # a case with templates of its own is not the shipped set's
            cases.append((entry.key, functools.partial(entry.code, case=case)))
    from .authoring.specimens import previews, rendered

    specimens = previews(mine)  # each rendered once, for the diff and for the notes
    if spec is None:
        cases = specimens
        print(
            "templates diff: no cases named (--cases, or cases in [tool.stitchgen]): previewing "
            "on stitchgen's specimen graphs",
            file=sys.stderr,
        )
    shipped = Templates(variant=mine.template_set)
    changes, count = preview(cases, shipped, mine)
    for change in changes:
        sys.stdout.write(change.diff)
    if _renders(args, mine):
        for note in rendered(mine, specimens, shipped)[1]:  # frees, piece calls, returns
            print(note, file=sys.stderr)
    print(f"templates diff: {_where(mine)} changes {len(changes)} of {count} case(s)")
    return 0


def _lock(args: argparse.Namespace) -> int:
    from .authoring.lock import write_lock

    templates = _templates(args)
    if _problems(args, templates) or _specimens_fail(args, templates):  # as check finds them
        print(f"{args.prog}: not locked: fix the problems first", file=sys.stderr)
        return 1
    if not templates.dirs:
        raise _Stop(args.prog, "no template directory to lock: name DIR or --templates", 2)
    for directory in templates.dirs:
        locked = write_lock(_library(templates), directory, _outputs(templates))
        names = ", ".join(f"{b.file} {b.block}" for b in locked) or "none"
        print(f"locked {len(locked)} overridden block(s) in {directory}: {names}")
    return 0


def _stale_hint(templates: Any) -> list[str]:
    """Where locked templates override blocks that changed since: a line
    naming them, as what may explain a drift."""
    stale = _report(argparse.Namespace(known=False), templates).stale
    if not stale:
        return []
    names = "; ".join(f"{s.locked.file} {s.locked.block} ({s.locked.base})" for s in stale)
    dirs = " ".join(templates.dirs)
    return [
        f"the drift may come from overridden blocks whose shipped text changed since "
        f"`stitchgen templates lock`: {names}; see `stitchgen templates check {dirs}`"
    ]


def _export(args: argparse.Namespace) -> int:
    """``stitchgen export PROGRAM.pt2 DIR``: the artifact of a program
    ``torch.export.save`` wrote (``torch.export.load`` unpickles: trust it)."""
    import importlib

    prog = args.prog
    for module in args.imports or ():
        try:
            importlib.import_module(module)
        except Exception as exc:  # (a module's own import error: its first line)
            raise _Stop(prog, f"--import {module}: {type(exc).__name__}: {exc}", 2) from exc
    if not os.path.isfile(args.program):
        what = "is not a file" if os.path.lexists(args.program) else "does not exist"
        raise _Stop(prog, f"{args.program!r} {what}", 2)
    from .archive import check_replaceable
    from .pipeline import generate

    check_replaceable(Path(args.dir))  # before the program is read (save checks it again)
    import logging

    import torch

    said = logging.getLogger("torch.export")  # (it logs a failed load's traceback)
    level = said.level
    said.setLevel(logging.CRITICAL)
    try:
        program = torch.export.load(args.program)
    except Exception as exc:  # torch's: a file that is no program, a type not registered
        text = _plain(str(exc)) or type(exc).__name__
        hint = " (--import the module that registers it)" if "regist" in text else ""
        message = f"{args.program}: not a program torch.export.load reads: {text}{hint}"
        raise _Stop(prog, message, 1) from exc
    finally:
        said.setLevel(level)
    generated = generate(program, format=True, check_inputs=not args.no_checks)
    path = generated.save(args.dir)
    print(f"wrote {path}: `stitchgen show {path}` describes it")
    return 0


def _plain(text: str) -> str:
    """``text`` without terminal colour codes."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


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
        description="Check or regenerate golden files: the cases, directory and templates of "
        "[tool.stitchgen] in the nearest pyproject.toml, or --cases MODULE[:ATTR] --dir DIR. "
        "--update replaces or "
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
    gold.add_argument("--templates", metavar="MODULE:ATTR", help=_TEMPLATES_HELP)
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
    export = command(
        "export",
        _export,
        help="write the artifact of a program torch.export.save wrote (PROGRAM.pt2)",
        description="Read PROGRAM.pt2 with torch.export.load and write its artifact in DIR: "
        "the code, with export's input checks as lines of it, and the program's parameters, "
        "buffers and constants, loaded with no bindings (stitchgen.load_artifact). "
        "torch.export.load unpickles, so reading a .pt2 runs code: export only programs you "
        "trust (SECURITY.md).",
    )
    export.add_argument("program", metavar="PROGRAM.pt2", help="a program torch.export.save wrote")
    export.add_argument("dir", metavar="DIR", help="the artifact's directory (absent or empty)")
    export.add_argument(
        "--import",
        dest="imports",
        action="append",
        metavar="MODULE",
        help="import MODULE first: one that registers the program's own types in pytree "
        "(transformers.modeling_outputs for a transformers model; repeatable)",
    )
    export.add_argument(
        "--no-checks",
        action="store_true",
        help="leave export's input checks out (check_inputs=False)",
    )
    _templates_parser(command("templates", None, help="check, list, preview and lock templates"))
    return parser


def _templates_parser(parent: argparse.ArgumentParser) -> None:
    """``stitchgen templates blocks|check|diff|lock``."""
    from .rendering import VARIANTS

    sub = parent.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, run: Any, help: str, directory: bool = True) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help, description=help)
        cmd.set_defaults(run=run, prog=cmd.prog)
        if directory:
            cmd.add_argument(
                "dir",
                type=_directory,
                metavar="DIR",
                nargs="?",
                help="your template directory (default: [tool.stitchgen] templates)",
            )
            cmd.add_argument("--templates", metavar="MODULE:ATTR", help=_TEMPLATES_HELP)
        cmd.add_argument("--variant", choices=sorted(VARIANTS), help="the shipped set it extends")
        return cmd

    blocks = action(
        "blocks",
        _blocks,
        "list every block of each template file: the names in scope with their IR types, and "
        "the emit methods that write the shipped text",
        directory=False,
    )
    blocks.add_argument(
        "--template-dir", type=_directory, action="append", metavar="DIR", help="your templates"
    )
    blocks.add_argument("--markdown", action="store_true", help="as markdown tables")
    action(
        "check",
        _check_templates,
        "check DIR's templates without rendering; exit 1 on a problem or a stale override",
    )
    diff = action(
        "diff", _diff, "print how DIR changes the generated code of each case (a unified diff)"
    )
    diff.add_argument(
        "--cases",
        metavar="MODULE[:ATTR]",
        help="your cases (as for `stitchgen golden --cases`); default: [tool.stitchgen] cases",
    )
    diff.add_argument("-k", action="append", metavar="CASE", help="only this case (repeatable)")
    action(
        "lock",
        _lock,
        "record in DIR/stitchgen.lock the shipped text of every block DIR overrides",
    )


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

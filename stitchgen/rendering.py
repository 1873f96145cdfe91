"""Render a :class:`~stitchgen.ir.Program` to Python source with Jinja2.

Templates place text; Python decides it (``emitter.py``). A
:class:`Templates` object says where templates come from — the user's
directories first, then a shipped variant's, then the built-ins, which stay
reachable as ``"stitchgen/<name>"`` so an override can ``{% extends %}`` the
original and call ``super()`` — and which extra filters and globals they may
use. Each ``Templates`` builds its Jinja environment once, in the one factory
here; plain ``template_dirs`` share cached ``Templates``.

Safety: what the sandboxed environment prints and refuses is
``environment.py``'s; a template that prints a raw constant fails with a
:class:`~stitchgen.errors.TemplateError` naming its file and line.

Fast path: where the shipped templates are in effect (the built-ins, or a
shipped variant's, not overridden), ``emitter.py`` writes their output
without Jinja (and in black's layout when formatting is asked),
so neither Jinja nor black costs anything on the common path.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .conventions import Convention, name_formats
from .emitter import VARIANTS, Variant, Writer, emit, emit_for, variant_of
from .errors import TemplateDirError, TemplateError
from .ir import Program, program_names

if TYPE_CHECKING:
    import jinja2

    from .authoring.report import TemplateReport
    from .template_cache import TemplateCache

__all__ = [
    "ENTRY_TEMPLATE",
    "VARIANTS",
    "Templates",
    "render",
    "resolve_templates",
    "templates_dir",
]

ENTRY_TEMPLATE = "module.py.j2"
_FUNCTION_TEMPLATE = "function.py.j2"
#: the files the built-in templates consist of; a directory that has one overrides it
_BUILTIN_FILES = (ENTRY_TEMPLATE, _FUNCTION_TEMPLATE)


def templates_dir() -> Path:
    """The built-in templates: inside the installed package (wheel), or the
    repository's top-level ``templates/`` (source checkout, editable install)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / ENTRY_TEMPLATE).is_file():
            return candidate
    raise FileNotFoundError(f"stitchgen's templates are missing (looked beside {here})")


class Templates:
    """Where templates come from, and the extra filters and globals they use.

    Build one per project configuration and pass it to ``render``,
    ``generate`` or ``compile`` (``templates=``); its Jinja environment is
    built once, on first use.

    >>> import torch.fx as fx, stitchgen
    >>> profiled = stitchgen.Templates(variant="profiled")
    >>> code = stitchgen.generate(fx.symbolic_trace(lambda x: x + 1), templates=profiled).code

    ``dirs`` are searched first (a file with a built-in's name overrides it);
    ``variant`` selects a shipped template set (``"profiled"``, ``"vllm"``)
    or one of yours (a :class:`~stitchgen.emitter.Variant` record);
    ``filters`` are extra Jinja filters — one that builds source must return
    :class:`stitchgen.Code`; ``globals`` are extra template variables.
    Neither may replace stitchgen's own filters. ``names`` renames our
    helpers (keys of :data:`stitchgen.conventions.NAME_FORMATS`: ``binder``,
    ``submod``, ``inlined``, ``const``); ``reserve`` lists names the templates
    use (a module they import, say) that no generated identifier may take.
    ``kinds`` maps each statement kind of yours (a dataclass whose class
    names its block, ``template``) to the function that writes it,
    ``fn(emitter, stmt, indent)``, on the fast path and through the generic
    ``statement`` block alike (docs/templates.md, "A statement kind of your
    own"): it is this object's, never the process's.
    """

    def __init__(
        self,
        dirs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str] = (),
        *,
        variant: str | Variant | None = None,
        filters: Mapping[str, Callable[..., Any]] | None = None,
        globals: Mapping[str, Any] | None = None,
        names: Mapping[str, str] | None = None,
        reserve: Sequence[str] = (),
        kinds: Mapping[type, Callable[..., None]] | None = None,
    ) -> None:
        if isinstance(dirs, (str, os.PathLike)):
            dirs = (dirs,)
        if isinstance(reserve, str):
            raise TypeError(f"reserve= takes a sequence of names, not the string {reserve!r}")
        self.dirs = tuple(os.fspath(d) for d in dirs)
        for d in self.dirs:
            if not os.path.isdir(d):
                raise TemplateDirError(f"template directory {d!r} does not exist", template=d)
        #: the template set these templates extend (its record)
        self.template_set = variant_of(variant)
        name = self.variant = self.template_set.name
        own = self.template_set.folder
        if own and name in VARIANTS:
            raise ValueError(f"the variant name {name!r} is a shipped set's: name yours apart")
        if own and not os.path.isdir(own):
            raise TemplateDirError(
                f"variant {name!r}: its folder {own!r} does not exist", template=own
            )
        clash = sorted(set(filters or {}) & _filter_names()) if filters else []
        if clash:
            raise ValueError(f"filters {clash} are stitchgen's own and cannot be replaced")
        self.filters = MappingProxyType(dict(filters or {}))
        taken = sorted({"emit", "statements", "nested"} & set(globals or ()))
        if taken:
            raise ValueError(
                f"the template variable {taken[0]!r} is stitchgen's and cannot be replaced"
            )
        self.globals = MappingProxyType(dict(globals or {}))
        name_formats(names)  # refuses unknown keys now, not at the first generate
        self.names = MappingProxyType(dict(names or {}))
        self.reserve = tuple(dict.fromkeys([*reserve, *self.template_set.locals]))
        for kind, write in (kinds or {}).items():
            if not (isinstance(kind, type) and isinstance(getattr(kind, "template", None), str)):
                raise TypeError(f"kinds= maps statement classes naming a block, not {kind!r}")
            if not callable(write):
                raise TypeError(f"kinds=: the writer of {kind.__name__} is not callable")
        self.kinds = MappingProxyType(dict(kinds or {}))
        #: how the generated code receives its bindings (the variant's
        #: convention; :data:`~stitchgen.conventions.CLOSURE` for the built-ins)
        self.convention: Convention = self.template_set.convention
        #: the expression writer for this convention's references
        self.writer = Writer(self.convention.refs)
        self._env: jinja2.Environment | None = None
        self._cache: TemplateCache | None = None  # opened with the environment
        self._lock = threading.Lock()
        self._checks = _Checks(self)

    def __repr__(self) -> str:
        return (
            f"Templates(dirs={list(self.dirs)}, variant={self.variant!r}, "
            f"filters={sorted(self.filters)}, globals={sorted(self.globals)}, "
            f"names={dict(self.names)}, reserve={list(self.reserve)})"
        )

    @property
    def environment(self) -> jinja2.Environment:
        """The Jinja environment, built once (thread-safe)."""
        if self._env is None:
            with self._lock:
                if self._env is None:
                    self._env = self._build()
        return self._env

    def _build(self) -> jinja2.Environment:
        from .environment import build_environment  # Jinja is imported on first use
        from .filters import build_filters  # markupsafe, with Jinja: on first use
        from .template_cache import open_cache  # compiled templates kept across processes

        filters = {**build_filters(self.writer), **self.filters}
        self._cache = open_cache(filters)
        own = self.template_set.folder  # a variant of yours, reachable as stitchgen/variants/<name>
        variants = {self.variant: own} if own and self.variant else {}
        return build_environment(
            templates_dir(), self._search(), filters, self.globals, self._cache, variants
        )

    def _search(self) -> list[str]:
        """The directories searched before the built-ins: the user's, then the variant's."""
        search = list(self.dirs)
        if self.variant:
            shipped = str(templates_dir() / "variants" / self.variant)
            search.append(self.template_set.folder or shipped)
        return search

    @property
    def builtin_in_effect(self) -> bool:
        """Do the shipped templates render, unchanged — the built-ins or the
        selected variant's? True where no directory in ``dirs`` has a
        ``module.py.j2`` or ``function.py.j2`` (the files the shipped
        templates load); then rendering takes the fast path
        (:mod:`stitchgen.emitter`), which writes the same text without
        Jinja. Checked at every render, so a file added later is seen."""
        return all(self._shipped(name) for name in _BUILTIN_FILES)

    def _shipped(self, name: str) -> bool:
        """Is the template ``name`` the shipped one (no directory in ``dirs`` has it)?"""
        return not any(os.path.isfile(os.path.join(d, name)) for d in self.dirs)

    def describe(self) -> str:
        """The template files that render: ``module.py.j2`` and
        ``function.py.j2``, each from the first directory that has it (the
        user's, the variant's, or the built-ins)."""
        search = [*self._search(), str(templates_dir())]
        found = []
        for name in _BUILTIN_FILES:
            where = next(d for d in search if os.path.isfile(os.path.join(d, name)))
            found.append(os.path.join(where, name))
        return " + ".join(found)

    def render(self, program: Program, *, format: bool = False) -> str:
        """Source for ``program``; ``format=True`` gives black's formatting.

        With the shipped templates in effect (the built-ins or a variant's,
        not overridden) this is the fast path: no Jinja, and with
        ``format=True`` no black run either — the code is
        written in black's layout (black runs only for a line shape the
        layout does not know). Otherwise the templates render through Jinja
        (checked once per state of your files, so an edited template is
        seen and checked), then black formats the result if asked."""
        if not set(self.reserve).issubset(program.reserved):
            self._check_reserved(program)
        if self.builtin_in_effect:
            if not format:
                return self._emit(program, black=False)
            from .layout import Unsure  # black's layout: only when formatting

            try:
                return self._emit(program, black=True)
            except Unsure:
                return _formatted(self._emit(program, black=False), self)
        self._checks.ensure(self._stamp())
        source = self.through_jinja(program, shipped_function=self._shipped(_FUNCTION_TEMPLATE))
        return _formatted(source, self, program) if format else source

    def _check_reserved(self, program: Program) -> None:
        """A program lowered without these templates' reserved names
        (``render(lower(gm))``) renders only if it defines none of them."""
        taken = sorted(set(self.reserve).difference(program.reserved) & program_names(program))
        if taken:
            raise TemplateError(
                f"the program defines {taken}, which the templates {self!r} reserve for their "
                "own code: lower it with these templates (stitchgen.lower(gm, templates=...)), "
                "which names it apart"
            )

    def _emit(self, program: Program, *, black: bool) -> str:
        return emit(
            program,
            black=black,
            variant=self.template_set,
            writer=self.writer,
            options=self.globals,
            kinds=self.kinds,
        )

    def check(self, *, known: bool = True) -> TemplateReport:
        """Every mistake a check can see in your templates, without
        rendering: blocks the base chain does not render, templates named
        that do not exist, names out of a block's scope, attributes the IR
        does not have, unknown filters (``report.problems``); and, where a
        directory has a lock (``stitchgen templates lock``), the overridden
        blocks whose shipped text changed since (``report.stale``).

        >>> import stitchgen
        >>> stitchgen.Templates().check().problems
        []

        For a variant of yours (a :class:`~stitchgen.emitter.Variant` with
        a folder), :func:`probe` is also rendered both ways, by its emitter
        and by Jinja through its templates, and a difference is a problem:
        an override of a method its blocks never call.

        Rendering runs the same checks (but the variant's two paths) once
        per object (again when a template file changes) and raises a
        :class:`TemplateError` listing the problems before anything
        renders; stale blocks are one
        :class:`~stitchgen.errors.StaleTemplateWarning` per process.
        ``known=False`` is the command line's: the filters and globals your
        Python passes are not known there, so a filter or name that is not
        close to one of stitchgen's is taken for one of yours.
        """
        report = self._report(known)
        if not self.template_set.folder:
            return report
        return dataclasses.replace(report, problems=[*report.problems, *self._two_paths()])

    def _two_paths(self) -> list[Any]:
        """Where a variant of yours writes :func:`probe` otherwise with its
        emitter (the fast path) than through its templates (Jinja): the
        first line that differs, as a problem of its ``function.py.j2``."""
        from .authoring.report import Problem

        variant = self.template_set
        base = Templates(variant=variant, globals=self.globals, kinds=self.kinds)
        program = probe(variant.convention.name)
        fast = base.render(program).splitlines()
        jinja = base.through_jinja(program, shipped_function=False).splitlines()
        if fast == jinja:
            return []
        at = next(
            i for i, pair in enumerate(itertools.zip_longest(fast, jinja)) if len(set(pair)) > 1
        )
        mine, theirs = (lines[at] if at < len(lines) else "(the end)" for lines in (fast, jinja))
        return [
            Problem(
                os.path.join(variant.folder, _FUNCTION_TEMPLATE),
                1,
                f"the variant {variant.name!r} writes line {at + 1} of a program holding every "
                f"statement kind as {mine!r} on the fast path ({variant.emitter.__name__}) and "
                f"as {theirs!r} through its templates: override the methods its blocks call "
                "(docs/templates.md, a variant of your own)",
            )
        ]

    def _report(self, known: bool) -> TemplateReport:
        """What :meth:`check` finds in the templates' files (what rendering
        checks: not a variant's two paths, which only the fast path shows)."""
        from .authoring.report import LOCK, TemplateReport  # off the shipped path

        if self.builtin_in_effect and not any(os.path.lexists(Path(d, LOCK)) for d in self.dirs):
            return TemplateReport([], [])
        import jinja2  # only for templates of yours

        from .authoring.checks import check_templates
        from .environment import template_error

        try:
            kinds = sorted({kind.template for kind in self.kinds})  # type: ignore[attr-defined]
            return check_templates(
                self.environment, self.dirs, self.variant, known=known, kinds=kinds
            )
        except jinja2.TemplateSyntaxError as exc:  # file:line: what Jinja could not parse
            raise template_error(exc) from None

    def through_jinja(self, program: Program, *, shipped_function: bool, env: Any = None) -> str:
        """``program`` rendered by Jinja from the entry template (no check,
        no cache); ``shipped_function=False`` renders each function through
        ``function.py.j2`` even where it is the shipped one (the lock's
        record of what the shipped blocks emit)."""
        from .environment import NAMES_KEY, template_error
        from .filters import BlockText

        emit = emit_for(program, self.template_set, self.writer, self.globals, kinds=self.kinds)
        context = {
            NAMES_KEY: program_names(program),
            "emit": BlockText(emit, shipped_function=shipped_function),
        }
        try:
            entry = (env or self.environment).get_template(ENTRY_TEMPLATE)
            return entry.render(program=program, **context)
        except Exception as exc:
            raise template_error(exc) from exc

    def _stamp(self) -> tuple[Any, ...]:
        """What the user's template files look like now (names, mtimes)."""
        stamp = []
        for d in self.dirs:
            for path in sorted(Path(d).rglob("*")):
                if path.is_file():
                    stamp.append((str(path), path.stat().st_mtime_ns))
        return tuple(stamp)


class _Checks:
    """When a :class:`Templates`' checks last passed: the stamp of your files
    in this process, and across processes the template cache's record of
    the very same files (yours, the shipped ones), versions, filters,
    globals and variant. Rendering runs the checks once per state."""

    def __init__(self, templates: Templates) -> None:
        self.templates = templates
        self.passed: tuple[Any, ...] | None = None

    def ensure(self, stamp: tuple[Any, ...]) -> None:
        """The checks run (a :class:`TemplateError` listing the problems),
        unless they passed on ``stamp``, the files as they are now."""
        if self.passed == stamp:
            return
        templates = self.templates
        environment = templates.environment
        cache, key = templates._cache, None
        if cache is not None:
            files = [Path(path) for path, _ in stamp] + sorted(templates_dir().rglob("*.j2"))
            if templates.template_set.folder:
                files += sorted(Path(templates.template_set.folder).rglob("*.j2"))
            options = f"variant {templates.variant}; globals {sorted(environment.globals)}"
            try:
                key = cache.checks_key(files, options)
            except OSError:  # a file gone since the stamp: checked in this process
                key = None
            if key is not None and cache.checked(key):
                self.passed = stamp
                return
        report = templates._report(known=True)
        if report.problems:
            first = report.problems[0]  # the message starts with its file:line
            raise TemplateError(
                "\n".join(str(p) for p in report.problems), template=first.file, lineno=first.line
            )
        if report.stale:
            from .authoring.lock import warn_stale

            warn_stale(report.stale)
        elif cache is not None and key is not None:
            cache.mark_checked(key)
        self.passed = stamp


def _filter_names() -> frozenset[str]:
    from .filters import FILTER_NAMES  # markupsafe: only when filters are given

    return FILTER_NAMES


@functools.lru_cache(maxsize=32)
def _shared(dirs: tuple[str, ...], variant: str | None) -> Templates:
    return Templates(dirs, variant=variant)


def resolve_templates(
    templates: Templates | str | None, template_dirs: Sequence[str | os.PathLike[str]] = ()
) -> Templates:
    """``templates`` as a :class:`Templates`: None is the built-ins, a string
    names a variant; plain ``template_dirs`` share one cached instance."""
    if isinstance(template_dirs, (str, os.PathLike)):
        template_dirs = (template_dirs,)
    dirs = tuple(os.fspath(d) for d in template_dirs)
    if isinstance(templates, Templates):
        if dirs:
            raise ValueError("pass template_dirs inside Templates(dirs=...), not both")
        return templates
    if templates is not None and not isinstance(templates, str):
        raise TypeError(f"templates must be a Templates, a variant name or None, not {templates!r}")
    return _shared(dirs, templates)


def _formatted(source: str, templates: Templates, program: Program | None = None) -> str:
    from .formatting import format_source

    try:
        return format_source(source)
    except Exception as exc:  # black.InvalidInput and friends
        import ast

        from .environment import source_error  # Jinja: on this error only

        try:  # the line Python refuses, where it does (black's own message otherwise)
            compile(source, "<stitchgen>", "exec", ast.PyCF_ONLY_AST)
        except SyntaxError as error:
            raise source_error(templates, source, error, program) from exc
        raise source_error(templates, "", detail=f" (black: {exc})") from exc


def render(
    program: Program,
    *,
    format: bool = True,
    template_dirs: Sequence[str | os.PathLike[str]] = (),
    templates: Templates | str | None = None,
) -> str:
    """Python source for ``program``; ``format=True`` gives it black's formatting.

    >>> import torch.fx as fx, stitchgen
    >>> gm = fx.symbolic_trace(lambda x: x + 1)
    >>> print(stitchgen.render(stitchgen.lower(gm), format=False))  # doctest: +ELLIPSIS
    # Generated by stitchgen...
    """
    return resolve_templates(templates, template_dirs).render(program, format=format)


def probe(convention: str = "closure") -> Program:
    """A small program holding every statement kind a body holds
    (``ir.BodyStmt``), at depth: a piece called inlined and bound, a
    getitem, a branch whose arm is tied, a loop with its break, a check,
    the frees and the return — what
    :meth:`Templates.check` renders both ways for a variant of yours (no
    graph: rendering sits below the lowering)."""
    from . import ir

    x, flag = ir.Name("x"), ir.Name("flag")
    neg, lt, add = (
        ir.GlobalRef(m, p) for m, p in (("torch", "neg"), ("operator", "lt"), ("operator", "add"))
    )
    inner = ir.Function(
        "inlined_submod_0",
        (ir.Param("a"),),
        (
            ir.Call("neg", neg, (ir.Name("a"),), node="neg"),
            ir.Del(("a",)),
            ir.Return(ir.TupleExpr((ir.Name("neg"),))),
        ),
        origin="submod_0",
    )
    loop = (
        ir.Call("lt", lt, (ir.Name("i"), ir.Literal(2)), node="lt"),
        ir.Break(ir.Name("lt")),
        ir.Del(("lt",)),
        ir.Call("j", add, (ir.Name("i"), ir.Literal(1)), node="add"),
        ir.Rebind(("i",), (ir.Name("j"),)),
        ir.Del(("j",)),
    )
    size = ir.Compare(ir.Size(x, 0), "<=", ir.BinOp(ir.Literal(2), "*", ir.Literal(4)))
    body = (
        ir.UnpackCall(("y",), ir.FunctionRef(0, "inlined_submod_0"), (x,), node="submod_0"),
        ir.Call("z", ir.SubmodRef(0, "call_submod_1"), (ir.Name("y"),), node="submod_1"),
        ir.GetItem("w", ir.Name("z"), ir.Literal(0)),
        ir.Del(("y", "z")),
        ir.If(
            ("c",), flag, (ir.Rebind(("c",), (ir.Name("w"),), (x,)),), (ir.Rebind(("c",), (x,)),)
        ),
        ir.Assign("i", ir.Literal(0)),
        ir.While(("i",), loop, (ir.Name("i"), x)),
        ir.Check(size, "AssertionError", "Guard failed: x.size()[0] <= 8"),
        ir.Del(("x", "flag", "lt")),
        ir.Return(ir.TupleExpr((ir.Name("c"), ir.Name("w"), ir.Name("i")))),
    )
    entry = ir.Function("execution_fn", (ir.Param("x"), ir.Param("flag")), body)
    submods = (ir.SubmodDecl("call_submod_1", "submod_1"),)
    imports = ("operator", "stitchgen.runtime", "torch")
    return ir.Program(
        "execution_fn", "bind", imports, submods, (), (inner, entry), convention=convention
    )

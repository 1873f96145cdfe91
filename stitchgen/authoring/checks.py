"""Every check of a ``Templates``' own templates, without rendering.

What it finds, each a :class:`~stitchgen.authoring.analysis.Problem`
naming the file and line:

* a top-level block that the template's base chain does not render (Jinja
  ignores it: the override would do nothing), with the closest block
  names, or the other template that has it (``header`` is
  ``module.py.j2``'s);
* an ``extends``, ``include`` or ``import`` of a template that does not
  exist (or of the file itself), with the closest names;
* a syntax error;
* a name a block uses that is not in its scope, with what it sees;
* an attribute the block's IR types do not have (``stmt.nde``), with the
  closest fields and properties;
* a filter or test the environment does not have.

Blocks nested inside an overridden block are the author's own; a template
that extends nothing defines its blocks freely. Only the user's templates
are checked: the effective ``module.py.j2`` and ``function.py.j2`` where they
come from a directory of the user's, and the user's templates they extend,
include or import.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jinja2
from jinja2 import nodes

from ..environment import closest
from .analysis import ENTRY_CONTEXT, Walk
from .lock import stale
from .report import Problem, TemplateReport
from .sources import Library, Source

__all__ = [
    "ENTRIES",
    "check_sources",
    "check_templates",
    "layouts",
    "shipped_name",
    "user_sources",
]

#: the templates a render starts from: the module, and the function it includes
ENTRIES = ("module.py.j2", "function.py.j2")


def shipped_name(entry: str, variant: str | None) -> str:
    """The shipped template ``entry`` of ``variant``, by its ``stitchgen/`` name."""
    return f"stitchgen/variants/{variant}/{entry}" if variant else f"stitchgen/{entry}"


def layouts(
    library: Library,
    variant: str | None,
    problems: list[Problem] | None = None,
    lenient: frozenset[str] | None = None,
) -> dict[str, Walk]:
    """How each template renders, by name: a walk of the effective
    ``module.py.j2`` from the render's context, then of ``function.py.j2``
    from the scope where the module includes it (the shipped module's, where
    the effective one does not include it), then of the user's templates
    they include."""
    env = library.env
    context = {**ENTRY_CONTEXT, **{name: None for name in env.globals}}
    module = Walk(library.chain(ENTRIES[0]), context, env, problems, lenient=lenient).run()
    scope = _included(module, ENTRIES[1])
    if scope is None:
        shipped = Walk(library.chain(shipped_name(ENTRIES[0], variant)), context, env).run()
        scope = _included(shipped, ENTRIES[1]) or dict(context)
    walks = {ENTRIES[0]: module}
    if problems is None or library.is_user(ENTRIES[1]):  # a shipped chain has nothing to check
        walks[ENTRIES[1]] = Walk(library.chain(ENTRIES[1]), scope, env, problems, lenient=lenient)
        walks[ENTRIES[1]].run()
    for walk in list(walks.values()):  # other templates of the user's that they include
        for name, inner in walk.includes:
            if name in walks or name in ENTRIES:
                continue
            try:
                chain = library.chain(name)
            except jinja2.TemplateError:
                continue  # reported by check_sources
            if chain[0].user:
                walks[name] = Walk(chain, inner, env, problems, lenient=lenient).run()
    return walks


def _included(walk: Walk, name: str) -> dict[str, Any] | None:
    return next((scope for included, scope in walk.includes if included == name), None)


def user_sources(library: Library, problems: list[Problem]) -> list[Source]:
    """The user's templates a render reaches: the effective entries where
    they are the user's, and the user's templates they name; a name that
    does not resolve or a file that does not parse is a problem."""
    found: dict[str, Source] = {}
    todo = list(ENTRIES)
    while todo:
        name = todo.pop(0)
        if name in found:
            continue
        try:
            if name in ENTRIES and not library.is_user(name):
                continue  # shipped: not parsed for nothing
            source = library.load(name)
        except jinja2.TemplateSyntaxError as exc:
            message = f"TemplateSyntaxError: {exc.message}"
            problems.append(Problem(exc.filename or name, exc.lineno, message))
            continue
        if not source.user:
            continue
        found[name] = source
        for ref, line in _references(source):
            try:
                target = library.load(ref)
            except jinja2.TemplateNotFound:
                problems.append(Problem(source.filename, line, _missing(ref, library)))
                continue
            except jinja2.TemplateSyntaxError:
                todo.append(ref)  # reported when it is loaded
                continue
            if target.filename == source.filename:
                problems.append(
                    Problem(
                        source.filename,
                        line,
                        f"{ref!r} names this file itself; extend the shipped template by its "
                        f"'stitchgen/' name (did you mean 'stitchgen/{ref}'?)",
                    )
                )
            elif target.user:
                todo.append(ref)
    return list(found.values())


def _references(source: Source) -> list[tuple[str, int]]:
    """The template names ``source`` extends, includes or imports (constants only)."""
    refs = []
    node: Any
    for node in source.ast.find_all((nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)):
        if isinstance(node, nodes.Include) and node.ignore_missing:
            continue
        if isinstance(node.template, nodes.Const) and isinstance(node.template.value, str):
            refs.append((node.template.value, node.lineno))
    return refs


def _missing(name: str, library: Library) -> str:
    near = closest(name, library.names())
    hint = f" (did you mean {' or '.join(repr(n) for n in near)}?)" if near else ""
    return f"no template named {name!r}{hint}"


def check_sources(
    library: Library,
    variant: str | None,
    sources: Sequence[Source],
    problems: list[Problem],
    lenient: frozenset[str] | None = None,
    kinds: frozenset[str] = frozenset(),
) -> None:
    """Each top-level block of the user's ``sources`` that its base chain
    does not render (but a kind of yours's, in ``function.py.j2``: ``kinds``
    names them), then the names and attributes of every block (a walk of
    the effective templates)."""
    for source in sources:
        if source.extends is not None:
            known = kinds if source.name == ENTRIES[1] else frozenset()
            _unknown_blocks(library, variant, source, problems, known)
    layouts(library, variant, problems, lenient)


def _unknown_blocks(
    library: Library,
    variant: str | None,
    source: Source,
    problems: list[Problem],
    kinds: frozenset[str] = frozenset(),
) -> None:
    try:
        parents = library.chain(source.extends or "")
    except jinja2.TemplateError:
        return  # a missing or broken base: reported by user_sources
    placed = Walk(parents, {}, library.env).run().placements
    base = parents[0].name
    for block in source.top:
        name = block.name
        if name in placed or name in kinds:  # (a kind's: rendered by name, at its statements)
            continue
        definer = next((s for s in parents if name in s.blocks), None)
        if definer is not None:
            outer = definer.enclosing.get(name)
            replaced = next((s for s in parents if outer in s.blocks), definer)
            why = (
                f"{base} does not render block {name!r}: {replaced.name}'s block {outer!r} "
                "leaves it out"
            )
        else:
            why = f"{base} has no block {name!r}"
        elsewhere = _elsewhere(library, variant, source, name)
        near = closest(name, placed)
        hint = f" (did you mean {' or '.join(repr(n) for n in near)}?)" if near else ""
        problems.append(
            Problem(
                source.filename,
                block.lineno,
                f"{why}, so this block would render nothing{elsewhere or hint}",
            )
        )


def _elsewhere(library: Library, variant: str | None, source: Source, name: str) -> str:
    """``; it is a block of module.py.j2`` where the other entry has ``name``."""
    for entry in ENTRIES:
        if source.name == entry:
            continue
        try:
            other = Walk(library.chain(shipped_name(entry, variant)), {}, library.env).run()
        except jinja2.TemplateError:
            continue
        if name in other.placements:
            return f"; it is a block of {entry}: override it in a {entry} of yours"
    return ""


def check_templates(
    env: jinja2.Environment,
    dirs: Sequence[str],
    variant: str | None,
    *,
    known: bool = True,
    kinds: Sequence[str] = (),
) -> TemplateReport:
    """Every check of the templates in ``dirs`` (rendered through ``env``,
    with ``variant``): the problems, and the stale overrides where a
    directory has a lock. ``known=False`` where the project's own filters
    and globals are not in ``env`` (the command line): a filter or name
    that is not close to one of stitchgen's is then taken for the project's.
    ``kinds``: the blocks of the statement kinds of yours (``Templates(kinds=)``),
    which ``function.py.j2`` renders by name, with their ``before_``/``after_``."""
    library = Library(env, dirs)
    problems: list[Problem] = []
    sources = user_sources(library, problems)
    lenient = None
    if not known:
        shipped = Library(env, ())
        walks = layouts(shipped, variant).values()
        lenient = frozenset(n for w in walks for p in w.placements.values() for n in p.scope)
        lenient -= frozenset(env.globals)
    if not problems:  # the rest reads templates that must load and parse
        named = frozenset(f"{part}{k}" for k in kinds for part in ("", "before_", "after_"))
        check_sources(library, variant, sources, problems, lenient, named)
    return TemplateReport(problems, stale(library, dirs))

"""The pipeline: graph → raw program (``lowering``) → passes (``passes``) →
source (``rendering``) → callable (``loading``). Its drivers: ``lower``
(graph → program ready to render), ``generate`` (graph → source) and
``compile`` (graph → callable), run with the cyclic garbage collector
paused (:func:`paused`, which says why)."""

from __future__ import annotations

import contextlib
import gc
import os
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch.fx as fx

if TYPE_CHECKING:
    from torch.export import ExportedProgram

# The cyclic garbage collector is paused while stitchgen lowers, renders and
# loads, and while the compile path's modules are imported: the tens of
# thousands of small IR objects a compile makes hold no cycles (reference
# counting frees them), and collections that promote them would tip a large
# heap into a full collection. Why, and what it was measured to cost:
# benchmarks/README.md, "The collector paused while stitchgen compiles".
# ``STITCHGEN_KEEP_GC=1`` leaves the collector alone.


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off inside the block (if it was on, and unless
    ``STITCHGEN_KEEP_GC=1``); nested uses are free.

    >>> import gc
    >>> with paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    resume = gc.isenabled() and os.environ.get("STITCHGEN_KEEP_GC", "") in ("", "0")
    if resume:
        gc.disable()
    try:
        yield
    finally:
        if resume:
            gc.enable()


with paused():  # the compile path's modules (see above)
    from .conventions import Convention
    from .errors import BindingError
    from .ir import Program
    from .loading import Generated, compile_source, load
    from .lowering import build_program, fetch_attr
    from .options import Options
    from .passes import run_passes
    from .rendering import Templates, render, resolve_templates

__all__ = ["Generated", "Options", "compile", "generate", "lower", "paused"]


def graph_of(gm: Any, options: Options) -> fx.GraphModule:
    """The ``GraphModule`` to lower for ``gm``: itself, or for a
    ``torch.export.ExportedProgram``, its ``module()`` with export's input
    checks written as code, unless ``check_inputs=False``
    (:mod:`stitchgen.exported`, imported only then)."""
    if isinstance(gm, fx.GraphModule):
        return gm
    from .exported import is_exported, unlifted

    return unlifted(gm, checks=options.check_inputs) if is_exported(gm) else gm


def lower(
    gm: fx.GraphModule | ExportedProgram,
    *,
    names: Mapping[str, str] | None = None,
    reserve: Sequence[str] = (),
    convention: Convention | None = None,
    **options: Any,
) -> Program:
    """``gm`` as a program ready to render: the raw program
    (:func:`stitchgen.lowering.build_program`) through the passes
    (:func:`stitchgen.passes.run_passes`). ``options``: :class:`Options` that shape the
    program (not ``format`` or ``dump_dir``: nothing is rendered); the
    program takes the name formats, reserved names and convention of
    ``templates`` (the built-ins by default), as :func:`generate`'s does,
    and ``names``, ``reserve`` and ``convention`` add to them.

    >>> import torch, torch.fx as fx, stitchgen
    >>> program = stitchgen.lower(fx.symbolic_trace(lambda x: torch.relu(x) + 1))
    >>> [p.name for p in program.entry.params], program.entry.body[-1]
    (['x'], Return(value=Name(id='add')))
    """
    rendering = sorted({"format", "dump_dir"}.intersection(options))
    if rendering:
        raise TypeError(f"lower renders nothing: it takes no {rendering} option")
    chosen = Options(**options)
    return _lower(graph_of(gm, chosen), chosen, resolved(chosen), names, reserve, convention)


def _lower(
    gm: fx.GraphModule,
    options: Options,
    templates: Templates,
    names: Mapping[str, str] | None = None,
    reserve: Sequence[str] = (),
    convention: Convention | None = None,
) -> Program:
    program = build_program(
        gm,
        options,
        names={**templates.names, **(names or {})},
        reserve=(*templates.reserve, *reserve),
        convention=convention or templates.convention,
    )
    return run_passes(program, extra=options.passes)


def resolved(options: Options) -> Templates:
    """The template set ``options`` name (a bad name or directory: an error now)."""
    return resolve_templates(options.templates, options.template_dirs)


#: ``STITCHGEN_DUMP_DIR=DIR``: every generated module dumped there (see ``dump.py``)
DUMP_ENV = "STITCHGEN_DUMP_DIR"


def tracing() -> bool:
    """Is ``TORCH_TRACE`` (structured tracing for tlparse) on? Then the code
    is a ``trace_structured`` artifact too (see ``dump.py``, imported only then)."""
    return bool(os.environ.get("TORCH_TRACE"))


def generate(gm: fx.GraphModule | ExportedProgram, **options: Any) -> Generated:
    """Lower and render ``gm``, as the :class:`Options` given as keywords
    say. The program's shape is decided by the lowering and the passes
    alone: every template set — the built-ins, a shipped variant, your own
    — renders the same program. ``gm`` may be a
    ``torch.export.ExportedProgram``: its ``module()``, with export's input
    checks written as code (:mod:`stitchgen.exported`); ``compile`` and
    ``lower`` take one too.

    >>> import torch.fx as fx, stitchgen
    >>> generated = stitchgen.generate(fx.symbolic_trace(lambda x: x + 1))
    >>> print(generated.code.splitlines()[-3])
            return add
    """
    with paused():  # no full collection on our account (see above)
        chosen = Options(**options)
        return _generate(graph_of(gm, chosen), chosen)


def _generate(gm: fx.GraphModule, options: Options) -> Generated:
    templates = resolved(options)
    generated = produce(gm, options, templates)
    dump_if_asked(type(gm).__name__, generated, templates, options.format, options.dump_dir)
    return generated


def dump_if_asked(
    graph: str,
    generated: Generated,
    templates: Templates,
    formatted: bool,
    dump_dir: str | os.PathLike[str] | None = None,
) -> None:
    """The code, black-formatted under a header, to the dump directory
    (``dump_dir``, else ``$STITCHGEN_DUMP_DIR``) and the structured trace,
    where either is asked for (``dump.py``: imported only then); its header
    names ``graph``, the lowered graph's class. ``generate``
    calls it last; ``compat``, once its own refusals have passed."""
    directory = dump_dir if dump_dir is not None else os.environ.get(DUMP_ENV) or None
    if directory is None and not tracing():
        return
    from . import dump

    program = generated.program
    assert program is not None  # generate's record always holds its IR
    code = generated.code if formatted else render(program, format=True, templates=templates)
    text = dump.dump_text(program, code, graph)
    if directory is not None:
        dump.write_dump(directory, program.name, text)
    if tracing():
        dump.emit_trace(lambda: text)


def produce(gm: fx.GraphModule, options: Options, templates: Templates) -> Generated:
    """:func:`generate` with its templates resolved, and no dump (see
    :func:`dump_if_asked`)."""
    # the shipped templates' text is Python by construction (the emitter,
    # held to the templates and to compile() by the tests); templates of
    # your own are checked below, so what they render wrong is a TemplateError
    shipped = templates.builtin_in_effect
    program = _lower(gm, options, templates)
    code = render(program, format=options.format, templates=templates)
    code_object = None if shipped else _compiled(code, program, templates)
    # the children the lowering found (an opaque one's value is None: the caller binds it)
    defaults = {
        s.path: child
        for s, child in zip(program.submods, program.submod_values, strict=True)
        if not s.inlined and child is not None
    }
    consts = list(program.const_values)
    return Generated(code, program.linkage, consts, program, defaults, templates, code_object)


def _compiled(code: str, program: Program, templates: Templates) -> types.CodeType:
    """``code`` compiled, or a TemplateError naming the template line that
    wrote it (black accepts some invalid programs, so formatting proves nothing)."""
    try:
        return compile_source(code, program.name)
    except SyntaxError as exc:  # IndentationError included
        from .environment import source_error  # templates of yours: Jinja is loaded

        raise source_error(templates, code, exc, program) from exc


def compile(
    gm: fx.GraphModule | ExportedProgram,
    submods: Mapping[str, Callable[..., Any]] | None = None,
    **options: Any,
) -> Callable[..., Any]:
    """A plain function computing what ``gm(*args)`` computes (``options``:
    :class:`Options`; black is skipped unless ``format=True``).

    Children named in ``submods`` are called through the given callables,
    children named in ``opaque`` (and not in ``submods``) are called as found
    on ``gm``; the other ``GraphModule`` children are inlined and any other
    child is called as found on ``gm``.

    >>> import torch, torch.fx as fx, stitchgen
    >>> fn = stitchgen.compile(fx.symbolic_trace(lambda x: x.relu() + 1))
    >>> fn(torch.tensor([-1.0, 1.0]))
    tensor([1., 2.])
    """
    with paused():
        chosen = Options(**{"format": False, **options})
        return compile_with(graph_of(gm, chosen), submods, chosen)


def compile_with(
    gm: fx.GraphModule, submods: Mapping[str, Callable[..., Any]] | None, options: Options
) -> Callable[..., Any]:
    """:func:`compile` with its options checked (the backend's path)."""
    submods = dict(submods or {})
    called = {n.target for n in gm.graph.find_nodes(op="call_module")} if submods else ()
    # the root's calls read once (a backend binds every piece); a nested path asks _calls
    unknown = [path for path in submods if path not in called and not _calls(gm, path)]
    if unknown:
        raise BindingError(
            f"unexpected submodule binding(s) {sorted(unknown)}: no call_module node of the "
            "graph (or of a GraphModule child it inlines) calls them"
        )
    opaque = tuple(dict.fromkeys([*submods, *options.opaque]))
    for path in opaque:
        if path not in submods:
            try:
                submods[path] = fetch_attr(gm, path)
            except AttributeError:
                pass  # generate names it: no call_module node calls it
    with paused():
        generated = _generate(gm, options.replace(opaque=opaque))
        fn = load(generated, submods)
        del generated  # the IR is freed while the collector is still off
    return fn


def _calls(gm: fx.GraphModule, path: str) -> bool:
    """Does a call_module node call the child at ``path`` (a qualified name
    in ``gm``): in ``gm``'s graph, or in the graph of a GraphModule child?"""
    atoms = path.split(".")
    for cut in range(len(atoms)):
        try:
            owner = fetch_attr(gm, ".".join(atoms[:cut])) if cut else gm
        except AttributeError:
            return False
        if not isinstance(owner, fx.GraphModule):
            return False
        target = ".".join(atoms[cut:])
        if any(n.target == target for n in owner.graph.find_nodes(op="call_module")):
            return True
    return False

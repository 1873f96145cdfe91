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
from typing import Any

import torch.fx as fx

# The cyclic garbage collector, paused while stitchgen compiles (:func:`paused`).
#
# Lowering a big graph allocates tens of thousands of small IR objects that
# live until the code is rendered. With the collector running, young
# collections promote them, and on a large heap (a serving process, torch and
# a traced model loaded) that promotion is what tips CPython into a *full*
# collection — a pause proportional to the whole heap, measured at 0.24 s on
# the 80-layer benchmark with ~530,000 objects alive, for a compile that
# otherwise takes ~60 ms. Our objects hold no reference cycles: reference
# counting frees them all. So, like :mod:`timeit`, stitchgen turns the
# collector off while it lowers, renders and loads, and back on (only if it
# was on) right after; by then its objects are gone, so they never count
# towards the next full collection — the collector's schedule is left as the
# rest of the program made it.
#
# The same holds while the compile path's modules are imported (``pipeline``
# and ``compat`` import theirs inside :func:`paused`): the import makes some
# 2,700 objects — functions, classes, code constants — that live as long as
# the process. With the collector on, three young collections examine them
# during the import, and by promoting them they make the next collection a
# middle-generation one, which the first compile then pays (measured: about
# 1 ms of a fresh process's import + first compile of the 80-layer benchmark,
# against 0.3 ms for the one young collection that examines them after a
# paused import). ``torch`` is imported before the pause, as the collector
# would see it anyway.
#
# Set ``STITCHGEN_KEEP_GC=1`` to leave the collector alone. A program that
# switches the collector off in another thread while stitchgen compiles may
# find it switched back on at the end.


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
    from .conventions import CLOSURE, Convention
    from .errors import BindingError
    from .generated import Generated
    from .ir import Program
    from .loading import compile_source, load
    from .lowering import ConstPool, build_program, fetch_attr
    from .passes import Pass, run_passes
    from .rendering import Templates, render, resolve_templates

__all__ = ["Generated", "compile", "generate", "lower", "paused"]


def lower(
    gm: fx.GraphModule,
    *,
    name: str = "execution_fn",
    opaque: Sequence[str] = (),
    names: Mapping[str, str] | None = None,
    reserve: Sequence[str] = (),
    boxed: bool = False,
    convention: Convention = CLOSURE,
    const_pool: ConstPool | None = None,
    passes: Sequence[Pass] = (),
    source_lines: bool | None = None,
    unpack: bool = True,
) -> Program:
    """``gm`` as a program ready to render: the raw program
    (:func:`stitchgen.lowering.build_program`, which documents the options)
    through the passes (:mod:`stitchgen.passes`: ``passes`` — yours, in
    order — then targets, liveness and naming). ``source_lines``: see
    :func:`generate`. ``unpack``: piece results unpacked where they are
    called (``a, b = inlined_submod_0(x)``, see ``build_program``) — not
    with passes of your own, which take a getitem per item.

    >>> import torch, torch.fx as fx, stitchgen
    >>> program = stitchgen.lower(fx.symbolic_trace(lambda x: torch.relu(x) + 1))
    >>> [p.name for p in program.entry.params], program.entry.body[-1]
    (['x'], Return(value=Name(id='add')))
    """
    program = build_program(
        gm,
        name=name,
        opaque=opaque,
        names=names,
        reserve=reserve,
        boxed=boxed,
        convention=convention,
        const_pool=const_pool,
        source_lines=_source_lines(source_lines),
        unpack=unpack and not passes,
    )
    return run_passes(program, extra=passes)


#: ``STITCHGEN_SOURCE_LINES=1``: source lines on wherever the option is not given
SOURCE_LINES_ENV = "STITCHGEN_SOURCE_LINES"
#: ``STITCHGEN_DUMP_DIR=DIR``: every generated module dumped there (see ``dump.py``)
DUMP_ENV = "STITCHGEN_DUMP_DIR"


def tracing() -> bool:
    """Is ``TORCH_TRACE`` (structured tracing for tlparse) on? Then the code
    is a ``trace_structured`` artifact too (see ``dump.py``, imported only then)."""
    return bool(os.environ.get("TORCH_TRACE"))


def _source_lines(option: bool | None) -> bool:
    return os.environ.get(SOURCE_LINES_ENV) == "1" if option is None else bool(option)


def generate(
    gm: fx.GraphModule,
    *,
    name: str = "execution_fn",
    format: bool = True,
    template_dirs: Sequence[str | os.PathLike[str]] = (),
    templates: Templates | str | None = None,
    opaque: Sequence[str] = (),
    boxed: bool = False,
    const_pool: ConstPool | None = None,
    passes: Sequence[Pass] = (),
    dump_dir: str | os.PathLike[str] | None = None,
    source_lines: bool | None = None,
    unpack: bool = True,
) -> Generated:
    """Lower and render ``gm``. ``templates`` is a :class:`stitchgen.Templates`
    or a shipped variant's name (``"profiled"``, ``"vllm"``); ``opaque`` names
    children to call through bindings even if they are GraphModules;
    ``boxed=True`` makes the function take its inputs as one list that it
    clears (so the caller's list does not keep them alive);
    ``const_pool`` continues the constants of code generated before (see
    :class:`stitchgen.lowering.ConstPool`; ``stitchgen.compat`` uses it);
    ``passes`` are yours, run on the raw program (see :mod:`stitchgen.passes`);
    ``dump_dir`` (default: ``$STITCHGEN_DUMP_DIR``) receives a copy of the
    code for debugging (see :mod:`stitchgen.dump`); ``source_lines=True``
    (default: ``$STITCHGEN_SOURCE_LINES=1``) ends each line made from a node
    with a recorded stack trace with the user's source location
    (``# model.py:42 in forward``), so a traceback through the code — and the
    dump, and ``stitchgen show`` — names the model's line; it costs nothing
    per call. ``unpack=False`` takes every piece result apart with one
    getitem per item instead of unpacking it where the piece is called (see
    :func:`lower`). The program's shape is decided here and by the passes
    alone: every template set — the built-ins, a shipped variant, your own —
    renders the same program.

    >>> import torch.fx as fx, stitchgen
    >>> generated = stitchgen.generate(fx.symbolic_trace(lambda x: x + 1))
    >>> print(generated.code.splitlines()[-3])
            return add
    """
    templates = resolve_templates(templates, template_dirs)
    with paused():  # no full collection on our account (see above)
        generated = produce(
            gm,
            name,
            format,
            templates,
            opaque,
            boxed,
            const_pool,
            passes,
            source_lines,
            unpack,
        )
        dump_if_asked(gm, generated, templates, format, dump_dir)
        return generated


def dump_if_asked(
    gm: fx.GraphModule,
    generated: Generated,
    templates: Templates,
    formatted: bool,
    dump_dir: str | os.PathLike[str] | None = None,
) -> None:
    """The code, black-formatted under a header, to the dump directory
    (``dump_dir``, else ``$STITCHGEN_DUMP_DIR``) and the structured trace,
    where either is asked for (``dump.py``: imported only then). ``generate``
    calls it last; ``compat``, once its own refusals have passed."""
    directory = dump_dir if dump_dir is not None else os.environ.get(DUMP_ENV) or None
    if directory is None and not tracing():
        return
    from . import dump

    program = generated.program
    assert program is not None  # generate's record always holds its IR
    code = generated.code if formatted else render(program, format=True, templates=templates)
    text = dump.dump_text(program, code, type(gm).__name__)
    if directory is not None:
        dump.write_dump(directory, program.name, text)
    if tracing():
        dump.emit_trace(lambda: text)


def produce(
    gm: fx.GraphModule,
    name: str,
    format: bool,
    templates: Templates,
    opaque: Sequence[str] = (),
    boxed: bool = False,
    const_pool: ConstPool | None = None,
    passes: Sequence[Pass] = (),
    source_lines: bool | None = None,
    unpack: bool = True,
) -> Generated:
    """:func:`generate` with its templates resolved, and no dump (see
    :func:`dump_if_asked`)."""
    # the shipped templates' text is Python by construction (the emitter,
    # held to the templates and to compile() by the tests); templates of
    # your own are checked below, so what they render wrong is a TemplateError
    shipped = templates.builtin_in_effect
    program = lower(
        gm,
        name=name,
        opaque=opaque,
        names=templates.names,
        reserve=templates.reserve,
        boxed=boxed,
        convention=templates.convention,
        const_pool=const_pool,
        passes=passes,
        source_lines=source_lines,
        unpack=unpack,  # the lowering's choice, whichever templates render it
    )
    code = render(program, format=format, templates=templates)
    code_object = None if shipped else _compiled(code, program.name, templates)
    # the children the lowering found (an opaque one's value is None: the caller binds it)
    defaults = {
        s.path: child
        for s, child in zip(program.submods, program.submod_values, strict=True)
        if not s.inlined and child is not None
    }
    # the pieces the code calls by itself (no binding; one given, say by a
    # compile cache that holds every piece, is ignored at load)
    bound = {s.path for s in program.submods if not s.inlined}
    pieces = {str(n.target) for n in gm.graph.find_nodes(op="call_module")}
    inlined = {s.path for s in program.submods if s.inlined} | (pieces - bound)
    return Generated(
        code=code,
        submod_names=[s.path for s in program.submods],
        consts=list(program.const_values),
        program=program,
        submods=defaults,
        convention=templates.convention.name,
        templates=templates,
        code_object=code_object,
        inlined=tuple(sorted(inlined)),
    )


def _compiled(code: str, name: str, templates: Templates) -> types.CodeType:
    """``code`` compiled, or a TemplateError naming the templates that wrote it
    (black accepts some invalid programs, so formatting proves nothing)."""
    try:
        return compile_source(code, name)
    except SyntaxError as exc:  # IndentationError included
        lines = code.splitlines()
        line = lines[exc.lineno - 1].strip() if exc.lineno and exc.lineno <= len(lines) else ""
        detail = f": {exc.msg} at line {exc.lineno} of the source ({line[:80]!r})"
        raise templates.invalid_source(detail) from exc


def compile(
    gm: fx.GraphModule,
    submods: Mapping[str, Callable[..., Any]] | None = None,
    **generate_options: Any,
) -> Callable[..., Any]:
    """A plain function computing what ``gm(*args)`` computes.

    Children named in ``submods`` are called through the given callables,
    children named in ``opaque`` (and not in ``submods``) are called as found
    on ``gm``; the other ``GraphModule`` children are inlined and any other
    child is called as found on ``gm``. Black is skipped unless ``format=True``.

    >>> import torch, torch.fx as fx, stitchgen
    >>> fn = stitchgen.compile(fx.symbolic_trace(lambda x: x.relu() + 1))
    >>> fn(torch.tensor([-1.0, 1.0]))
    tensor([1., 2.])
    """
    submods = dict(submods or {})
    called = {n.target for n in gm.graph.find_nodes(op="call_module")} if submods else ()
    # the root's calls read once (a backend binds every piece); a nested path asks _calls
    unknown = [path for path in submods if path not in called and not _calls(gm, path)]
    if unknown:
        raise BindingError(
            f"unexpected submodule binding(s) {sorted(unknown)}: no call_module node of the "
            "graph (or of a GraphModule child it inlines) calls them"
        )
    opaque = tuple(dict.fromkeys([*submods, *generate_options.pop("opaque", ())]))
    for path in opaque:
        if path not in submods:
            try:
                submods[path] = fetch_attr(gm, path)
            except AttributeError:
                pass  # generate names it: no call_module node calls it
    generate_options.setdefault("format", False)
    with paused():
        generated = generate(gm, opaque=opaque, **generate_options)
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

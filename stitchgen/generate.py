"""The pipeline drivers: ``generate`` (graph → source) and ``compile``
(graph → callable)."""

from __future__ import annotations

import os
import types
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch.fx as fx

from . import collector
from .errors import TemplateError
from .ir import Call, Program
from .load import compile_source, load
from .lower import ConstPool, fetch_attr, lower
from .render import Templates, render, resolve_templates

__all__ = ["Generated", "compile", "generate"]


@dataclass(frozen=True)
class Generated:
    """Generated code and what it needs to run.

    ``submod_names`` are the qualified names of the children called through
    bindings (in binding order; the vllm convention lists inlined children
    too, in first-call order), ``consts`` the lifted constant objects (in
    binding order), ``submods`` the children found on the graph module, used
    by :func:`stitchgen.load` when no other binding is given (children named
    in ``opaque`` have none: the caller binds them). ``convention`` names how
    the code receives its bindings (``"closure"``, or ``"vllm"`` for the
    vllm template variant; see :mod:`stitchgen.conventions`).
    """

    code: str
    submod_names: list[str]
    consts: list[Any]
    program: Program
    submods: Mapping[str, Callable[..., Any]] = field(default_factory=dict, repr=False)
    convention: str = "closure"
    #: the templates that rendered ``code`` (None when read from an artifact)
    templates: Templates | None = field(default=None, repr=False, compare=False)
    #: ``code`` already compiled (by ``generate``'s check, or from an
    #: artifact), so loading does not compile it again
    code_object: types.CodeType | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.program.name

    def save(self, path: str | os.PathLike[str], *, key: bytes | None = None) -> Path:
        """Save as an artifact directory for a compile cache; see
        :func:`stitchgen.load_artifact`. ``key`` signs it (HMAC-SHA256)."""
        from .artifact import save_artifact

        return save_artifact(self, path, key=key)


def generate(
    gm: fx.GraphModule,
    *,
    name: str = "execution_fn",
    format: bool = True,
    template_dirs: Sequence[str | os.PathLike[str]] = (),
    templates: Templates | str | None = None,
    opaque: Sequence[str] = (),
    boxed: bool = False,
    inline: str = "call",
    const_pool: ConstPool | None = None,
) -> Generated:
    """Lower and render ``gm``. ``templates`` is a :class:`stitchgen.Templates`
    or a shipped variant's name (``"profiled"``, ``"vllm"``); ``opaque`` names
    children to call through bindings even if they are GraphModules;
    ``boxed=True`` makes the function take its inputs as one list that it
    clears (so the caller's list does not keep them alive);
    ``inline="flatten"`` splices inlined pieces into their callers;
    ``const_pool`` continues the constants of code generated before (see
    :class:`stitchgen.lower.ConstPool`; ``stitchgen.compat`` uses it).

    >>> import torch.fx as fx, stitchgen
    >>> generated = stitchgen.generate(fx.symbolic_trace(lambda x: x + 1))
    >>> print(generated.code.splitlines()[-3])
            return add
    """
    templates = resolve_templates(templates, template_dirs)
    with collector.paused():  # see collector.py: no full collection on our account
        return _generate(gm, name, format, templates, opaque, boxed, inline, const_pool)


def _generate(
    gm: fx.GraphModule,
    name: str,
    format: bool,
    templates: Templates,
    opaque: Sequence[str],
    boxed: bool,
    inline: str,
    const_pool: ConstPool | None = None,
) -> Generated:
    program = lower(
        gm,
        name=name,
        opaque=opaque,
        names=templates.names,
        reserve=templates.reserve,
        boxed=boxed,
        inline=inline,
        convention=templates.convention,
        const_pool=const_pool,
    )
    if inline == "flatten" and templates.variant == "profiled":
        _warn_unprofiled(gm, program)
    code = render(program, format=format, templates=templates)
    code_object = _compiled(code, program.name, templates)
    defaults = {
        s.path: fetch_attr(gm, s.path)
        for s in program.submods
        if not s.inlined and s.path not in opaque
    }
    return Generated(
        code=code,
        submod_names=[s.path for s in program.submods],
        consts=list(program.const_values),
        program=program,
        submods=defaults,
        convention=templates.convention.name,
        templates=templates,
        code_object=code_object,
    )


def _warn_unprofiled(gm: fx.GraphModule, program: Program) -> None:
    """The profiled variant records a range per piece call; flatten splices
    inlined pieces away, so those record none. Say which."""
    kept = {s.node for s in program.entry.body if isinstance(s, Call) and s.is_piece}
    pieces = [n.name for n in gm.graph.nodes if n.op == "call_module"]
    spliced = [name for name in pieces if name not in kept]
    if spliced:
        shown = ", ".join(spliced[:4]) + (", ..." if len(spliced) > 4 else "")
        warnings.warn(
            f"templates='profiled' with inline='flatten': {len(spliced)} of {len(pieces)} "
            f"piece calls ({shown}) are spliced into the caller and record no profiler "
            "range; use inline='call' to profile every piece",
            UserWarning,
            stacklevel=4,
        )


def _compiled(code: str, name: str, templates: Templates) -> types.CodeType:
    """``code`` compiled, or a TemplateError naming the templates that wrote it
    (black accepts some invalid programs, so formatting proves nothing)."""
    try:
        return compile_source(code, name)
    except SyntaxError as exc:  # IndentationError included
        lines = code.splitlines()
        line = lines[exc.lineno - 1].strip() if exc.lineno and exc.lineno <= len(lines) else ""
        where = templates.describe()
        raise TemplateError(
            f"{where}: the rendered source is not valid Python: {exc.msg} at line "
            f"{exc.lineno} of the source ({line[:80]!r}); check the templates in use",
            template=where,
        ) from exc


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
    opaque = tuple(dict.fromkeys([*submods, *generate_options.pop("opaque", ())]))
    for path in opaque:
        if path not in submods:
            try:
                submods[path] = fetch_attr(gm, path)
            except AttributeError:
                pass  # generate names it: no call_module node calls it
    generate_options.setdefault("format", False)
    with collector.paused():
        generated = generate(gm, opaque=opaque, **generate_options)
        fn = load(generated, submods)
        del generated  # the IR is freed while the collector is still off
    return fn

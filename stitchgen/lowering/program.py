"""The lowering's entry: :func:`build_program` (and :class:`ConstPool`, the
constants shared with code generated before)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import torch.fx as fx

from ..conventions import CLOSURE, Convention, name_formats
from ..errors import CodegenError
from ..identifiers import Namespace, is_identifier
from ..ir import Function, Param, Program, Unbox, writes
from ..records import Record, record
from .lowerer import Lowerer
from .reading import pytree_info


@record
class ConstPool(Record):
    """Lifted constants shared with code generated before (vLLM's ``consts``
    list and ``const_index``, id → index): a program lowered with a pool
    numbers its constants after the pool's and reuses the pool's objects
    (by identity, through ``index``). The pool is read, never changed:
    the program's ``const_values`` are the pool's values followed by its own."""

    values: tuple[Any, ...] = ()
    index: Mapping[int, int] = dataclasses.field(default_factory=dict)

    def __init__(
        self, values: tuple[Any, ...] = (), index: Mapping[int, int] | None = None
    ) -> None:
        self.__dict__["values"] = values
        self.__dict__["index"] = {} if index is None else index


def build_program(
    gm: fx.GraphModule,
    *,
    name: str = "execution_fn",
    opaque: Iterable[str] = (),
    names: Mapping[str, str] | None = None,
    reserve: Iterable[str] = (),
    boxed: bool = False,
    convention: Convention = CLOSURE,
    const_pool: ConstPool | None = None,
    source_lines: bool = False,
    unpack: bool = False,
) -> Program:
    """The raw program for ``gm``'s graph, whose entry function is ``name``:
    FX names, no dels — what the passes (:mod:`stitchgen.passes`) take.

    Children named in ``opaque`` (qualified names, e.g. ``"submod_1"``) are
    called through bindings; other ``GraphModule`` children are inlined
    (recursively); any other child is called through a binding whose default
    is the child itself. ``names`` overrides :data:`NAME_FORMATS` (the binder's
    name, and the formats of binding and inlined-function names); ``reserve``
    adds names no identifier may take. ``boxed`` gives the entry function
    the boxed-inputs convention (one list argument, cleared on entry, as
    Inductor's ``call(args)``). ``convention``
    (:mod:`stitchgen.conventions`) brings its helper names (reserved), its
    name formats and its constant policy; ``const_pool`` continues the
    numbering of constants shared with earlier code. ``source_lines`` gives
    each call and getitem the user's source location of its node
    (:func:`source_location`), which the code writes as a trailing comment.

    ``unpack=True``: a call of an inlined child whose result is read only
    by one ``getitem`` per item (indices ``0 .. n-1``, each once; none with a
    source location) is an :class:`~stitchgen.ir.UnpackCall` —
    ``a, b = inlined_submod_0(x)`` — and those getitems are not statements
    of their own: the tuple is never a local to take apart and delete. A
    decoder's entry shrinks to about a third of its lines, and ``compile()``
    of the module with it. Same objects, same order of calls. A result read
    any other way (passed on, returned, a computed index, an item unread),
    or a piece called through a binding (whose result's length the code
    cannot know), keeps a ``getitem`` per item, as with ``unpack=False``
    (which passes of your own take).

    >>> import torch, torch.fx as fx
    >>> gm = fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    >>> program = build_program(gm)
    >>> [p.name for p in program.entry.params], program.entry.body[-1]
    (['x'], Return(value=Name(id='add')))
    """
    if not isinstance(gm, fx.GraphModule):
        raise TypeError(
            f"stitchgen expects a torch.fx.GraphModule, got {type(gm).__module__}."
            f"{type(gm).__qualname__}"
        )
    if not isinstance(name, str) or not is_identifier(name):
        raise ValueError(f"function name must be a Python identifier, got {name!r}")
    formats = name_formats({**convention.names, **(names or {})})
    lowerer = Lowerer(frozenset(opaque), formats, convention, source_lines, unpack)
    decls = lowerer.decls
    if const_pool is not None:
        decls.continue_pool(const_pool.values, const_pool.index)
    entry = lowerer.function(gm, prefix="", name=name)
    if pytree_info(gm) is not None:
        from .pytree import pytree_entry  # imported for such a graph only (start-up)

        entry = pytree_entry(gm, entry, decls.target_ref, decls.lift)
    if boxed:
        if not convention.boxed:
            raise ValueError(f"boxed inputs are not part of the {convention.name} convention")
        odd = [p.keyword for p in entry.params if p.kind or p.default is not None]
        if odd:
            raise CodegenError(
                f"boxed inputs need plain positional parameters; {odd} have defaults or are *args"
            )
        entry = _boxed(entry)
    unused = lowerer.opaque - set(decls.submod_index)
    if unused:
        raise CodegenError(
            f"no call_module node calls {sorted(unused)}; the graph calls "
            f"{sorted(decls.submod_index) + sorted(decls.function_index)}"
        )
    return Program(
        name=name,
        binder=formats["binder"],
        imports=tuple(sorted(decls.imports)),
        submods=tuple(decls.submod_decls),
        consts=tuple(decls.const_decls),
        functions=(*decls.functions, entry),
        reserved=tuple(sorted({*reserve, *convention.helpers})),
        const_values=tuple(decls.const_values),
        submod_values=tuple(decls.submod_values),
    )


def _boxed(entry: Function) -> Function:
    """``entry`` taking its inputs as one list (``args``, named apart from
    every local), which an :class:`~stitchgen.ir.Unbox` opening the body
    unpacks and empties."""
    taken = {p.name for p in entry.params} | {t for s in entry.body for t in writes(s)}
    box = Namespace(taken).create("args")
    unbox = Unbox(tuple(p.name for p in entry.params), box)
    return dataclasses.replace(entry, params=(Param(box),), body=(unbox, *entry.body))

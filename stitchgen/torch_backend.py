"""A ``torch.compile`` backend: split Dynamo's graph, compile the pieces,
stitch them with generated code.

    model = torch.compile(model, backend=stitchgen.backend(split_ops=["myns::attention"]))

Dynamo's graph → :func:`~stitchgen.split_graph` → each piece compiled by
``compile_piece`` (by default it runs as the GraphModule it is, inlined into
the generated function) → the stitching graph compiled by stitchgen. Dynamic
shapes need nothing special: SymInt inputs are ordinary parameters of the
generated function, and Dynamo calls the backend again when its guards fail.

To compile the pieces with Inductor::

    from torch._inductor.compile_fx import compile_fx
    backend = stitchgen.backend(split_ops=[...], compile_piece=compile_fx)

``compile_piece(piece, example_inputs)`` receives each piece (a GraphModule
returning a tuple) with example inputs taken from its placeholders' metadata
(Dynamo's fake tensors and SymInts) and returns a callable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch.fx as fx

from .errors import CodegenError
from .pipeline import Options, compile_with, resolved
from .split import SplitOp, SplitOps, partition, split_at, unmatched_message

__all__ = ["backend"]

PieceCompiler = Callable[[fx.GraphModule, list[Any]], Callable[..., Any]]


def _example_inputs(piece: fx.GraphModule, name: str) -> list[Any]:
    out = []
    for node in piece.graph.nodes:
        if node.op != "placeholder":
            continue
        if "example_value" in node.meta:
            out.append(node.meta["example_value"])
        elif "val" in node.meta:
            out.append(node.meta["val"])
        else:
            raise CodegenError(
                f"piece {name!r} input {node.name!r} has no example value in its metadata "
                "(meta['example_value'] or meta['val']); compile_piece needs one"
            )
    return out


def _checked(options: dict[str, Any]) -> Options:
    """The backend's options, refusing at construction what it cannot honour."""
    chosen = Options(**{"format": False, **options})
    if chosen.boxed:
        raise ValueError(
            "boxed=True cannot work in a torch.compile backend: Dynamo calls the compiled "
            "function with positional arguments and keeps them alive itself, so there is "
            "no caller's list to take and clear; use boxed=True with stitchgen.compile "
            "where the caller passes a list (as Inductor's call(args) does)"
        )
    resolved(chosen)  # a bad variant name or template directory fails now
    return chosen


def backend(
    split_ops: Iterable[SplitOp] | fx.GraphModule,
    compile_piece: PieceCompiler | Sequence[Any] | None = None,
    *,
    strict: bool = False,
    **options: Any,
) -> Any:
    """A ``torch.compile`` backend that splits at ``split_ops`` and stitches
    the pieces with generated code (``options``: :class:`stitchgen.Options`,
    as :func:`stitchgen.compile` takes them, e.g. ``templates="profiled"``; options it
    cannot honour — ``boxed=True``, an unknown option — are refused here, at
    construction). ``split_ops`` are alternatives (see
    :func:`stitchgen.split_graph`); a graph that calls none of them — the
    graph after a graph break, a tail such as an LM head — compiles as one
    piece, silently; ``strict=True`` makes that a :class:`stitchgen.CodegenError`.

    Passed uncalled (``backend=stitchgen.backend``, or ``backend="stitchgen"``,
    registered with torch), it is the backend itself: each graph Dynamo hands
    it becomes one generated function, with no split (``backend([])``, a
    split at nothing, is refused and points here). ``torch.compile``'s
    ``options=`` are this function's arguments (``{"split_ops": [...],
    "templates": "profiled"}``, or options alone: no split); its ``mode=``
    is refused, as is any other keyword (a ``TypeError`` naming it).

    >>> import torch, stitchgen
    >>> fn = torch.compile(lambda x: torch.relu(x) * 2, backend=stitchgen.backend([torch.relu]))
    >>> fn(torch.tensor([-1.0, 2.0]))
    tensor([0., 4.])
    >>> torch.compile(lambda x: x * 2, backend=stitchgen.backend)(torch.ones(2))
    tensor([2., 2.])
    """
    if isinstance(split_ops, fx.GraphModule):  # called by torch.compile as the backend
        return _as_backend(split_ops, compile_piece, strict, options)
    if compile_piece is not None and not callable(compile_piece):
        raise TypeError(f"compile_piece is a callable, not {type(compile_piece).__name__}")
    ops = list(split_ops)
    if not ops:
        raise ValueError(
            "no split ops given: name at least one op to split at; to compile each graph "
            "whole, with no split, pass the backend uncalled: "
            "torch.compile(model, backend=stitchgen.backend)"
        )
    wanted = SplitOps(ops)  # a bad op fails now, not at the first graph
    chosen = _checked(options)

    def compile_graph(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        pieces, matched = partition(gm, wanted)
        if not matched and strict:
            message = unmatched_message(wanted.given, gm)
            raise CodegenError(message + " (strict=True: every graph must call a split op)")
        split = split_at(gm, pieces)  # no split op: one piece
        submods: dict[str, Callable[..., Any]] = {}
        if compile_piece is not None:
            for name, piece in split.named_children():
                assert isinstance(piece, fx.GraphModule)  # split_module's pieces are
                submods[name] = compile_piece(piece, _example_inputs(piece, name))
        return compile_with(split, submods, chosen)

    return compile_graph


#: what ``torch.compile(..., options=...)`` may name: :func:`backend`'s own
#: arguments; anything else is one of :class:`stitchgen.Options`, or refused
_ARGUMENTS = ("split_ops", "compile_piece", "strict")


def _as_backend(
    gm: fx.GraphModule, example_inputs: Any, strict: bool, given: dict[str, Any]
) -> Callable[..., Any]:
    """``backend`` as torch calls it: ``(gm, example_inputs, mode=, options=)``."""
    mode = given.pop("mode", None)
    chosen = given.pop("options", None) or {}
    if given or strict:
        unknown = ", ".join(sorted(given)) or "strict"
        raise TypeError(
            f"stitchgen.backend called with a graph takes mode= and options= (as torch.compile "
            f"passes them), not {unknown}"
        )
    if mode not in (None, "default"):
        raise TypeError(
            f"stitchgen.backend takes no torch.compile mode ({mode!r}); its choices are "
            "options=, e.g. options={'split_ops': ['myns::attention']}"
        )
    if not isinstance(chosen, dict):
        raise TypeError(f"torch.compile options= is a dict, not {type(chosen).__name__}")
    arguments = {k: chosen.pop(k) for k in _ARGUMENTS if k in chosen}
    try:
        if arguments:
            compile_graph = backend(**{"split_ops": (), **arguments}, **chosen)
        else:  # the whole graph, one function
            return compile_with(gm, {}, _checked(chosen))
    except TypeError as error:  # an unknown option: said as torch.compile's
        raise TypeError(f"torch.compile(backend=stitchgen.backend, options=...): {error}") from None
    return compile_graph(gm, example_inputs)

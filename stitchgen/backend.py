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
from .generate import compile
from .split import SplitOp, split_graph

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


def backend(
    split_ops: Iterable[SplitOp],
    compile_piece: PieceCompiler | None = None,
    **generate_options: Any,
) -> Callable[[fx.GraphModule, Sequence[Any]], Callable[..., Any]]:
    """A ``torch.compile`` backend that splits at ``split_ops`` and stitches
    the pieces with generated code (``generate_options`` go to
    :func:`stitchgen.generate`, e.g. ``templates="profiled"``).

    >>> import torch, stitchgen
    >>> fn = torch.compile(lambda x: torch.relu(x) * 2, backend=stitchgen.backend([torch.relu]))
    >>> fn(torch.tensor([-1.0, 2.0]))
    tensor([0., 4.])
    """
    ops = list(split_ops)

    def compile_graph(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        split = split_graph(gm, ops)
        submods: dict[str, Callable[..., Any]] = {}
        if compile_piece is not None:
            for name, piece in split.named_children():
                submods[name] = compile_piece(piece, _example_inputs(piece, name))
        return compile(split, submods, **generate_options)

    return compile_graph

"""What differs between the torch releases stitchgen supports (2.11 to 2.15),
in one room.

Each difference is decided by what the installed torch offers (a
signature, an attribute), never by comparing version strings, and each
names the release that changed it. The stages call the helpers here; none
of them asks which torch it runs on.

Handled here:

- **torch 2.12** added ``split_module(..., tuple_return=True)`` (pytorch PR
  #179007): every piece returns a tuple, even of one value, and the
  stitching graph takes each value out with ``getitem``. Before it, a piece
  with one output returns the bare value and the stitching graph uses the
  call's result itself. :func:`split_tupled` gives the 2.12 graph on every
  release: node for node, name for name, so the generated code is
  byte-identical.
- **torch 2.12** gave DTensor's placements (``Shard``, ``Replicate``,
  ``Partial``) an ``__fx_repr__``, the source form an artifact stores them
  by (:mod:`stitchgen.portable`). Before it, :func:`fx_repr` writes the
  same text, so an artifact reads back in a fresh process on every release.
- **torch 2.14** renamed opaque object types: a "reference" type (state,
  always a graph input) is a "symbolic" one, and
  ``is_opaque_reference_type`` logs a deprecation warning on every call.
  :func:`is_opaque_reference_type` is the check this torch names without
  a warning.

Read, and needing nothing (the suite, run on every release, covers each):

- **torch 2.12** builds ``split_module``'s modules with
  ``_make_graph_module``: ``_LazyGraphModule`` under
  ``_use_lazy_graph_module(True)`` (Dynamo's default; vLLM wraps its split
  in it). The lowering reads ``.graph``, which a lazy module has before it
  compiles its code, and calls a lazy piece like any other module.
- **torch 2.14**: ``OpOverload.__call__`` does more than call ``self._op``
  (PyObject dispatch for custom ops). The generated code calls the
  ``OpOverload`` itself, never its ``_op``, so it does what the graph does.
- **torch 2.9 - 2.12** grew ``Graph.python_code``'s and ``CodeGen``'s keyword
  arguments, and 2.9 changed ``_get_qualified_name`` for some ``torch.Tensor``
  methods: stitchgen calls neither (names are resolved by
  :mod:`stitchgen.lowering`, code written by our templates).
"""

from __future__ import annotations

import functools
import inspect
import operator
import sys
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx
from torch._library import opaque_object

__all__ = [
    "fx_repr",
    "is_opaque_reference_type",
    "split_returns_tuples",
    "split_tupled",
    "torch_version",
    "tuple_single_outputs",
]


def torch_version() -> str:
    """torch's release as everything stitchgen writes records it
    (artifacts, dumps, golden ``VERSIONS``): ``2.13.0`` for ``2.13.0+cpu``,
    the build tag not part of it."""
    return str(torch.__version__).split("+")[0]


#: Is this type an opaque reference type (torch 2.14+: "symbolic")? State,
#: never a constant. The old name only where the new one is missing (< 2.14).
is_opaque_reference_type: Callable[[Any], bool] = (
    getattr(opaque_object, "is_opaque_symbolic_type", None)
    or opaque_object.is_opaque_reference_type
)


def _split_module() -> Callable[..., fx.GraphModule]:
    from torch.fx.passes.split_module import split_module

    return split_module


@functools.cache
def split_returns_tuples() -> bool:
    """Does this torch's ``split_module`` take ``tuple_return`` (torch 2.12+)?"""
    return "tuple_return" in inspect.signature(_split_module()).parameters


def split_tupled(gm: fx.GraphModule, partition: Callable[[fx.Node], int]) -> fx.GraphModule:
    """``split_module(gm, None, partition, keep_original_order=True,
    tuple_return=True)`` on every torch: where ``tuple_return`` is missing
    (before 2.12), the split made without it, its one-output pieces then
    made to return 1-tuples (:func:`tuple_single_outputs`)."""
    root: fx.GraphModule = None  # type: ignore[assignment]  # only read for attributes
    split_module = _split_module()
    if split_returns_tuples():
        return split_module(gm, root, partition, keep_original_order=True, tuple_return=True)
    split = split_module(gm, root, partition, keep_original_order=True)
    tuple_single_outputs(split)
    return split


def tuple_single_outputs(split: fx.GraphModule) -> None:
    """Make ``split``'s pieces that return one bare value return it in a
    1-tuple, and its stitching graph take it out with ``getitem``, as
    ``split_module(tuple_return=True)`` does (torch 2.12+): the graph is
    rebuilt in order, so every node is named as that split names it
    (``getitem``, ``getitem_1``, ... counted over all pieces)."""
    graph = split.graph
    bare: dict[fx.Node, tuple[fx.GraphModule, fx.Node]] = {}  # call -> piece, its bare value
    for node in graph.find_nodes(op="call_module"):
        child = split.get_submodule(str(node.target))
        if isinstance(child, fx.GraphModule):
            value = child.graph.output_node().args[0]
            if isinstance(value, fx.Node):
                bare[node] = child, value
    if not bare:
        return
    rebuilt = fx.Graph(tracer_cls=graph._tracer_cls, tracer_extras=graph._tracer_extras)
    rebuilt._codegen = graph._codegen
    env: dict[fx.Node, fx.Node] = {}  # old node -> the new node its users read
    calls: dict[fx.Node, fx.Node] = {}  # old call -> its new call
    for node in graph.nodes:
        if node.target is operator.getitem and node.args[0] in calls:
            # an unpacking getitem: made afresh, so it is numbered in order
            env[node] = rebuilt.call_function(operator.getitem, (calls[node.args[0]], node.args[1]))
            continue
        new = rebuilt.node_copy(node, env.__getitem__)
        env[node] = new
        if node.op == "call_module":
            calls[node] = new
            if node in bare:
                env[node] = rebuilt.call_function(operator.getitem, (new, 0))
    for child, value in bare.values():
        child.graph.output_node().args = ((value,),)
        child.recompile()
    split.graph = rebuilt


def fx_repr(value: Any) -> tuple[str, dict[str, Any]] | None:
    """``type(value).__fx_repr__(value)`` — the source text that rebuilds
    ``value`` and the globals it names — or None where ``value`` has none.
    Before torch 2.12 DTensor's ``Shard``, ``Replicate`` and ``Partial`` had
    none: their text is written here as 2.12 writes it."""
    method: Any = getattr(type(value), "__fx_repr__", None)
    if method is not None:
        written: tuple[str, dict[str, Any]] = method(value)
        return written
    placements = sys.modules.get("torch.distributed.tensor.placement_types")
    if placements is None:  # a placement's own module is imported: this is none
        return None
    prefix = "torch.distributed.tensor.placement_types."
    kind = type(value)
    if kind is placements.Shard:
        return f"{prefix}Shard(dim={value.dim})", {}
    if kind is placements.Replicate:
        return f"{prefix}Replicate()", {}
    if kind is placements.Partial:
        return f"{prefix}Partial({value.reduce_op!r})", {}
    return None

"""Split a graph at given ops, the way vLLM's piecewise backend does."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
import torch.fx as fx
from torch.fx.passes.split_module import split_module

__all__ = ["matches_op", "split_graph"]

SplitOp = torch._ops.OpOverload | torch._ops.OpOverloadPacket | str


def _op_names(target: Any) -> tuple[str, str] | None:
    """``("aten::relu", "aten::relu.default")`` for an OpOverload target,
    ``("aten::relu", "aten::relu")`` for a packet, None otherwise."""
    if isinstance(target, torch._ops.OpOverload):
        packet = target._schema.name
        return packet, f"{packet}.{target._overloadname}"
    if isinstance(target, torch._ops.OpOverloadPacket):
        return target._qualified_op_name, target._qualified_op_name
    return None


def _normalize(op: SplitOp) -> str:
    if isinstance(op, str):
        if "::" not in op:
            raise ValueError(f"split op {op!r} must look like 'ns::op' or 'ns::op.overload'")
        return op
    names = _op_names(op)
    if names is None:
        raise TypeError(
            f"split ops are OpOverload, OpOverloadPacket or 'ns::op[.overload]' strings, "
            f"got {type(op).__name__}"
        )
    return names[1]


def matches_op(node: fx.Node, wanted: frozenset[str]) -> bool:
    """Does ``node`` call one of ``wanted`` (packet or overload names)?"""
    if node.op != "call_function":
        return False
    names = _op_names(node.target)
    return names is not None and (names[0] in wanted or names[1] in wanted)


def split_graph(gm: fx.GraphModule, split_ops: Iterable[SplitOp]) -> fx.GraphModule:
    """Split ``gm`` so each call to a split op sits alone in its own piece.

    Pieces are numbered in graph order and return tuples
    (``tuple_return=True``), so the stitching graph unpacks them with
    ``getitem``, as vLLM's piecewise backend does.

    >>> import torch, stitchgen
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> gm = make_fx(lambda x: torch.relu(x + 1) * 2)(torch.randn(3))
    >>> split = stitchgen.split_graph(gm, [torch.ops.aten.relu.default])
    >>> [name for name, _ in split.named_children()]
    ['submod_0', 'submod_1', 'submod_2']
    """
    if not isinstance(gm, fx.GraphModule):
        raise TypeError(f"split_graph expects a torch.fx.GraphModule, got {type(gm).__name__}")
    wanted = frozenset(_normalize(op) for op in split_ops)
    piece = 0
    pieces: dict[fx.Node, int] = {}
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if matches_op(node, wanted):
            piece += 1
            pieces[node] = piece
            piece += 1
        else:
            pieces[node] = piece
    return split_module(
        gm,
        None,
        lambda node: pieces[node],
        keep_original_order=True,
        tuple_return=True,
    )

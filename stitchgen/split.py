"""Split a graph at given ops, the way vLLM's piecewise backend does."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.fx as fx
from torch.fx.passes.split_module import split_module

from .errors import CodegenError
from .references import qualified_ref

__all__ = ["SplitOp", "split_graph"]

#: an op (overload or packet), its name ("ns::op", "ns::op.overload"), or a
#: plain function matched by identity (Dynamo graphs call torch functions
#: such as ``torch.nn.functional.scaled_dot_product_attention`` directly)
SplitOp = torch._ops.OpOverload | torch._ops.OpOverloadPacket | str | Callable[..., Any]


def _op_names(target: Any) -> tuple[str, str] | None:
    """``("aten::relu", "aten::relu.default")`` for an OpOverload target,
    ``("aten::relu", "aten::relu")`` for a packet, None otherwise."""
    if isinstance(target, torch._ops.OpOverload):
        packet = target._schema.name
        return packet, f"{packet}.{target._overloadname}"
    if isinstance(target, torch._ops.OpOverloadPacket):
        return target._qualified_op_name, target._qualified_op_name
    return None


class _Wanted:
    """The split ops: op names, and plain functions by identity."""

    def __init__(self, ops: Iterable[SplitOp]) -> None:
        self.packets: set[str] = set()  # every op wanted, by packet name
        self.whole: set[str] = set()  # packets wanted whole
        self.overloads: set[str] = set()  # overloads wanted one by one
        self.functions: list[Any] = []
        self.given: list[Any] = []  # every op, as given, in order
        for op in ops:
            self.given.append(op)
            if isinstance(op, str):
                if "::" not in op:
                    raise ValueError(
                        f"split op {op!r} must look like 'ns::op' or 'ns::op.overload'"
                    )
                packet, dot, _ = op.partition(".")
                self.packets.add(packet)
                (self.overloads if dot else self.whole).add(op)
            elif (names := _op_names(op)) is not None:
                self.packets.add(names[0])
                if isinstance(op, torch._ops.OpOverload):
                    self.overloads.add(names[1])
                else:
                    self.whole.add(names[0])
            elif callable(op):
                self.functions.append(op)
            else:
                raise TypeError(
                    "split ops are OpOverload, OpOverloadPacket, 'ns::op[.overload]' strings "
                    f"or functions, got {type(op).__name__}"
                )

    def __contains__(self, node: fx.Node) -> bool:
        if node.op != "call_function":
            return False
        names = _op_names(node.target)
        if names is None:
            return any(node.target is f for f in self.functions)
        packet, full = names
        if isinstance(node.target, torch._ops.OpOverloadPacket):
            # Dynamo graphs call packets: any wanted overload of it matches
            return packet in self.packets
        return full in self.overloads or packet in self.whole

    def unmatched(self, matched: list[fx.Node]) -> list[Any]:
        """The ops (as given) that none of ``matched`` calls."""
        alone = [(op, _Wanted([op])) for op in self.given]
        return [op for op, wanted in alone if not any(n in wanted for n in matched)]


def _op_label(op: Any) -> str:
    if isinstance(op, str):
        return repr(op)
    names = _op_names(op)
    if names is not None:
        return repr(names[1])
    ref = qualified_ref(op)
    if ref is not None:
        return f"{ref.module}.{ref.path}"
    return getattr(op, "__qualname__", None) or repr(op)


def _short_name(op: Any) -> str:
    """The bare op name a method call would use: ``baddbmm`` for
    ``torch.baddbmm``, ``"aten::baddbmm.default"`` or its overload."""
    if isinstance(op, str):
        return op.partition("::")[2].partition(".")[0]
    names = _op_names(op)
    if names is not None:
        return names[0].partition("::")[2]
    return getattr(op, "__name__", "")


def _unmatched_message(op: Any, gm: fx.GraphModule) -> str:
    message = f"split op {_op_label(op)} matches no call in the graph"
    short = _short_name(op)
    methods = [n.name for n in gm.graph.nodes if n.op == "call_method" and n.target == short]
    if methods:
        shown = ", ".join(repr(m) for m in methods[:3]) + (", ..." if len(methods) > 3 else "")
        message += (
            f"; the graph calls .{short}() as a method ({shown}): split ops match only "
            f"function calls (call_function nodes), so write torch.{short}(...) in the model "
            "or trace it with make_fx, which records the op itself"
        )
    return message


def split_graph(
    gm: fx.GraphModule, split_ops: Iterable[SplitOp], *, strict: bool = True
) -> fx.GraphModule:
    """Split ``gm`` so each call to a split op sits alone in its own piece.

    A split op given as a packet (or ``"ns::op"``) matches all its overloads;
    one given as an overload matches that overload, and calls of its packet
    (which is how Dynamo graphs call ops).

    Pieces are numbered in graph order and return tuples
    (``tuple_return=True``), so the stitching graph unpacks them with
    ``getitem``, as vLLM's piecewise backend does. A graph with a pytree
    calling convention (``make_fx`` over dicts, ``torch.export``) keeps it:
    the split graph takes and returns what ``gm`` does.

    A split op that matches no call in the graph is a
    :class:`stitchgen.CodegenError` naming it (the graph would silently stay
    in fewer pieces); with ``strict=False`` it is a :class:`UserWarning`
    instead (a list of alternatives, or Dynamo graphs between graph breaks).
    Only function calls match: a method call ``x.baddbmm(...)`` is not
    ``torch.baddbmm``, and the message says so when that is why.

    >>> import torch, stitchgen
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> gm = make_fx(lambda x: torch.relu(x + 1) * 2)(torch.randn(3))
    >>> split = stitchgen.split_graph(gm, [torch.ops.aten.relu.default])
    >>> [name for name, _ in split.named_children()]
    ['submod_0', 'submod_1', 'submod_2']
    """
    if not isinstance(gm, fx.GraphModule):
        raise TypeError(f"split_graph expects a torch.fx.GraphModule, got {type(gm).__name__}")
    wanted = _Wanted(split_ops)
    piece = 0
    pieces: dict[fx.Node, int] = {}
    matched: list[fx.Node] = []
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node in wanted:
            matched.append(node)
            piece += 1
            pieces[node] = piece
            piece += 1
        else:
            pieces[node] = piece
    for op in wanted.unmatched(matched):
        message = _unmatched_message(op, gm)
        if strict:
            raise CodegenError(message + " (pass strict=False to make this a warning)")
        warnings.warn(message, UserWarning, stacklevel=2)
    split = split_module(
        gm,
        None,  # type: ignore[arg-type]  # root_m: optional in practice (only read for attributes)
        lambda node: pieces[node],
        keep_original_order=True,
        tuple_return=True,
    )
    codegen = gm.graph._codegen
    if isinstance(codegen, fx.graph._PyTreeCodeGen):
        # split_module keeps the placeholders and the flat output, not the
        # pytree convention: give it back, so split(*args) is gm(*args)
        split.graph._codegen = fx.graph._PyTreeCodeGen(codegen.pytree_info)  # specs: immutable
        split.recompile()
    return split

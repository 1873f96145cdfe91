"""Split a graph at given ops, the way vLLM's piecewise backend does."""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.fx as fx

from .errors import CodegenError
from .lowering import qualified_ref
from .torch_versions import split_tupled

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


class SplitOps:
    """The split ops, checked: op names, and plain functions by identity
    (``split_graph``'s; ``backend`` builds them once, at construction)."""

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
        if not self.given:
            raise ValueError("no split ops given: name at least one op to split at")

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


def unmatched_message(ops: list[Any], gm: fx.GraphModule) -> str:
    """Why no piece was cut: the ops named, and those the graph calls as methods."""
    labels = ", ".join(_op_label(op) for op in ops)
    message = (
        f"split op {labels} matches no call in the graph"
        if len(ops) == 1
        else f"none of the split ops ({labels}) matches a call in the graph"
    )
    called = {}  # what the graph calls, as a split op would name it
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        names = _op_names(node.target)
        if names is not None:
            called[names[0]] = names[0]
            called[names[1]] = names[1]
        elif (ref := qualified_ref(node.target)) is not None:
            called[f"{ref.module}.{ref.path}"] = called[ref.path] = f"{ref.module}.{ref.path}"
    near = []
    for op in ops:
        given = op if isinstance(op, str) else _op_label(op).strip("'")
        for match in difflib.get_close_matches(given, called, n=1, cutoff=0.75):
            if called[match] not in near and match != given:
                near.append(called[match])
    if near:
        message += f"; did you mean {' or '.join(repr(n) for n in near)}?"
    methods: dict[str, list[str]] = {}
    for node in gm.graph.find_nodes(op="call_method"):
        methods.setdefault(str(node.target), []).append(node.name)
    for short in dict.fromkeys(_short_name(op) for op in ops):
        found = methods.get(short)
        if found:
            shown = ", ".join(repr(m) for m in found[:3]) + (", ..." if len(found) > 3 else "")
            message += (
                f"; the graph calls .{short}() as a method ({shown}): split ops match only "
                f"function calls (call_function nodes), so write torch.{short}(...) in the "
                "model or trace it with make_fx, which records the op itself"
            )
    return message


def partition(gm: fx.GraphModule, wanted: SplitOps) -> tuple[dict[fx.Node, int], list[fx.Node]]:
    """Each node's piece (every split-op call alone in its own) and the
    split-op calls found."""
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
    return pieces, matched


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

    ``split_ops`` are alternatives (vLLM's ``splitting_ops`` lists the
    attention ops of many model families; a model calls one or two): an op
    the graph does not call, or a name no library registered in this
    process, is fine as long as another one matched. When **none** matches,
    the graph would silently stay one piece: that is a
    :class:`stitchgen.CodegenError` naming the ops, or with ``strict=False``
    a :class:`UserWarning` and one piece. Only function calls match: a
    method call ``x.baddbmm(...)`` is not ``torch.baddbmm``, and the message
    says so when that is why.

    >>> import torch, stitchgen
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> gm = make_fx(lambda x: torch.relu(x + 1) * 2)(torch.randn(3))
    >>> split = stitchgen.split_graph(gm, [torch.ops.aten.relu.default])
    >>> [name for name, _ in split.named_children()]
    ['submod_0', 'submod_1', 'submod_2']
    """
    if not isinstance(gm, fx.GraphModule):
        raise TypeError(f"split_graph expects a torch.fx.GraphModule, got {type(gm).__name__}")
    wanted = SplitOps(split_ops)
    pieces, matched = partition(gm, wanted)
    if not matched:
        message = unmatched_message(wanted.given, gm)
        if strict:
            raise CodegenError(message + " (pass strict=False to make this a warning)")
        warnings.warn(message, UserWarning, stacklevel=2)
    return split_at(gm, pieces)


def split_at(gm: fx.GraphModule, pieces: dict[fx.Node, int]) -> fx.GraphModule:
    """``gm`` split into the pieces numbered by ``pieces`` (every node but
    the placeholders and the output)."""
    split = split_tupled(gm, lambda node: pieces[node])
    codegen = gm.graph._codegen
    if isinstance(codegen, fx.graph._PyTreeCodeGen):
        # split_module keeps the placeholders and the flat output, not the
        # pytree convention: give it back, so split(*args) is gm(*args)
        split.graph._codegen = fx.graph._PyTreeCodeGen(codegen.pytree_info)  # specs: immutable
        split.recompile()
    return split

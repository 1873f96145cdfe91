"""A hypothesis strategy for random valid stitching graphs.

A graph is a random DAG over a pool of values: pieces (inlined GraphModules
or opaque modules) returning tuples that the graph unpacks with getitem
(int and negative indices) or one bare value that the graph uses as it is
(as ``split_module`` makes them without ``tuple_return``: torch < 2.12,
SGLang), call_function and call_method nodes, slices
(constant ones, and ones whose bounds are graph values), in-place ops,
values nobody uses, constants of every kind in the output (in nested
containers), zero-input graphs, and names that collide with builtins,
modules and our helpers. Every tensor value has shape (4,), so any op
applies to any pair of them; slices and other side values only reach the
output.
"""

from __future__ import annotations

import enum
import operator
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx
from hypothesis import strategies as st
from torch.fx._lazy_graph_module import _make_graph_module, _use_lazy_graph_module

NAMES = [
    "x", "y", "torch", "operator", "print", "len", "float", "inf", "nan", "bind",
    "execution_fn", "call_submod_0", "inlined_submod_0", "class", "getitem", "del",
]  # fmt: skip

SHAPE = (4,)


class Mode(enum.Enum):
    FAST = 1


def _piece(
    n_inputs: int, n_outputs: int, scales: list[float], bare: bool = False
) -> fx.GraphModule:
    """A piece: n tensor inputs -> a tuple of n_outputs tensors (``bare``:
    its one tensor, in no tuple)."""
    graph = fx.Graph()
    inputs = [graph.placeholder(f"in_{i}") for i in range(n_inputs)]
    total = inputs[0]
    for other in inputs[1:]:
        total = graph.call_function(torch.add, (total, other))
    outs = []
    for i in range(n_outputs):
        outs.append(graph.call_function(torch.mul, (total, scales[i % len(scales)])))
    graph.output(outs[0] if bare else tuple(outs))
    return fx.GraphModule({}, graph)


class Opaque(torch.nn.Module):
    """A piece compiled elsewhere: not a GraphModule, so called through a binding."""

    def __init__(self, inner: fx.GraphModule) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, *args: Any) -> Any:
        return self.inner(*args)


CONSTANTS = st.sampled_from(
    [
        None, True, 0, -3, 2**65, 1.5, -0.0, float("inf"), float("-inf"), float("nan"),
        complex(0.0, -0.0), "", "it's \"x\"\n", "'''", b"\x00'", Ellipsis,
        torch.float16, torch.strided, torch.channels_last, torch.device("cpu"),
        operator.add, Mode.FAST, torch.Tensor,
    ]
)  # fmt: skip


@dataclass
class Drawn:
    gm: fx.GraphModule
    inputs: tuple[torch.Tensor, ...]

    def fresh_inputs(self) -> tuple[torch.Tensor, ...]:
        return tuple(t.clone() for t in self.inputs)


@st.composite
def stitching_graphs(draw: st.DrawFn) -> Drawn:
    graph = fx.Graph()
    root: dict[str, Any] = {}
    n_inputs = draw(st.integers(0, 3))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=n_inputs, max_size=n_inputs))
    tensors: list[fx.Node] = [graph.placeholder(name) for name in names]
    own: list[fx.Node] = []  # values made here (safe to update in place)
    if not tensors:
        base = graph.call_function(torch.ones, (SHAPE,))
        tensors.append(base)
        own.append(base)
    side: list[fx.Node] = []  # non-(4,) values: only for the output
    for step in range(draw(st.integers(1, 8))):
        kinds = ["piece", "piece", "function", "method", "slice", "value_slice", "inplace"]
        kind = draw(st.sampled_from(kinds))
        if kind == "piece":
            k = draw(st.integers(1, min(2, len(tensors))))
            args = draw(st.lists(st.sampled_from(tensors), min_size=k, max_size=k))
            n_out = draw(st.integers(1, 3))
            scales = draw(st.lists(st.sampled_from([0.5, 2.0, -1.0]), min_size=1, max_size=3))
            bare = n_out == 1 and draw(st.booleans())
            piece = _piece(k, n_out, scales, bare)
            name = f"submod_{step}"
            root[name] = piece if draw(st.booleans()) else Opaque(piece)
            out = graph.call_module(name, tuple(args))
            if bare:  # the call's result is the value
                tensors.append(out)
                own.append(out)
                continue
            for index in draw(st.lists(st.integers(-n_out, n_out - 1), max_size=n_out)):
                item = graph.call_function(operator.getitem, (out, index))
                tensors.append(item)
                own.append(item)
        elif kind == "function":
            a, b = draw(st.sampled_from(tensors)), draw(st.sampled_from(tensors))
            fn = draw(st.sampled_from([torch.add, torch.mul, torch.sub, operator.add]))
            node = graph.call_function(fn, (a, b))
            tensors.append(node)
            own.append(node)
        elif kind == "method":
            a = draw(st.sampled_from(tensors))
            method, args = draw(st.sampled_from([("neg", ()), ("mul", (3,)), ("clone", ())]))
            node = graph.call_method(method, (a, *args))
            tensors.append(node)
            own.append(node)
        elif kind == "slice":
            a = draw(st.sampled_from(tensors))
            index = draw(st.sampled_from([slice(1, None), slice(None, -1), (Ellipsis, 0), -1]))
            side.append(graph.call_function(operator.getitem, (a, index)))
        elif kind == "value_slice":  # x[1:n] with n a graph value: the slice is no constant
            a, b = draw(st.sampled_from(tensors)), draw(st.sampled_from(tensors))
            n = graph.call_method("size", (a, 0))  # read by the slice alone
            index = draw(
                st.sampled_from(
                    [slice(1, n), slice(None, n, 2), slice(n, None), (slice(0, n, None),)]
                )
            )
            side.append(graph.call_function(operator.getitem, (b, index)))
        elif own:
            target = draw(st.sampled_from(own))
            graph.call_method("add_", (target, 1.0))  # result unused; the update is not
    values = draw(st.lists(st.sampled_from(tensors + side), min_size=0, max_size=4))
    consts = draw(st.lists(CONSTANTS, max_size=3))
    output: Any = (*values, *consts)
    wrap = draw(st.sampled_from(["tuple", "list", "dict", "single"]))
    if wrap == "list":
        output = [list(output), ()]
    elif wrap == "dict":
        output = {"values": output, "n": len(output)}
    elif wrap == "single" and values:
        output = values[0]
    graph.output(output)
    with _use_lazy_graph_module(True):  # FX's own codegen may not spell these graphs
        gm = _make_graph_module(root, graph)
    seed = draw(st.integers(0, 2**16))
    gen = torch.Generator().manual_seed(seed)
    inputs = tuple(torch.randn(SHAPE, generator=gen) for _ in range(n_inputs))
    return Drawn(gm, inputs)

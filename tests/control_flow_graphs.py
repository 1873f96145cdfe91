"""A hypothesis strategy for random graphs with control flow: ``torch.cond``
and ``while_loop`` at random depths (a ``cond`` in a loop's body in a
branch...), and subgraphs called through ``invoke_subgraph``.

Every graph takes ``x`` and ``y`` (tensors of shape (4,)), two flags ``p0``
and ``p1`` (bool tensors, each ``cond``'s predicate is one of them) and a
count ``n`` (an int tensor, every loop runs ``n`` times), and hands them
down to each subgraph; after the control flow, what it handed back may be
written in place: :data:`PATHS` are the inputs that take every path —
each branch and none, one or two iterations of every loop.
"""

from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx
from hypothesis import strategies as st
from torch.fx._lazy_graph_module import _make_graph_module, _use_lazy_graph_module

HIGHER_ORDER = torch.ops.higher_order
#: the names of what every graph and subgraph takes after its values
CONTEXT = ("p0", "p1", "n")


@dataclass
class Drawn:
    gm: fx.GraphModule

    def paths(self, grad: bool = False) -> list[tuple[torch.Tensor, ...]]:
        """Inputs that take every path: each flag both ways, 0, 1 and 2
        iterations (``grad``: ``x`` and ``y`` requiring grad)."""
        x, y = torch.linspace(-1, 1, 4), torch.linspace(2, -2, 4)
        x, y = x.requires_grad_(grad), y.requires_grad_(grad)
        return [
            (x, y, torch.tensor(p0), torch.tensor(p1), torch.tensor(n))
            for p0, p1, n in itertools.product((True, False), (True, False), (0, 1, 2))
        ]


class _Builder:
    """One graph being drawn: its attributes (the subgraphs it reaches) and a
    counter naming them apart."""

    def __init__(self, draw: st.DrawFn, subgraphs: bool = True, loops: bool = True) -> None:
        self.draw = draw
        self.count = 0
        self.flows = ["cond", *(["while"] if loops else []), *(["subgraph"] if subgraphs else [])]

    def module(self, graph: fx.Graph, attrs: dict[str, Any]) -> fx.GraphModule:
        with _use_lazy_graph_module(True):
            return _make_graph_module(attrs, graph)

    def attr(self, graph: fx.Graph, attrs: dict[str, Any], kind: str, gm: Any) -> fx.Node:
        name = f"{kind}_{self.count}"
        self.count += 1
        attrs[name] = gm
        return graph.get_attr(name)

    def steps(
        self, graph: fx.Graph, attrs: dict[str, Any], pool: list[fx.Node],
        context: list[fx.Node], depth: int,
    ) -> None:  # fmt: skip
        """Random nodes appended to ``graph``, their values to ``pool``."""
        draw = self.draw
        kinds = ["op", "op"] + (self.flows if depth > 0 else [])
        for _ in range(draw(st.integers(1, 4))):
            kind = draw(st.sampled_from(kinds))
            if kind == "op":
                a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
                fn = draw(st.sampled_from([torch.add, torch.mul, torch.sub]))
                value = graph.call_function(fn, (a, b))
                if draw(st.booleans()):
                    value = graph.call_function(torch.sin, (value,))
                pool.append(value)
            elif kind == "cond":
                k, m = draw(st.integers(1, 2)), draw(st.integers(1, 2))
                operands = [draw(st.sampled_from(pool)) for _ in range(k)]
                arms = [self.attr(graph, attrs, "arm", self.sub(k, m, depth - 1)) for _ in "tf"]
                flag = context[draw(st.integers(0, 1))]
                node = graph.call_function(HIGHER_ORDER.cond, (flag, *arms, (*operands, *context)))
                for index in draw(st.lists(st.integers(0, m - 1), min_size=1, max_size=m)):
                    pool.append(graph.call_function(operator.getitem, (node, index)))
            elif kind == "while":
                start = graph.call_function(torch.zeros_like, (context[2],))
                test = self.attr(graph, attrs, "test", self.loop_test())
                body = self.attr(graph, attrs, "body", self.loop_body(depth - 1))
                carried = (start, draw(st.sampled_from(pool)))
                args = (
                    test,
                    body,
                    carried,
                    tuple(context),
                )  # (a list: the operator fails under grad)
                node = graph.call_function(HIGHER_ORDER.while_loop, args)
                pool.append(graph.call_function(operator.getitem, (node, 1)))
            else:  # a subgraph called through invoke_subgraph, once or twice
                sub = self.attr(graph, attrs, "subgraph", self.sub(1, 1, depth - 1))
                value = draw(st.sampled_from(pool))
                for _ in range(draw(st.integers(1, 2))):
                    args = (sub, "region", value, *context)
                    called = graph.call_function(HIGHER_ORDER.invoke_subgraph, args)
                    value = graph.call_function(operator.getitem, (called, 0))
                pool.append(value)

    def sub(self, k: int, m: int, depth: int) -> fx.GraphModule:
        """A subgraph: ``k`` values and the context in, a tuple of ``m`` out."""
        graph, attrs = fx.Graph(), {}
        pool = [graph.placeholder(f"v{i}") for i in range(k)]
        context = [graph.placeholder(name) for name in CONTEXT]
        self.steps(graph, attrs, pool, context, depth)
        graph.output(tuple(self.draw(st.sampled_from(pool)) for _ in range(m)))
        return self.module(graph, attrs)

    def loop_test(self) -> fx.GraphModule:
        graph = fx.Graph()
        i, _ = graph.placeholder("i"), graph.placeholder("v")
        context = [graph.placeholder(name) for name in CONTEXT]
        graph.output(graph.call_function(operator.lt, (i, context[2])))
        return self.module(graph, {})

    def loop_body(self, depth: int) -> fx.GraphModule:
        graph, attrs = fx.Graph(), {}
        i, v = graph.placeholder("i"), graph.placeholder("v")
        context = [graph.placeholder(name) for name in CONTEXT]
        pool = [v]
        self.steps(graph, attrs, pool, context, depth)
        step = graph.call_function(torch.add, (i, 1))
        graph.output((step, self.draw(st.sampled_from(pool))))
        return self.module(graph, attrs)


@st.composite
def control_flow_graphs(
    draw: st.DrawFn, depth: int = 3, writes: bool = True, subgraphs: bool = True, loops: bool = True
) -> Drawn:
    """A graph; ``writes``: with in-place ops after the control flow (which
    autograd refuses on what a tie or the operator hands back as a view);
    ``subgraphs``: with ``invoke_subgraph`` (whose backward run eagerly
    torch refuses); ``loops``: with ``while_loop``."""
    builder = _Builder(draw, subgraphs, loops)
    graph, attrs = fx.Graph(), {}
    pool = [graph.placeholder("x"), graph.placeholder("y")]
    context = [graph.placeholder(name) for name in CONTEXT]
    builder.steps(graph, attrs, pool, context, draw(st.integers(1, depth)))
    # in-place ops after the control flow, as Dynamo's graphs keep them: a
    # value the control flow hands back that is an input is written through
    results = [v for v in pool if v.op == "call_function" and v.target is operator.getitem]
    for value in draw(st.lists(st.sampled_from(results), max_size=2)) if results and writes else ():
        graph.call_method(draw(st.sampled_from(["add_", "mul_"])), (value, 2))
    outputs = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
    graph.output(tuple(outputs))
    return Drawn(builder.module(graph, attrs))

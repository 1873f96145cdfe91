"""The golden corpus: every graph shape stitchgen must handle.

Each case builds a stitching graph (``gm``), the inputs to call it with and
the children to call through bindings (``submods``). ``golden/<name>.py`` is
the black-formatted code that ``stitchgen.generate`` emits for it; the tests
compare against it and run the code against ``gm`` itself (the oracle).
``TEMPLATE_SETS`` adds ``golden/<set>/<name>.py`` for the shipped variants
and for an example downstream project (``tests/downstream/``). ``GOLDEN``,
the ``cases`` of this repository's ``[tool.stitchgen]``, names them all:
``stitchgen golden --update`` rewrites the files from it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.fx as fx
from torch.fx._lazy_graph_module import _make_graph_module, _use_lazy_graph_module

from stitchgen import Code, Templates
from stitchgen.demo import split_decoder
from stitchgen.literals import literal_source


@dataclass
class Case:
    gm: fx.GraphModule
    inputs: tuple[Any, ...]
    submods: dict[str, Callable[..., Any]] = field(default_factory=dict)
    #: FX cannot generate code for some valid graphs (constants it cannot
    #: spell, targets it cannot name); those run through fx.Interpreter.
    interpret: bool = False
    #: the templates its golden file is rendered with (None: the built-ins)
    templates: Templates | None = None

    def expected(self) -> Any:
        return self.reference(*self.inputs)

    @property
    def reference(self) -> Callable[..., Any]:
        """What the generated code must equal: the GraphModule (or its
        interpreter, for the graphs FX cannot write)."""
        return fx.Interpreter(self.gm).run if self.interpret else self.gm


CASES: dict[str, Callable[[str], Case]] = {}


def case(build: Callable[[str], Case]) -> Callable[[str], Case]:
    CASES[build.__name__] = build
    return build


@functools.cache
def shared_case(name: str) -> Case:
    """``CASES[name]("cpu")``, built once per process and shared (make_fx
    and Dynamo captures are most of a test's time): for tests that only
    read the graph (lower, generate, render), never run or change it."""
    return CASES[name]("cpu")


def graph_module(
    root: dict[str, Any], build: Callable[[fx.Graph], Any], lazy: bool = False
) -> fx.GraphModule:
    """``lazy``: do not run FX's own code generation (for graphs it cannot spell)."""
    graph = fx.Graph()
    graph.output(build(graph))
    with _use_lazy_graph_module(lazy):
        return _make_graph_module(root, graph)


def tuple_piece(build: Callable[[fx.Graph], tuple[Any, ...]], root: dict | None = None):
    """A child GraphModule returning a tuple, as split_module(tuple_return=True) makes."""
    return graph_module(root or {}, build)


# -- real graphs -------------------------------------------------------------


@case
def decoder_1_layer(device: str) -> Case:
    gm, inputs = split_decoder(1, device=device)
    return Case(gm, inputs)


@case
def decoder_4_layers(device: str) -> Case:
    gm, inputs = split_decoder(4, device=device)
    return Case(gm, inputs)


@case
def decoder_opaque_pieces(device: str) -> Case:
    """Pieces already compiled elsewhere: every child called through a binding."""
    gm, inputs = split_decoder(2, device=device)
    return Case(gm, inputs, submods=dict(gm.named_children()))


class _DynamoModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)
        self.out = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).split(8, dim=-1)
        a = torch.ops.stitchgen_demo.attention(q, k, v)
        return self.out(a * x.shape[0]).relu()[: x.shape[0] - 1]


def capture_dynamo(model: torch.nn.Module, *args: Any) -> tuple[fx.GraphModule, list[Any]]:
    """The graph Dynamo hands a backend (dynamic shapes: SymInt placeholders),
    and real inputs for it (SymInts replaced by the values they stand for)."""
    captured: list[tuple[fx.GraphModule, list[Any]]] = []

    def backend(gm: fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        captured.append((gm, list(example_inputs)))
        return gm.forward

    torch._dynamo.reset()
    torch.compile(model, backend=backend, dynamic=True)(*args)
    gm, example = captured[0]
    real = [int(x.node.hint) if isinstance(x, torch.SymInt) else x for x in example]
    return gm, real


@case
def dynamo_dynamic_shapes(device: str) -> Case:
    torch.manual_seed(0)
    model = _DynamoModel().to(device)
    gm, inputs = capture_dynamo(model, torch.randn(5, 8, device=device))
    from stitchgen import split_graph

    return Case(split_graph(gm, ["stitchgen_demo::attention"]), tuple(inputs))


class SmallCNN(torch.nn.Module):
    """A torchvision-free CNN of our own."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


@case
def cnn_split_at_pooling(device: str) -> Case:
    """Dynamo's graph of a CNN, split at a plain function (F.max_pool2d)."""
    torch.manual_seed(0)
    model = SmallCNN().to(device)
    gm, inputs = capture_dynamo(model, torch.randn(2, 3, 16, 16, device=device))
    from stitchgen import split_graph

    return Case(split_graph(gm, [torch.nn.functional.max_pool2d]), tuple(inputs))


# -- hand-built stitching graphs ---------------------------------------------


@case
def getitem_indices(device: str) -> Case:
    """int, negative, slice, tuples of slices/None/Ellipsis, and a slice whose
    bound is computed in the graph."""

    def build(g: fx.Graph) -> Any:
        x, n = g.placeholder("x"), g.placeholder("n")
        stop = g.call_function(operator.add, (n, 1))
        return (
            g.call_function(operator.getitem, (x, 0)),
            g.call_function(operator.getitem, (x, -1)),
            g.call_function(operator.getitem, (x, slice(1, None))),
            g.call_function(operator.getitem, (x, (Ellipsis, slice(None, 2, None)))),
            g.call_function(operator.getitem, (x, (None, slice(None, None, 2), 1))),
            g.call_function(operator.getitem, (x, slice(None, stop))),
            g.call_function(operator.getitem, (x, (slice(-2, None), slice(None, None, n)))),
            g.call_function(operator.getitem, (x, ())),
        )

    return Case(graph_module({}, build), (torch.randn(4, 5, device=device), 2))


@case
def moe_piece(device: str) -> Case:
    """An inlined piece ending in ``x[..., :H]`` (as MoE layers pad, then cut)."""
    hidden = 6

    def piece(g: fx.Graph) -> Any:
        x = g.placeholder("hidden_states")
        padded = g.call_function(torch.nn.functional.pad, (x, (0, 2)))
        routed = g.call_function(torch.ops.aten.mul.Tensor, (padded, 2.0))
        return (g.call_function(operator.getitem, (routed, (Ellipsis, slice(None, hidden, None)))),)

    def root(g: fx.Graph) -> Any:
        out = g.call_module("submod_0", (g.placeholder("x"),))
        return g.call_function(operator.getitem, (out, 0))

    gm = graph_module({"submod_0": tuple_piece(piece)}, root)
    return Case(gm, (torch.randn(3, hidden, device=device),))


@case
def symint_between_pieces(device: str) -> Case:
    """A piece returns a tensor and an int; the stitching graph reshapes with it."""

    def piece(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        return (g.call_method("flatten", (x,)), g.call_method("size", (x, 0)))

    def root(g: fx.Graph) -> Any:
        out = g.call_module("submod_0", (g.placeholder("x"),))
        flat = g.call_function(operator.getitem, (out, 0))
        rows = g.call_function(operator.getitem, (out, 1))
        return g.call_method("reshape", (flat, (rows, -1)))

    gm = graph_module({"submod_0": tuple_piece(piece)}, root)
    return Case(gm, (torch.randn(3, 4, device=device),))


@case
def size_across_split(device: str) -> Case:
    """A torch.Size made in one piece, indexed in the stitching graph and used
    by the next piece."""

    def first(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        return (g.call_method("size", (x,)), g.call_function(torch.mul, (x, 2)))

    def second(g: fx.Graph) -> Any:
        y, shape = g.placeholder("y"), g.placeholder("shape")
        return (g.call_method("view", (g.call_method("flatten", (y,)), shape)),)

    def root(g: fx.Graph) -> Any:
        out = g.call_module("submod_0", (g.placeholder("x"),))
        shape = g.call_function(operator.getitem, (out, 0))
        y = g.call_function(operator.getitem, (out, 1))
        view = g.call_function(operator.getitem, (g.call_module("submod_1", (y, shape)), 0))
        return (view, shape, g.call_function(operator.getitem, (shape, -1)))

    root_mod = {"submod_0": tuple_piece(first), "submod_1": tuple_piece(second)}
    return Case(graph_module(root_mod, root), (torch.randn(2, 3, device=device),))


@case
def no_call_module(device: str) -> Case:
    """No pieces at all; a placeholder returned unchanged."""
    gm = fx.symbolic_trace(lambda x, y: (x, y + 1, torch.relu(y)))
    return Case(gm, (torch.randn(3, device=device), torch.randn(3, device=device)))


@case
def zero_inputs(device: str) -> Case:
    def build(g: fx.Graph) -> Any:
        ones = g.call_function(torch.ones, (2, 3), {"device": torch.device(device)})
        return g.call_function(torch.cumsum, (ones,), {"dim": 1})

    return Case(graph_module({}, build), ())


@case
def constants(device: str) -> Case:
    """Every constant kind, in arguments and in the output."""

    class Color(enum.Enum):  # not importable: lifted
        RED = 1

    table = torch.arange(4.0, device=device)
    hostile = "it's \"quoted\"\n''' \\ __import__('os').system('echo pwned') #"

    def build(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        full = g.call_function(
            torch.full,
            ((2, 2), float("inf")),
            {
                "dtype": torch.float32,
                "device": torch.device(device),
                "layout": torch.strided,
            },
        )
        contiguous = g.call_method("contiguous", (x,), {"memory_format": torch.contiguous_format})
        shaped = g.call_function(torch.reshape, (contiguous, torch.Size([2, 2])))
        added = g.call_function(torch.add, (shaped, table.view(2, 2)))
        return (
            full,
            added,
            (float("nan"), -float("inf"), -0.0, 1e300, 2 - 3j, complex(float("inf"), 1)),
            (b"\x00'\"\n", hostile, "", Ellipsis, None, True, 2**70, -5),
            [torch.float16, torch.sparse_coo, torch.channels_last],
            {"enum": re.IGNORECASE, "kind": inspect.Parameter.POSITIONAL_ONLY},
            {"local_enum": Color.RED, "class": torch.Tensor, "device": torch.device(device)},
            {"size": torch.Size([3, 1]), "table": table},
        )

    gm = graph_module({}, build, lazy=True)
    return Case(gm, (torch.randn(4, device=device),), interpret=True)


@case
def get_attr_bindings(device: str) -> Case:
    """Parameters, buffers and tensor constants, in the root and in a child."""

    def piece(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        scale = g.get_attr("scale")
        return (g.call_function(torch.mul, (x, scale)),)

    def root(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        w = g.get_attr("linear.weight")
        b = g.get_attr("running_mean")
        c = g.get_attr("_tensor_constant0")
        n = g.get_attr("n_heads")
        y = g.call_function(torch.nn.functional.linear, (x, w, b))
        z = g.call_function(operator.getitem, (g.call_module("submod_0", (y,)), 0))
        return g.call_function(torch.add, (z, c), {"alpha": n})

    linear = torch.nn.Linear(3, 3, bias=False).to(device)
    module = torch.nn.Module()
    module.linear = linear
    module.register_buffer("running_mean", torch.randn(3, device=device))
    module._tensor_constant0 = torch.randn(3, device=device)
    module.n_heads = 2
    child = tuple_piece(piece, {"scale": torch.full((3,), 0.5, device=device)})
    module.submod_0 = child
    gm = fx.GraphModule(module, _graph_of(root))
    return Case(gm, (torch.randn(2, 3, device=device),))


def _graph_of(build: Callable[[fx.Graph], Any]) -> fx.Graph:
    graph = fx.Graph()
    graph.output(build(graph))
    return graph


@case
def call_method_and_kwargs(device: str) -> Case:
    """call_method with kwargs, and kwargs into an inlined piece."""

    def piece(g: fx.Graph) -> Any:
        x, scale = g.placeholder("x"), g.placeholder("scale")
        return (g.call_function(torch.mul, (x, scale)),)

    def root(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        total = g.call_method("sum", (x,), {"dim": 1, "keepdim": True})
        as_double = g.call_method("to", (total,), {"dtype": torch.float64})
        out = g.call_module("submod_0", (), {"x": as_double, "scale": 3})
        return g.call_function(operator.getitem, (out, 0))

    gm = graph_module({"submod_0": tuple_piece(piece)}, root)
    return Case(gm, (torch.randn(2, 3, device=device),))


@case
def nested_output(device: str) -> Case:
    def build(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        y = g.call_function(torch.neg, (x,))
        return {"a": [x, (y, None)], "b": 3, "c": {"d": [y, 1.5, "s"]}, "e": ()}

    return Case(graph_module({}, build), (torch.randn(2, device=device),))


@case
def non_importable_targets(device: str) -> Case:
    """Local functions, lambdas, partials and C functions with odd modules."""

    def local_add(a: Any, b: Any) -> Any:
        return a + b

    def build(g: fx.Graph) -> Any:
        x, n = g.placeholder("x"), g.placeholder("n")
        a = g.call_function(local_add, (x, 1))
        b = g.call_function(lambda t: t - 1, (a,))
        partial = functools.partial(torch.add, alpha=3)
        c = g.create_node("call_function", partial, (b, x), name="add_partial")
        d = g.call_function(operator.add, (n, 2))
        e = g.call_function(math.sqrt, (d,))
        f = g.call_function(len, ((x, a),))
        return (c, e, f)

    gm = graph_module({}, build, lazy=True)
    return Case(gm, (torch.randn(3, device=device), 7), interpret=True)


class Scale(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 3


@case
def nested_children(device: str) -> Case:
    """An inlined piece that inlines a grandchild GraphModule and calls an
    opaque nn.Module grandchild; an opaque child; a hooked GraphModule child."""

    def grandchild(g: fx.Graph) -> Any:
        return (g.call_function(torch.sin, (g.placeholder("x"),)),)

    def child(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        inner = g.call_function(operator.getitem, (g.call_module("inner", (x,)), 0))
        return (g.call_module("scale", (inner,)),)

    def hooked(g: fx.Graph) -> Any:
        return (g.call_function(torch.cos, (g.placeholder("x"),)),)

    def root(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        a = g.call_function(operator.getitem, (g.call_module("submod_0", (x,)), 0))
        b = g.call_module("linear", (a,))
        c = g.call_function(operator.getitem, (g.call_module("submod_1", (b,)), 0))
        again = g.call_function(operator.getitem, (g.call_module("submod_0", (c,)), 0))
        return again

    torch.manual_seed(0)
    hooked_gm = tuple_piece(hooked)
    hooked_gm.register_forward_hook(lambda mod, args, out: (out[0] + 1,))
    root_mod = {
        "submod_0": tuple_piece(child, {"inner": tuple_piece(grandchild), "scale": Scale()}),
        "linear": torch.nn.Linear(4, 4).to(device),
        "submod_1": hooked_gm,
    }
    return Case(graph_module(root_mod, root), (torch.randn(2, 4, device=device),))


@case
def name_collisions(device: str) -> Case:
    """Placeholders named like modules, builtins, keywords' neighbours and our
    own helpers; a node named like a binding."""

    def piece(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        return (g.call_function(torch.ops.aten.add.Tensor, (x, 1)),)

    def root(g: fx.Graph) -> Any:
        names = ["torch", "operator", "print", "inf", "float", "bind", "call_submod_1"]
        ph = [g.placeholder(n) for n in names]
        out = g.call_module("submod_0", (ph[0],))
        first = g.call_function(operator.getitem, (out, 0))
        second = g.call_function(operator.getitem, (g.call_module("submod_1", (ph[1],)), 0))
        return (first, second, ph[2], ph[3], ph[4], ph[5], ph[6])

    root_mod = {"submod_0": tuple_piece(piece), "submod_1": tuple_piece(piece)}
    gm = graph_module(root_mod, root)
    for node in gm.graph.nodes:  # FX renames these; an adversarial graph need not
        if node.op == "call_module":
            node.name = {"submod_0": "execution_fn", "submod_1": "inlined_submod_0"}[node.target]
    gm.recompile()
    inputs = tuple(torch.full((2,), float(i), device=device) for i in range(7))
    return Case(gm, inputs, submods={"submod_1": gm.submod_1})


@case
def unused_and_inplace(device: str) -> Case:
    """Unused values still computed; an in-place op keeps its order."""

    def build(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        g.placeholder("unused_input")
        y = g.call_function(torch.mul, (x, 2))
        g.call_function(torch.sin, (x,))
        g.call_method("add_", (y, 1))
        z = g.call_function(torch.mul, (y, 10))
        g.call_method("mul_", (y, 0))
        return (y, z)

    return Case(graph_module({}, build), (torch.randn(3, device=device), torch.ones(1)))


@case
def dict_and_list_arguments(device: str) -> Case:
    def build(g: fx.Graph) -> Any:
        x, y = g.placeholder("x"), g.placeholder("y")
        cat = g.call_function(torch.cat, ([x, y],), {"dim": 0})
        stacked = g.call_function(torch.stack, ((x, y),))
        kw = g.call_function(dict, (), {"first": cat, "nested": {"y": [y, stacked]}})
        return g.call_function(operator.getitem, (kw, "nested"))

    inputs = (torch.randn(2, device=device), torch.randn(2, device=device))
    return Case(graph_module({}, build), inputs)


# -- control flow: higher-order operators lowered as code ----------------------
# built by hand, as the specimens are, so the code is the same on every torch


HIGHER_ORDER = torch.ops.higher_order


@functools.cache
def loops_run_under_grad() -> bool:
    """Does this torch's ``while_loop`` run eagerly under grad on a graph
    without FX metadata (:func:`while_loop_counter`'s), the oracle's side of
    a gradient test? (torch 2.13 does; 2.11 asks each node for its
    ``example_value``: KeyError.)"""
    case = while_loop_counter("cpu")
    x, n = case.inputs
    try:
        case.gm(x.clone().requires_grad_(), n)
    except (KeyError, RuntimeError):
        return False
    return True


def _unary(op: Callable[..., Any], *more: Callable[..., Any]) -> fx.GraphModule:
    """A subgraph ``(a, b) -> (op(a) + b, ...)``: one output per op."""

    def build(g: fx.Graph) -> Any:
        a, b = g.placeholder("a"), g.placeholder("b")
        return tuple(g.call_function(torch.add, (g.call_function(f, (a,)), b)) for f in (op, *more))

    return graph_module({}, build)


def _cond(g: fx.Graph, pred: Any, arms: tuple[str, str], operands: tuple[Any, ...]) -> Any:
    true_fn, false_fn = (g.get_attr(name) for name in arms)
    return g.call_function(HIGHER_ORDER.cond, (pred, true_fn, false_fn, operands))


def _positive(g: fx.Graph, x: Any) -> Any:
    return g.call_function(operator.gt, (g.call_function(torch.sum, (x,)), 0))


@case
def cond_branches(device: str) -> Case:
    """``torch.cond`` with two outputs, both read; a name the branches'
    nodes share with the graph's (``add``)."""

    def build(g: fx.Graph) -> Any:
        x, y = g.placeholder("x"), g.placeholder("y")
        add = g.call_function(torch.add, (x, y))
        picked = _cond(g, _positive(g, x), ("true_graph_0", "false_graph_0"), (add, y))
        first = g.call_function(operator.getitem, (picked, 0))
        second = g.call_function(operator.getitem, (picked, 1))
        return (g.call_function(torch.mul, (first, second)),)

    root = {
        "true_graph_0": _unary(torch.sin, torch.cos),
        "false_graph_0": _unary(torch.neg, torch.exp),
    }
    inputs = (torch.randn(4, device=device), torch.randn(4, device=device))
    return Case(graph_module(root, build), inputs)


@case
def nested_cond(device: str) -> Case:
    """A ``cond`` in a branch of a ``cond``, inside an inlined piece; the
    outer predicate a Python bool, the inner one a one-element tensor."""

    def inner_arm(g: fx.Graph) -> Any:
        a, b = g.placeholder("a"), g.placeholder("b")
        inner = _cond(g, _positive(g, b), ("true_graph_0", "false_graph_0"), (a, b))
        return (g.call_function(torch.mul, (g.call_function(operator.getitem, (inner, 0)), 2)),)

    def piece(g: fx.Graph) -> Any:
        x, flag = g.placeholder("x"), g.placeholder("flag")
        picked = _cond(g, flag, ("true_graph_0", "false_graph_0"), (x, x))
        return (g.call_function(operator.getitem, (picked, 0)),)

    outer_true = graph_module(
        {"true_graph_0": _unary(torch.sin), "false_graph_0": _unary(torch.cos)}, inner_arm
    )
    piece_gm = tuple_piece(piece, {"true_graph_0": outer_true, "false_graph_0": _unary(torch.neg)})

    def root(g: fx.Graph) -> Any:
        x, flag = g.placeholder("x"), g.placeholder("flag")
        out = g.call_module("submod_0", (x, flag))
        return g.call_function(operator.getitem, (out, 0))

    gm = graph_module({"submod_0": piece_gm}, root)
    return Case(gm, (torch.randn(4, device=device), True))


@case
def while_loop_counter(device: str) -> Case:
    """``while_loop``: a counter and a value carried, an additional input,
    and a carried value the body passes through unchanged."""

    def test(g: fx.Graph) -> Any:
        i, _, _, limit = (g.placeholder(n) for n in ("i", "v", "w", "limit"))
        return g.call_function(operator.lt, (i, limit))

    def step(g: fx.Graph) -> Any:
        i, v, w, limit = (g.placeholder(n) for n in ("i", "v", "w", "limit"))
        add = g.call_function(torch.add, (i, 1))
        return (add, g.call_function(torch.mul, (g.call_function(torch.sin, (v,)), 2)), w)

    def build(g: fx.Graph) -> Any:
        x, n = g.placeholder("x"), g.placeholder("n")
        start = g.call_function(torch.zeros_like, (n,))
        parts = (g.get_attr("cond_graph_0"), g.get_attr("body_graph_0"))
        looped = g.call_function(HIGHER_ORDER.while_loop, (*parts, (start, x, x), (n,)))
        count = g.call_function(operator.getitem, (looped, 0))
        value = g.call_function(operator.getitem, (looped, 1))
        return (count, value)

    root = {"cond_graph_0": graph_module({}, test), "body_graph_0": graph_module({}, step)}
    inputs = (torch.randn(4, device=device), torch.tensor(3, device=device))
    return Case(graph_module(root, build), inputs)


@case
def invoke_subgraph_repeated(device: str) -> Case:
    """A ``nested_compile_region`` called three times (``invoke_subgraph``,
    one subgraph) and a ``wrap``: one function, called at every site."""

    def build(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        for _ in range(3):
            called = g.call_function(
                HIGHER_ORDER.invoke_subgraph, (g.get_attr("repeated_subgraph0"), "region", x, x)
            )
            x = g.call_function(operator.getitem, (called, 0))
        wrapped = g.call_function(HIGHER_ORDER.wrap, (g.get_attr("wrap_body_0"), x, x))
        return g.call_function(operator.getitem, (wrapped, 0))

    root = {"repeated_subgraph0": _unary(torch.tanh), "wrap_body_0": _unary(torch.sigmoid)}
    return Case(graph_module(root, build), (torch.randn(4, device=device),))


@case
def split_pieces_with_cond(device: str) -> Case:
    """A split graph (what vLLM's compat path takes) whose first piece holds
    a ``cond``; the piece between runs elsewhere (bound)."""

    def piece(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        picked = _cond(g, _positive(g, x), ("true_graph_0", "false_graph_0"), (x, x))
        return (g.call_function(operator.getitem, (picked, 0)), x)

    def last(g: fx.Graph) -> Any:
        a, b = g.placeholder("a"), g.placeholder("b")
        return (g.call_function(torch.mul, (a, b)),)

    arms = {"true_graph_0": _unary(torch.sin), "false_graph_0": _unary(torch.cos)}

    def root(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        first = g.call_module("submod_0", (x,))
        a = g.call_function(operator.getitem, (first, 0))
        b = g.call_function(operator.getitem, (first, 1))
        middle = g.call_module("submod_1", (a,))
        return g.call_function(operator.getitem, (g.call_module("submod_2", (middle, b)), 0))

    children = {
        "submod_0": tuple_piece(piece, arms),
        "submod_1": Scale(),
        "submod_2": tuple_piece(last),
    }
    gm = graph_module(children, root)
    return Case(gm, (torch.randn(4, device=device),), submods={"submod_1": gm.submod_1})


# -- exported programs, in ep.module()'s shape ---------------------------------
#
# Built by hand, as export's unlifted module is (its inputs flattened with
# the input spec, the state read by get_attr, export's checks a child
# called with the flat inputs, a mutated buffer written in place), so their
# code is the same on every torch; tests/test_exported.py runs real exports.

ATEN = torch.ops.aten


def _exported(
    root: torch.nn.Module,
    build: Callable[[fx.Graph], Any],
    names: list[str],
    example: tuple[Any, ...],
    checks: list[tuple[Any, str]],
) -> fx.GraphModule:
    """``ep.module()``'s shape: ``build``'s graph over ``root`` (its state
    and subgraphs) under the pytree calling convention (positional inputs
    ``names``, as ``example``), its checks (``(test, torch's text)``, each
    reading ``ir.ARGUMENT``s) an ``InputChecks`` child running them as
    Python, called first."""
    import torch.utils._pytree as pytree

    from stitchgen.exported import InputChecks
    from stitchgen.ir import Check

    def guards(*args: Any) -> None:
        for test, text in checks:
            assert _evaluated(test, args), f"Guard failed: {text}"

    made = tuple(Check(test, "AssertionError", f"Guard failed: {text}") for test, text in checks)
    root.add_module("_guards_fn", InputChecks(made, guards))
    graph = fx.Graph()
    graph.output(build(graph))  # a tuple, as export's graph returns its flat outputs
    out = graph.find_nodes(op="output")[0].args[0]
    outputs = pytree.tree_structure(out[0] if len(out) == 1 else out)  # one: a leaf
    info = fx.graph._PyTreeInfo(names, pytree.tree_structure((example, {})), outputs)
    graph._codegen = fx.graph._PyTreeCodeGen(info)
    return _make_graph_module(root, graph)


def _evaluated(expr: Any, args: tuple[Any, ...]) -> Any:
    """An input check's expression, evaluated on the flat inputs."""
    from stitchgen import ir

    if isinstance(expr, ir.Literal):
        return expr.value
    if isinstance(expr, ir.Name):
        return args[int(expr.id.rpartition("_")[2])]
    if isinstance(expr, ir.Size):
        return _evaluated(expr.value, args).size()[expr.dim]
    ops = {"==": operator.eq, "<=": operator.le, ">=": operator.ge, "*": operator.mul}
    return ops[expr.op](_evaluated(expr.left, args), _evaluated(expr.right, args))


def _size(i: int, dim: int) -> Any:
    from stitchgen import ir

    return ir.Size(ir.Name(ir.ARGUMENT.format(i)), dim)


def _compared(left: Any, op: str, right: Any) -> Any:
    from stitchgen import ir

    wrap = lambda v: v if isinstance(v, ir.Node) else ir.Literal(v)  # noqa: E731
    return ir.Compare(wrap(left), op, wrap(right))


def _aten(g: fx.Graph, name: str, target: Any, *args: Any) -> Any:
    """A call as export's graph has it: an aten overload, the node named as export names it."""
    return g.call_function(target, args, name=name)


def _linear_arm(g: fx.Graph) -> Any:
    """A branch reading a weight, a bias and a buffer (its operands)."""
    a, w, b, calls = (g.placeholder(n) for n in ("x", "lin_weight", "lin_bias", "calls"))
    linear = _aten(g, "linear", ATEN.linear.default, a, w, b)
    return (_aten(g, "add", ATEN.add.Tensor, linear, calls),)


@case
def exported_branches(device: str) -> Case:
    """An exported program whose ``cond`` reads the module's state: the
    true branch calls a linear layer (its weight and bias) and reads a
    buffer, the false one holds a nested ``cond`` reading the weight;
    export's checks (a dynamic dimension's bounds, static sizes, a
    relation between two inputs' dimensions), and a buffer the forward
    mutates (``calls += 1``)."""

    def inner_true(g: fx.Graph) -> Any:
        a, w = g.placeholder("x"), g.placeholder("lin_weight")
        return (_aten(g, "linear", ATEN.linear.default, a, w),)

    def inner_false(g: fx.Graph) -> Any:
        a, _ = g.placeholder("x"), g.placeholder("lin_weight")
        return (_aten(g, "mul", ATEN.mul.Tensor, a, 2),)

    def false_arm(g: fx.Graph) -> Any:
        a, w, _, calls = (g.placeholder(n) for n in ("x", "lin_weight", "lin_bias", "calls"))
        mean = _aten(g, "mean", ATEN.mean.default, a)
        pred = _aten(g, "gt", ATEN.gt.Scalar, mean, 0)
        inner = _cond(g, pred, ("true_graph_0", "false_graph_0"), (a, w))
        first = g.call_function(operator.getitem, (inner, 0), name="getitem")
        return (_aten(g, "sub", ATEN.sub.Tensor, first, calls),)

    def build(g: fx.Graph) -> Any:
        x, y = g.placeholder("x"), g.placeholder("y")
        weight, bias, calls = (g.get_attr(n) for n in ("lin.weight", "lin.bias", "calls"))
        g.call_module("_guards_fn", (x, y))
        _aten(g, "add_", ATEN.add_.Tensor, calls, 1)
        pred = _aten(g, "gt", ATEN.gt.Scalar, _aten(g, "sum_1", ATEN.sum.default, x), 0)
        picked = _cond(g, pred, ("true_graph_0", "false_graph_0"), (x, weight, bias, calls))
        value = g.call_function(operator.getitem, (picked, 0), name="getitem")
        summed = _aten(g, "sum_2", ATEN.sum.dim_IntList, y, [0])
        return (_aten(g, "add", ATEN.add.Tensor, value, summed),)

    arms = {"true_graph_0": inner_true, "false_graph_0": inner_false}
    inner = {name: graph_module({}, arm) for name, arm in arms.items()}
    root = torch.nn.Module()
    root.add_module("lin", torch.nn.Linear(4, 4, device=device))
    root.add_module("true_graph_0", graph_module({}, _linear_arm))
    root.add_module("false_graph_0", graph_module(inner, false_arm))
    root.register_buffer("calls", torch.zeros((), device=device))
    x, y = torch.randn(5, 4, device=device), torch.randn(10, 4, device=device)
    from stitchgen import ir

    twice = ir.BinOp(ir.Literal(2), "*", _size(0, 0))
    checks = [
        (_compared(_size(0, 0), ">=", 3), "x.size()[0] >= 3"),
        (_compared(_size(0, 0), "<=", 16), "x.size()[0] <= 16"),
        (_compared(_size(0, 1), "==", 4), "x.size()[1] == 4"),
        (_compared(_size(1, 1), "==", 4), "y.size()[1] == 4"),
        (_compared(twice, "==", _size(1, 0)), "2 * x.size()[0] == y.size()[0]"),
    ]
    return Case(_exported(root, build, ["x", "y"], (x, y), checks), (x, y))


@case
def exported_loop(device: str) -> Case:
    """An exported program whose ``while_loop`` body reads a (frozen)
    weight, an additional input read by get_attr; its static sizes checked."""

    def test(g: fx.Graph) -> Any:
        i, _, _, limit = (g.placeholder(n) for n in ("i", "v", "weight", "n"))
        return _aten(g, "lt", ATEN.lt.Tensor, i, limit)

    def step(g: fx.Graph) -> Any:
        i, v, w, _ = (g.placeholder(n) for n in ("i", "v", "weight", "n"))
        mm = _aten(g, "mm", ATEN.mm.default, v, w)
        return (_aten(g, "add", ATEN.add.Tensor, i, 1), _aten(g, "tanh", ATEN.tanh.default, mm))

    def build(g: fx.Graph) -> Any:
        n, x = g.placeholder("n"), g.placeholder("x")
        weight = g.get_attr("weight")
        g.call_module("_guards_fn", (n, x))
        start = _aten(g, "zeros_like", ATEN.zeros_like.default, n)
        parts = (g.get_attr("while_loop_cond_graph_0"), g.get_attr("while_loop_body_graph_0"))
        carried = (start, x)
        looped = g.call_function(
            HIGHER_ORDER.while_loop, (*parts, carried, (weight, n)), name="while_loop"
        )
        return (g.call_function(operator.getitem, (looped, 1), name="getitem_1"),)

    root = torch.nn.Module()
    root.add_module("while_loop_cond_graph_0", graph_module({}, test))
    root.add_module("while_loop_body_graph_0", graph_module({}, step))
    # a frozen weight: torch 2.11's while_loop cannot run a graph without FX
    # metadata under grad (see loops_run_under_grad), and this graph is the oracle
    root.register_buffer("weight", torch.randn(4, 4, device=device) / 4)
    n, x = torch.tensor(3, device=device), torch.randn(2, 4, device=device)
    checks = [
        (_compared(_size(1, 0), "==", 2), "x.size()[0] == 2"),
        (_compared(_size(1, 1), "==", 4), "x.size()[1] == 4"),
    ]
    return Case(_exported(root, build, ["n", "x"], (n, x), checks), (n, x))


# -- template sets -----------------------------------------------------------


def _label(node_name: str) -> Code:
    """The example project's filter: a label literal for its hook."""
    return Code(literal_source(f"piece:{node_name}"))


def downstream_templates() -> Templates:
    """An example downstream project: one directory of templates (a header
    and an import via ``super()``, a hook line before every piece call), one
    custom filter, and its own helper names."""
    return Templates(
        Path(__file__).parent / "downstream",
        filters={"label": _label},
        names={"binder": "make_forward", "submod": "piece_{path}"},
        reserve=["downstream_hooks"],
    )


TEMPLATE_SETS: dict[str, tuple[Callable[[], Templates], list[str]]] = {
    "profiled": (
        lambda: Templates(variant="profiled"),
        [
            "decoder_1_layer",
            "decoder_opaque_pieces",
            "nested_children",
            "no_call_module",
            "cond_branches",
            "nested_cond",
            "while_loop_counter",
            "invoke_subgraph_repeated",
            "exported_branches",
        ],
    ),
    "vllm": (
        lambda: Templates(variant="vllm"),
        [
            "decoder_1_layer",
            "decoder_opaque_pieces",
            "nested_children",
            "constants",
            "zero_inputs",
            "name_collisions",
            "cond_branches",
            "nested_cond",
            "while_loop_counter",
            "invoke_subgraph_repeated",
            "split_pieces_with_cond",
            "exported_branches",
        ],
    ),
    "downstream": (downstream_templates, ["decoder_1_layer", "nested_children"]),
}


def _golden_case(name: str, templates: Callable[[], Templates] | None = None) -> Callable[[], Case]:
    def build() -> Case:
        case = CASES[name]("cpu")
        return case if templates is None else dataclasses.replace(case, templates=templates())

    return build


#: golden file key (``name`` or ``set/name``) -> a function building its case
GOLDEN: dict[str, Callable[[], Case]] = {name: _golden_case(name) for name in CASES}
GOLDEN.update(
    (f"{set_name}/{name}", _golden_case(name, factory))
    for set_name, (factory, names) in TEMPLATE_SETS.items()
    for name in names
)

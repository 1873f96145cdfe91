"""Twin pieces (the same graph up to parameter names, as a decoder's layers
are) share one generated function; anything that tells them apart keeps
them apart. The GraphModule is the oracle."""

import operator

import torch
import torch.fx as fx
from builders import SHAPES
from oracle import assert_runs_same

import stitchgen
from stitchgen.lowering import fingerprint


def piece(scale, *, constant=None, name="a"):
    graph = fx.Graph()
    x = graph.placeholder(name)
    y = graph.call_function(torch.mul, (x, scale))
    if constant is not None:
        y = graph.call_function(torch.add, (y, graph.get_attr("table")))
    graph.output((y,))
    root = torch.nn.Module()
    if constant is not None:
        root.register_buffer("table", constant)
    return fx.GraphModule(root, graph)


def stitch(*pieces, keyword=None):
    graph = fx.Graph()
    value = graph.placeholder("x")
    root = {}
    for i, p in enumerate(pieces):
        root[f"submod_{i}"] = p
        if keyword and i % 2:
            out = graph.call_module(f"submod_{i}", (), {keyword(p): value})
        else:
            out = graph.call_module(f"submod_{i}", (value,))
        value = graph.call_function(operator.getitem, (out, 0))
    graph.output(value)
    return fx.GraphModule(root, graph)


def functions(gm):
    return [fn.name for fn in stitchgen.lower(gm).functions]


def test_twins_share_one_function_and_compute_the_same():
    gm = stitch(piece(2.0, name="a"), piece(2.0, name="b"), piece(2.0, name="c"))
    assert functions(gm) == ["inlined_submod_0", "execution_fn"]
    x = torch.randn(3)
    assert_runs_same(stitchgen.compile(gm), gm, (x,))


def test_different_constants_keep_pieces_apart():
    gm = stitch(piece(2.0), piece(3.0), piece(2.0), piece(2.0, constant=torch.ones(3)))
    assert functions(gm) == [
        "inlined_submod_0",
        "inlined_submod_1",
        "inlined_submod_3",
        "execution_fn",
    ]
    x = torch.randn(3)
    assert_runs_same(stitchgen.compile(gm), gm, (x,))


def test_distinct_objects_are_not_twins_even_when_equal():
    one, other = torch.ones(3), torch.ones(3)
    assert fingerprint(piece(2.0, constant=one)) != fingerprint(piece(2.0, constant=other))
    assert fingerprint(piece(2.0)) != fingerprint(piece(2))  # float and int differ
    assert fingerprint(piece(0.0)) != fingerprint(piece(-0.0))


def test_a_twin_called_by_keyword_gets_its_twins_keyword():
    pieces = [piece(2.0, name=f"p{i}") for i in range(4)]
    gm = stitch(*pieces, keyword=lambda p: next(iter(p.graph.nodes)).target)
    assert functions(gm) == ["inlined_submod_0", "execution_fn"]
    x = torch.randn(3)
    for inline in ("call", "flatten"):
        assert_runs_same(stitchgen.compile(gm, **SHAPES[inline]), gm, (x,))


def test_a_piece_that_calls_modules_is_never_a_twin():
    inner = stitch(piece(2.0))
    assert fingerprint(inner) is None

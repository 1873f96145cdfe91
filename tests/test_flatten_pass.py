"""The worked example of a pass of your own (examples/flatten_pass.py,
docs/templates.md): inlined pieces spliced into their callers, equal to
the GraphModule on the golden corpus."""

import ast
import operator

import pytest
import torch
import torch.fx as fx
from flatten_pass import splice_inlined
from golden_cases import CASES
from oracle import assert_runs_same, assert_same

import stitchgen

FLATTEN = {"passes": [splice_inlined]}


@pytest.mark.parametrize("name", sorted(CASES))
def test_flattened_code_equals_the_graphmodule(name):
    case = CASES[name]("cpu")
    fn = stitchgen.compile(case.gm, case.submods, **FLATTEN)
    assert_runs_same(fn, case.reference, case.inputs, case.gm)


def _nested_defs(code):
    binder = [s for s in ast.parse(code).body if isinstance(s, ast.FunctionDef)][0]
    return [s.name for s in binder.body if isinstance(s, ast.FunctionDef)]


def test_the_decoder_becomes_one_straight_line_function():
    gm = CASES["decoder_4_layers"]("cpu").gm
    # 9 pieces, 4 distinct: twins share one function
    assert len(_nested_defs(stitchgen.generate(gm).code)) == 5
    code = stitchgen.generate(gm, **FLATTEN).code
    assert _nested_defs(code) == ["execution_fn"]
    assert "[0]" not in code.split("def execution_fn")[1].replace("split_tensor[0]", "")


def _piece_returning(n):
    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.output(tuple(graph.call_function(torch.mul, (x, float(i + 1))) for i in range(n)))
    return fx.GraphModule({}, graph)


def test_a_tuple_used_as_a_whole_is_not_spliced():
    graph = fx.Graph()
    x = graph.placeholder("x")
    out = graph.call_module("piece", (x,))
    first = graph.call_function(operator.getitem, (out, 0))
    graph.output((first, out))  # the tuple itself escapes
    gm = fx.GraphModule({"piece": _piece_returning(2)}, graph)
    generated = stitchgen.generate(gm, **FLATTEN)
    assert _nested_defs(generated.code) == ["inlined_piece", "execution_fn"]
    assert_same(stitchgen.load(generated)(torch.ones(2)), gm(torch.ones(2)))


def test_only_unpacked_calls_are_spliced_and_unused_functions_dropped():
    graph = fx.Graph()
    x = graph.placeholder("x")
    a = graph.call_function(operator.getitem, (graph.call_module("piece", (x,)), -1))
    b = graph.call_module("piece", (a,))  # returned whole: kept as a call
    graph.output(b)
    gm = fx.GraphModule({"piece": _piece_returning(3)}, graph)
    generated = stitchgen.generate(gm, **FLATTEN)
    assert _nested_defs(generated.code) == ["inlined_piece", "execution_fn"]
    assert_same(stitchgen.load(generated)(torch.ones(2)), gm(torch.ones(2)))


def test_a_function_kept_behind_a_dropped_one_is_still_called_rightly():
    """The first piece is spliced away (its function dropped), the second is
    kept: its calls must now name its new place in the function list."""
    graph = fx.Graph()
    x = graph.placeholder("x")
    a = graph.call_function(operator.getitem, (graph.call_module("first", (x,)), 0))
    graph.output(graph.call_module("second", (a,)))  # returned whole: kept as a call
    gm = fx.GraphModule({"first": _piece_returning(2), "second": _piece_returning(3)}, graph)
    generated = stitchgen.generate(gm, **FLATTEN)
    assert _nested_defs(generated.code) == ["inlined_second", "execution_fn"]
    program = generated.program
    assert program is not None
    (call,) = [s for s in program.entry.body if isinstance(s, stitchgen.ir.Call) and s.is_piece]
    assert call.callee == stitchgen.ir.FunctionRef(0, "inlined_second")
    assert_same(stitchgen.load(generated)(torch.ones(2)), gm(torch.ones(2)))


def test_keyword_and_default_arguments_are_spliced_correctly():
    graph = fx.Graph()
    x = graph.placeholder("x")
    s = graph.placeholder("scale", default_value=2.0)
    graph.output((graph.call_function(torch.mul, (x, s)),))
    piece = fx.GraphModule({}, graph)
    root = fx.Graph()
    y = root.placeholder("y")
    first = root.call_function(operator.getitem, (root.call_module("piece", (), {"x": y}), 0))
    second = root.call_function(operator.getitem, (root.call_module("piece", (first, 5.0)), 0))
    root.output([first, second])
    gm = fx.GraphModule({"piece": piece}, root)
    generated = stitchgen.generate(gm, **FLATTEN)
    assert _nested_defs(generated.code) == ["execution_fn"]
    assert_same(stitchgen.load(generated)(torch.ones(2)), gm(torch.ones(2)))

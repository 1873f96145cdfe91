"""Lowering: every node op, and a clear error for every graph we refuse."""

import collections
import dataclasses
import operator

import pytest
import torch
import torch.fx as fx

import stitchgen
from stitchgen import BindingError, CodegenError
from stitchgen.conventions import VLLM


def _lazy(root, graph):
    from torch.fx._lazy_graph_module import _make_graph_module, _use_lazy_graph_module

    with _use_lazy_graph_module(True):
        return _make_graph_module(root, graph)


def test_non_graphmodule_is_a_type_error():
    with pytest.raises(TypeError, match="expects a torch.fx.GraphModule, got torch.nn.modules"):
        stitchgen.generate(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="torch.fx.GraphModule"):
        stitchgen.lower(fx.Graph())


def test_missing_get_attr_target_names_the_node():
    graph = fx.Graph()
    graph.output(graph.get_attr("weight"))
    gm = fx.GraphModule(torch.nn.Linear(1, 1), graph)
    node = next(iter(gm.graph.nodes))
    node.name = node.target = "nowhere"
    with pytest.raises(CodegenError, match=r"node 'nowhere' \(op get_attr, target nowhere\)"):
        stitchgen.generate(gm)


def test_missing_call_module_target_names_the_node():
    graph = fx.Graph()
    graph.output(graph.call_module("ghost", (graph.placeholder("x"),)))
    gm = fx.GraphModule({"ghost": torch.nn.Identity()}, graph)
    del gm.ghost
    with pytest.raises(CodegenError, match=r"node 'ghost' \(op call_module.*not a submodule"):
        stitchgen.generate(gm)


def test_unknown_op_names_the_node():
    gm = fx.symbolic_trace(lambda x: x + 1)
    node = next(n for n in gm.graph.nodes if n.op == "call_function")
    node.op = "call_magic"
    with pytest.raises(CodegenError, match=r"node 'add' \(op call_magic.*unsupported op"):
        stitchgen.lower(gm)


def test_node_from_another_graph_is_an_error():
    other = fx.Graph()
    foreign = other.placeholder("foreign")
    gm = fx.symbolic_trace(lambda x: x + 1)
    node = next(n for n in gm.graph.nodes if n.op == "call_function")
    node.args = (foreign, 1)
    with pytest.raises(CodegenError, match="uses node 'foreign' from another graph"):
        stitchgen.lower(gm)


def test_graph_without_output_is_an_error():
    graph = fx.Graph()
    graph.placeholder("x")
    gm = _lazy({}, graph)
    with pytest.raises(CodegenError, match="has no output node"):
        stitchgen.lower(gm)


def test_opaque_name_that_no_node_calls_is_an_error():
    gm = fx.symbolic_trace(lambda x: x + 1)
    with pytest.raises(CodegenError, match=r"no call_module node calls \['piece'\]"):
        stitchgen.generate(gm, opaque=["piece"])


def test_a_binding_for_a_piece_the_graph_does_not_have_is_a_binding_error():
    """One mistake, one error class: compile's submods as load's."""
    gm = fx.symbolic_trace(lambda x: x + 1)
    with pytest.raises(BindingError, match=r"unexpected submodule binding\(s\) \['piece'\]"):
        stitchgen.compile(gm, {"piece": lambda x: x})
    with pytest.raises(BindingError, match=r"unexpected submodule binding\(s\) \['piece'\]"):
        stitchgen.load(stitchgen.generate(gm), {"piece": lambda x: x})


def test_namedtuple_holding_graph_values_is_refused_with_the_node():
    Pair = collections.namedtuple("Pair", "a b")
    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(list, (Pair(x, 1),)))
    gm = _lazy({}, graph)
    message = r"node 'list_1' \(op call_function, target builtins.list\): .*Pair holds graph"
    with pytest.raises(CodegenError, match=message):
        stitchgen.lower(gm)


def test_a_graphmodule_that_calls_itself_is_refused():
    graph = fx.Graph()
    graph.output(graph.call_module("me", (graph.placeholder("x"),)))
    gm = fx.GraphModule({"me": torch.nn.Identity()}, graph)
    gm.__dict__["me"] = gm  # shadows the child, as compilers bind compiled pieces
    with pytest.raises(CodegenError, match="calls itself"):
        stitchgen.lower(gm)


def test_opaque_children_are_called_through_the_given_callables():
    from stitchgen.demo import split_decoder

    gm, inputs = split_decoder(1)
    calls = []

    def wrap(name, child):
        def run(*args):
            calls.append(name)
            return child(*args)

        return run

    submods = {name: wrap(name, child) for name, child in gm.named_children()}
    fn = stitchgen.compile(gm, submods)
    assert torch.equal(fn(*inputs), gm(*inputs))
    assert calls == ["submod_0", "submod_1", "submod_2"]


def test_graphmodule_children_are_inlined_unless_hooked():
    child = fx.symbolic_trace(lambda x: (x * 2,))
    hooked = fx.symbolic_trace(lambda x: (x * 2,))
    hooked.register_forward_pre_hook(lambda mod, args: (args[0] + 1,))
    graph = fx.Graph()
    x = graph.placeholder("x")
    a = graph.call_function(operator.getitem, (graph.call_module("plain", (x,)), 0))
    graph.output(graph.call_function(operator.getitem, (graph.call_module("hooked", (a,)), 0)))
    gm = fx.GraphModule({"plain": child, "hooked": hooked}, graph)
    generated = stitchgen.generate(gm)
    assert generated.submod_names == ["hooked"]
    assert [f.origin for f in generated.program.functions] == ["plain", ""]
    assert torch.equal(stitchgen.load(generated)(torch.ones(1)), gm(torch.ones(1)))


def test_call_method_with_a_non_identifier_name_goes_through_getattr():
    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_method("__neg__", (x,)))
    graph2 = fx.Graph()
    y = graph2.placeholder("y")
    graph2.output(graph2.call_method("not-a-name", (y,)))
    assert "x.__neg__()" in stitchgen.generate(fx.GraphModule({}, graph)).code
    code = stitchgen.generate(_lazy({}, graph2)).code
    assert 'getattr(y, "not-a-name")()' in code


def test_keyword_names_that_are_not_identifiers_stay_data():
    def takes(**kw):
        return sorted(kw.items())

    graph = fx.Graph()
    x = graph.placeholder("x")
    kwargs = {"a b": x, "ok": 1, "class": 2}
    graph.output(graph.create_node("call_function", takes, (), kwargs, name="t"))
    gm = _lazy({}, graph)
    fn = stitchgen.compile(gm)
    assert fn(5) == [("a b", 5), ("class", 2), ("ok", 1)]


def test_placeholder_defaults_and_varargs():
    class M(torch.nn.Module):
        def forward(self, x, scale=2.0, *rest):
            return x * scale

    gm = fx.symbolic_trace(M())
    fn = stitchgen.compile(gm)
    assert torch.equal(fn(torch.ones(1)), gm(torch.ones(1)))
    assert torch.equal(fn(torch.ones(1), 3.0), gm(torch.ones(1), 3.0))


def _lint_fails(gm):
    with pytest.raises(RuntimeError):
        gm.graph.lint()


def test_graphs_failing_lint_are_refused_naming_the_node():
    gm = fx.symbolic_trace(lambda x: x + 1)
    add = next(n for n in gm.graph.nodes if n.op == "call_function")
    neg = gm.graph.call_function(torch.neg, (add,))  # appended after the output
    add.args = (neg, 1)
    _lint_fails(gm)
    with pytest.raises(CodegenError, match="uses node 'neg' from later in the graph"):
        stitchgen.lower(gm)


def test_two_nodes_with_one_name_are_refused():
    gm = fx.symbolic_trace(lambda x: (x + 1) * 2)
    add, mul = [n for n in gm.graph.nodes if n.op == "call_function"]
    mul.name = "add"
    _lint_fails(gm)
    with pytest.raises(CodegenError, match=r"node 'add' \(op call_function, target _operator.mul"):
        stitchgen.lower(gm)


def _with_children():
    """A root calling an opaque child, a bound (non-GraphModule) child and
    an inlined GraphModule child."""
    root = torch.nn.Module()
    root.opaque = torch.nn.ReLU()
    root.bound = torch.nn.Linear(2, 2)
    root.piece = fx.symbolic_trace(lambda x: x + 1)
    graph = fx.Graph()
    x = graph.placeholder("x")
    a = graph.call_module("opaque", (x,))
    b = graph.call_module("bound", (a,))
    graph.output(graph.call_module("piece", (b,)))
    return fx.GraphModule(root, graph)


def test_the_lowering_hands_over_the_children_it_found():
    gm = _with_children()
    program = stitchgen.lower(gm, opaque=["opaque"])
    found = dict(zip([s.path for s in program.submods], program.submod_values, strict=True))
    assert found.keys() == {"opaque", "bound"}
    assert found["bound"] is gm.bound  # the very object, not a copy
    assert found["opaque"] is None  # named opaque: its caller binds it
    vllm = stitchgen.lower(gm, opaque=["opaque"], convention=VLLM)  # lists inlined children
    listed = dict(zip([s.path for s in vllm.submods], vllm.submod_values, strict=True))
    assert listed["piece"] is gm.piece
    assert "submod_values" not in repr(program)


def test_generate_binds_the_children_the_lowering_found():
    gm = _with_children()
    generated = stitchgen.generate(gm, opaque=["opaque"], format=False)
    assert dict(generated.submods) == {"bound": gm.bound}
    assert generated.submods["bound"] is gm.bound
    fn = stitchgen.load(generated, {"opaque": gm.opaque})
    x = torch.randn(3, 2)
    torch.testing.assert_close(fn(x), gm(x), rtol=0, atol=0)


def test_the_verifier_holds_children_to_their_declarations():
    from stitchgen.errors import ProgramError

    program = stitchgen.lower(_with_children(), opaque=["opaque"])
    stitchgen.ir.verify(program)
    broken = dataclasses.replace(program, submod_values=program.submod_values[:1])
    with pytest.raises(ProgramError, match="2 submodules declared, 1 found"):
        stitchgen.ir.verify(broken)

"""Piece results unpacked where they are called (``a, b =
inlined_submod_0(x)``, ``build_program(..., unpack=True)``), and every way a
result is read otherwise left as it was. The GraphModule is the oracle."""

import operator
from pathlib import Path

import pytest
import torch
import torch.fx as fx
from builders import SHAPES
from golden_cases import GOLDEN
from oracle import assert_runs_same

import stitchgen
from stitchgen import ir
from stitchgen.demo import split_decoder
from stitchgen.errors import ProgramError

ROOT = Path(__file__).resolve().parent.parent


def two_outputs(scale=2.0):
    """A piece: x -> (x * scale, x + 1)."""
    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.output(
        (graph.call_function(torch.mul, (x, scale)), graph.call_function(torch.add, (x, 1)))
    )
    return fx.GraphModule(torch.nn.Module(), graph)


def stitch(use, piece=None, *, opaque=False):
    """``use(graph, out)`` reads the piece's result ``out`` and returns the output."""
    graph = fx.Graph()
    x = graph.placeholder("x")
    out = graph.call_module("submod_0", (x,))
    graph.output(use(graph, out))
    return fx.GraphModule({"submod_0": piece or two_outputs()}, graph)


def item(graph, out, index):
    return graph.call_function(operator.getitem, (out, index))


def entry_kinds(generated):
    return [type(s).__name__ for s in generated.program.entry.body]


def check(gm, **options):
    generated = stitchgen.generate(gm, **options)
    bound = {path: gm.get_submodule(path) for path in options.get("opaque", ())}
    x = torch.randn(3)
    assert_runs_same(stitchgen.load(generated, bound), gm, (x,))
    return generated


def test_a_decoder_calls_each_piece_and_unpacks_it_on_one_line():
    gm, inputs = split_decoder(2)
    generated = check_decoder(gm, inputs)
    kinds = entry_kinds(generated)
    assert "GetItem" not in kinds and "Call" not in kinds
    assert kinds.count("UnpackCall") == 5
    code = generated.code
    assert "getitem, getitem_1, getitem_2 = inlined_submod_0(arg0_1, arg2_1, arg1_1)" in code
    assert "(getitem_3,) = inlined_submod_1(getitem, getitem_1, getitem_2)" in code
    entry = code.split("def execution_fn")[1]
    assert " submod_0 = " not in entry and "submod_0[" not in entry  # the tuple is no local


def check_decoder(gm, inputs, **options):
    generated = stitchgen.generate(gm, **options)
    assert_runs_same(stitchgen.load(generated), gm, inputs)
    return generated


@pytest.mark.parametrize("templates", ["vllm", "profiled"])
def test_every_shipped_template_set_unpacks(templates):
    gm, inputs = split_decoder(1)
    generated = check_decoder(gm, inputs, templates=templates)
    assert entry_kinds(generated).count("UnpackCall") == 3


def test_items_read_out_of_order_and_later_are_unpacked():
    def use(graph, out):
        second = item(graph, out, 1)
        y = graph.call_function(torch.neg, (second,))
        return graph.call_function(torch.sub, (y, item(graph, out, 0)))

    generated = check(stitch(use))
    assert entry_kinds(generated)[0] == "UnpackCall"
    # FX named the getitem of item 1 first: the targets follow the items' order
    assert "getitem_1, getitem = inlined_submod_0(x)" in generated.code


@pytest.mark.parametrize(
    "use",
    [
        pytest.param(lambda g, out: (item(g, out, 0),), id="an item nobody reads"),
        pytest.param(lambda g, out: (item(g, out, 0), item(g, out, -1)), id="a negative index"),
        pytest.param(
            lambda g, out: (item(g, out, 0), item(g, out, 0), item(g, out, 1)),
            id="an item read twice",
        ),
        pytest.param(lambda g, out: (item(g, out, 0), out), id="the tuple returned"),
        pytest.param(
            lambda g, out: (item(g, out, 0), g.call_function(len, (out,)), item(g, out, 1)),
            id="the tuple passed on",
        ),
        pytest.param(
            lambda g, out: (item(g, out, slice(0, 1)), item(g, out, 1)), id="a slice of it"
        ),
    ],
)
def test_a_result_read_any_other_way_keeps_its_getitems(use):
    generated = check(stitch(use))
    assert "UnpackCall" not in entry_kinds(generated)
    assert "submod_0 = inlined_submod_0(x)" in generated.code


def test_a_bound_piece_keeps_its_getitems():
    gm = stitch(lambda g, out: (item(g, out, 0), item(g, out, 1)))
    generated = check(gm, opaque=["submod_0"])
    assert "UnpackCall" not in entry_kinds(generated)  # its result's length is not ours to know


def test_a_getitem_with_a_source_line_keeps_it():
    gm = stitch(lambda g, out: (item(g, out, 0), item(g, out, 1)))
    for node in gm.graph.nodes:
        if node.target is operator.getitem:
            node.meta["stack_trace"] = '  File "model.py", line 7, in forward\n    y = f(x)\n'
    generated = check(gm, source_lines=True)
    assert "UnpackCall" not in entry_kinds(generated)
    assert "getitem = submod_0[0]  # model.py:7 in forward" in generated.code


def test_templates_of_your_own_render_the_same_program(tmp_path):
    (tmp_path / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n'
        "{% block getitem %}{{ super() }}    pass\n{% endblock %}\n"
    )
    gm = stitch(lambda g, out: (item(g, out, 0), item(g, out, 1)))
    generated = check(gm, template_dirs=[tmp_path])
    assert generated.program == stitchgen.generate(gm).program  # the built-ins' shape
    assert "UnpackCall" in entry_kinds(generated)
    assert generated.code.count("    pass\n") == 0  # no getitem to render
    asked = check(gm, template_dirs=[tmp_path], unpack=False)  # one getitem per item, asked for
    assert "UnpackCall" not in entry_kinds(asked)
    assert asked.code.count("    pass\n") == 2


def test_lower_unpacks_unless_asked_not_to():
    gm = stitch(lambda g, out: (item(g, out, 0), item(g, out, 1)))
    assert "UnpackCall" in [type(s).__name__ for s in stitchgen.lower(gm).entry.body]
    kept = stitchgen.lower(gm, unpack=False)
    assert [type(s).__name__ for s in kept.entry.body].count("GetItem") == 2


def test_passes_of_your_own_see_the_unpacked_call_unless_asked_otherwise():
    seen = []

    def mine(program):
        seen.append([type(s).__name__ for s in program.entry.body])
        return program

    gm = stitch(lambda g, out: (item(g, out, 0), item(g, out, 1)))
    generated = check(gm, passes=[mine])
    assert "UnpackCall" in seen[0] and "GetItem" not in seen[0]
    assert generated.code == stitchgen.generate(gm).code
    check(gm, passes=[mine], unpack=False)
    assert seen[1].count("GetItem") == 2 and "UnpackCall" not in seen[1]
    assert "UnpackCall" not in entry_kinds(check(gm, **SHAPES["flatten"]))  # spliced


@pytest.mark.parametrize("key", sorted(GOLDEN))
def test_a_pass_that_changes_nothing_changes_no_golden_line(key):
    """A pass of yours changes only what it changes: one returning the
    program as it is gives every golden file's code, byte for byte."""
    case = GOLDEN[key]()
    identity = stitchgen.generate(
        case.gm, opaque=tuple(case.submods), templates=case.templates, passes=[lambda p: p]
    )
    assert identity.code == (ROOT / "golden" / f"{key}.py").read_text(encoding="utf-8")


def test_the_statement_is_plain_ir():
    stmt = ir.UnpackCall(("a", "b"), ir.FunctionRef(0, "f"), (ir.Name("x"),), node="submod_0")
    assert ir.writes(stmt) == ["a", "b"] and ir.defines(stmt) is None
    assert ir.defines(ir.UnpackCall(("a",), ir.FunctionRef(0, "f"))) == "a"
    assert ir.reads(stmt) == ["x"]
    assert ir.from_json(ir.to_json(stmt)) == stmt
    renamed = ir.map_stmt(stmt, local=str.upper)
    assert renamed.targets == ("A", "B") and renamed.node == "submod_0"
    assert stmt.is_piece and stmt.inlined == "f" and stmt.template == "call"
    inner = ir.Function("f", (ir.Param("x"),), (ir.Return(ir.TupleExpr((ir.Name("x"),) * 2)),))
    twice = ir.Function(
        "g",
        (ir.Param("x"),),
        (
            stmt,
            ir.UnpackCall(("b", "c"), ir.FunctionRef(0, "f"), (ir.Name("x"),)),
            ir.Return(ir.Name("a")),
        ),
    )
    with pytest.raises(ProgramError, match="assigns 'b' a second time"):
        ir.verify(ir.Program("g", "bind", (), (), (), (inner, twice)))

"""Control flow as Python control flow: ``torch.cond`` an ``if``,
``while_loop`` a ``while``, ``invoke_subgraph`` and ``wrap`` one function
called at each site, each equal to the ``GraphModule`` on every path; the
liveness and the verifier sound over bodies that may not run or run again;
templates at every depth; artifacts of lowered graphs."""

import dataclasses
import operator
import os
import subprocess
import sys
import textwrap
import warnings
from typing import Any, ClassVar

import pytest
import torch
import torch.fx as fx
from golden_cases import (
    CASES,
    HIGHER_ORDER,
    Case,
    capture_dynamo,
    graph_module,
    loops_run_under_grad,
    tuple_piece,
)
from oracle import assert_runs_same, assert_same

import stitchgen
from stitchgen import Templates, ir
from stitchgen.authoring.specimens import SPECIMENS
from stitchgen.emitter import INDENT, Emitter
from stitchgen.errors import ProgramError
from stitchgen.passes import assign_names, bind_targets, insert_dels
from stitchgen.records import schema_of

# -- lowered, and equal to the GraphModule on every path ----------------------


def _equal_on(case, *inputs_list, templates=None):
    generated = stitchgen.generate(case.gm, templates=templates)
    fn = stitchgen.load(generated, case.submods)
    for inputs in inputs_list:
        assert_runs_same(fn, case.gm, inputs)
    return generated.code


@pytest.mark.parametrize("templates", [None, "profiled", "vllm"])
def test_cond_is_an_if_equal_on_both_branches(templates):
    case = CASES["cond_branches"]("cpu")
    x, y = case.inputs
    code = _equal_on(case, (x.abs() + 1, y), (-x.abs() - 1, y), templates=templates)
    assert "    if gt:\n" in code and "else:\n" in code
    assert "cond" not in code.replace("cond_", "")  # no operator, no bound branch graphs


@pytest.mark.parametrize("flag", [True, False])
def test_a_cond_in_a_branch_of_a_cond_inside_a_piece_takes_every_path(flag):
    case = CASES["nested_cond"]("cpu")
    x = case.inputs[0]
    code = _equal_on(case, (x.abs() + 1, flag), (-x.abs() - 1, flag))
    assert code.count("if ") == 2 and "def inlined_submod_0(x, flag):" in code


@pytest.mark.parametrize("count", [0, 1, 5])
def test_while_loop_runs_no_one_or_many_iterations_as_the_operator(count):
    case = CASES["while_loop_counter"]("cpu")
    x = case.inputs[0]
    code = _equal_on(case, (x, torch.tensor(count)))
    assert "while True:" in code and "break" in code


def _loop(test_out, body_out, carried, meta=None):
    """A graph whose one node is a ``while_loop`` over ``carried`` (names
    of inputs, or constants); its subgraphs take (i, v) and give what
    ``test_out``/``body_out`` build from them; ``meta`` the ``val`` of
    each input and of the condition's output."""
    meta = meta or {}

    def build(g):
        inputs = {name: g.placeholder(name) for name in ("i", "v")}
        for name, node in inputs.items():
            if name in meta:
                node.meta["val"] = meta[name]
        args = tuple(inputs.get(c, c) for c in carried)
        looped = g.call_function(
            HIGHER_ORDER.while_loop, (g.get_attr("t"), g.get_attr("b"), args, ())
        )
        return (g.call_function(operator.getitem, (looped, 0)),)

    root = {"t": _loop_sub(test_out, meta.get("test")), "b": _loop_sub(body_out)}
    return graph_module(root, build)


def _gt(g, i, v):
    return g.call_function(operator.gt, (i, 0))


def _step(g, i, v):
    return (g.call_function(torch.sub, (i, 1)), g.call_function(torch.mul, (v, 2)))


def test_what_while_loop_refuses_the_program_refuses_where_the_graph_tells():
    """A body giving another number of values, a condition that is no boolean
    scalar, an operand neither a tensor nor an int: the operator refuses each
    at run time; the graph tells, so generate refuses, naming the node."""
    fewer = _loop(_gt, lambda g, i, v: (g.call_function(torch.sub, (i, 1)),), ("i", "v"))
    with pytest.raises(AssertionError, match="same number of elements"):
        fewer(torch.tensor(2), torch.ones(2))
    with pytest.raises(stitchgen.CodegenError, match=r"while_loop.*returns 1 value\(s\) for 2"):
        stitchgen.generate(fewer)
    count = torch.empty((), dtype=torch.int64)
    numeric = _loop(lambda g, i, v: g.call_function(torch.sub, (i, 1)), _step, ("i", "v"))
    with pytest.raises(RuntimeError, match="cond_fn must return a boolean"):
        numeric(torch.tensor(2), torch.ones(2))
    ours = stitchgen.compile(numeric)  # no metadata: the code checks it, as the operator does
    with pytest.raises(RuntimeError, match="cond_fn must return a boolean scalar tensor or a"):
        ours(torch.tensor(2), torch.ones(2))
    told = _loop(_gt, _step, ("i", "v"), {"test": torch.empty((), dtype=torch.bool)})
    assert "runtime.condition" not in stitchgen.generate(told).code  # metadata: no check
    numeric = _loop(
        lambda g, i, v: g.call_function(torch.sub, (i, 1)), _step, ("i", "v"), {"test": count}
    )
    with pytest.raises(stitchgen.CodegenError, match="returns a torch.int64 tensor of shape"):
        stitchgen.generate(numeric)
    floating = _loop(_gt, _step, ("i", 2.5))
    with pytest.raises(AssertionError, match="can only be of"):
        floating(torch.tensor(2), torch.ones(2))
    with pytest.raises(stitchgen.CodegenError, match="operand 2.5 is a float"):
        stitchgen.generate(floating)
    with pytest.raises(stitchgen.CodegenError, match="operand 'v' is a float"):
        stitchgen.generate(_loop(_gt, _step, ("i", "v"), {"v": 2.5}))


def test_a_while_loop_that_runs_no_iteration_hands_back_copies():
    """Review bug A: an in-place op after a loop that ran no iteration writes
    a copy, as the operator's, never the caller's tensor."""

    def build(g):
        i, v = g.placeholder("i"), g.placeholder("v")
        looped = g.call_function(
            HIGHER_ORDER.while_loop, (g.get_attr("t"), g.get_attr("b"), (i, v), ())
        )
        value = g.call_function(operator.getitem, (looped, 1))
        g.call_method("zero_", (value,))
        return (value,)

    gm = graph_module({"t": _loop_sub(_gt), "b": _loop_sub(_step)}, build)
    fn = stitchgen.compile(gm)
    for count in (0, 1, 3):
        assert_runs_same(fn, gm, (torch.tensor(count), torch.ones(2)))
    x = torch.ones(2)
    fn(torch.tensor(0), x)
    assert torch.equal(x, torch.ones(2))


def test_a_loop_whose_tuple_is_returned_whole_copies_every_value():
    def build(g):
        i, v = g.placeholder("i"), g.placeholder("v")
        return g.call_function(
            HIGHER_ORDER.while_loop, (g.get_attr("t"), g.get_attr("b"), (i, v), ())
        )

    gm = graph_module({"t": _loop_sub(_gt), "b": _loop_sub(_step)}, build)
    fn = stitchgen.compile(gm)
    for count in (0, 2):
        assert_runs_same(fn, gm, (torch.tensor(count), torch.ones(2)))


# -- gradients: the operators' autograd, from the lowered code ----------------


def _choice(true, false, meta=None):
    """``cond(p, true, false, (x, y))``, both outputs read; each arm builds
    two outputs from its (a, b); ``meta``: the ``val`` of x and y."""

    def arm(fn):
        return graph_module({}, lambda g: fn(g, g.placeholder("a"), g.placeholder("b")))

    def build(g):
        x, y, p = g.placeholder("x"), g.placeholder("y"), g.placeholder("p")
        for node, val in zip((x, y), meta or (), strict=False):
            node.meta["val"] = val
        picked = g.call_function(HIGHER_ORDER.cond, (p, g.get_attr("t"), g.get_attr("f"), (x, y)))
        return tuple(g.call_function(operator.getitem, (picked, i)) for i in (0, 1))

    return graph_module({"t": arm(true), "f": arm(false)}, build)


def _on(op, *args):
    return lambda g, a, b: g.call_function(op, tuple({"a": a, "b": b}.get(x, x) for x in args))


def _pair(first, second):
    return lambda g, a, b: (first(g, a, b), second(g, a, b))


#: arms that read both operands, one, none, or pass one through
READ_BOTH = _pair(_on(torch.mul, "a", "b"), _on(torch.add, "a", "b"))
READ_A = _pair(_on(torch.sin, "a"), _on(torch.mul, "a", 2))
PASS_B = lambda g, a, b: (b, g.call_function(torch.cos, (b,)))  # noqa: E731
READ_NONE = _pair(_on(torch.ones, 2), _on(torch.zeros, 2))


@pytest.mark.parametrize(
    "true, false",
    [(READ_A, PASS_B), (READ_BOTH, READ_A), (READ_BOTH, READ_NONE)],
    ids=["each-reads-one", "one-reads-both", "one-reads-none"],
)
def test_a_cond_gives_the_operators_gradients_on_both_branches(true, false):
    """The operand a branch never reads gets zeros from the lowered code,
    as from the operator, not None; every output requires grad."""
    gm = _choice(true, false)
    fn = stitchgen.compile(gm)
    x, y = torch.randn(2, requires_grad=True), torch.randn(2, requires_grad=True)
    for p in (True, False):
        for inputs in ((x, y, p), (x, y.detach(), p), (x.detach(), y.detach(), p)):
            assert_runs_same(fn, gm, inputs)
            with torch.no_grad():
                assert_runs_same(fn, gm, inputs)


def test_a_cond_with_one_output_is_tied_too():
    def build(g):
        x, y, p = g.placeholder("x"), g.placeholder("y"), g.placeholder("p")
        picked = g.call_function(HIGHER_ORDER.cond, (p, g.get_attr("t"), g.get_attr("f"), (x, y)))
        return g.call_function(operator.getitem, (picked, 0))

    arm = lambda op, i: graph_module(  # noqa: E731
        {}, lambda g: (g.call_function(op, ((g.placeholder("a"), g.placeholder("b"))[i],)),)
    )
    gm = graph_module({"t": arm(torch.sin, 0), "f": arm(torch.cos, 1)}, build)
    fn = stitchgen.compile(gm)
    x, y = torch.randn(2, requires_grad=True), torch.randn(2, requires_grad=True)
    for p in (True, False):
        assert_runs_same(fn, gm, (x, y, p))


def test_the_branch_not_taken_gets_zeros_not_none():
    gm = _choice(READ_A, PASS_B)
    x, y = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    for run in (stitchgen.compile(gm), gm):
        out = run(x, y, True)
        grads = torch.autograd.grad(out[0].sum(), (x, y))
        assert torch.equal(grads[1], torch.zeros(2))  # y: the branch taken never reads it
        assert torch.equal(grads[0], torch.cos(torch.ones(2)))


def test_an_arm_that_reads_every_operand_into_every_output_is_not_tied():
    """Python's autograd already gives the operator's gradients there: no
    tie, no test of grad mode; where the metadata says an operand reaches
    an output through no floating value, the arm is tied."""
    plain = stitchgen.generate(_choice(READ_BOTH, READ_BOTH)).code
    assert "is_grad_enabled" not in plain and "import stitchgen" not in plain
    compared = _pair(_on(torch.mul, "a", "b"), lambda g, a, b: _compared(g, a, b))
    tied = stitchgen.generate(_choice(READ_BOTH, compared)).code
    assert tied.count("stitchgen.runtime.tie(") == 1  # the arm that compares
    assert tied.count("if torch.is_grad_enabled():") == 1


def _compared(g, a, b):
    """``a * (b > 0)``: b reaches the output through a bool tensor (metadata)."""
    positive = g.call_function(torch.gt, (b, 0))
    positive.meta["val"] = torch.empty(2, dtype=torch.bool)
    return g.call_function(torch.mul, (a, positive))


@pytest.mark.slow  # a fresh process: about 2 s
def test_an_artifact_with_ties_loads_in_a_fresh_process_and_gives_the_gradients(tmp_path):
    """The code imports ``stitchgen.runtime``, which a fresh process has not
    imported: loading it needs no ``allow_imports`` (it is stitchgen's own)."""
    from stitchgen import archive

    assert archive.RUNTIME == ir.TIE.module == ir.CONDITION.module
    stitchgen.generate(_choice(READ_A, PASS_B)).save(tmp_path / "tied")
    script = textwrap.dedent(
        f"""
        import torch, stitchgen
        fn = stitchgen.load_artifact({str(tmp_path / "tied")!r})
        x, y = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
        out = fn(x, y, True)
        print(torch.autograd.grad(out[0].sum() + out[1].sum(), (x, y))[1].tolist())
        """
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["[0.0,", "0.0]"]


def test_under_no_grad_the_tie_is_never_called(monkeypatch):
    import stitchgen.runtime

    gm = _choice(READ_A, PASS_B)
    fn = stitchgen.compile(gm)

    def refused(*args, **kwargs):
        raise AssertionError("tie called")

    monkeypatch.setattr(stitchgen.runtime, "tie", refused)
    x = torch.ones(2, requires_grad=True)
    for context in (torch.no_grad, torch.inference_mode):
        with context():
            fn(x, x, True)
    with pytest.raises(AssertionError, match="tie called"):
        fn(x, x, True)


#: what torch's own while_loop needs to be the oracle of a gradient test
NEEDS_LOOP_GRAD = pytest.mark.skipif(
    not loops_run_under_grad(),
    reason=f"torch {torch.__version__}'s while_loop runs under grad only on graphs with metadata",
)


@NEEDS_LOOP_GRAD
def test_a_while_loop_gives_the_operators_gradients_where_it_runs():
    """One or more iterations: the operator's gradients, an input the body
    never reads included (zeros); no iteration: the identity's (ruled), where
    the operator runs one body step in its backward."""

    def build(g):
        i, a, b, w = (g.placeholder(n) for n in ("i", "a", "b", "w"))
        looped = g.call_function(
            HIGHER_ORDER.while_loop, (g.get_attr("t"), g.get_attr("b"), (i, a, b), (w,))
        )
        return tuple(g.call_function(operator.getitem, (looped, k)) for k in (1, 2))

    def step(g):
        i, a, b, _ = (g.placeholder(n) for n in ("i", "a", "b", "w"))
        half = g.call_function(torch.mul, (a, 0.5))
        return (
            g.call_function(torch.add, (i, 1)),
            g.call_function(torch.add, (a, b)),
            g.call_function(torch.sub, (b, half)),
        )

    def test(g):
        i, _, _, _ = (g.placeholder(n) for n in ("i", "a", "b", "w"))
        return g.call_function(operator.lt, (i, 3))

    gm = graph_module({"t": graph_module({}, test), "b": graph_module({}, step)}, build)
    fn = stitchgen.compile(gm)
    a, b, w = (torch.ones(2, requires_grad=True) for _ in range(3))
    for start in (0, 1, 2):  # three, two and one iterations
        assert_runs_same(fn, gm, (torch.tensor(start), a, b, w))
    ours = torch.autograd.grad(sum(o.sum() for o in fn(torch.tensor(3), a, b, w)), (a, b, w))
    assert [g.tolist() for g in ours] == [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]
    operator_s = torch.autograd.grad(sum(o.sum() for o in gm(torch.tensor(3), a, b, w)), (a, b))
    assert [g.tolist() for g in operator_s] == [[0.5, 0.5], [2.0, 2.0]]  # its one-step artefact


@NEEDS_LOOP_GRAD
def test_a_loop_inside_a_branch_hands_back_what_the_operator_does_under_grad():
    """Under grad the outermost operator copies a loop's carried values, but
    it runs a loop in its branch without grad, which then hands back its
    input itself (passed through): the code's nested loop does not copy."""

    def arm(g):
        a, b = g.placeholder("a"), g.placeholder("b")
        args = (g.get_attr("t"), g.get_attr("s"), (b, a), ())
        return (
            g.call_function(operator.getitem, (g.call_function(HIGHER_ORDER.while_loop, args), 1)),
        )

    looping = graph_module(
        {
            "t": _loop_sub(_gt),
            "s": _loop_sub(lambda g, i, v: (g.call_function(torch.sub, (i, 1)), v)),
        },
        arm,
    )

    def build(g):
        x, i, p = g.placeholder("x"), g.placeholder("i"), g.placeholder("p")
        picked = g.call_function(HIGHER_ORDER.cond, (p, g.get_attr("t"), g.get_attr("f"), (x, i)))
        return (g.call_function(operator.getitem, (picked, 0)),)

    def other(g):
        a, _ = g.placeholder("a"), g.placeholder("b")
        return (g.call_function(torch.sin, (a,)),)

    gm = graph_module({"t": looping, "f": graph_module({}, other)}, build)
    fn = stitchgen.compile(gm)
    assert "copy=True" not in stitchgen.generate(gm).code
    for p in (True, False):
        assert_runs_same(fn, gm, (torch.ones(2, requires_grad=True), torch.tensor(2), p))


def test_a_loop_feeding_a_cond_inside_a_branch_gives_autograds_gradient():
    """Inside a cond's branch, a while_loop whose value reaches another cond,
    one of whose arms hands it back: torch's backward gives the branch's input a
    wrong gradient (torch 2.11 to 2.15); the code gives autograd's of what
    it computes. The fuzz leaves a loop feeding a cond inside a branch to
    this test (``tests/e2e/test_fuzz.py``)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    cond, loop = HIGHER_ORDER.cond, HIGHER_ORDER.while_loop

    def arm(a, b, p):
        start = torch.zeros((), dtype=torch.int64)
        value = loop(lambda i, v: i < 2, lambda i, v: (i + 1, torch.sin(v)), (start, b), ())[1]
        square = lambda v: (torch.sin(v * v),) * 2  # noqa: E731
        twice = cond(p, lambda v: (v + v, v), square, (value,))[0]  # (one arm hands v back)
        return (torch.sin(twice + (value + a)),)

    def program(x, p):
        return cond(p, arm, lambda a, b, p: (torch.sin(b),), (x, x, p))[0]

    x, p = torch.tensor([2.0, 0.5, -1.0], requires_grad=True), torch.tensor(True)
    gm = make_fx(program)(x.detach(), p)
    (ours,) = torch.autograd.grad(stitchgen.compile(gm)(x, p).sum(), x)
    v = torch.sin(torch.sin(x))  # the code computes sin(3 * v + x)
    expected = torch.cos(3 * v + x) * (3 * torch.cos(torch.sin(x)) * torch.cos(x) + 1)
    torch.testing.assert_close(ours, expected.detach())
    (operator_s,) = torch.autograd.grad(gm(x, p).sum(), x)
    assert not torch.allclose(operator_s, expected)  # torch's, wrong for this shape


def _loop_sub(out, val=None):
    """A loop's subgraph: (i, v) in, what ``out`` builds out (its metadata ``val``)."""

    def build(g):
        value = out(g, g.placeholder("i"), g.placeholder("v"))
        if val is not None:
            value.meta["val"] = val
        return value

    return graph_module({}, build)


def test_a_subgraph_called_at_three_sites_is_one_function():
    case = CASES["invoke_subgraph_repeated"]("cpu")
    code = _equal_on(case, case.inputs)
    assert code.count("def inlined_repeated_subgraph0(") == 1
    assert code.count("= inlined_repeated_subgraph0(") == 3
    assert code.count("= inlined_wrap_body_0(") == 1


class _Branchy(torch.nn.Module):
    def forward(self, x, y):
        def positive(a, b):
            return (a.sin() + b,)

        def negative(a, b):
            return (a.cos() - b,)

        r = torch.relu(x) - 0.5
        return torch.cond(r.sum() > 0, positive, negative, (r, y))[0] * 2


def test_an_exported_cond_runs_as_an_if_and_saves_as_an_artifact(tmp_path):
    x, y = torch.randn(4), torch.randn(4)
    gm = torch.export.export(_Branchy(), (x, y)).module()
    generated = stitchgen.generate(gm)
    assert "if " in generated.code and "higher_order" not in generated.code
    fn = stitchgen.load(generated)
    for inputs in [(x.abs() + 1, y), (-x.abs() - 1, y)]:
        assert_runs_same(fn, gm, inputs)
    path = generated.save(tmp_path / "artifact")
    script = textwrap.dedent(
        f"""
        import torch, stitchgen
        fn = stitchgen.load_artifact({str(path)!r}, submods={{"_guards_fn": lambda *a: None}})
        outs = [fn(torch.full((4,), s), torch.ones(4)) for s in (1.0, -1.0)]
        torch.save(outs, {str(tmp_path / "out.pt")!r})
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    outputs = torch.load(tmp_path / "out.pt")
    for sign, out in zip((1.0, -1.0), outputs, strict=True):
        assert_same(out, gm(torch.full((4,), sign), torch.ones(4)))


@pytest.mark.skipif(
    not hasattr(torch.compiler, "nested_compile_region"), reason="no nested_compile_region"
)
def test_a_nested_compile_region_in_a_dynamo_graph_is_one_function():
    @torch.compiler.nested_compile_region
    def block(x):
        return torch.tanh(x) * 2

    class Model(torch.nn.Module):
        def forward(self, x):
            return block(block(block(x)))

    gm, inputs = capture_dynamo(Model(), torch.randn(4))
    if not any(n.target is HIGHER_ORDER.invoke_subgraph for n in gm.graph.nodes):
        pytest.skip("this torch inlines the region")
    generated = stitchgen.generate(gm)
    fn = stitchgen.load(generated)
    assert_runs_same(fn, gm, inputs)
    functions = [f for f in generated.program.functions if f is not generated.program.entry]
    assert len(functions) == 1
    calls = [
        s for s in ir.iter_statements(generated.program.entry.body) if isinstance(s, ir.Calling)
    ]
    assert sum(isinstance(s.callee, ir.FunctionRef) for s in calls) == 3


def _hooked(gm: fx.GraphModule) -> fx.GraphModule:
    gm.register_forward_hook(lambda mod, args, out: out)
    return gm


def _two_arm_graph(true_gm, false_gm):
    def build(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        pred = g.call_function(operator.gt, (g.call_function(torch.sum, (x,)), 0))
        arms = (g.get_attr("true_graph_0"), g.get_attr("false_graph_0"))
        picked = g.call_function(HIGHER_ORDER.cond, (pred, *arms, (x,)))
        return g.call_function(operator.getitem, (picked, 0))

    return graph_module({"true_graph_0": true_gm, "false_graph_0": false_gm}, build)


def _arm(op):
    return graph_module({}, lambda g: (g.call_function(op, (g.placeholder("a"),)),))


def test_an_operator_in_a_form_not_lowered_is_called_as_before():
    """A branch with a hook of its own (its call is not its graph) keeps
    today's behaviour: the operator, called with its branches bound."""
    gm = _two_arm_graph(_hooked(_arm(torch.sin)), _arm(torch.cos))
    generated = stitchgen.generate(gm)
    assert "if " not in generated.code and "true_graph_0" in generated.code
    fn = stitchgen.load(generated)
    for x in (torch.ones(3), -torch.ones(3)):
        assert_runs_same(fn, gm, (x,))


# -- liveness and the verifier over bodies that may not run -------------------


@dataclasses.dataclass(frozen=True)
class Guarded:
    """``if <test>:`` around a body that may not run (``ir.BRANCH``)."""

    test: Any = dataclasses.field(metadata=ir.EXPR)
    body: tuple[Any, ...] = dataclasses.field(metadata=ir.BRANCH)
    template: ClassVar[str] = "guarded"


@dataclasses.dataclass(frozen=True)
class With:
    """``with <manager>:`` around a body that always runs (``ir.BODY``)."""

    manager: Any = dataclasses.field(metadata=ir.EXPR)
    body: tuple[Any, ...] = dataclasses.field(metadata=ir.BODY)
    template: ClassVar[str] = "with_"


def write_guarded(emitter: Emitter, stmt: Guarded, indent: str) -> None:
    emitter.line(f"{indent}if {emitter.writer.source(stmt.test)}:")
    emitter.nested(stmt.body, indent)


def write_with(emitter: Emitter, stmt: With, indent: str) -> None:
    emitter.line(f"{indent}with {emitter.writer.source(stmt.manager)}:")
    emitter.nested(stmt.body, indent)


KINDS = {Guarded: write_guarded, With: write_with}
NEG = ir.GlobalRef("torch", "neg")


def _program(*body, params=("x", "flag")):
    entry = ir.Function("execution_fn", tuple(ir.Param(p) for p in params), tuple(body))
    return ir.Program("execution_fn", "bind", ("torch",), (), (), (entry,))


def _debug_branch():
    """The review's case: a branch whose body assigns ``dbg``, never read after."""
    dbg = ir.Call("dbg", NEG, (ir.Name("x"),))
    return _program(
        Guarded(ir.Name("flag"), (dbg,)),
        ir.Call("y", NEG, (ir.Name("x"),)),
        ir.Return(ir.Name("y")),
    )


@pytest.mark.parametrize("flag", [True, False])
def test_a_name_bound_in_a_branch_is_freed_inside_it(flag):
    program = insert_dels(_debug_branch())
    ir.verify(program)
    guard = program.entry.body[0]
    assert guard.body[-1] == ir.Del(("dbg",))  # freed on the path that bound it
    assert all("dbg" not in ir.deletes(s) for s in program.entry.body[1:])
    namespace: dict[str, Any] = {}
    exec(stitchgen.render(program, templates=Templates(kinds=KINDS)), namespace)
    assert_same(namespace["bind"]()(torch.ones(2), flag), -torch.ones(2))


def test_a_free_on_a_path_that_never_bound_the_name_is_named_by_the_verifier():
    broken = _debug_branch()
    body = broken.entry.body
    broken = dataclasses.replace(
        broken,
        functions=(dataclasses.replace(broken.entry, body=(body[0], ir.Del(("dbg",)), *body[1:])),),
    )
    with pytest.raises(ProgramError, match=r"deletes 'dbg', which is bound only in the body of"):
        ir.verify(broken)


def test_a_name_read_last_inside_a_branch_is_freed_after_the_statement():
    program = stitchgen.lower(CASES["cond_branches"]("cpu").gm)
    (branch,) = [s for s in program.entry.body if type(s) is ir.If]
    after = program.entry.body[program.entry.body.index(branch) + 1]
    assert type(after) is ir.Del and "y" in after.names  # read in both arms, freed after
    for arm in (branch.body, branch.orelse):
        freed = {n for s in arm for n in ir.deletes(s)}
        assert "y" not in freed and freed <= {n for s in arm for n in ir.writes(s)}


def test_nothing_read_by_a_later_iteration_is_freed_inside_the_loop():
    program = stitchgen.lower(CASES["while_loop_counter"]("cpu").gm)
    (loop,) = [s for s in program.entry.body if type(s) is ir.While]
    bound_inside = {n for s in loop.body for n in ir.writes(s)}
    freed_inside = {n for s in loop.body for n in ir.deletes(s)}
    assert freed_inside and freed_inside <= bound_inside
    assert not freed_inside & set(loop.carried)
    # a del of a carried value inside the body is refused by the verifier
    body = (*loop.body[:-1], ir.Del((loop.carried[0],)), loop.body[-1])
    bad = _replace_stmt(program, loop, dataclasses.replace(loop, body=body))
    with pytest.raises(ProgramError, match="inside it"):
        ir.verify(bad)


def _replace_stmt(program, old, new):
    entry = program.entry
    body = tuple(new if s is old else s for s in entry.body)
    entry = dataclasses.replace(entry, body=body)
    return dataclasses.replace(program, functions=(*program.functions[:-1], entry))


@pytest.mark.parametrize(
    "body, message",
    [
        ((ir.Break(ir.Name("flag")), ir.Return(ir.Name("x"))), "a Break outside a loop's body"),
        (
            (ir.If((), ir.Name("flag"), (ir.Return(ir.Name("x")),)), ir.Return(ir.Name("x"))),
            "a Return inside a nested body",
        ),
        (
            (ir.If(("r",), ir.Name("flag"), (ir.Rebind(("r",), (ir.Name("x"),)),)),),
            "its orelse does not bind",
        ),
        (
            (
                ir.If(
                    ("r",),
                    ir.Name("flag"),
                    (ir.Rebind(("r",), (ir.Name("x"),)), ir.Call("z", NEG, (ir.Name("x"),))),
                    (ir.Rebind(("r",), (ir.Name("x"),)),),
                ),
            ),
            "a Rebind ends a body",
        ),
        (
            (ir.While(("x",), (ir.Rebind(("x",), (ir.Name("x"),)),)), ir.Return(ir.Name("x"))),
            "its body never breaks",
        ),
        (  # `a, b = x` would unpack x's elements, silently
            (
                ir.If(("a", "b"), ir.Name("flag"), (ir.Rebind(("a", "b"), (ir.Name("x"),)),)),
                ir.Return(ir.Name("a")),
            ),
            r"rebinds 2 name\(s\) to 1 value\(s\)",
        ),
    ],
)
def test_the_verifier_names_what_a_body_breaks(body, message):
    with pytest.raises(ProgramError, match=message):
        ir.verify(_program(*body))


def test_verify_env_reports_the_unbound_free_of_a_pass(monkeypatch):
    """``STITCHGEN_VERIFY=1``: a pass of yours that frees a branch's name after
    the branch is named, with the pass."""

    def free_after(program):
        def add_del(stmt):
            yield stmt
            if type(stmt) is ir.If and stmt.targets:
                inner = [n for s in stmt.body for n in ir.writes(s)]
                if inner:
                    yield ir.Del((inner[0],))

        return ir.map_bodies(program, add_del)

    monkeypatch.setenv("STITCHGEN_VERIFY", "1")
    gm = CASES["cond_branches"]("cpu").gm
    with pytest.raises(ProgramError, match=r"after the pass .*free_after.*bound only in the body"):
        stitchgen.generate(gm, passes=[free_after])


# -- one walker truth ----------------------------------------------------------

#: every class with a body: the IR's own, found from their fields, and this test's
BODIED = [c for c in ir.CLASSES.values() if schema_of(c).bodies] + [Guarded, With]


def _holding(cls, inner):
    """A ``cls`` statement with ``inner`` in each of its bodies."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for name, f in fields.items():
        role = f.metadata.get("role")
        if role in ("body", "branch", "loop"):
            values[name] = (inner,)
        elif role == "expr":
            values[name] = ir.Name("flag")
        elif role in ("targets", "carries"):
            values[name] = ()
    return cls(**values)


def test_the_ir_classes_with_bodies_are_found_from_their_fields():
    assert {ir.If, ir.While} <= set(BODIED)
    assert schema_of(ir.If).conditional == ("body", "orelse") and schema_of(ir.While).conditional


@pytest.mark.parametrize("cls", BODIED, ids=lambda c: c.__name__)
def test_every_walker_and_pass_reaches_every_body(cls):
    inner = ir.Call("hidden", ir.GlobalRef("torch", "neg"), (ir.Name("x"),))
    stmt = _holding(cls, inner)
    assert inner in list(ir.iter_statements([stmt]))
    seen = []
    ir.map_bodies(_program(stmt, ir.Return(ir.Name("x"))), lambda s: (seen.append(s), (s,))[1])
    assert inner in seen
    renamed = ir.map_stmt(stmt, local=str.upper, expr=lambda e: e)
    assert all(body[0].target == "HIDDEN" for body in _bodies(renamed))
    assert "x" in ir.reads(stmt)
    assert ("hidden" in ir.writes(stmt)) == (schema_of(cls).conditional == ())
    program = _program(stmt, ir.Return(ir.Name("x")))
    bound = bind_targets(program)
    assert all(type(b[0].callee) is ir.TargetRef for b in _bodies(bound.entry.body[0]))
    named = assign_names(bound)
    assert all(b[0].target == "hidden" for b in _bodies(named.entry.body[0]))


def _bodies(stmt):
    return [getattr(stmt, name) for name in schema_of(type(stmt)).bodies]


# -- templates at every depth ---------------------------------------------------


def test_a_before_call_override_writes_inside_a_branch_at_its_depth(tmp_path):
    (tmp_path / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n'
        "{% block before_call %}\n"
        "    # before {{ stmt.node | comment }}\n"
        "{% endblock %}\n"
    )
    specimen = SPECIMENS["control_flow"]()
    templates = Templates(tmp_path)
    code = stitchgen.generate(specimen.gm, templates=templates).code
    lines = code.splitlines()
    calls = [i for i, line in enumerate(lines) if "= inlined_true_graph_0_submod_0(" in line]
    assert len(calls) == 1
    call = lines[calls[0]]
    depth = call[: len(call) - len(call.lstrip())]
    assert depth == 3 * INDENT  # in the binder, the function, the branch
    assert lines[calls[0] - 1] == f"{depth}# before submod_0"
    fn = stitchgen.load(stitchgen.generate(specimen.gm, templates=templates))
    assert_runs_same(fn, specimen.gm, specimen.inputs)


@dataclasses.dataclass(frozen=True)
class Marked:
    """``if True:`` around a body that always runs (``ir.BODY``)."""

    body: tuple[Any, ...] = dataclasses.field(metadata=ir.BODY)
    template: ClassVar[str] = "marked"


def write_marked(emitter: Emitter, stmt: Marked, indent: str) -> None:
    emitter.line(f"{indent}if True:")
    emitter.nested(stmt.body, indent)


def _mark_calls(program):
    """A pass: every call, at any depth, inside a ``Marked``."""

    def mark(stmt):
        return (Marked((stmt,)),) if isinstance(stmt, ir.Calling) else (stmt,)

    return ir.map_bodies(program, mark)


def _calls(program):
    found = [s for fn in program.functions for s in ir.iter_statements(fn.body)]
    return [s for s in found if isinstance(s, ir.Calling)], [s for s in found if type(s) is Marked]


@pytest.mark.parametrize("own_block", [True, False], ids=["its-block", "its-writer"])
def test_a_kind_of_yours_renders_through_the_blocks_at_any_depth(tmp_path, own_block):
    """Review bugs C and the 10 of 19: a block named for a kind registered
    with ``kinds=`` (with its ``before_``/``after_``) is accepted and renders
    it; and the statements inside the kind's body, whoever writes it (that
    block's ``nested``, or the kind's writer through the generic block),
    render through the blocks too: ``before_call`` reaches every call."""
    blocks = "{% block before_call %}\n    # call {{ stmt.node | comment }}\n{% endblock %}\n"
    if own_block:
        blocks += (
            "{% block before_marked %}\n    # marked\n{% endblock %}\n"
            "{% block marked %}\n    if True:\n{{ nested(stmt.body) -}}\n"
            "{% endblock %}\n"
            "{% block after_marked %}\n    # end marked\n{% endblock %}\n"
        )
    (tmp_path / "function.py.j2").write_text(
        f'{{% extends "stitchgen/function.py.j2" %}}\n{blocks}'
    )
    templates = Templates(tmp_path, kinds={Marked: write_marked})
    assert templates.check().problems == []
    case = CASES["nested_cond"]("cpu")
    generated = stitchgen.generate(case.gm, templates=templates, passes=[_mark_calls])
    calls, guards = _calls(generated.program)
    code = generated.code
    assert len(calls) == 10 and len(guards) == len(calls)  # in both functions, every branch
    assert code.count("# call ") == len(calls)
    assert code.count("if True:") == len(guards)
    assert code.count("# marked") == code.count("# end marked") == (len(guards) if own_block else 0)
    for line in code.splitlines():  # each mark at its call's depth, right above the guard
        if "# call " in line:
            assert line.startswith(INDENT * 2)
    fn = stitchgen.load(generated, case.submods)
    for flag in (True, False):
        assert_runs_same(fn, case.gm, (case.inputs[0], flag))


def test_a_block_for_no_kind_is_still_refused(tmp_path):
    (tmp_path / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n{% block gaurded %}{% endblock %}\n'
    )
    problems = Templates(tmp_path, kinds=KINDS).check().problems
    assert len(problems) == 1 and "has no block 'gaurded'" in problems[0].message


@dataclasses.dataclass(frozen=True)
class Repeat:
    """``for _ in range(<count>):`` around a body that may run 0..n times
    (``ir.LOOP``, no ``Break``: it runs out)."""

    count: Any = dataclasses.field(metadata=ir.EXPR)
    body: tuple[Any, ...] = dataclasses.field(metadata=ir.LOOP)
    template: ClassVar[str] = "repeat"


def write_repeat(emitter: Emitter, stmt: Repeat, indent: str) -> None:
    emitter.line(f"{indent}for _ in range({emitter.writer.source(stmt.count)}):")
    emitter.nested(stmt.body, indent)


@pytest.mark.parametrize("count", [0, 1, 3])
def test_a_loop_kind_of_yours_runs_out_with_no_break(count):
    """Review bug E: ``ir.LOOP`` means "may run again"; only a ``While`` is
    left by a ``Break``. What the body binds is freed inside it."""
    append = ir.MethodRef(ir.Name("seen"), "append")
    program = _program(
        ir.Call("seen", ir.GlobalRef("builtins", "list"), ()),
        Repeat(
            ir.Name("n"),
            (ir.Call("y", NEG, (ir.Name("x"),)), ir.Call("z", append, (ir.Name("y"),))),
        ),
        ir.Return(ir.TupleExpr((ir.Name("x"), ir.Name("seen")))),
        params=("x", "n"),
    )
    program = insert_dels(program)
    ir.verify(program)
    loop = program.entry.body[1]
    assert ir.Del(("y", "z")) in loop.body  # freed inside, each iteration
    templates = Templates(kinds={Repeat: write_repeat})
    generated = stitchgen.generate(
        fx.symbolic_trace(lambda x, n: x), templates=templates, passes=[lambda p: program]
    )
    assert "for _ in range(n):" in generated.code
    x, seen = stitchgen.load(generated)(torch.ones(2), count)
    assert len(seen) == count and all(torch.equal(v, -torch.ones(2)) for v in seen)
    while_ = ir.While((), (ir.Call("y", NEG, (ir.Name("x"),)),))
    with pytest.raises(ProgramError, match="its body never breaks"):
        ir.verify(_program(while_, ir.Return(ir.Name("x"))))


def test_a_kind_of_yours_saves_no_artifact_it_could_not_read(tmp_path):
    program = insert_dels(_debug_branch())
    templates = Templates(kinds=KINDS)
    generated = stitchgen.generate(
        fx.symbolic_trace(lambda x, flag: -x), templates=templates, passes=[lambda p: program]
    )
    with pytest.raises(stitchgen.ArtifactError, match="Guarded"):
        generated.save(tmp_path / "artifact")
    assert not os.path.exists(tmp_path / "artifact")


def test_a_branchs_nodes_are_named_apart_from_the_functions():
    """A branch calls a piece whose getitems are named as the graph's own
    (``getitem``, ``getitem_1``): they get names of their own, and the
    piece (the root's twin) one function."""

    def piece(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        return (g.call_function(torch.sin, (x,)), g.call_function(torch.cos, (x,)))

    def unpacked(g: fx.Graph, x: Any) -> tuple[Any, Any]:
        out = g.call_module("submod_0", (x,))
        return tuple(g.call_function(operator.getitem, (out, i)) for i in range(2))

    def arm(g: fx.Graph) -> Any:
        return (g.call_function(torch.add, unpacked(g, g.placeholder("a"))),)

    def root(g: fx.Graph) -> Any:
        first, second = unpacked(g, g.placeholder("x"))
        pred = g.call_function(operator.gt, (g.call_function(torch.sum, (first,)), 0))
        arms = (g.get_attr("true_graph_0"), g.get_attr("false_graph_0"))
        picked = g.call_function(HIGHER_ORDER.cond, (pred, *arms, (second,)))
        return g.call_function(torch.mul, (g.call_function(operator.getitem, (picked, 0)), first))

    children = {"submod_0": tuple_piece(piece)}
    true_gm = graph_module({"submod_0": tuple_piece(piece)}, arm)
    gm = graph_module({**children, "true_graph_0": true_gm, "false_graph_0": _arm(torch.neg)}, root)
    code = _equal_on(Case(gm, ()), (torch.ones(3),), (-2 * torch.ones(3),))
    assert code.count("def inlined_submod_0(") == 1 and "getitem_3" in code


class _Mapped(torch.nn.Module):
    def forward(self, xs):
        from torch._higher_order_ops.map import map as mapped

        return mapped(lambda x: x.sin() * 2, xs)


def test_an_operator_left_as_a_call_is_said_with_why():
    """A warning of a public class names the node and the reason; each
    distinct message once, by Python's default filter."""
    gm = torch.export.export(_Mapped(), (torch.randn(3, 4),)).module()
    with pytest.warns(stitchgen.LeftAsCallWarning) as said:
        generated = stitchgen.generate(gm)
    (warning,) = said
    message = str(warning.message)
    assert message.startswith("node 'map_impl' (op call_function")
    assert "map_impl is called as the operator" in message and "lowers cond, " in message
    assert "const_map_impl(" in generated.code  # the operator, bound
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("default")
        stitchgen.generate(gm)
        stitchgen.generate(gm)
    assert len([w for w in again if w.category is stitchgen.LeftAsCallWarning]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a lowered one says nothing
        stitchgen.generate(CASES["cond_branches"]("cpu").gm)


@pytest.mark.parametrize(
    "settings",
    [("wrap_with_set_grad_enabled", (False,)), ("wrap_with_set_grad_enabled", (True,)),
     ("wrap_with_autocast", ("cpu", torch.bfloat16, True, None))],
)  # fmt: skip
def test_a_grad_mode_or_autocast_block_is_a_function_called_under_it(settings):
    """``wrap_with_set_grad_enabled`` and ``wrap_with_autocast`` (a
    ``torch.no_grad()`` or ``torch.autocast`` block, as torch 2.11 exports a
    ``transformers`` model's rotary embedding): the subgraph as a function
    of the program, run under the mode by ``stitchgen.runtime``."""
    name, given = settings

    def block(g: fx.Graph) -> Any:
        a, b = g.placeholder("a"), g.placeholder("b")
        return (g.call_function(torch.matmul, (a, b)), g.call_function(torch.sin, (a,)))

    def root(g: fx.Graph) -> Any:
        x, w = g.placeholder("x"), g.placeholder("w")
        out = g.call_function(getattr(HIGHER_ORDER, name), (*given, g.get_attr("submod_1"), x, w))
        first = g.call_function(operator.getitem, (out, 0))
        return g.call_function(torch.add, (first, g.call_function(operator.getitem, (out, 1))))

    gm = graph_module({"submod_1": graph_module({}, block)}, root)
    with warnings.catch_warnings():
        warnings.simplefilter("error", stitchgen.LeftAsCallWarning)
        generated = stitchgen.generate(gm)
    helper = "grad_mode" if name.endswith("enabled") else "autocast"
    assert f"runtime_{helper}(" in generated.code and "def inlined_submod_1(" in generated.code
    fn = stitchgen.load(generated)
    x, w = torch.randn(3, 3), torch.randn(3, 3)
    for inputs in [(x, w), (x.requires_grad_(), w)]:
        assert_runs_same(fn, gm, inputs)

"""Differential fuzzing: random stitching graphs against fx.Interpreter.

The normal suite runs a fixed number of examples; ``nox -s fuzz`` (or
``STITCHGEN_FUZZ_EXAMPLES=2000 pytest tests/e2e/test_fuzz.py``) runs the long
profile.
"""

import os

import pytest
import torch
import torch.fx as fx
from builders import SHAPES
from control_flow_graphs import control_flow_graphs
from golden_cases import loops_run_under_grad
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from oracle import assert_runs_same, assert_same
from stitching_graphs import stitching_graphs

import stitchgen
from stitchgen.ir import Del, Return, reads, writes

EXAMPLES = int(os.environ.get("STITCHGEN_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def check_dels(fn):
    """Every local not returned is deleted exactly once, right after its last
    use (or its definition); nothing is read after its del."""
    last_use: dict[str, int] = {p.name: -1 for p in fn.params}
    returned: set[str] = set()
    deleted_at: dict[str, int] = {}
    previous = -1  # index of the last non-Del statement
    for i, stmt in enumerate(fn.body):
        if isinstance(stmt, Del):
            for name in stmt.names:
                assert name not in deleted_at, f"{name} deleted twice in {fn.name}"
                deleted_at[name] = previous
            continue
        used = set(reads(stmt))
        read_after_del = used & set(deleted_at)
        assert not read_after_del, f"{sorted(read_after_del)} read after del in {fn.name}"
        if isinstance(stmt, Return):
            returned |= used
            continue
        for name in used:
            last_use[name] = i
        for target in writes(stmt):
            last_use.setdefault(target, i)
        previous = i
    for name, index in last_use.items():
        if name in returned:
            assert name not in deleted_at, f"returned {name} deleted in {fn.name}"
        else:
            assert deleted_at.get(name) == index, f"{name}: del not right after last use"


#: every shipped template set: each convention's constant policy and call shape
TEMPLATES = st.sampled_from([None, "vllm", "profiled"])


@FUZZ
@given(stitching_graphs(), st.sampled_from(["call", "flatten"]), TEMPLATES)
def test_random_stitching_graphs_match_the_interpreter(drawn, inline, templates):
    options = {"templates": templates, **SHAPES[inline]}
    generated = stitchgen.generate(drawn.gm, format=False, **options)
    for fn in generated.program.functions:
        check_dels(fn)
    again = stitchgen.generate(drawn.gm, format=False, **options)
    assert again.code == generated.code  # deterministic
    expected = fx.Interpreter(drawn.gm).run(*drawn.fresh_inputs())
    actual = stitchgen.load(generated)(*drawn.fresh_inputs())
    assert_same(actual, expected)


@settings(FUZZ, max_examples=max(1, EXAMPLES // 3))
@given(control_flow_graphs(), TEMPLATES)
def test_random_control_flow_graphs_match_the_interpreter_on_every_path(drawn, templates):
    """Branches and loops at random depths (a ``cond`` in a loop's body in
    a branch...), each flag both ways and loops run 0, 1 and 2 times."""
    generated = stitchgen.generate(drawn.gm, format=False, templates=templates)
    again = stitchgen.generate(drawn.gm, format=False, templates=templates)
    assert again.code == generated.code  # deterministic
    assert "higher_order" not in generated.code  # every operator lowered
    fn = stitchgen.load(generated)
    for inputs in drawn.paths():
        assert_runs_same(fn, fx.Interpreter(drawn.gm).run, inputs, drawn.gm)


@pytest.mark.slow  # the operators trace their branches under grad: about 0.5 s a graph
@settings(FUZZ, max_examples=max(1, EXAMPLES // 5))
@given(  # (loops: where torch's own while_loop, the oracle, runs under grad without metadata)
    control_flow_graphs(depth=2, writes=False, subgraphs=False, loops=loops_run_under_grad())
)
def test_random_control_flow_graphs_give_the_operators_gradients_on_every_path(drawn):
    """With ``x`` and ``y`` requiring grad: the same outputs require grad and
    every input gets the same gradient (zeros where a path never reads it),
    but at a loop that runs no iteration, where the operator's backward runs
    one body step (ruled: ours is the identity's, the README says so). Not
    drawn: a loop whose value reaches a cond inside another operator's
    subgraph, where torch's backward can be wrong (torch 2.11 to 2.15:
    ``test_control_flow.py`` holds the code to autograd's gradient there)."""
    assume(not _loop_feeds_a_cond_in_a_subgraph(drawn.gm))  # (torch's gradient: wrong there)
    fn = stitchgen.compile(drawn.gm)
    graphs = (m.graph for m in drawn.gm.modules() if isinstance(m, fx.GraphModule))
    loops = any("while_loop" in str(graph) for graph in graphs)
    for inputs in drawn.paths(grad=True):
        if int(inputs[-1]) == 0 and loops:
            continue
        assert_runs_same(fn, fx.Interpreter(drawn.gm).run, inputs, drawn.gm)


def _loop_feeds_a_cond_in_a_subgraph(gm):
    """Does a ``while_loop``'s value reach a ``cond`` (through any nodes) in
    a subgraph of ``gm``?"""
    for name, module in gm.named_modules():
        if not name or not isinstance(module, fx.GraphModule):
            continue
        reached = set()
        for node in module.graph.nodes:
            fed = any(a in reached for a in node.all_input_nodes)
            if fed and node.target is torch.ops.higher_order.cond:
                return True
            if fed or node.target is torch.ops.higher_order.while_loop:
                reached.add(node)
    return False

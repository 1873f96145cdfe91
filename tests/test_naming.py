"""Every emitted identifier is valid and collision-free."""

import keyword
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.fx as fx
from oracle import assert_same

import stitchgen
from stitchgen.demo import split_decoder
from stitchgen.identifiers import Namespace, sanitize


def test_namespace_suffixes_taken_names_and_avoids_keywords_and_builtins():
    ns = Namespace()
    assert [ns.create(h) for h in ["x", "x", "class", "print", "inf", "nan", "x_1"]] == [
        "x",
        "x_1",
        "class_1",
        "print_1",
        "inf_1",
        "nan_1",
        "x_2",  # FX's rule: a taken x_1 becomes x_2
    ]
    assert [ns.create(h) for h in ["y_3", "y_3", "y", "y"]] == ["y_3", "y_4", "y", "y_5"]


@pytest.mark.parametrize("hint", ["a-b", "1x", "", "ﬁ", "x.y", "é"])
def test_sanitize_makes_ascii_identifiers(hint):
    name = sanitize(hint)
    assert name.isascii() and name.isidentifier() and not keyword.iskeyword(name)


def test_placeholder_named_torch_does_not_shadow_the_module():
    """FX keeps `torch` as a parameter of its forward and then breaks on
    `torch.relu(...)`; the generated code renames the parameter."""
    graph = fx.Graph()
    t = graph.placeholder("torch")
    graph.output(graph.call_function(torch.relu, (t,)))
    gm = fx.GraphModule({}, graph)
    x = torch.randn(4)
    with pytest.raises(TypeError):
        gm(x)  # FX's own forward: `torch` is the tensor here
    generated = stitchgen.generate(gm)
    assert "def execution_fn(torch_1):" in generated.code
    assert_same(stitchgen.load(generated)(x), fx.Interpreter(gm).run(x))


@pytest.mark.parametrize(
    "bad", ["class", "lambda", "a-b", "1x", "ﬁ", "torch", "bind", "execution_fn", "float"]
)
def test_adversarial_node_names_render_valid_correct_code(bad):
    graph = fx.Graph()
    x = graph.placeholder("x")
    y = graph.call_function(torch.neg, (x,))
    z = graph.call_function(torch.add, (y, float("inf")))
    y.name, z.name = bad, bad + "_out"
    graph.output((y, z))
    gm = _lazy(graph)  # FX's own codegen cannot spell these names
    fn = stitchgen.compile(gm)
    x_val = torch.randn(3)
    assert_same(fn(x_val), fx.Interpreter(gm).run(x_val))


def _lazy(graph):
    from torch.fx._lazy_graph_module import _make_graph_module, _use_lazy_graph_module

    with _use_lazy_graph_module(True):
        return _make_graph_module({}, graph)


def test_keyword_arguments_follow_renamed_parameters_of_inlined_pieces():
    piece_graph = fx.Graph()
    a = piece_graph.placeholder("torch")
    b = piece_graph.placeholder("len")
    piece_graph.output((piece_graph.call_function(torch.sub, (a, b)),))
    piece = fx.GraphModule({}, piece_graph)
    graph = fx.Graph()
    x, y = graph.placeholder("x"), graph.placeholder("y")
    out = graph.call_module("piece", (), {"len": y, "torch": x})
    graph.output(graph.call_function(__import__("operator").getitem, (out, 0)))
    gm = fx.GraphModule({"piece": piece}, graph)
    generated = stitchgen.generate(gm)
    assert "inlined_piece(len_1=y, torch_1=x)" in generated.code
    x, y = torch.tensor([5.0]), torch.tensor([2.0])
    with pytest.raises(TypeError):
        gm(x, y)  # FX's own forward of the piece: `torch` is a tensor there
    assert_same(stitchgen.load(generated)(x, y), fx.Interpreter(piece).run(x, y)[0])


def test_entry_name_must_be_a_free_identifier():
    gm = fx.symbolic_trace(lambda x: x + 1)
    with pytest.raises(ValueError, match="identifier"):
        stitchgen.generate(gm, name="not valid")
    with pytest.raises(ValueError, match="shadow"):
        stitchgen.generate(gm, name="print")
    generated = stitchgen.generate(gm, name="bind")  # our helper steps aside
    assert "def bind_1():" in generated.code and "def bind(x):" in generated.code
    assert stitchgen.load(generated)(1) == 2


def test_two_independent_traces_give_identical_code():
    first = stitchgen.generate(split_decoder(2)[0]).code
    second = stitchgen.generate(split_decoder(2)[0]).code
    assert first == second


@pytest.mark.slow  # fresh processes, one per hash seed: about 4.5 s
def test_code_is_identical_across_processes_and_hash_seeds():
    script = (
        "import stitchgen\n"
        "from stitchgen.demo import split_decoder\n"
        "print(stitchgen.generate(split_decoder(1)[0]).code, end='')\n"
    )
    here = stitchgen.generate(split_decoder(1)[0]).code
    # the two interpreters run side by side (each imports torch: seconds)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            cwd=Path(__file__).parent,
        )
        for seed in ("0", "12345")
    ]
    try:
        for child in children:
            out, err = child.communicate(timeout=120)
            assert child.returncode == 0, err
            assert out == here
    finally:
        for child in children:  # one still running after a failure: stopped and reaped
            if child.poll() is None:
                child.kill()
                child.wait()

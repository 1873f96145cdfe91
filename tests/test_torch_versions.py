"""What differs between torch releases (stitchgen.torch_versions): each
difference handled, and each proven on whichever torch runs the suite.

torch < 2.12 has no ``split_module(tuple_return=True)``: its pieces with one
output return the bare value, and the stitching graph uses the call's result
without a ``getitem`` (SGLang splits that way on every release). Such graphs
are built here with ``split_module`` itself, which makes them on every torch.
"""

import logging
import operator

import pytest
import torch
import torch.fx as fx
from builders import SHAPES
from oracle import assert_runs_same, assert_same
from torch.fx._lazy_graph_module import (
    _LazyGraphModule,
    _make_graph_module,
    _use_lazy_graph_module,
)
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.passes.split_module import split_module

import stitchgen
from stitchgen.compat import compile_execution_fn, generate_execution_code
from stitchgen.demo import decoder, decoder_inputs
from stitchgen.split import SplitOps, partition
from stitchgen.torch_versions import (
    fx_repr,
    split_returns_tuples,
    split_tupled,
    tuple_single_outputs,
)

ATTN = torch.ops.stitchgen_demo.attention


def _traced(n_layers=2):
    inputs = decoder_inputs(n_layers)
    gm = make_fx(decoder(n_layers))(*inputs)
    pieces, _ = partition(gm, SplitOps([ATTN]))
    return gm, inputs, lambda node: pieces[node]


def _bare_split(n_layers=2, lazy=False):
    """The decoder split as torch < 2.12 (and SGLang) split it: attention
    pieces and the last piece return one bare value each."""
    gm, inputs, part = _traced(n_layers)
    with _use_lazy_graph_module(lazy):
        split = split_module(gm, None, part, keep_original_order=True)
    return gm, inputs, split


def _shape(gm):
    """Everything the code generators read of a graph, node by node."""
    return [
        (n.name, n.op, n.target, repr(n.args), repr(n.kwargs), n.type, sorted(n.meta))
        for n in gm.graph.nodes
    ]


def _bare_calls(split):
    calls = split.graph.find_nodes(op="call_module")
    return [n for n in calls if not any(u.target is operator.getitem for u in n.users)]


def test_the_bare_split_has_single_output_pieces_used_without_getitem():
    _, _, split = _bare_split()
    bare = _bare_calls(split)
    assert [n.name for n in bare] == ["submod_1", "submod_3", "submod_4"]
    for node in bare:
        value = split.get_submodule(node.target).graph.output_node().args[0]
        assert isinstance(value, fx.Node)  # returned bare, no tuple


def test_tuple_single_outputs_makes_every_piece_return_a_tuple_unpacked_in_order():
    _, inputs, split = _bare_split()
    expected = split(*inputs)
    tuple_single_outputs(split)
    assert _bare_calls(split) == []
    for _, child in split.named_children():
        assert isinstance(child.graph.output_node().args[0], tuple)
    getitems = [n.name for n in split.graph.nodes if n.target is operator.getitem]
    # named as split_module(tuple_return=True) names them: counted over all pieces
    assert getitems == ["getitem"] + [f"getitem_{i}" for i in range(1, len(getitems))]
    assert torch.equal(split(*inputs), expected)


@pytest.mark.skipif(not split_returns_tuples(), reason="torch < 2.12: no tuple_return to match")
def test_tuple_single_outputs_is_split_modules_tuple_return_node_for_node():
    gm, _, part = _traced()
    native = split_module(gm, None, part, keep_original_order=True, tuple_return=True)
    _, _, ours = _bare_split()
    tuple_single_outputs(ours)
    assert _shape(ours) == _shape(native)
    assert ours.code == native.code
    for (name, mine), (_, theirs) in zip(
        ours.named_children(), native.named_children(), strict=True
    ):
        assert _shape(mine) == _shape(theirs), name
        assert mine.code == theirs.code, name


def test_split_tupled_gives_the_same_split_whichever_path_this_torch_takes():
    gm, inputs, part = _traced()
    split = split_tupled(gm, part)
    _, _, fallback = _bare_split()
    tuple_single_outputs(fallback)
    assert _shape(split) == _shape(fallback) and split.code == fallback.code
    assert stitchgen.generate(split).code == stitchgen.generate(fallback).code
    assert torch.equal(stitchgen.compile(split)(*inputs), gm(*inputs))


def test_tuple_single_outputs_leaves_a_tupled_split_as_it_is():
    gm, _, part = _traced(1)
    split = split_tupled(gm, part)
    graph, code = split.graph, split.code
    tuple_single_outputs(split)
    assert split.graph is graph and split.code == code


COMPILES = {
    "inlined": lambda split: stitchgen.compile(split),
    "flatten": lambda split: stitchgen.compile(split, **SHAPES["flatten"]),
    "opaque": lambda split: stitchgen.compile(split, dict(split.named_children())),
    "vllm": lambda split: stitchgen.compile(split, templates="vllm"),
}


@pytest.mark.parametrize("lazy", [False, True], ids=["eager-children", "lazy-children"])
@pytest.mark.parametrize("path", list(COMPILES))
def test_a_stitching_graph_with_bare_single_outputs_compiles_on_every_path(path, lazy):
    gm, inputs, split = _bare_split(lazy=lazy)
    assert _bare_calls(split)
    fn = COMPILES[path](split)
    for scale in (1.0, -0.5, 3.0):
        fresh = tuple(x * scale for x in inputs)
        assert_runs_same(fn, split, fresh)
        assert_runs_same(fn, gm, fresh)


@pytest.mark.parametrize("bound", [False, True], ids=["inlined", "bound"])
@pytest.mark.parametrize("lazy", [False, True], ids=["eager-children", "lazy-children"])
def test_compat_takes_a_stitching_graph_with_bare_single_outputs(lazy, bound):
    gm, inputs, split = _bare_split(lazy=lazy)
    expected = split(*inputs)
    compiled = {}
    if bound:  # as vLLM binds compiled pieces: into __dict__, shadowing the children
        for name, child in list(split.named_children()):
            compiled[name] = split.__dict__[name] = lambda *a, _child=child: _child(*a)
    code, submod_names, consts = generate_execution_code(split)
    assert submod_names == [f"submod_{i}" for i in range(5)]
    assert ("__vllm_submods__[4](" in code) is bound
    fn = compile_execution_fn(code, compiled, submod_names, consts)
    for scale in (1.0, -0.5):
        fresh = tuple(x * scale for x in inputs)
        assert_runs_same(fn, gm, fresh)
    assert_same(fn(*inputs), expected)


def test_lazy_children_are_read_before_their_code_is_compiled():
    """torch 2.12+ builds _LazyGraphModule pieces under
    _use_lazy_graph_module(True), as Dynamo and vLLM split: the lowering reads
    their graphs without needing their code, on every torch."""
    gm, inputs, part = _traced()
    with _use_lazy_graph_module(True):
        split = split_tupled(gm, part)
        lazy = _LazyGraphModule(split, split.graph)  # a lazy stitching graph on every torch
    for name, child in split.named_children():
        lazy.add_submodule(name, _LazyGraphModule(child, child.graph))
    pending = [c for c in lazy.children() if c._needs_recompile()]
    assert len(pending) == 5
    generated = stitchgen.generate(lazy)
    assert generated.code == stitchgen.generate(split).code
    assert torch.equal(stitchgen.load(generated)(*inputs), gm(*inputs))


def test_placements_have_the_source_form_torch_2_12_gives_them_on_every_torch():
    """torch < 2.12's placements have no __fx_repr__: fx_repr writes the text
    2.12's does, so an artifact stores them by source on every release."""
    from torch.distributed.tensor.placement_types import Partial, Replicate, Shard

    prefix = "torch.distributed.tensor.placement_types."
    cases = {
        Shard(1): f"{prefix}Shard(dim=1)",
        Replicate(): f"{prefix}Replicate()",
        Partial(): f"{prefix}Partial('sum')",
        Partial("avg"): f"{prefix}Partial('avg')",
    }
    for value, text in cases.items():
        assert fx_repr(value) == (text, {})
        back = eval(text, {"torch": torch})
        assert type(back) is type(value) and back == value


def test_a_value_without_a_source_form_has_none():
    assert fx_repr(object()) is None
    assert fx_repr(torch.ones(1)) is None


def _lazy(graph):
    with _use_lazy_graph_module(True):  # FX's own code cannot spell every constant
        return _make_graph_module({}, graph)


def test_refusing_a_reference_type_logs_no_deprecation_on_any_torch():
    """torch 2.14 renamed opaque reference types symbolic, and its
    is_opaque_reference_type warns on every call: the lowering asks the
    check this torch names without a warning, for every argument it lifts."""
    from opaque_types import Cache, LayerName

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("torch._library.opaque_object")
    logger.addHandler(handler)
    try:
        graph = fx.Graph()
        x = graph.placeholder("x")
        graph.output((graph.call_function(torch.neg, (x,)), LayerName("a"), torch.float16))
        assert stitchgen.generate(_lazy(graph)).consts  # lifted, checked
        graph = fx.Graph()
        graph.output((graph.placeholder("x"), Cache()))
        with pytest.raises(stitchgen.CodegenError, match="reference-type opaque object"):
            stitchgen.generate(_lazy(graph))
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage() for r in records] == []

"""split_graph: each split op alone in its piece, tuple-returning pieces."""

import operator

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import stitchgen
from stitchgen.demo import decoder, decoder_inputs


def _traced(n_layers=2):
    inputs = decoder_inputs(n_layers)
    return make_fx(decoder(n_layers))(*inputs), inputs


ATTN = torch.ops.stitchgen_demo.attention


@pytest.mark.parametrize(
    "op",
    [ATTN.default, ATTN, "stitchgen_demo::attention", "stitchgen_demo::attention.default"],
    ids=["overload", "packet", "name", "overload-name"],
)
def test_every_spelling_of_the_split_op_gives_the_same_split(op):
    gm, inputs = _traced()
    split = stitchgen.split_graph(gm, [op])
    children = dict(split.named_children())
    assert list(children) == [f"submod_{i}" for i in range(5)]
    for name in ("submod_1", "submod_3"):  # the attention pieces hold nothing else
        ops = [n.target for n in children[name].graph.nodes if n.op == "call_function"]
        assert ops == [ATTN.default]
    calls = [n for n in split.graph.nodes if n.op == "call_module"]
    assert all(all(u.target is operator.getitem for u in n.users) for n in calls)
    assert torch.equal(stitchgen.compile(split)(*inputs), gm(*inputs))


def test_an_op_not_in_the_graph_leaves_one_piece():
    gm, inputs = _traced(1)
    split = stitchgen.split_graph(gm, ["aten::relu"])
    assert [name for name, _ in split.named_children()] == ["submod_0"]
    assert torch.equal(stitchgen.compile(split)(*inputs), gm(*inputs))


def test_bad_split_ops_are_refused():
    gm, _ = _traced(1)
    with pytest.raises(ValueError, match="'ns::op' or 'ns::op.overload'"):
        stitchgen.split_graph(gm, ["relu"])
    with pytest.raises(TypeError, match="split ops are OpOverload"):
        stitchgen.split_graph(gm, [3])
    with pytest.raises(TypeError, match="expects a torch.fx.GraphModule"):
        stitchgen.split_graph(decoder(1), ["aten::relu"])

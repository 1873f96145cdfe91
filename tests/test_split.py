"""split_graph: each split op alone in its piece, tuple-returning pieces."""

import operator
import warnings

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


def test_split_ops_are_alternatives_an_op_not_in_the_graph_is_fine():
    gm, inputs = _traced(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # 'vllm::unified_attention' is not even registered in this process
        split = stitchgen.split_graph(gm, ["aten::relu", "vllm::unified_attention", ATTN])
    assert [name for name, _ in split.named_children()] == [f"submod_{i}" for i in range(3)]
    assert torch.equal(stitchgen.compile(split)(*inputs), gm(*inputs))


def test_when_no_op_matches_the_error_names_every_op():
    gm, _ = _traced(1)
    with pytest.raises(stitchgen.CodegenError, match="split op 'aten::relu' matches no call"):
        stitchgen.split_graph(gm, ["aten::relu"])
    with pytest.raises(
        stitchgen.CodegenError,
        match=r"none of the split ops \('aten::relu', 'vllm::unified_attention'\) matches",
    ):
        stitchgen.split_graph(gm, ["aten::relu", "vllm::unified_attention"])


def test_with_strict_false_no_op_matching_is_a_warning_and_one_piece():
    gm, inputs = _traced(1)
    with pytest.warns(UserWarning, match=r"split op 'aten::relu\.default' matches no call"):
        split = stitchgen.split_graph(gm, [torch.ops.aten.relu.default], strict=False)
    assert [name for name, _ in split.named_children()] == ["submod_0"]
    assert torch.equal(stitchgen.compile(split)(*inputs), gm(*inputs))


class _Alibi(torch.nn.Module):
    def forward(self, bias, q, k):
        return bias.baddbmm(q, k) * 2


def test_a_method_call_is_named_as_the_reason_an_op_matches_nothing():
    gm = torch.fx.symbolic_trace(_Alibi())
    with pytest.raises(stitchgen.CodegenError) as info:
        stitchgen.split_graph(gm, [torch.baddbmm])
    message = str(info.value)
    assert "split op torch.baddbmm matches no call" in message
    assert "calls .baddbmm() as a method ('baddbmm')" in message
    assert "match only function calls" in message


def test_bad_split_ops_are_refused():
    gm, _ = _traced(1)
    with pytest.raises(ValueError, match="'ns::op' or 'ns::op.overload'"):
        stitchgen.split_graph(gm, ["relu"])
    with pytest.raises(TypeError, match="split ops are OpOverload"):
        stitchgen.split_graph(gm, [3])
    with pytest.raises(ValueError, match="no split ops given"):
        stitchgen.split_graph(gm, [])
    with pytest.raises(TypeError, match="expects a torch.fx.GraphModule"):
        stitchgen.split_graph(decoder(1), ["aten::relu"])


@pytest.mark.parametrize(
    "op, meant",
    [("aten::reluu", "'aten::relu'"), ("aten::relu_.default", "'aten::relu.default'")],
)
def test_a_misspelt_split_op_gets_did_you_mean(op, meant):
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda x: torch.relu(x) * 2)(torch.randn(3))
    with pytest.raises(
        stitchgen.CodegenError, match=f"matches no call in the graph; did you mean {meant}"
    ):
        stitchgen.split_graph(gm, [op])

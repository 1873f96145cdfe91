"""The torch.compile backend: Dynamo graphs, dynamic shapes, recompiles."""

import re
import warnings

import pytest
import torch

import stitchgen
from stitchgen.demo import attention  # noqa: F401  (defines stitchgen_demo::attention)

ATTN = torch.ops.stitchgen_demo.attention


class Block(torch.nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.out = torch.nn.Linear(hidden, hidden)
        self.hidden = hidden

    def forward(self, x):
        q, k, v = self.qkv(x).split(self.hidden, dim=-1)
        a = ATTN(q, k, v)
        y = self.out(a) + x
        q2, k2, v2 = self.qkv(y).split(self.hidden, dim=-1)
        return ATTN(q2, k2, v2)[: x.shape[0] - 1] * x.shape[0]


class Recorder:
    """A compile_piece that records what it was given and runs pieces as is."""

    def __init__(self):
        self.pieces = []
        self.graphs = 0

    def __call__(self, piece, example_inputs):
        self.pieces.append((piece, example_inputs))
        return piece


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize(
    "split_op",
    [ATTN, ATTN.default, "stitchgen_demo::attention", "stitchgen_demo::attention.default"],
)
def test_dynamic_shapes_compile_once_for_three_sequence_lengths(split_op):
    torch.manual_seed(0)
    model = Block()
    recorder = Recorder()
    compiled = torch.compile(
        model, backend=stitchgen.backend([split_op], compile_piece=recorder), dynamic=True
    )
    for tokens in (5, 9, 17):
        x = torch.randn(tokens, 8)
        assert torch.equal(compiled(x), model(x))
    assert len(recorder.pieces) == 5  # compiled once: 2 attention pieces and 3 around them
    ops = [
        [n.target for n in piece.graph.nodes if n.op == "call_function"]
        for piece, _ in recorder.pieces[1::2]
    ]
    assert ops == [[ATTN], [ATTN]]
    examples = recorder.pieces[0][1]
    assert any(isinstance(e, torch.SymInt) for e in examples)
    assert all(isinstance(e, (torch.Tensor, torch.SymInt)) for e in examples)


def _counting(graphs):
    def compile_graph(gm, example_inputs):
        graphs.append(gm)
        return stitchgen.backend([ATTN])(gm, example_inputs)

    return compile_graph


def test_mark_dynamic_compiles_one_graph_for_all_lengths():
    torch.manual_seed(0)
    model, graphs = Block(), []
    compiled = torch.compile(model, backend=_counting(graphs))
    x = torch.randn(6, 8)
    torch._dynamo.mark_dynamic(x, 0)
    assert torch.equal(compiled(x), model(x))
    for tokens in (3, 11):
        y = torch.randn(tokens, 8)
        assert torch.equal(compiled(y), model(y))
    assert len(graphs) == 1


def test_a_failed_guard_recompiles_through_the_backend():
    torch.manual_seed(0)
    model, graphs = Block(), []
    compiled = torch.compile(model, backend=_counting(graphs), dynamic=False)
    for tokens in (5, 9, 5):
        x = torch.randn(tokens, 8)
        assert torch.equal(compiled(x), model(x))
    assert len(graphs) == 2  # 5 tokens, then 9 (guard on the shape fails); 5 again is cached


def test_generate_options_reach_the_stitching_code():
    torch.manual_seed(0)
    model = Block()
    compiled = torch.compile(model, backend=stitchgen.backend([ATTN], templates="profiled"))
    x = torch.randn(4, 8)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = compiled(x)
    assert torch.equal(out, model(x))
    assert "submod_1" in {e.name for e in prof.events()}


def test_pieces_without_example_values_are_refused_by_name():
    gm = torch.fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    compile_graph = stitchgen.backend([torch.relu], compile_piece=Recorder())
    with pytest.raises(stitchgen.CodegenError, match="piece 'submod_1' input 'x' has no example"):
        compile_graph(gm, [torch.randn(2)])


def test_boxed_is_refused_at_construction_with_the_reason():
    with pytest.raises(ValueError, match="boxed=True cannot work in a torch.compile backend"):
        stitchgen.backend([ATTN], boxed=True)


def test_an_unknown_generate_option_is_refused_at_construction():
    with pytest.raises(TypeError, match=r"unknown generate option\(s\) \['inlined'\]"):
        stitchgen.backend([ATTN], inlined="yes")


@pytest.mark.filterwarnings("ignore:Using `torch.compile")
def test_opaque_pieces_are_called_as_the_modules_they_are():
    torch.manual_seed(0)
    model, called = Block(), []

    def record(module, args):
        if isinstance(module, torch.fx.GraphModule):
            called.append(module)

    compiled = torch.compile(model, backend=stitchgen.backend([ATTN], opaque=["submod_1"]))
    x = torch.randn(4, 8)
    expected = model(x)
    handle = torch.nn.modules.module.register_module_forward_pre_hook(record)
    try:
        out = compiled(x)  # compiles (Dynamo calls no module) and runs
        called.clear()
        out = compiled(x)
    finally:
        handle.remove()
    assert torch.equal(out, expected)
    assert len(called) == 1  # submod_1 through Module.__call__; the other pieces inlined


def test_vllm_templates_work_through_the_backend():
    torch.manual_seed(0)
    model = Block()
    compiled = torch.compile(model, backend=stitchgen.backend([ATTN], templates="vllm"))
    x = torch.randn(4, 8)
    assert torch.equal(compiled(x), model(x))


class Broken(torch.nn.Module):
    """Attention, a graph break, then a tail with no split op (an LM head)."""

    def __init__(self, hidden=8):
        super().__init__()
        self.block = Block(hidden)
        self.head = torch.nn.Linear(hidden, 3)

    def forward(self, x):
        y = self.block(x)
        torch._dynamo.graph_break()
        return self.head(y).softmax(-1)


def _same_without_split_warnings(compiled, model, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # Dynamo warns of its own; we may not
        assert torch.equal(compiled(x), model(x))
    assert not [w for w in caught if "split op" in str(w.message)]


def test_a_graph_without_a_split_op_compiles_as_one_piece_silently():
    torch.manual_seed(0)
    model = Broken()
    recorder = Recorder()
    compiled = torch.compile(model, backend=stitchgen.backend([ATTN], compile_piece=recorder))
    _same_without_split_warnings(compiled, model, torch.randn(4, 8))
    # the block's 5 pieces, then the tail after the break as one piece
    assert len(recorder.pieces) == 6
    tail = recorder.pieces[-1][0]
    assert not any(n.target is ATTN.default for n in tail.graph.nodes)


def test_strict_makes_a_graph_without_a_split_op_an_error_naming_the_ops():
    def double(x):
        return x * 2

    ops = ["stitchgen_demo::attention", "vllm::unified_attention"]
    backend = stitchgen.backend(ops, strict=True)
    with pytest.raises(Exception, match=r"none of the split ops \('stitchgen_demo::attention', "):
        torch.compile(double, backend=backend)(torch.ones(2))


@pytest.mark.parametrize(
    "ops",
    [
        [ATTN, "vllm::unified_attention", "vllm::mamba_mixer2"],
        ["vllm::unified_attention_with_output", ATTN.default],
        [torch.softmax, "stitchgen_demo::attention"],
    ],
    ids=["vllm-list", "overload-last", "spellings"],
)
def test_split_ops_are_alternatives_in_the_backend(ops):
    torch.manual_seed(0)
    model = Block()
    recorder = Recorder()
    compiled = torch.compile(model, backend=stitchgen.backend(ops, compile_piece=recorder))
    _same_without_split_warnings(compiled, model, torch.randn(4, 8))
    assert len(recorder.pieces) == 5


def test_bad_split_ops_are_refused_at_construction():
    with pytest.raises(ValueError, match="no split ops given"):
        stitchgen.backend([])
    with pytest.raises(ValueError, match="'ns::op' or 'ns::op.overload'"):
        stitchgen.backend(["attention"])


# -- the front doors: the backend uncalled, by name, with torch.compile's options


def _graphs_seen(monkeypatch):
    """The graphs the backend compiles whole (through ``compile_with``)."""
    from stitchgen import torch_backend

    seen = []
    real = torch_backend.compile_with

    def recording(gm, submods, options):
        seen.append((gm, options))
        return real(gm, submods, options)

    monkeypatch.setattr(torch_backend, "compile_with", recording)
    return seen


@pytest.mark.parametrize("backend", [stitchgen.backend, "stitchgen"])
def test_the_backend_uncalled_or_by_name_compiles_each_graph_whole(backend, monkeypatch):
    """``torch.compile(model, backend=stitchgen.backend)`` (and the name torch's
    entry point registers): the graph as one function, no split."""
    seen = _graphs_seen(monkeypatch)
    torch.manual_seed(0)
    model = Block()
    x = torch.randn(4, 8)
    assert torch.equal(torch.compile(model, backend=backend)(x), model(x))
    ((gm, options),) = seen
    assert not list(gm.children()) and options.format is False  # no piece: nothing split


@pytest.mark.parametrize("backend", [stitchgen.backend, "stitchgen"])
def test_torch_compile_options_are_the_backend_arguments(backend, monkeypatch):
    seen = _graphs_seen(monkeypatch)
    torch.manual_seed(0)
    model = Block()
    options = {"split_ops": ["stitchgen_demo::attention"], "templates": "profiled"}
    compiled = torch.compile(model, backend=backend, options=options)
    x = torch.randn(4, 8)
    assert torch.equal(compiled(x), model(x))
    ((split, chosen),) = seen
    assert len(list(split.children())) == 5  # two attention calls, three pieces around them
    assert chosen.templates == "profiled"


@pytest.mark.parametrize(
    "given, message",
    [
        ({"options": {"bogus": 1}}, r"options=\.\.\.\): unknown generate option\(s\) \['bogus'\]"),
        ({"options": {"format": "no"}}, "option 'format' takes bool, not str"),
        ({"mode": "max-autotune"}, "takes no torch.compile mode"),
    ],
)
def test_what_the_backend_cannot_take_from_torch_compile_is_a_type_error(given, message):
    compiled = torch.compile(lambda x: x * 2, backend=stitchgen.backend, **given)
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as failed:
        compiled(torch.ones(2))
    assert isinstance(failed.value.inner_exception, TypeError)
    assert re.search(message, str(failed.value.inner_exception))


def test_a_split_at_nothing_points_to_the_uncalled_backend():
    with pytest.raises(ValueError, match=r"uncalled: torch.compile\(model, backend=stitchgen"):
        stitchgen.backend([])

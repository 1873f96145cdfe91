"""stitchgen.compat against vLLM 0.34's documented codegen contract.
Written from the documented behaviour of ``vllm/compilation/codegen.py``:

* ``generate_execution_code(split_gm) -> (code, submod_names, consts)``;
  ``generate_execution_code_with_name(split_gm, fn_name, with_submod,
  consts=None, const_index=None)`` returns the same triple, appending new
  constants to the ``consts`` it was given (and ``const_index``, id → index).
* ``submod_names`` lists every ``call_module`` target in first-call order,
  inlined ``GraphModule`` children too (``__vllm_submods__[i]`` is the
  ``i``-th); an inlined child calling a module, or any ``call_module`` with
  ``with_submod=False``, is a ``RuntimeError``.
* Every argument that is not an int, float, bool, str, bytes, None or a
  list/tuple/dict display is a constant, deduplicated by identity in
  first-use order (pieces walked at their call site), shared by all pieces.
* ``compile_execution_fn(code, submod_callables, submod_names, consts=None)``
  execs the code with ``__vllm_consts__`` as a global (absent for
  ``consts=None``) and binds ``execution_fn`` with
  ``partial(fn, __vllm_submods__=[submod_callables.get(n) for n in names])``.
"""

from __future__ import annotations

import functools
import inspect
import operator

import pytest
import torch
import torch.fx as fx
from oracle import assert_runs_same, assert_same
from torch.fx.experimental.proxy_tensor import make_fx

import stitchgen
from stitchgen import compat

VLLM_INLINE = (int, float, bool, str, bytes, type(None))


def vllm_style_load(code, submod_callables, submod_names, consts=None):
    """How vLLM's compile_execution_fn binds code (from its documentation)."""
    namespace = {} if consts is None else {"__vllm_consts__": consts}
    exec(code, namespace)
    pieces = [submod_callables.get(name) for name in submod_names]
    return functools.partial(namespace["execution_fn"], __vllm_submods__=pieces)


def documented_consts(split_gm):
    """The constants the contract lists, by a walk of its own: arguments in
    node order, an inlined child's at its call site, by identity."""
    found, seen = [], set()

    def leaves(arg):
        if isinstance(arg, fx.Node):
            return
        if isinstance(arg, (list, tuple)):
            for x in arg:
                yield from leaves(x)
        elif isinstance(arg, dict):
            for k, v in arg.items():
                yield from leaves(k)
                yield from leaves(v)
        elif type(arg) not in VLLM_INLINE:
            yield arg

    def walk(gm):
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                continue
            for leaf in (*leaves(node.args), *leaves(dict(node.kwargs))):
                if id(leaf) not in seen:
                    seen.add(id(leaf))
                    found.append(leaf)
            if node.op == "call_module":
                child = getattr(gm, node.target)
                if isinstance(child, fx.GraphModule):
                    walk(child)

    walk(split_gm)
    return found


def _casts(x, w):
    a = x.to(torch.float16) * 2
    b = torch.relu(a)
    c = b.to(torch.float32)[..., 1:3] + torch.ones(2, dtype=torch.float32, device="cpu")
    d = torch.relu(c)
    return d.to(torch.float16).sum(dtype=torch.float32) + w


def casts_split():
    """Pieces whose arguments carry dtypes (in two pieces each) and a device."""
    inputs = (torch.randn(4, 4), torch.randn(()))
    gm = make_fx(_casts)(*inputs)
    return stitchgen.split_graph(gm, ["aten::relu"]), inputs


def bound_and_inlined():
    """A root graph calling a bound child (nn.Linear), an inlined one with a
    dtype and memory-format keyword, and a function with a dtype keyword."""
    piece = fx.Graph()
    t = piece.placeholder("t")
    empty = piece.call_function(
        torch.empty_like, (t,), {"dtype": torch.float64, "memory_format": torch.preserve_format}
    )
    filled = piece.call_method("copy_", (empty, t))
    piece.output((filled,))
    root = torch.nn.Module()
    root.lin = torch.nn.Linear(4, 4)
    root.submod_0 = fx.GraphModule({}, piece)
    graph = fx.Graph()
    x = graph.placeholder("x")
    y = graph.call_module("lin", (x,))
    z = graph.call_module("submod_0", (y,))
    first = graph.call_function(operator.getitem, (z, 0))
    out = graph.call_function(torch.sum, (first,), {"dtype": torch.float64})
    graph.output(out)
    return fx.GraphModule(root, graph), (torch.randn(3, 4),)


def test_the_functions_have_vllms_signatures():
    def params(fn):
        return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]

    assert params(compat.generate_execution_code) == [("split_gm", inspect.Parameter.empty)]
    assert params(compat.generate_execution_code_with_name) == [
        ("split_gm", inspect.Parameter.empty),
        ("fn_name", inspect.Parameter.empty),
        ("with_submod", inspect.Parameter.empty),
        ("consts", None),
        ("const_index", None),
    ]
    assert params(compat.compile_execution_fn) == [
        ("code", inspect.Parameter.empty),
        ("submod_callables", inspect.Parameter.empty),
        ("submod_names", inspect.Parameter.empty),
        ("consts", None),
    ]


@pytest.mark.parametrize("build", [casts_split, bound_and_inlined])
def test_every_non_primitive_argument_is_a_constant_in_first_use_order(build):
    split_gm, _ = build()
    _, _, consts = compat.generate_execution_code(split_gm)
    expected = documented_consts(split_gm)
    assert len(consts) == len(expected)
    assert all(a is b for a, b in zip(consts, expected, strict=True))


def test_dtypes_and_devices_are_constants_shared_across_pieces():
    split_gm, _ = casts_split()
    code, _, consts = compat.generate_execution_code(split_gm)
    assert consts.count(torch.float16) == 1 and consts.count(torch.float32) == 1
    assert any(isinstance(c, torch.device) for c in consts)
    assert "torch.float16" not in code and "torch.float32" not in code
    index = consts.index(torch.float16)
    assert code.count(f"__vllm_consts__[{index}]") == 2  # read in submod_0 and submod_4


@pytest.mark.parametrize("build", [casts_split, bound_and_inlined])
def test_submod_names_list_every_child_in_first_call_order(build):
    split_gm, _ = build()
    _, names, _ = compat.generate_execution_code(split_gm)
    calls = [n.target for n in split_gm.graph.nodes if n.op == "call_module"]
    assert names == list(dict.fromkeys(calls))


@pytest.mark.parametrize("build", [casts_split, bound_and_inlined])
def test_code_loads_in_vllms_loader_with_none_for_inlined_children(build):
    split_gm, inputs = build()
    code, names, consts = compat.generate_execution_code(split_gm)
    bound = {
        name: getattr(split_gm, name)
        for name in names
        if not isinstance(getattr(split_gm, name), fx.GraphModule)
    }
    expected = split_gm(*inputs)
    assert_same(vllm_style_load(code, bound, names, consts)(*inputs), expected)
    assert_same(compat.compile_execution_fn(code, bound, names, consts)(*inputs), expected)


def test_code_written_the_way_vllm_writes_it_loads_here():
    # vLLM's code for bound_and_inlined, spelled as its documentation describes
    split_gm, inputs = bound_and_inlined()
    code = (
        "import torch\nimport operator\n"
        "\ndef __vllm_inlined_submods__1(t):\n"
        "    empty_like = torch.empty_like(t, dtype=__vllm_consts__[0], "
        "memory_format=__vllm_consts__[1])\n"
        "    copy_ = empty_like.copy_(t)\n"
        "    return (copy_,)\n"
        "\ndef execution_fn(x, *, __vllm_submods__):\n"
        "    lin = __vllm_submods__[0](x)\n"
        "    submod_0 = __vllm_inlined_submods__1(lin)\n"
        "    del lin\n"
        "    getitem = submod_0[0]\n"
        "    sum_1 = torch.sum(getitem, dtype=__vllm_consts__[2])\n"
        "    return sum_1\n"
    )
    consts = [torch.float64, torch.preserve_format, torch.float64]
    fn = compat.compile_execution_fn(code, {"lin": split_gm.lin}, ["lin", "submod_0"], consts)
    assert_runs_same(fn, split_gm, inputs)


def test_legacy_code_without_constants_loads_with_consts_none():
    split_gm, inputs = casts_split()
    code = "def execution_fn(x, *, __vllm_submods__):\n    return __vllm_submods__[0](x) * 2\n"
    fn = compat.compile_execution_fn(code, {"a": torch.neg}, ["a"], None)
    assert torch.equal(fn(inputs[0]), -inputs[0] * 2)


def test_with_submod_false_refuses_call_module_with_runtime_error():
    split_gm, _ = casts_split()
    with pytest.raises(
        RuntimeError, match="call_module is not allowed for codegen target submod_0"
    ):
        compat.generate_execution_code_with_name(split_gm, "fn", with_submod=False)


def test_an_inlined_child_that_calls_a_module_is_a_runtime_error(tmp_path, monkeypatch):
    inner = torch.nn.Module()
    inner.lin = torch.nn.Linear(2, 2)
    graph = fx.Graph()
    graph.output((graph.call_module("lin", (graph.placeholder("t"),)),))
    root = torch.nn.Module()
    root.submod_0 = fx.GraphModule(inner, graph)
    outer = fx.Graph()
    outer.output(outer.call_module("submod_0", (outer.placeholder("x"),)))
    monkeypatch.setenv("STITCHGEN_DUMP_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match="call_module is not allowed for codegen target lin"):
        compat.generate_execution_code(fx.GraphModule(root, outer))
    assert list(tmp_path.iterdir()) == []  # no dump of code that vLLM will never load
    compat.generate_execution_code(fx.symbolic_trace(lambda x: x + 1))
    assert len(list(tmp_path.iterdir())) == 1  # a graph it takes is dumped


@pytest.mark.parametrize("deeper", [False, True], ids=["calls a piece", "calls a module"])
def test_an_inlined_child_that_calls_a_graph_module_is_a_runtime_error(deeper):
    def negate(lin=False):
        graph = fx.Graph()
        t = graph.placeholder("t")
        if lin:  # the piece calls a module itself: vLLM names the outer call still
            t = graph.call_module("lin", (t,))
        graph.output((graph.call_function(torch.neg, (t,)),))
        return fx.GraphModule({"lin": torch.nn.Linear(3, 3)} if lin else torch.nn.Module(), graph)

    middle = fx.Graph()
    middle.output(middle.call_module("deep.piece", (middle.placeholder("t"),)))
    deep = torch.nn.Module()
    deep.piece = negate(lin=deeper)
    root = torch.nn.Module()
    root.submod_0 = fx.GraphModule({"deep": deep, "deep.piece": deep.piece}, middle)
    root.submod_1 = negate()
    outer = fx.Graph()
    x = outer.placeholder("x")
    y = outer.call_module("submod_1", (x,))
    outer.output(outer.call_module("submod_0", (y,)))
    consts, index = [], {}
    with pytest.raises(RuntimeError, match="codegen target deep.piece\\.$"):
        compat.generate_execution_code_with_name(
            fx.GraphModule(root, outer), "fn", with_submod=True, consts=consts, const_index=index
        )
    assert consts == [] and index == {}


def test_with_submod_false_writes_a_piece_function_without_bindings():
    piece = casts_split()[0].submod_2
    code, names, consts = compat.generate_execution_code_with_name(piece, "piece", False)
    assert names == [] and len(consts) == 2  # float32 and the device
    namespace = {"__vllm_consts__": consts}
    exec(code, namespace)
    x = torch.randn(4, 4, dtype=torch.float16)
    assert_runs_same(namespace["piece"], piece, (x,))


def test_shared_consts_continue_across_calls_and_are_returned_in_place():
    split_gm, _ = casts_split()
    consts, const_index = [], {}
    _, _, first = compat.generate_execution_code_with_name(
        split_gm.submod_0, "a", False, consts, const_index
    )
    code, _, second = compat.generate_execution_code_with_name(
        split_gm.submod_4, "b", False, consts, const_index
    )
    assert first is consts and second is consts
    assert consts[0] is torch.float16 and consts[1] is torch.float32 and len(consts) == 2
    assert const_index == {id(torch.float16): 0, id(torch.float32): 1}
    assert "__vllm_consts__[0]" in code and "__vllm_consts__[1]" in code  # float16 reused


def test_a_failed_generation_leaves_the_shared_consts_untouched():
    split_gm, _ = casts_split()
    consts, const_index = [torch.int8], {id(torch.int8): 0}
    with pytest.raises(RuntimeError):
        compat.generate_execution_code_with_name(split_gm, "fn", False, consts, const_index)
    assert consts == [torch.int8] and const_index == {id(torch.int8): 0}


@pytest.mark.parametrize(
    "helper", ["__vllm_consts__", "__vllm_submods__", "__vllm_inlined_submods__0"]
)
def test_inputs_named_like_the_helpers_read_their_own_values(helper):
    piece = fx.Graph()
    a, b = piece.placeholder("a"), piece.placeholder(helper)
    piece.output((piece.call_function(torch.sub, (a, b), {"alpha": 2}),))
    root = torch.nn.Module()
    root.submod_0 = fx.GraphModule({}, piece)
    graph = fx.Graph()
    x, h = graph.placeholder("x"), graph.placeholder(helper)
    call = graph.call_module("submod_0", (x, h))
    scaled = graph.call_function(torch.mul, (graph.call_function(operator.getitem, (call, 0)), h))
    full = graph.call_function(torch.full, ((2,), 3.0), {"dtype": torch.float32})
    graph.output(graph.call_function(operator.add, (full, scaled)))
    split_gm = fx.GraphModule(root, graph)
    inputs = (torch.tensor([5.0, 7.0]), torch.tensor([1.0, 2.0]))
    code, names, consts = compat.generate_execution_code(split_gm)
    assert consts == [torch.float32]
    assert_runs_same(vllm_style_load(code, {}, names, consts), split_gm, inputs)
    generated = stitchgen.generate(split_gm, templates="vllm")
    assert_runs_same(stitchgen.load(generated), split_gm, inputs)

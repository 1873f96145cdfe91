"""Every placeholder kind, under every shipped template set and through
``stitchgen.compat``: the generated function's signature is Python, and it
takes every call the ``GraphModule`` takes (by position, by each
placeholder's own name, with defaults, ``*args``, keyword-only and
``**kwargs``), with the same results."""

import operator

import pytest
import torch
import torch.fx as fx
from torch.fx._lazy_graph_module import _make_graph_module, _use_lazy_graph_module

import stitchgen
from stitchgen import CodegenError
from stitchgen.compat import compile_execution_fn, generate_execution_code


def _piece() -> fx.GraphModule:
    """A compiled piece as split_module makes it: a GraphModule returning a tuple."""
    g = fx.Graph()
    a = g.placeholder("a")
    g.output((g.call_function(torch.mul, (a, 3.0)),))
    return fx.GraphModule(torch.nn.Module(), g)


class _Bound(torch.nn.Module):
    """A piece that is not a GraphModule: called through a binding."""

    def forward(self, a):
        return (a - 1.0,)


def _graph(placeholders, body) -> fx.GraphModule:
    """A stitching graph: ``placeholders`` (FX targets: ``x``, ``*args``,
    ``**kwargs``, or ``(name, default)``), then ``body(g, nodes)``, which
    sums them through an inlined and a bound piece."""
    g = fx.Graph()
    nodes = {}
    for spec in placeholders:
        if isinstance(spec, tuple):
            nodes[spec[0]] = g.placeholder(spec[0], default_value=spec[1])
        else:
            nodes[spec.lstrip("*")] = g.placeholder(spec)
    total = body(g, nodes)
    inlined = g.call_function(operator.getitem, (g.call_module("submod_0", (total,)), 0))
    bound = g.call_function(operator.getitem, (g.call_module("submod_1", (inlined,)), 0))
    g.output(bound)
    root = torch.nn.Module()
    root.submod_0, root.submod_1 = _piece(), _Bound()
    return fx.GraphModule(root, g)


def _sum(g, values):
    total = values[0]
    for v in values[1:]:
        total = g.call_function(operator.add, (total, v))
    return total


def _item(g, container, key):
    return g.call_function(operator.getitem, (container, key))


T = torch.arange(4.0)

#: name -> (placeholders, body, calls: [(args, kwargs)])
SIGNATURES = {
    "positional": (
        ["x", "y"],
        lambda g, n: _sum(g, [n["x"], n["y"]]),
        [((T, T + 1), {}), ((T,), {"y": T + 2}), ((), {"y": T, "x": T * 2})],
    ),
    "defaults": (
        ["x", ("y", 2.0), ("z", 5)],
        lambda g, n: _sum(g, [n["x"], n["y"], n["z"]]),
        [((T,), {}), ((T, 1.0), {}), ((T,), {"z": 7}), ((), {"x": T, "y": T})],
    ),
    "varargs": (
        ["*args"],
        lambda g, n: _sum(g, [_item(g, n["args"], 0), _item(g, n["args"], 1)]),
        [((T, T + 1), {}), ((T, T, T), {})],
    ),
    "keyword_only": (
        ["x", "*args", "k", ("j", 3.0)],
        lambda g, n: _sum(g, [n["x"], _item(g, n["args"], 0), n["k"], n["j"]]),
        [((T, T), {"k": T}), ((T, T, T), {"k": T + 1, "j": 0.5})],
    ),
    "varkw": (
        ["x", "**kwargs"],
        lambda g, n: _sum(g, [n["x"], _item(g, n["kwargs"], "foo")]),
        [((T,), {"foo": T + 1}), ((), {"x": T, "foo": T, "bar": 1})],
    ),
    "mixed": (
        ["x", ("y", 1.0), "*args", "k", "**kwargs"],
        lambda g, n: _sum(
            g, [n["x"], n["y"], _item(g, n["args"], 0), n["k"], _item(g, n["kwargs"], "w")]
        ),
        [((T, 2.0, T), {"k": T, "w": T}), ((T, 2.0, T, T), {"k": 1.0, "w": T, "v": 0})],
    ),
    # names the generated code could want for itself: builtins, a module our
    # code imports, the binder, a binding's name, the entry's own name
    "colliding_names": (
        ["input", "id", "type", "operator", "bind", "call_submod_1", "execution_fn"],
        lambda g, n: _sum(g, list(n.values())),
        [
            ((T,) * 7, {}),
            (
                (),
                {
                    "input": T,
                    "id": T + 1,
                    "type": T + 2,
                    "operator": T,
                    "bind": T,
                    "call_submod_1": T,
                    "execution_fn": T,
                },
            ),
        ],
    ),
}


def _check(fn, gm, calls):
    for args, kwargs in calls:
        expected = gm(*args, **kwargs)
        assert torch.equal(fn(*args, **kwargs), expected), (args, kwargs)


@pytest.mark.parametrize("templates", [None, "profiled", "vllm"])
@pytest.mark.parametrize("kind", sorted(SIGNATURES))
def test_every_placeholder_kind_takes_the_graph_modules_calls(kind, templates):
    placeholders, body, calls = SIGNATURES[kind]
    gm = _graph(placeholders, body)
    _check(stitchgen.compile(gm, templates=templates), gm, calls)
    # the formatted text is the same signature, and Python
    _check(stitchgen.compile(gm, templates=templates, format=True), gm, calls)


@pytest.mark.parametrize("kind", sorted(SIGNATURES))
def test_every_placeholder_kind_through_compat(kind):
    placeholders, body, calls = SIGNATURES[kind]
    gm = _graph(placeholders, body)
    code, names, consts = generate_execution_code(gm)
    fn = compile_execution_fn(code, {"submod_1": gm.submod_1}, names, consts)
    _check(fn, gm, calls)


def test_the_vllm_submods_go_where_python_allows_them():
    signatures = {}
    for kind in ("varargs", "varkw", "mixed"):
        placeholders, body, _ = SIGNATURES[kind]
        code = stitchgen.generate(_graph(placeholders, body), templates="vllm", format=False).code
        signatures[kind] = next(line for line in code.splitlines() if "def execution_fn" in line)
    assert signatures == {
        "varargs": "def execution_fn(*args, __vllm_submods__):",
        "varkw": "def execution_fn(x, *, __vllm_submods__, **kwargs):",
        "mixed": "def execution_fn(x, y=1.0, *args, k, __vllm_submods__, **kwargs):",
    }


def test_a_placeholder_keeps_its_name_unless_the_code_needs_it():
    """``input`` shadows a builtin the code never uses: kept. ``torch`` is
    what a constant ``torch.float64`` is written with: renamed, passed by
    position only — and refused where it is keyword-only. (FX's own code
    keeps ``torch`` and breaks: the GraphModule cannot run this graph.)"""
    g = fx.Graph()
    torch_in, inp = g.placeholder("torch"), g.placeholder("input")
    cast = g.call_method("to", (inp, torch.float64))
    g.output(g.call_function(operator.add, (cast, torch_in)))
    gm = fx.GraphModule(torch.nn.Module(), g)
    code = stitchgen.generate(gm, format=False).code
    assert "def execution_fn(torch_1, input):" in code
    assert torch.equal(stitchgen.compile(gm)(T, input=T), T.to(torch.float64) + T)

    # a builtin the body writes as a value (``key=len``): that parameter is renamed
    g = fx.Graph()
    items, length, sort_key = g.placeholder("items"), g.placeholder("len"), g.placeholder("key")
    ordered = g.call_function(sorted, (items,), {"key": len})
    g.output((ordered, length, sort_key))
    with _use_lazy_graph_module(True):  # FX's own code cannot spell key=len
        gm = _make_graph_module(torch.nn.Module(), g)
    code = stitchgen.generate(gm, format=False).code
    assert "def execution_fn(items, len_1, key):" in code and "key=len)" in code
    assert stitchgen.compile(gm)(["ab", "c"], 1, key=2) == (["c", "ab"], 1, 2)

    g = fx.Graph()
    args, torch_in = g.placeholder("*args"), g.placeholder("torch")
    cast = g.call_method("to", (_item(g, args, 0), torch.float64))
    g.output(g.call_function(operator.add, (cast, torch_in)))
    gm = fx.GraphModule(torch.nn.Module(), g)
    with pytest.raises(CodegenError, match=r"placeholder 'torch' is keyword-only"):
        stitchgen.generate(gm)


def test_a_placeholder_named_for_the_vllm_helper_is_positional_there():
    gm = _graph(["__vllm_submods__", "x"], lambda g, n: _sum(g, list(n.values())))
    code = stitchgen.generate(gm, templates="vllm", format=False).code
    assert "def execution_fn(__vllm_submods___1, x, *, __vllm_submods__):" in code
    fn = stitchgen.compile(gm, templates="vllm")
    assert torch.equal(fn(T, x=T), gm(T, x=T))


class _OwnCall(fx.GraphModule):
    """A GraphModule child whose class wraps the call."""

    def __call__(self, *args, **kwargs):
        return tuple(7 * v for v in super().__call__(*args, **kwargs))


@pytest.mark.parametrize("templates", [None, "profiled", "vllm"])
def test_a_child_with_its_own_call_is_called_not_inlined(templates):
    gm = _graph(["x"], lambda g, n: n["x"])
    gm.submod_0 = _OwnCall(torch.nn.Module(), gm.submod_0.graph)
    generated = stitchgen.generate(gm, templates=templates)
    assert generated.inlined == () and "submod_0" in generated.submod_names
    _check(stitchgen.compile(gm, templates=templates), gm, [((T,), {}), ((), {"x": T})])

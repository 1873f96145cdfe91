"""Adversarial text never becomes code: node names, method names, keyword
names, dict keys and string/bytes constants come back as data, and the
generated function has exactly the statements the graph asks for."""

import ast
import builtins
import operator

import torch.fx as fx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.fx._lazy_graph_module import _make_graph_module, _use_lazy_graph_module

import stitchgen

TEXT = st.text(max_size=40)


class Echo:
    """Answers any attribute (dunders too) with a function returning its name."""

    def __getattribute__(self, name):
        return lambda *args, **kwargs: (name, args, kwargs)


def _collect(**kwargs):
    return kwargs


def _lazy(graph):
    with _use_lazy_graph_module(True):
        return _make_graph_module({}, graph)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    node_names=st.lists(TEXT, min_size=4, max_size=4, unique=True),
    method=TEXT,
    keys=st.lists(TEXT, min_size=1, max_size=3, unique=True),
    dict_key=TEXT,
    string=TEXT,
    data=st.binary(max_size=20),
)
def test_adversarial_text_stays_data(node_names, method, keys, dict_key, string, data):
    graph = fx.Graph()
    x = graph.placeholder("x")
    echo = graph.call_method(method, (x, string))
    kw = graph.call_function(_collect, (), {k: data for k in keys})
    pair = graph.call_function(operator.getitem, (kw, keys[0]))
    graph.output({dict_key: (echo, kw, pair, string, data)})
    for node, name in zip([x, echo, kw, pair], node_names, strict=True):
        node.name = name
    gm = _lazy(graph)

    generated = stitchgen.generate(gm, format=False)
    fn = stitchgen.load(generated)
    expected = fx.Interpreter(gm).run(Echo())
    assert fn(Echo()) == expected
    assert not hasattr(builtins, "PWNED")

    module = ast.parse(generated.code)
    kinds = [type(s).__name__ for s in module.body]
    assert kinds[-1] == "FunctionDef" and set(kinds[:-1]) <= {"Import"}  # imports, the binder
    (entry,) = [s for s in module.body[-1].body if isinstance(s, ast.FunctionDef)]
    kinds = [type(s).__name__ for s in entry.body]
    # three assignments (method call, call, getitem), their dels, one return
    assert kinds.count("Assign") == 3 and kinds[-1] == "Return"
    assert set(kinds) <= {"Assign", "Delete", "Return"}

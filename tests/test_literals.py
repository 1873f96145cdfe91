"""Constants: inline literals, exact qualified names, or lifted bindings."""

import builtins
import enum
import inspect
import math
import operator
import re

import pytest
import torch
import torch.fx as fx
from hypothesis import given, settings
from hypothesis import strategies as st

import stitchgen
from stitchgen.ir import GlobalRef
from stitchgen.literals import literal_source
from stitchgen.lowering import qualified_ref


def _eval(source):
    return eval(source, {"__builtins__": builtins})


primitives = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(allow_nan=True, allow_infinity=True),
    st.text(),
    st.binary(),
    st.just(Ellipsis),
)


@given(primitives)
def test_literal_source_evaluates_to_the_same_value(value):
    back = _eval(literal_source(value))
    assert type(back) is type(value)
    assert repr(back) == repr(value)  # exact: nan, -0.0, complex parts


@pytest.mark.parametrize(
    "value, source",
    [
        (math.inf, 'float("inf")'),
        (-math.inf, '-float("inf")'),
        (math.nan, 'float("nan")'),
        (complex(math.inf, 1), 'complex(float("inf"), 1.0)'),
        (complex(0.0, -0.0), "complex(0.0, -0.0)"),  # repr would say "-0j": a different value
        (Ellipsis, "..."),
    ],
)
def test_non_finite_and_complex_numbers_are_spelled_as_calls(value, source):
    assert literal_source(value) == source


def _returning(value):
    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.output((x, value))
    return fx.GraphModule({}, graph)


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.text(), st.binary()))
def test_strings_are_data_never_code(text):
    fn = stitchgen.compile(_returning(text))
    assert fn(1) == (1, text)


def test_hostile_string_executes_nothing():
    payload = '\'); import builtins; builtins.PWNED = True; (\'\n"""\\'
    fn = stitchgen.compile(_returning(payload), format=True)
    assert fn(1) == (1, payload)
    assert not hasattr(builtins, "PWNED")


class Mode(enum.Enum):
    FAST = "fast"


def _make_local():
    def local():
        pass

    return local


@pytest.mark.parametrize(
    "obj, ref",
    [
        (torch.float32, GlobalRef("torch", "float32")),
        (torch.strided, GlobalRef("torch", "strided")),
        (torch.channels_last, GlobalRef("torch", "channels_last")),
        (torch.ops.aten.mm.default, GlobalRef("torch", "ops.aten.mm.default")),
        (torch.ops.aten.mm, GlobalRef("torch", "ops.aten.mm")),
        (operator.add, GlobalRef("operator", "add")),
        (math.sqrt, GlobalRef("math", "sqrt")),
        (len, GlobalRef("builtins", "len")),
        (torch.ones, GlobalRef("torch", "ones")),
        (torch.Tensor, GlobalRef("torch", "Tensor")),
        (re.IGNORECASE, GlobalRef("re", "RegexFlag.IGNORECASE")),
        (inspect.Parameter.KEYWORD_ONLY, GlobalRef("inspect", "_ParameterKind.KEYWORD_ONLY")),
        (Mode.FAST, GlobalRef(__name__, "Mode.FAST")),
    ],
)
def test_qualified_names_resolve_to_the_very_object(obj, ref):
    assert qualified_ref(obj) == ref


@pytest.mark.parametrize(
    "obj",
    [torch.device("cpu"), torch.Size([2]), torch.zeros(1), lambda: 0, _make_local(), object()]
    + [3, "s"],
    ids=["device", "size", "tensor", "lambda", "local", "object", "int", "str"],
)
def test_objects_without_an_exact_name_are_not_named(obj):
    assert qualified_ref(obj) is None


def test_a_lying_qualified_name_is_not_trusted():
    def fake_sqrt(x):
        return -1.0

    fake_sqrt.__module__, fake_sqrt.__qualname__ = "math", "sqrt"
    assert qualified_ref(fake_sqrt) is None
    graph = fx.Graph()
    graph.output(graph.call_function(fake_sqrt, (graph.placeholder("x"),)))
    generated = stitchgen.generate(fx.GraphModule({}, graph))
    assert "math.sqrt" not in generated.code
    assert stitchgen.load(generated)(4.0) == -1.0


def test_modules_not_yet_imported_are_never_imported():
    class Fake:
        __module__ = "stitchgen_not_a_real_module"
        __qualname__ = "Fake"

    assert qualified_ref(Fake) is None


def test_lifted_constants_are_deduplicated_by_identity_in_first_use_order():
    a, b = torch.device("cpu"), torch.zeros(2)
    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.output((b, a, b, torch.device("cpu"), x))
    generated = stitchgen.generate(fx.GraphModule({}, graph))
    assert generated.consts[0] is b and generated.consts[1] is a
    assert len(generated.consts) == 3  # an equal but distinct device is its own binding
    out = stitchgen.load(generated)(1)
    assert out[0] is b and out[1] is a and out[2] is b


def test_each_convention_writes_constants_by_its_policy_one_path():
    from stitchgen.conventions import CLOSURE, VLLM
    from stitchgen.ir import PRIMITIVE_TYPES

    assert CLOSURE.constants.inline == frozenset(PRIMITIVE_TYPES)
    assert VLLM.constants.inline == frozenset({type(None), bool, int, float, str, bytes})

    def f(x):
        return torch.ops.aten.sum.dim_IntList(x[1:3], [0], dtype=torch.float64)

    gm = torch.fx.symbolic_trace(f)
    closure = stitchgen.lower(gm, convention=CLOSURE)
    vllm = stitchgen.lower(gm, convention=VLLM)
    # closure: the dtype by its name, the slice written; vllm: both lifted
    assert closure.const_values == ()
    assert list(vllm.const_values) == [slice(1, 3, None), torch.float64]
    x = torch.randn(5, 2)
    assert torch.equal(stitchgen.compile(gm)(x), f(x))
    assert torch.equal(stitchgen.compile(gm, templates="vllm")(x), f(x))

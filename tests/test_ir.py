"""The IR is plain data: printable, comparable, JSON-round-trippable."""

import json
import math

import pytest
import torch.fx as fx
from golden_cases import CASES, shared_case

import stitchgen
from stitchgen import ir


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_round_trips_through_json(name):
    case = shared_case(name)
    program = stitchgen.lower(case.gm, opaque=tuple(case.submods))
    text = json.dumps(ir.to_json(program))
    back = ir.from_json(json.loads(text), program.const_values)
    assert back == program
    assert back.const_values == program.const_values
    assert stitchgen.render(back, format=False) == stitchgen.render(program, format=False)


def test_program_is_printable_and_hashable():
    program = stitchgen.lower(CASES["moe_piece"]("cpu").gm)
    assert "GetItem(target='getitem'" in repr(program)
    assert hash(program) == hash(stitchgen.lower(CASES["moe_piece"]("cpu").gm))


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -7,
        2**100,
        1.5,
        -0.0,
        math.inf,
        -math.inf,
        math.nan,
        1 + 2j,
        complex(math.nan, -math.inf),
        "",
        "é\n'\"",
        b"\x00\xff",
        Ellipsis,
    ],
)
def test_every_literal_kind_round_trips(value):
    lit = ir.Literal(value)
    back = ir.from_json(json.loads(json.dumps(ir.to_json(lit))))
    assert back == lit
    assert type(back.value) is type(value)


def test_literal_equality_is_type_and_spelling_exact():
    assert ir.Literal(True) != ir.Literal(1)
    assert ir.Literal(1) != ir.Literal(1.0)
    assert ir.Literal(0.0) != ir.Literal(-0.0)
    assert ir.Literal(float("nan")) == ir.Literal(float("nan"))


def test_literal_refuses_non_primitive_values():
    with pytest.raises(TypeError, match="primitive"):
        ir.Literal([1, 2])


def test_unknown_node_type_in_json_is_an_error():
    with pytest.raises(ValueError, match="unknown IR node type"):
        ir.from_json({"_type": "Exec", "code": "print(1)"})


NONE = ir.Literal(None)


def test_reads_and_defines_follow_expressions():
    stmt = ir.Call(
        "y",
        ir.MethodRef(ir.Name("a"), "view"),
        (ir.TupleExpr((ir.Name("b"), ir.SliceExpr(NONE, ir.Name("c"), NONE))),),
        (("k", ir.DictExpr(((ir.Literal("x"), ir.ListExpr((ir.Name("d"),))),))),),
    )
    assert list(ir.reads(stmt)) == ["a", "b", "c", "d"]
    assert ir.defines(stmt) == "y"
    assert ir.defines(ir.Del(("a",))) is None


def test_every_ir_class_is_an_immutable_dataclass():
    import dataclasses

    call = ir.Call("y", ir.GlobalRef("torch", "relu"), (ir.Name("x"),), node="relu")
    for node in (call, ir.Name("x"), ir.Literal(1), ir.Program("f", "bind", (), (), (), ())):
        assert dataclasses.is_dataclass(node)
    assert [f.name for f in dataclasses.fields(call)] == [
        "target",
        "callee",
        "args",
        "kwargs",
        "node",
        "where",
    ]
    renamed = dataclasses.replace(call, target="z")
    assert renamed.target == "z" and renamed.args == call.args and call.target == "y"
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.target = "z"
    with pytest.raises(dataclasses.FrozenInstanceError):
        del call.node


def test_a_subclass_of_your_own_is_a_dataclass_and_stays_immutable():
    import dataclasses

    @dataclasses.dataclass
    class Noted(ir.Call):
        note: str = ""

    noted = Noted("y", ir.Name("f"), (ir.Name("x"),), note="hi")
    assert ir.reads(noted) == ["f", "x"] and ir.writes(noted) == ["y"]
    assert (
        noted
        == Noted("y", ir.Name("f"), (ir.Name("x"),), note="hi")
        != noted.__class__("y", ir.Name("f"), (ir.Name("x"),), note="other")
    )
    assert hash(noted) == hash(Noted("y", ir.Name("f"), (ir.Name("x"),), note="hi"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        noted.note = "changed"
    with pytest.raises(TypeError, match="cannot inherit frozen dataclass from a non-frozen"):

        @dataclasses.dataclass(frozen=True)
        class Frozen(ir.Call):  # dataclasses' own rule: the IR is not frozen by its account
            pass


def test_equality_hash_and_repr_follow_the_fields():
    a = ir.Call("y", ir.Name("f"), (ir.Literal(1.0),))
    b = ir.Call("y", ir.Name("f"), (ir.Literal(1.0),))
    c = ir.Call("y", ir.Name("f"), (ir.Literal(1),))
    assert a == b and hash(a) == hash(b) and a != c
    assert ir.Name("x") != ir.Literal("x") and ir.Name("x") != "x"
    assert (
        repr(a) == "Call(target='y', callee=Name(id='f'), args=(Literal(value=1.0),), kwargs=(), "
        "node='', where='')"
    )
    program = ir.Program("f", "bind", (), (), (), (), const_values=(object(),))
    assert "const_values" not in repr(program)
    assert program == ir.Program("f", "bind", (), (), (), (), const_values=(object(),))


def test_a_pickled_node_equals_its_original_and_rehashes():
    import pickle

    call = ir.Call("y", ir.Name("f"), (ir.Name("x"),))
    hash(call)  # cached in this process
    back = pickle.loads(pickle.dumps(call))
    assert back == call and hash(back) == hash(call)
    assert "_hash" not in pickle.loads(pickle.dumps(call)).__getstate__()


def test_the_walker_returns_the_same_objects_when_nothing_changes():
    program = stitchgen.lower(CASES["decoder_1_layer"]("cpu").gm)
    same = ir.map_bodies(program, lambda s: [ir.map_stmt(s, expr=lambda e: ir.map_expr(e, id_))])
    assert same is program
    changed = ir.map_bodies(program, lambda s: [s, s] if isinstance(s, ir.Return) else [s])
    assert changed is not program and changed.functions[-1].body[-1] is program.entry.body[-1]


def id_(leaf):
    return leaf


def test_a_boxed_function_round_trips():
    gm = fx.symbolic_trace(lambda x, y: x * y)
    program = stitchgen.lower(gm, boxed=True)
    data = json.loads(json.dumps(ir.to_json(program)))
    assert ir.from_json(data) == program

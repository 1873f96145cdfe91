"""The IR is plain data: printable, comparable, JSON-round-trippable."""

import json
import math

import pytest
from golden_cases import CASES

import stitchgen
from stitchgen import ir


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_round_trips_through_json(name):
    case = CASES[name]("cpu")
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

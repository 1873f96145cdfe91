"""A statement kind of your own takes its class, its emitter method and
this test, and nothing else: a kind defined here, holding a nested body with
a piece call in it, goes through every pass, renders on the built-in path
and through Jinja (the generic ``statement`` block), and runs equal to the
``GraphModule`` under the vllm convention, whose pieces-list parameter
reaches the inlined function that calls a bound piece inside the body."""

import dataclasses
import re
from typing import Any, ClassVar

import pytest
from golden_cases import CASES
from oracle import assert_runs_same

import stitchgen
from stitchgen import Templates, ir
from stitchgen.emitter import INDENT, Emitter


@dataclasses.dataclass(frozen=True)
class Guarded:
    """``if <test>:`` and a nested body (a statement kind of this test's:
    immutable and hashable, as the IR's own are)."""

    test: Any = dataclasses.field(metadata=ir.EXPR)
    body: tuple[Any, ...] = dataclasses.field(metadata=ir.BODY)
    template: ClassVar[str] = "guarded"


def guarded(emitter: Emitter, stmt: Guarded, indent: str) -> None:
    """The kind's emitter method (named for its block by ``ir.block_method``)."""
    emitter.line(f"{indent}if {emitter.writer.source(stmt.test)}:")
    emitter.statements(stmt.body, indent + INDENT)


def guard_pieces(program: ir.Program) -> ir.Program:
    """A pass of your own: every piece call inside ``if True:``."""

    def guard(stmt):
        if isinstance(stmt, ir.Calling) and stmt.is_piece:  # unpacked or not
            return (Guarded(ir.Literal(True), (stmt,)),)
        return (stmt,)

    return ir.map_bodies(program, guard)


#: the kind registered where it renders: on a ``Templates``, never on ``Emitter``
KINDS = {Guarded: guarded}


@pytest.mark.parametrize("path", ["emitter", "jinja"])
@pytest.mark.parametrize("templates", [None, "vllm"])
def test_a_kind_of_your_own_renders_and_runs_on_both_paths(tmp_path, path, templates):
    case = CASES["nested_children"]("cpu")
    if path == "jinja":  # a function.py.j2 of yours: every function rendered by Jinja
        (tmp_path / "function.py.j2").write_text(
            f'{{% extends "stitchgen/{"variants/vllm/" if templates else ""}function.py.j2" %}}\n'
        )
        templates = Templates(tmp_path, variant=templates, kinds=KINDS)
        assert not templates.builtin_in_effect
    else:
        templates = Templates(variant=templates, kinds=KINDS)
    generated = stitchgen.generate(case.gm, templates=templates, passes=[guard_pieces])
    guards = [s for fn in generated.program.functions for s in ir.iter_statements(fn.body)]
    nested = [s for s in guards if type(s) is Guarded]
    assert nested and all(s.body[0].is_piece for s in nested)
    assert generated.code.count("if True:") == len(nested)
    if templates.variant == "vllm":
        # the inlined child calls its bound grandchild inside the nested body: it is passed
        # the pieces list, found through the nested body
        assert re.search(
            r"def __vllm_inlined_submods__\d\(x, \*, __vllm_submods__\):", generated.code
        )
    fn = stitchgen.load(generated, case.submods)
    assert_runs_same(fn, case.reference, case.inputs, case.gm)


def test_nested_bodies_are_walked_by_every_helper():
    inner = ir.Call("y", ir.GlobalRef("torch", "neg"), (ir.Name("x"),))
    stmt = Guarded(ir.Name("flag"), (inner,))
    assert ir.reads(stmt) == ["flag", "x"] and ir.writes(stmt) == ["y"]
    assert list(ir.iter_statements([stmt])) == [stmt, inner]
    renamed = ir.map_stmt(stmt, local=str.upper, expr=lambda e: e)
    assert renamed.body[0].target == "Y" and renamed is not stmt
    assert ir.map_stmt(stmt, expr=lambda e: e) is stmt  # nothing changed: the same object


def test_a_kind_without_an_emitter_method_is_named_not_rendered_as_nothing():
    program = stitchgen.lower(CASES["decoder_1_layer"]("cpu").gm, passes=[guard_pieces])
    with pytest.raises(stitchgen.TemplateError, match="no block renders a Guarded statement"):
        stitchgen.render(program, format=False)


def test_a_kind_is_the_templates_own_not_the_processs():
    """Registered on one ``Templates``, a kind renders there; every other
    ``Templates`` of the process names it unrendered, and ``Emitter`` holds
    no method for it."""
    gm = CASES["decoder_1_layer"]("cpu").gm
    program = stitchgen.lower(gm, passes=[guard_pieces])
    assert "if True:" in stitchgen.render(program, templates=Templates(kinds=KINDS))
    assert not hasattr(Emitter, "guarded")
    with pytest.raises(stitchgen.TemplateError, match="no block renders a Guarded statement"):
        stitchgen.render(program, templates=Templates(variant="profiled"))


def test_kinds_must_be_statement_classes_with_writers():
    with pytest.raises(TypeError, match="statement classes naming a block"):
        Templates(kinds={int: guarded})
    with pytest.raises(TypeError, match="not callable"):
        Templates(kinds={Guarded: "guarded"})

"""One walker for every pass; one verifier for every pass's output; a
statement kind without a block is an error, never nothing."""

import dataclasses
import re

import downstream_hooks
import jinja2
import jinja2.nodes
import pytest
import torch
from builders import SHAPES
from golden_cases import CASES, downstream_templates, shared_case
from oracle import assert_runs_same

import stitchgen
from stitchgen import ir
from stitchgen.authoring.specimens import SPECIMENS
from stitchgen.errors import ProgramError, TemplateError
from stitchgen.lowering import build_program
from stitchgen.options import Options
from stitchgen.passes import PASSES, pipeline_steps, run_passes
from stitchgen.rendering import templates_dir


def test_every_statement_class_has_its_block_found_by_its_name(tmp_path):
    """Each statement class's block is in function.py.j2, which picks none by
    comparing ``stmt.template``: the block named for the kind renders it, as
    an override of every statement block shows on the specimens."""
    source = (templates_dir() / "function.py.j2").read_text()
    tree = jinja2.Environment().parse(source)
    blocks = {block.name for block in tree.find_all(jinja2.nodes.Block)}
    compared = [n for n in tree.find_all(jinja2.nodes.Compare) if "template" in str(n.expr)]
    assert not compared, "function.py.j2 picks a block by comparing stmt.template"
    kinds = [cls for cls in ir.STATEMENTS if cls is not ir.Unbox]  # the unbox block opens fn
    for cls in ir.STATEMENTS:
        assert cls.template in blocks, f"{cls.__name__}: no block {cls.template!r}"
    overrides = "".join(
        f"{{% block {name} %}}    # {name}\n{{{{ super() }}}}{{% endblock %}}\n"
        for name in dict.fromkeys(cls.template for cls in kinds)
    )
    (tmp_path / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n' + overrides
    )
    templates = stitchgen.Templates(tmp_path)
    seen = set()
    for build in SPECIMENS.values():
        specimen = build()
        if not specimen.fits(templates):
            continue
        program = stitchgen.lower(specimen.gm, opaque=specimen.submods, templates=templates)
        code = stitchgen.render(program, format=False, templates=templates)
        for fn in program.functions:
            for stmt in ir.iter_statements(fn.statements):
                seen.add(type(stmt))
        for name in dict.fromkeys(cls.template for cls in kinds):
            expected = sum(
                s.template == name for fn in program.functions for s in ir.iter_statements(fn.body)
            )
            assert code.count(f"# {name}\n") == expected, name
    assert seen == set(kinds)


@dataclasses.dataclass(frozen=True)
class Pass:
    """A statement kind no template knows."""

    template = "pass"


@pytest.mark.parametrize("templates", [None, "profiled", "vllm"], ids=["fast", "jinja", "vllm"])
def test_a_statement_without_a_block_is_a_template_error(templates):
    program = stitchgen.lower(torch.fx.symbolic_trace(lambda x: x + 1))
    entry = program.entry
    odd = dataclasses.replace(entry, body=(Pass(), *entry.body))
    program = dataclasses.replace(program, functions=(*program.functions[:-1], odd))
    with pytest.raises(TemplateError, match="no block renders a Pass statement"):
        stitchgen.render(program, format=False, templates=templates)


@dataclasses.dataclass
class NotedCall(ir.Call):
    """A Call with a field the passes have never heard of."""

    note: str = ""


@pytest.mark.parametrize("inline", ["call", "flatten"])
def test_a_field_added_to_a_statement_survives_every_pass(inline):
    raw = build_program(CASES["decoder_1_layer"]("cpu").gm)

    def noted(stmt):
        if type(stmt) is ir.Call:
            stmt = NotedCall(**{f.name: getattr(stmt, f.name) for f in dataclasses.fields(stmt)})
            stmt = dataclasses.replace(stmt, note=f"seen {stmt.node}")
        return [stmt]

    program = run_passes(ir.map_bodies(raw, noted), extra=SHAPES[inline]["passes"])
    calls = [s for fn in program.functions for s in fn.body if isinstance(s, ir.Call)]
    assert calls and all(type(s) is NotedCall and s.note == f"seen {s.node}" for s in calls)


def test_reads_and_writes_come_from_the_field_roles():
    call = ir.Call(
        "y",
        ir.MethodRef(ir.Name("a"), "add"),
        (ir.Name("b"), ir.TupleExpr((ir.Name("c"), ir.Literal(1)))),
        (("alpha", ir.DictExpr(((ir.Literal("k"), ir.Name("d")),))),),
    )
    assert ir.reads(call) == ["a", "b", "c", "d"]
    assert ir.writes(call) == ["y"] and ir.deletes(ir.Del(("a", "b"))) == ["a", "b"]
    renamed = ir.map_stmt(call, expr=lambda e: ir.map_expr(e, _upper), local=str.upper)
    assert ir.reads(renamed) == ["A", "B", "C", "D"] and renamed.target == "Y"


def _upper(leaf):
    return ir.Name(leaf.id.upper()) if isinstance(leaf, ir.Name) else leaf


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("inline", ["call", "flatten"])
def test_every_pass_leaves_the_golden_programs_valid(name, inline):
    case = shared_case(name)
    raw = build_program(case.gm, Options(opaque=tuple(case.submods)))
    run_passes(raw, extra=SHAPES[inline]["passes"], verify_each=True)  # names the pass at fault


def test_the_pipeline_is_listed_once_in_order():
    labels = [step.label for step in PASSES]
    assert labels == [f"the {n} pass" for n in ("targets", "liveness", "naming")]
    mine = [step.label for step in pipeline_steps([_fn])]
    assert mine == ["the pass _fn", "the targets pass", "the liveness pass", "the naming pass"]


def _fn(*body, params=("x",)):
    entry = ir.Function("f", tuple(ir.Param(p) for p in params), tuple(body))
    return ir.Program("f", "bind", (), (), (), (entry,))


@pytest.mark.parametrize(
    ("program", "message"),
    [
        (_fn(ir.Return(ir.Name("y"))), "reads 'y' before it is defined"),
        (
            _fn(ir.Del(("x",)), ir.Return(ir.Name("x"))),
            "reads 'x' after its del",
        ),
        (
            _fn(
                ir.Assign("y", ir.Name("x")), ir.Assign("y", ir.Name("x")), ir.Return(ir.Name("y"))
            ),
            "assigns 'y' a second time",
        ),
        (
            _fn(ir.Call("y", ir.SubmodRef(0, "call_a"), ()), ir.Return(ir.Name("y"))),
            r"SubmodRef\(0, 'call_a'\) is not declared",
        ),
        (_fn(ir.Assign("y", ir.Name("x"))), "does not end with a return"),
        (_fn(ir.Return(ir.Name("x")), params=("x", "x")), "parameter 'x' appears twice"),
    ],
    ids=["undefined", "after-del", "reassigned", "undeclared", "no-return", "dup-param"],
)
def test_verify_names_what_is_broken(program, message):
    with pytest.raises(ProgramError, match=message):
        ir.verify(program, after="a test")
    with pytest.raises(ProgramError, match="after a test"):
        ir.verify(program, after="a test")


def test_a_broken_user_pass_is_named_by_the_verifier():
    def drop_returns(program):
        return ir.map_bodies(program, lambda s: [] if isinstance(s, ir.Return) else [s])

    gm = torch.fx.symbolic_trace(lambda x: x * 2)
    with pytest.raises(ProgramError, match="after .*drop_returns.*does not end with a return"):
        stitchgen.generate(gm, passes=[drop_returns])


def mark_pieces(program):
    """The documented example of a pass of your own: a hook before every piece call."""

    def mark(stmt):
        if isinstance(stmt, ir.Calling) and stmt.is_piece:  # a call, unpacked or not
            hook = ir.GlobalRef("downstream_hooks", "mark")
            yield ir.Call(f"{stmt.node}_mark", hook, (ir.Literal(f"pass:{stmt.node}"),))
        yield stmt

    program = ir.map_bodies(program, mark)
    return dataclasses.replace(
        program, imports=tuple(sorted({*program.imports, "downstream_hooks"}))
    )


def test_a_pass_of_your_own_instruments_every_piece_call():
    case = CASES["decoder_1_layer"]("cpu")
    fn = stitchgen.compile(case.gm, passes=[mark_pieces])
    downstream_hooks.calls.clear()
    assert_runs_same(fn, case.reference, case.inputs, case.gm)
    assert downstream_hooks.calls == ["pass:submod_0", "pass:submod_1", "pass:submod_2"]
    assert downstream_templates  # the same hook the template example uses


def test_an_unbox_is_read_written_and_consumed_by_the_walker():
    stmt = ir.Unbox(("x", "y"), "args")
    assert ir.reads(stmt) == ["args"]
    assert ir.writes(stmt) == ["x", "y"]
    assert ir.deletes(stmt) == ["args"]  # consumed: not live after it
    assert ir.defines(stmt) is None
    renamed = ir.map_stmt(stmt, local=str.upper)
    assert renamed == ir.Unbox(("X", "Y"), "ARGS")
    assert ir.map_stmt(stmt, local=lambda name: name) is stmt


def test_the_verifier_holds_an_unbox_to_the_opening():
    program = stitchgen.lower(torch.fx.symbolic_trace(lambda x: x + 1), boxed=True)
    ir.verify(program)
    entry = program.entry
    unbox, *rest = entry.body
    moved = dataclasses.replace(entry, body=(ir.Assign("z", ir.Literal(1)), unbox, *rest))
    with pytest.raises(ProgramError, match="an Unbox opens its function"):
        ir.verify(dataclasses.replace(program, functions=(moved,)))
    # read after it: the list is consumed
    again = dataclasses.replace(entry, body=(unbox, ir.Assign("z", ir.Name("args")), *rest))
    with pytest.raises(ProgramError, match="reads 'args' after its del"):
        ir.verify(dataclasses.replace(program, functions=(again,)))


@pytest.mark.parametrize("templates", [None, "profiled", "vllm", "jinja"])
def test_a_subclass_of_an_ir_statement_renders_as_its_base(templates, tmp_path):
    """A ``NotedCall`` renders by the ``call`` block its class names, on
    the fast path and through Jinja, and runs equal to the graph."""
    case = CASES["decoder_1_layer"]("cpu")
    if templates == "jinja":  # a function.py.j2 of yours: every statement through Jinja
        (tmp_path / "function.py.j2").write_text('{% extends "stitchgen/function.py.j2" %}\n')
        templates = stitchgen.Templates(tmp_path)

    def noted(program):
        def note(stmt):
            if type(stmt) is ir.Call:
                fields = {f.name: getattr(stmt, f.name) for f in dataclasses.fields(stmt)}
                stmt = NotedCall(**fields, note="seen")
            return [stmt]

        return ir.map_bodies(program, note)

    plain = stitchgen.generate(case.gm, templates=templates, passes=[lambda program: program])
    generated = stitchgen.generate(case.gm, templates=templates, passes=[noted])
    assert any(type(s) is NotedCall for f in generated.program.functions for s in f.body)
    assert generated.code.count("(") == plain.code.count("(")
    fn = stitchgen.load(generated)
    assert_runs_same(fn, case.reference, case.inputs, case.gm)


def test_the_body_union_and_the_emit_table_name_every_statement_kind():
    """A statement kind added to the IR is one a body may hold
    (``ir.BodyStmt``: every kind but the ``Unbox`` that opens a function)
    and has its row in docs/templates.md's ``emit`` table, whose every
    method the templates' ``emit`` has, or this fails."""
    import typing
    from pathlib import Path

    from stitchgen.filters import BlockText

    assert set(typing.get_args(ir.BodyStmt)) == set(ir.STATEMENTS) - {ir.Unbox}
    docs = (Path(__file__).parents[1] / "docs" / "templates.md").read_text()
    section = docs.split("### `emit`: the shipped text, block by block", 1)[1].split("\n### ")[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| `emit.")]
    blocks = {name for row in rows for name in re.findall(r"`(\w+)`", row[1])}
    missing = sorted(cls.template for cls in ir.STATEMENTS if cls.template not in blocks)
    assert not missing, f"no row of the emit table writes the block(s) {missing}"
    methods = {name for row in rows for name in re.findall(r"`emit\.(\w+)\(", row[0])}
    assert methods and not sorted(m for m in methods if not hasattr(BlockText, m))

"""The fast path: the built-in templates' text written without Jinja, and in
black's layout without black. Jinja and black are the judges: every golden
case, every fuzzed graph and every random IR program must come out the same
both ways."""

import ast
import gc
import operator
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import black
import pytest
import torch
import torch.fx as fx
from builders import SHAPES
from control_flow_graphs import control_flow_graphs
from golden_cases import CASES, shared_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stitching_graphs import stitching_graphs

import stitchgen
from stitchgen import TemplateError, Templates, ir
from stitchgen.emitter import Writer, emit
from stitchgen.formatting import OLDEST_PYTHON, black_mode
from stitchgen.layout import LINE_LENGTH, Unsure

MODE = black_mode()  # what format=True runs black with
FUZZ = settings(
    max_examples=int(os.environ.get("STITCHGEN_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


#: every shipped template set: (variant, the templates' globals)
SHIPPED = [(None, {}), ("profiled", {}), ("vllm", {}), ("vllm", {"vllm_entry_submods": False})]
SHIPPED_IDS = ["builtin", "profiled", "vllm", "vllm-without-submods"]


@pytest.fixture(scope="module", params=SHIPPED, ids=SHIPPED_IDS)
def shipped(request, tmp_path_factory):
    """``(fast, through_jinja)``: a shipped template set on the fast path,
    and the same templates rendered by Jinja (a directory whose module.py.j2
    only extends the shipped one)."""
    variant, options = request.param
    path = tmp_path_factory.mktemp("jinja")
    base = f"variants/{variant}/module.py.j2" if variant else "stitchgen/module.py.j2"
    (path / "module.py.j2").write_text(f'{{% extends "{base}" %}}\n')
    through_jinja = Templates(path, variant=variant, globals=options)
    fast = Templates(variant=variant, globals=options)
    assert fast.builtin_in_effect and not through_jinja.builtin_in_effect
    return fast, through_jinja


def lowered(gm, templates, **options):
    return stitchgen.lower(gm, convention=templates.convention, names=templates.names, **options)


def assert_both_paths_agree(program, shipped):
    fast, through_jinja = shipped
    raw = stitchgen.render(program, format=False, templates=through_jinja)
    assert emit(program, variant=fast.variant, writer=fast.writer, options=fast.globals) == raw
    assert stitchgen.render(program, format=False, templates=fast) == raw
    formatted = black.format_str(raw, mode=MODE)
    assert stitchgen.render(program, format=True, templates=fast) == formatted
    try:
        laid_out = emit(
            program, black=True, variant=fast.variant, writer=fast.writer, options=fast.globals
        )
    except Unsure:
        return False
    assert laid_out == formatted
    return True


def programs_of_corpus(templates):
    for name in sorted(CASES):
        case = shared_case(name)
        for inline in ("call", "flatten"):
            for boxed in (False, True) if templates.convention.boxed else (False,):
                yield (
                    f"{name}-{inline}-{'boxed' if boxed else 'plain'}",
                    lowered(
                        case.gm,
                        templates,
                        opaque=tuple(case.submods),
                        boxed=boxed,
                        **SHAPES[inline],
                    ),
                )


def test_the_golden_corpus_renders_the_same_on_both_paths(shipped):
    programs = list(programs_of_corpus(shipped[0]))
    laid_out = [key for key, program in programs if assert_both_paths_agree(program, shipped)]
    assert len(laid_out) >= 0.7 * len(programs)  # the layout knows most cases


@FUZZ
@given(stitching_graphs(), st.sampled_from(["call", "flatten"]), st.booleans())
def test_fuzzed_graphs_render_the_same_on_both_paths(shipped, drawn, inline, boxed):
    boxed = boxed and shipped[0].convention.boxed
    program = lowered(drawn.gm, shipped[0], boxed=boxed, **SHAPES[inline])
    assert_both_paths_agree(program, shipped)


# -- random IR programs with long lines, to hold the layout to black ---------

IDENTS = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=30).map(lambda s: "v" + s)
LITERALS = st.sampled_from([0, -3, 2.5, 1e300, None, True, "s", "it's", "a\"b'c", b"x"]).map(
    ir.Literal
)


def expressions(depth=2):
    leaf = st.one_of(IDENTS.map(ir.Name), LITERALS, st.just(ir.GlobalRef("torch", "float32")))
    if depth == 0:
        return leaf
    inner = expressions(depth - 1)
    return st.one_of(
        leaf,
        leaf,
        st.lists(inner, max_size=6).map(lambda xs: ir.TupleExpr(tuple(xs))),
        st.lists(inner, max_size=6).map(lambda xs: ir.ListExpr(tuple(xs))),
        st.lists(st.tuples(LITERALS, inner), max_size=3).map(lambda xs: ir.DictExpr(tuple(xs))),
    )


SIZES = st.one_of(
    st.builds(ir.Size, IDENTS.map(ir.Name), st.integers(0, 3)),
    st.integers(-2, 10**12).map(ir.Literal),
)
#: what an exported program's checks test: sizes against bounds and each other
CHECKED = st.builds(
    ir.Compare,
    st.one_of(SIZES, st.builds(ir.BinOp, SIZES, st.sampled_from(sorted(ir.ARITHMETIC)), SIZES)),
    st.sampled_from(sorted(ir.COMPARISONS)),
    SIZES,
)


def _arithmetic(depth=3):
    numbers = st.integers(-9, 9).map(ir.Literal)
    if depth == 0:
        return numbers
    inner = _arithmetic(depth - 1)
    return st.one_of(
        numbers, st.builds(ir.BinOp, inner, st.sampled_from(sorted(ir.ARITHMETIC)), inner)
    )


def _value(e):
    """What an arithmetic or comparison expression says, read from the IR."""
    if isinstance(e, ir.Literal):
        return e.value
    left, right = _value(e.left), _value(e.right)
    return {
        "+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
        "%": operator.mod, "==": operator.eq, "!=": operator.ne, "<": operator.lt,
        "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    }[e.op](left, right)  # fmt: skip


@given(
    st.builds(
        ir.Compare, _arithmetic(), st.sampled_from(sorted(ir.COMPARISONS)), _arithmetic()
    ).filter(lambda e: _defined(e))
)
def test_a_checks_expression_reads_as_its_ir_says(expr):
    """Brackets where Python's precedence would read it otherwise: the
    source evaluates to what the IR says."""
    text = Writer().source(expr)
    assert eval(text) == _value(expr), text


def _defined(e):
    try:
        _value(e)
    except ZeroDivisionError:
        return False
    return True


CALLEES = st.one_of(
    st.just(ir.GlobalRef("torch", "ops.aten.convolution_backward.default")),
    IDENTS.map(lambda n: ir.FunctionRef(0, n)),
    IDENTS.map(lambda n: ir.MethodRef(ir.Name(n), "view")),
)

FLAT = st.one_of(
    st.builds(
        ir.Call,
        IDENTS,
        CALLEES,
        st.lists(expressions(1), max_size=12).map(tuple),
        st.lists(st.tuples(IDENTS, expressions(1)), max_size=3).map(tuple),
    ),
    st.builds(
        ir.UnpackCall,
        st.lists(IDENTS, min_size=1, max_size=12).map(tuple),
        CALLEES,
        st.lists(expressions(1), max_size=12).map(tuple),
    ),
    st.builds(ir.GetItem, IDENTS, IDENTS.map(ir.Name), st.integers(-3, 3).map(ir.Literal)),
    st.builds(ir.Assign, IDENTS, expressions()),
    st.builds(ir.Del, st.lists(IDENTS, min_size=1, max_size=14).map(tuple)),
    # the shapes the lowering gives them: names and literals
    st.builds(ir.Break, IDENTS.map(ir.Name)),
    st.builds(lambda test: ir.Break(test, check=(ir.CONDITION,)), IDENTS.map(ir.Name)),
    st.builds(ir.Check, CHECKED, st.sampled_from(sorted(ir.ERRORS)), st.text(max_size=90)),
    st.builds(
        ir.Rebind,
        st.lists(IDENTS, min_size=1, max_size=4).map(tuple),
        st.lists(st.one_of(IDENTS.map(ir.Name), LITERALS), min_size=1, max_size=6).map(tuple),
        st.lists(IDENTS.map(ir.Name), max_size=3).map(tuple),  # tied, as a cond's arm
    ),
)


def _bodies():
    return st.lists(st.deferred(lambda: STATEMENTS), max_size=3).map(tuple)


#: statements with bodies holding statements, at any depth
NESTED = st.one_of(
    st.builds(ir.If, st.lists(IDENTS, max_size=3).map(tuple), IDENTS.map(ir.Name),
              _bodies(), _bodies()),
    st.builds(ir.While, st.lists(IDENTS, max_size=3).map(tuple), _bodies()),
    st.builds(lambda carried, body, more, copy:
              ir.While(carried, body, (*map(ir.Name, carried), *more), copy),
              st.lists(IDENTS, min_size=1, max_size=3).map(tuple), _bodies(),
              st.lists(IDENTS.map(ir.Name), max_size=2), st.booleans()),  # tied, as a while_loop's
)  # fmt: skip
#: mostly flat (the layout's floor counts programs black's layout writes itself)
STATEMENTS = st.one_of(FLAT, FLAT, FLAT, FLAT, NESTED)
#: the statement kinds the random programs draw (Unbox: ``programs`` opens some with one)
DRAWN = {ir.Call, ir.UnpackCall, ir.GetItem, ir.Assign, ir.Del, ir.Break, ir.Rebind, ir.If,
         ir.While, ir.Return, ir.Unbox, ir.Check}  # fmt: skip


def test_the_random_programs_draw_every_statement_kind():
    """A statement kind added to the IR is fuzzed here, or this fails."""
    assert set(ir.STATEMENTS) == DRAWN


@settings(FUZZ, max_examples=max(1, FUZZ.max_examples // 3))  # (black: ~35 ms a graph)
@given(control_flow_graphs(depth=2))
def test_fuzzed_control_flow_renders_the_same_on_both_paths(shipped, drawn):
    assert_both_paths_agree(lowered(drawn.gm, shipped[0]), shipped)


@pytest.mark.slow  # the same, three times as many graphs: about 8 s per template set
@FUZZ
@given(control_flow_graphs(depth=2))
def test_more_fuzzed_control_flow_renders_the_same_on_both_paths(shipped, drawn):
    assert_both_paths_agree(lowered(drawn.gm, shipped[0]), shipped)


@st.composite
def programs(draw):
    params = tuple(ir.Param(n) for n in draw(st.lists(IDENTS, max_size=14, unique=True)))
    body = (*draw(st.lists(STATEMENTS, max_size=8)), ir.Return(draw(expressions())))
    if draw(st.sampled_from([False, False, True])):  # boxed: the list, unpacked first
        body = (ir.Unbox(tuple(p.name for p in params), "args"), *body)
        params = (ir.Param("args"),)
    entry = ir.Function("execution_fn", params, body)
    consts = tuple(ir.ConstDecl(n, "a constant") for n in draw(st.lists(IDENTS, max_size=10)))
    return ir.Program("execution_fn", "bind", ("torch",), (), consts, (entry,))


#: random programs drawn for the layout, and how many the layout must lay out itself
LAYOUT_EXAMPLES, LAYOUT_FLOOR = 300, 150


@pytest.mark.slow  # 300 random programs through black: about 6 s
def test_the_layout_is_black_on_long_lines():
    """On random programs with long lines, the layout is black's; a shape it
    does not know is left to black (Unsure), but on no more than half of
    the examples: the comparisons really made are counted."""
    compared = []

    @settings(
        max_examples=LAYOUT_EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        database=None,  # every run draws the same number of fresh examples
    )
    @given(programs(), st.sampled_from([None, "profiled", "vllm"]))
    def laid_out_as_black(program, variant):
        raw = emit(program, variant=variant)
        ast.parse(raw)
        try:
            laid_out = emit(program, black=True, variant=variant)
        except Unsure:
            return  # black decides: format=True runs it
        assert laid_out == black.format_str(raw, mode=MODE)
        compared.append(variant)

    laid_out_as_black()
    assert len(compared) >= LAYOUT_FLOOR, f"the layout compared {len(compared)} programs"
    assert set(compared) == {None, "profiled", "vllm"}


def test_long_lines_are_split_as_black_splits_them():
    params = tuple(ir.Param(f"argument_{i}") for i in range(30))
    names = tuple(p.name for p in params)
    body = (
        ir.Call(
            "out", ir.GlobalRef("torch", "cat"), (ir.ListExpr(tuple(map(ir.Name, names[:3]))),)
        ),
        ir.Del(names),
        ir.Return(ir.TupleExpr((ir.Name("out"),) * 12)),
    )
    program = ir.Program("f", "bind", ("torch",), (), (), (ir.Function("f", params, body),))
    code = emit(program, black=True)
    assert max(len(line) for line in code.splitlines()) <= LINE_LENGTH
    assert "        del (\n            argument_0,\n" in code
    assert code == black.format_str(emit(program), mode=MODE)


# -- the contract around the fast path ---------------------------------------


def test_a_template_override_is_never_bypassed(tmp_path):
    (tmp_path / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n'
        "{% block del %}\n    pass  # kept alive\n{% endblock %}\n"
    )
    templates = Templates(tmp_path)
    assert not templates.builtin_in_effect
    gm = fx.symbolic_trace(lambda x: x.relu() + 1)
    for fmt in (False, True):
        code = stitchgen.generate(gm, templates=templates, format=fmt).code
        assert "# kept alive" in code and "del " not in code


def test_a_template_added_later_is_seen(tmp_path):
    templates = Templates(tmp_path)
    gm = fx.symbolic_trace(lambda x: x + 1)
    assert templates.builtin_in_effect
    assert stitchgen.generate(gm, templates=templates).code.startswith("# Generated")
    (tmp_path / "module.py.j2").write_text(
        '{% extends "stitchgen/module.py.j2" %}{% block header %}# mine\n{% endblock %}'
    )
    assert not templates.builtin_in_effect
    assert stitchgen.generate(gm, templates=templates).code.startswith("# mine")


@pytest.mark.parametrize("variant", ["profiled", "vllm"])
def test_an_overridden_variant_renders_through_its_templates(variant, tmp_path):
    (tmp_path / "function.py.j2").write_text(
        f'{{% extends "variants/{variant}/function.py.j2" %}}\n'
        "{% block del %}\n    pass  # kept alive\n{% endblock %}\n"
    )
    templates = Templates(tmp_path, variant=variant)
    assert Templates(variant=variant).builtin_in_effect and not templates.builtin_in_effect
    gm = fx.symbolic_trace(lambda x: x.relu() + 1)
    code = stitchgen.generate(gm, templates=templates, format=False).code
    assert "# kept alive" in code and "del " not in code


def test_a_statement_without_a_block_is_an_error():
    from dataclasses import dataclass
    from typing import ClassVar

    @dataclass(frozen=True)
    class Pass:
        template: ClassVar[str] = "pass"

    fn = ir.Function("f", (), (Pass(), ir.Return(ir.Literal(None))))
    program = ir.Program("f", "bind", (), (), (), (fn,))
    with pytest.raises(TemplateError, match="no block renders a Pass statement"):
        stitchgen.render(program)


def test_a_name_the_filters_refuse_is_refused_on_the_fast_path_too():
    fn = ir.Function("f", (ir.Param("x; import os"),), (ir.Return(ir.Name("x")),))
    program = ir.Program("f", "bind", (), (), (), (fn,))
    with pytest.raises(TemplateError, match="is not an identifier"):
        stitchgen.render(program, format=False)


def test_unknown_shapes_fall_back_to_black():
    # a nested display too long for its line: the layout leaves it to black
    wide = ir.TupleExpr(tuple(ir.Literal(f"item number {i}") for i in range(12)))
    fn = ir.Function("f", (), (ir.Return(ir.TupleExpr((wide, wide))),))
    program = ir.Program("f", "bind", (), (), (), (fn,))
    with pytest.raises(Unsure):
        emit(program, black=True)
    assert stitchgen.render(program) == black.format_str(emit(program), mode=MODE)


# -- what the fast path leaves out of the process ----------------------------


def test_a_plain_compile_imports_neither_jinja_nor_black():
    script = textwrap.dedent(
        """
        import sys, torch, torch.fx as fx, stitchgen
        gm = fx.symbolic_trace(lambda x: torch.relu(x) + 1)
        stitchgen.compile(gm)
        stitchgen.generate(gm, format=True)
        print(sorted(m for m in ("jinja2", "black") if m in sys.modules))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _collections_during(action):
    """Collections that start while stitchgen lowers, renders or loads (a
    frame of a stage's module on the stack)."""
    seen = []
    package = os.path.dirname(stitchgen.__file__)
    stages = tuple(
        os.path.join(package, stage)
        for stage in ("lowering" + os.sep, "passes" + os.sep, "emitter.py", "loading.py")
    )

    def count(phase, info):
        if phase != "start":
            return
        frame = sys._getframe(1)
        while frame is not None:
            path = frame.f_code.co_filename
            if path.startswith(stages):
                seen.append(info["generation"])
                return
            frame = frame.f_back

    threshold = gc.get_threshold()
    gc.set_threshold(1)  # a collection at nearly every allocation, if enabled
    gc.callbacks.append(count)
    try:
        action()
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*threshold)
    return seen


def test_the_collector_is_paused_while_compiling_and_restored(monkeypatch):
    gm = fx.symbolic_trace(lambda x: torch.relu(x) * 2 + 1)
    kept = []  # the functions stay alive: their finalizers run outside the count
    kept.append(stitchgen.compile(fx.symbolic_trace(lambda x: x - 1)))  # modules imported
    assert gc.isenabled()
    assert _collections_during(lambda: kept.append(stitchgen.compile(gm))) == []
    assert gc.isenabled()
    monkeypatch.setenv("STITCHGEN_KEEP_GC", "1")
    assert _collections_during(lambda: kept.append(stitchgen.compile(gm))) != []


def test_a_disabled_collector_stays_disabled():
    gm = fx.symbolic_trace(lambda x: x * 2)
    gc.disable()
    try:
        stitchgen.compile(gm)
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("templates", [None, "profiled", "vllm"])
def test_generating_leaves_no_reference_cycles(templates):
    """What stitchgen allocates is freed by reference counting (so pausing
    the collector defers no work): no cycle is left for the collector."""
    gm = fx.symbolic_trace(lambda x, y: torch.relu(x) * y + 1)
    stitchgen.generate(gm, templates=templates, format=True)  # one-time caches filled
    gc.collect()
    gc.disable()
    try:
        stitchgen.generate(gm, templates=templates, format=True)
        stitchgen.generate(gm, templates=templates, format=False, **SHAPES["flatten"])
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_the_vllm_drop_in_leaves_no_reference_cycles():
    from stitchgen.compat import compile_execution_fn, generate_execution_code

    gm = fx.symbolic_trace(lambda x: torch.relu(x) - 2)
    code, names, consts = generate_execution_code(gm)
    compile_execution_fn(code, {}, names, consts)
    gc.collect()
    gc.disable()
    try:
        code, names, consts = generate_execution_code(gm)
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_the_golden_files_pass_black_check_as_black_itself_runs_on_them():
    """One target-version rule: ``format=True`` tells black the Pythons of
    ``requires-python`` (from 3.10), as black's own command line infers them
    from pyproject.toml; ``black --check golden/`` agrees with every file."""
    root = Path(__file__).resolve().parents[1]
    pyproject = (root / "pyproject.toml").read_text()  # (no tomllib on Python 3.10)
    assert 'requires-python = ">={}.{}"'.format(*OLDEST_PYTHON) in pyproject
    result = subprocess.run(
        [sys.executable, "-m", "black", "--check", "golden"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr

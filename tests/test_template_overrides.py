"""An override changes only what it overrides: for a one-block override of
every block of the template contract, on the built-ins and on each shipped
variant, with pieces inlined and opaque, the generated code is the base's
code plus the lines the override writes, and nothing else. The program's
shape is the lowering's alone, whichever templates render it."""

import difflib
import functools
import re
from pathlib import Path

import pytest
from golden_cases import CASES, TEMPLATE_SETS, shared_case

import stitchgen
from stitchgen import TemplateError, Templates
from stitchgen.golden import RECORD

MODULE_BLOCKS = [
    "header", "imports", "binder", "binder_signature", "bindings", "targets", "functions",
    "binder_return",
]  # fmt: skip
FUNCTION_BLOCKS = [
    "decorators", "signature", "unbox", "prologue", "body", "before_call", "call", "call_expr",
    "after_call", "getitem", "assign", "del", "return", "epilogue",
]  # fmt: skip
#: blocks a base's templates do not render (the vllm variant writes
#: module-level functions: no binder of its own); overriding one is an error
ABSENT = {"vllm": {"binder_signature", "bindings", "binder_return"}}
#: inlined pieces (unpacked calls), opaque pieces, and getitems, assigns and
#: targets of every kind
CASE_NAMES = [
    "decoder_1_layer", "decoder_opaque_pieces", "nested_output", "constants", "get_attr_bindings",
]  # fmt: skip
MARKER = re.compile(r"  # marker:\w+|^[ \t]*# marker:\w+\n", re.MULTILINE)


def _override(directory, file, block, base):
    """``file`` in ``directory``: ``base``'s template with ``block`` marked."""
    parent = f"stitchgen/{file}" if base is None else f"stitchgen/variants/{base}/{file}"
    if block == "call_expr":  # right of `=`, no newline of its own
        body = "{{ super() }}  # marker:call_expr"
    else:
        body = f"\n# marker:{block}\n{{{{ super() }}}}"
    (directory / file).write_text(
        f'{{% extends "{parent}" %}}\n{{% block {block} %}}{body}{{% endblock %}}\n'
    )


def _code(case_name, templates):
    case = shared_case(case_name)
    return stitchgen.generate(
        case.gm, opaque=tuple(case.submods), templates=templates, format=False
    ).code


@functools.cache
def _shipped_code(case_name, base):
    return _code(case_name, Templates(variant=base))


@pytest.mark.parametrize("base", [None, "profiled", "vllm"])
@pytest.mark.parametrize(
    "file, block",
    [("module.py.j2", b) for b in MODULE_BLOCKS] + [("function.py.j2", b) for b in FUNCTION_BLOCKS],
)
def test_a_one_block_override_adds_only_its_own_lines(tmp_path, base, file, block):
    _override(tmp_path, file, block, base)
    overridden = Templates(tmp_path, variant=base)
    assert not overridden.builtin_in_effect  # rendered by Jinja, the override in effect
    if block in ABSENT.get(base, ()):
        # it would render nothing: named before anything renders, never silent
        with pytest.raises(TemplateError, match=rf":2: .* does not render block {block!r}"):
            _code(CASE_NAMES[0], overridden)
        return
    marked = 0
    for name in CASE_NAMES:
        code = _code(name, overridden)
        marked += len(MARKER.findall(code))
        assert MARKER.sub("", code) == _shipped_code(name, base), (name, block)
    assert marked > 0, f"the {block} block rendered nowhere: the test would prove nothing"


def test_the_downstream_example_adds_only_its_own_lines():
    """golden/downstream/* against the built-ins' code for the same program
    (the same helper names): the header line, the hooks import, and a mark
    before each piece call, inserted; nothing else differs."""
    factory, names = TEMPLATE_SETS["downstream"]
    downstream = factory()
    same_names = Templates(names=downstream.names, reserve=downstream.reserve)
    added = re.compile(
        r"# myproject: .*|import downstream_hooks|\s+downstream_hooks\.mark\(\"piece:\w+\"\)"
    )
    golden = Path(__file__).resolve().parents[1] / "golden"  # the checkout's, installed or not
    assert (golden / RECORD).is_file()
    for name in names:
        case = CASES[name]("cpu")
        ours = (golden / "downstream" / f"{name}.py").read_text().splitlines()
        opaque = tuple(case.submods)
        builtin = stitchgen.generate(case.gm, opaque=opaque, templates=same_names).code.splitlines()
        inserted = []
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(
            None, builtin, ours, autojunk=False
        ).get_opcodes():
            assert op in ("equal", "insert"), (name, builtin[i1:i2], ours[j1:j2])
            inserted += ours[j1:j2] if op == "insert" else []
        assert inserted and all(added.fullmatch(line) for line in inserted), inserted


def test_the_shape_does_not_depend_on_the_templates(tmp_path):
    """The program a user's templates render is the built-ins' program: piece
    results unpacked where they are called; ``unpack=False`` asks otherwise."""
    (tmp_path / "module.py.j2").write_text('{% extends "stitchgen/module.py.j2" %}\n')
    case = CASES["decoder_1_layer"]("cpu")
    mine = stitchgen.generate(case.gm, templates=Templates(tmp_path))
    builtin = stitchgen.generate(case.gm)
    assert mine.program == builtin.program and mine.code == builtin.code
    assert "getitem, getitem_1, getitem_2 = inlined_submod_0(" in mine.code
    kept = stitchgen.generate(case.gm, templates=Templates(tmp_path), unpack=False)
    assert "getitem = submod_0[0]" in kept.code
    assert kept.code == stitchgen.generate(case.gm, unpack=False).code


def test_the_shipped_function_is_written_by_the_emitter_or_by_jinja_alike(tmp_path):
    """A module override alone writes each function as the shipped
    function.py.j2 does (the emitter's text, no Jinja per statement); a
    function.py.j2 that only extends the shipped one renders through Jinja:
    the same code."""
    for variant in (None, "profiled", "vllm"):
        base = "stitchgen" if variant is None else f"stitchgen/variants/{variant}"
        emitted, jinja = tmp_path / f"{variant}-a", tmp_path / f"{variant}-b"
        for directory, files in ((emitted, ["module.py.j2"]), (jinja, _FILES)):
            directory.mkdir()
            for file in files:
                (directory / file).write_text(f'{{% extends "{base}/{file}" %}}\n')
        for name in CASE_NAMES + ["nested_children", "zero_inputs"]:
            by_emitter = _code(name, Templates(emitted, variant=variant))
            by_jinja = _code(name, Templates(jinja, variant=variant))
            assert by_emitter == by_jinja == _code(name, Templates(variant=variant)), name


_FILES = ["module.py.j2", "function.py.j2"]

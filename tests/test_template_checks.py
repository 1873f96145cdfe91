"""Template authors never work blind: every mistake a check can see is named
(file:line, and the name meant) before anything renders; correct overrides
raise no false alarm; the render-time error says the same thing where the
static check cannot be sure."""

import textwrap

import pytest
import torch.fx as fx
from golden_cases import CASES

import stitchgen
from stitchgen import Code, TemplateError, Templates
from stitchgen.literals import literal_source


def _write(directory, files):
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return directory


def _problems(directory, files, **options):
    return [str(p) for p in Templates(_write(directory, files), **options).check().problems]


def _function(block_text):
    text = textwrap.dedent(block_text).lstrip("\n")
    return {"function.py.j2": '{% extends "stitchgen/function.py.j2" %}\n' + text}


def _one(problems):
    assert len(problems) == 1, problems
    return problems[0]


# -- each kind of mistake: the text, file:line, the closest name


def test_a_misspelt_block_is_named_with_the_block_meant(tmp_path):
    problem = _one(
        _problems(tmp_path, _function("{% block befor_call %}\n    pass\n{% endblock %}\n"))
    )
    assert problem.startswith(f"{tmp_path / 'function.py.j2'}:2: ")
    assert "stitchgen/function.py.j2 has no block 'befor_call'" in problem
    assert "would render nothing" in problem
    assert "did you mean 'before_call'" in problem


def test_a_block_of_the_other_template_names_the_file_that_has_it(tmp_path):
    problem = _one(_problems(tmp_path, _function("{% block header %}\n# x\n{% endblock %}\n")))
    assert ":2: stitchgen/function.py.j2 has no block 'header'" in problem
    assert "it is a block of module.py.j2" in problem


def test_a_block_the_base_leaves_out_is_named_with_the_block_that_replaces_it(tmp_path):
    files = {
        "module.py.j2": '{% extends "stitchgen/variants/vllm/module.py.j2" %}\n'
        "{% block bindings %}\n# x\n{% endblock %}\n"
    }
    problem = _one(_problems(tmp_path, files, variant="vllm"))
    assert ":2: stitchgen/variants/vllm/module.py.j2 does not render block 'bindings'" in problem
    assert "block 'binder' leaves it out" in problem


def test_an_attribute_the_ir_types_lack_names_the_types_and_the_closest_field(tmp_path):
    files = _function("{% block before_call %}\n    # {{ stmt.nde | literal }}\n{% endblock %}\n")
    problem = _one(_problems(tmp_path, files))
    assert problem.startswith(f"{tmp_path / 'function.py.j2'}:3: stmt.nde: ")
    assert "'Call' or 'UnpackCall' have no attribute 'nde' (did you mean 'node'?)" in problem
    assert "in block 'before_call'" in problem


def test_an_emit_method_that_does_not_exist_names_the_closest(tmp_path):
    files = _function("{% block call_expr %}{{ emit.call_expresion(stmt) }}{% endblock %}\n")
    problem = _one(_problems(tmp_path, files))
    assert "'BlockText' has no attribute 'call_expresion' (did you mean 'call_expr'" in problem


def test_a_name_out_of_scope_names_the_block_and_what_it_sees(tmp_path):
    files = _function("{% block prologue %}\n    # {{ stmt.node | literal }}\n{% endblock %}\n")
    problem = _one(_problems(tmp_path, files))
    assert ":3: 'stmt' is not in scope in block 'prologue'" in problem
    assert "it sees emit, fn, fn_index, loop, program" in problem


def test_names_are_typed_through_loops_and_narrowed_by_template_tests(tmp_path):
    """An override of body walks fn.statements itself: ``s`` is a statement,
    and inside ``if s.template == "return"`` it is a Return."""
    files = _function(
        """
        {% block body %}
        {% for s in fn.statements %}
        {% if s.template == "return" %}
            return {{ s.valeu | expr }}
        {% endif %}
        {% endfor %}
        {% endblock %}
        """
    )
    problem = _one(_problems(tmp_path, files))
    assert ":5: s.valeu: 'Return' has no attribute 'valeu' (did you mean 'value'?)" in problem


def test_a_template_name_that_does_not_exist_names_the_closest(tmp_path):
    files = {"module.py.j2": '{% extends "stitchgen/functoin.py.j2" %}\n'}
    problem = _one(_problems(tmp_path, files))
    assert problem.startswith(f"{tmp_path / 'module.py.j2'}:1: no template named ")
    assert "did you mean 'stitchgen/function.py.j2'" in problem
    files = {
        "module.py.j2": '{% extends "stitchgen/module.py.j2" %}\n'
        '{% block header %}{% include "hedaer.j2" %}{% endblock %}\n',
        "header.j2": "# mine\n",
    }
    problem = _one(_problems(tmp_path, files))
    assert ":2: no template named 'hedaer.j2' (did you mean 'header.j2'?)" in problem


def test_a_template_that_extends_itself_is_named(tmp_path):
    problem = _one(_problems(tmp_path, {"function.py.j2": '{% extends "function.py.j2" %}\n'}))
    assert "names this file itself" in problem
    assert "did you mean 'stitchgen/function.py.j2'" in problem


def test_an_unknown_filter_names_the_closest(tmp_path):
    files = _function("{% block before_call %}\n    # {{ stmt.node | literl }}\n{% endblock %}\n")
    assert "no filter named 'literl' (did you mean 'literal'" in _one(_problems(tmp_path, files))


def test_generate_refuses_before_anything_renders(tmp_path):
    _write(tmp_path, _function("{% block befor_call %}\n    pass\n{% endblock %}\n"))
    with pytest.raises(TemplateError, match=r"function\.py\.j2:2: .*'befor_call'") as info:
        stitchgen.generate(fx.symbolic_trace(lambda x: x + 1), template_dirs=[tmp_path])
    assert info.value.lineno == 2
    assert info.value.template == str(tmp_path / "function.py.j2")


def test_the_render_time_error_names_the_type_and_the_closest_attribute(tmp_path):
    """Where the static check cannot know the type (a filter's result), the
    render names it in the same words, with file:line."""
    _write(
        tmp_path,
        _function(
            "{% block epilogue %}\n{% set last = fn.statements | last %}\n"
            "# {{ last.valeu | literal }}\n{% endblock %}\n"
        ),
    )
    templates = Templates(tmp_path)
    assert templates.check().problems == []
    with pytest.raises(TemplateError) as info:
        stitchgen.generate(fx.symbolic_trace(lambda x: x + 1), templates=templates)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'function.py.j2'}:4: ")
    assert "'Return' has no attribute 'valeu' (did you mean 'value'?)" in message


def test_checks_run_once_per_object_and_again_when_a_file_changes(tmp_path, monkeypatch):
    import stitchgen.authoring.checks as checks

    calls = []
    real = checks.check_templates
    monkeypatch.setattr(checks, "check_templates", lambda *a, **k: calls.append(1) or real(*a, **k))
    path = _write(tmp_path, _function("{% block prologue %}\n    pass\n{% endblock %}\n"))
    templates = Templates(path)
    gm = fx.symbolic_trace(lambda x: x + 1)
    stitchgen.generate(gm, templates=templates)
    stitchgen.generate(fx.symbolic_trace(lambda x: x * 2), templates=templates)
    assert len(calls) == 1
    (tmp_path / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n{% block prologe %}{% endblock %}\n'
    )
    with pytest.raises(TemplateError, match="'prologe'"):
        stitchgen.generate(gm, templates=templates)
    assert len(calls) == 2
    calls.clear()
    stitchgen.generate(gm)  # the shipped templates: no check at all
    stitchgen.generate(gm, templates="profiled")
    assert calls == []


# -- no false alarms


def test_no_false_alarm_for_an_authors_nested_block_and_super(tmp_path):
    files = _function(
        """
        {% block call %}
        {% block my_comment %}
            # a call
        {% endblock %}
        {{ super() -}}
        {% endblock %}
        """
    )
    assert _problems(tmp_path, files) == []
    code = stitchgen.generate(CASES["decoder_1_layer"]("cpu").gm, template_dirs=[tmp_path]).code
    assert "# a call" in code


def test_no_false_alarm_for_a_template_that_extends_nothing(tmp_path):
    files = {
        "module.py.j2": """
        {% block my_header %}
        # all mine
        {% endblock %}
        {{ emit.header() }}{{ emit.imports() }}{{ emit.binder_signature() }}{{ emit.targets() -}}
        {% for fn in program.functions %}
        {% filter indent(4, first=True) %}{{ emit.function(fn) }}{% endfilter %}

        {% endfor %}
        {{ emit.binder_return() -}}
        """
    }
    assert _problems(tmp_path, files) == []
    gm = fx.symbolic_trace(lambda x: x + 1)
    generated = stitchgen.generate(gm, template_dirs=[tmp_path])
    assert generated.code.startswith("# all mine\n")
    assert stitchgen.load(generated)(2) == 3


def test_no_false_alarm_for_an_override_of_a_shipped_variant(tmp_path):
    files = {
        "function.py.j2": """
        {% extends "stitchgen/variants/profiled/function.py.j2" %}
        {% block call_expr %}{{ super() }}  # profiled{% endblock %}
        """
    }
    assert _problems(tmp_path, files, variant="profiled") == []


def test_no_false_alarm_for_an_include_and_both_files_overridden(tmp_path):
    files = {
        "module.py.j2": """
        {% extends "stitchgen/module.py.j2" %}
        {% block header %}
        {% include "partial.j2" %}
        {{ super() -}}
        {% endblock %}
        """,
        "partial.j2": "# from {{ program.name }}\n",
        "function.py.j2": """
        {% extends "stitchgen/function.py.j2" %}
        {% block call %}
        {% if stmt.targets is defined %}
        {{ super() -}}
        {% else %}
            # {{ stmt.target }}
        {{ super() -}}
        {% endif %}
        {% endblock %}
        """,
    }
    assert _problems(tmp_path, files) == []
    code = stitchgen.generate(CASES["decoder_1_layer"]("cpu").gm, template_dirs=[tmp_path]).code
    assert code.startswith("# from execution_fn\n")


def test_no_false_alarm_for_the_downstream_example_with_its_filter_and_globals(tmp_path):
    def label(name):
        return Code(literal_source(f"piece:{name}"))

    templates = Templates(
        "tests/downstream", filters={"label": label}, reserve=["downstream_hooks"]
    )
    assert templates.check().problems == []
    files = _function("{% block prologue %}\n    # {{ project | literal }}\n{% endblock %}\n")
    assert _problems(tmp_path, files, globals={"project": "acme"}) == []


def test_no_false_alarm_for_the_shipped_templates():
    for variant in (None, "profiled", "vllm"):
        assert Templates(variant=variant).check().clean


def test_a_later_process_skips_checks_that_passed_on_the_same_files(tmp_path, monkeypatch):
    """The template cache records templates whose checks passed (a new
    ``Templates`` stands for a new process); a problem is never recorded,
    and a changed file is checked again."""
    import stitchgen.authoring.checks as checks

    monkeypatch.setenv("STITCHGEN_CACHE_DIR", str(tmp_path / "cache"))
    calls = []
    real = checks.check_templates
    monkeypatch.setattr(checks, "check_templates", lambda *a, **k: calls.append(1) or real(*a, **k))
    mine = _write(tmp_path / "mine", _function("{% block prologue %}\n    pass\n{% endblock %}\n"))
    gm = fx.symbolic_trace(lambda x: x + 1)
    stitchgen.generate(gm, templates=Templates(mine))
    stitchgen.generate(gm, templates=Templates(mine))
    assert len(calls) == 1
    (mine / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n{% block prologe %}{% endblock %}\n'
    )
    for _ in range(2):
        with pytest.raises(TemplateError, match="'prologe'"):
            stitchgen.generate(gm, templates=Templates(mine))
    assert len(calls) == 3


def test_a_control_flow_block_knows_its_statements_type(tmp_path):
    """The ``if`` block sees an ``If`` (found by name, not by a chain of
    ``stmt.template ==``): a misspelt field is named with the one meant, and
    a correct override of ``if`` and ``while`` raises nothing."""
    files = _function(
        "{% block if %}\n    # {{ stmt.tst | expr }}\n{{ super() -}}\n{% endblock %}\n"
    )
    problem = _one(_problems(tmp_path, files))
    assert "'If' has no attribute 'tst' (did you mean 'test'?)" in problem
    assert "in block 'if'" in problem
    good = _function(
        "{% block if %}\n    # {{ stmt.test | expr }}\n{{ super() -}}\n{% endblock %}\n"
        "{% block while %}\n    # {{ stmt.carried | names }}\n{{ super() -}}\n{% endblock %}\n"
    )
    assert _problems(tmp_path / "good", good) == []

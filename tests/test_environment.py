"""No path from data to code: a string constant from the graph printed
through any filter, test or operator of the template environment either is
refused or stays a quoted literal."""

import re

import pytest
import torch.fx as fx
from builders import override_return, returning_constant

import stitchgen
from stitchgen import TemplateError, Templates
from stitchgen.environment import NAMES_KEY
from stitchgen.ir import program_names

PAYLOADS = ["PWNED_7f3a()", "PWNED_7f3a"]  # code, and a bare identifier
UNQUOTED = re.compile(r"(?<![\"'])PWNED_7f3a")


def _program(payload):
    return stitchgen.lower(returning_constant(payload))


ENVIRONMENT = Templates(variant="profiled").environment
PRELUDE = (
    "{% set stmt = program.entry.body[-1] %}"
    "{% set data = stmt.value.items[1].value %}"
    "{% set code = stmt.value | expr %}"
)


def _render(expression, payload):
    """What the expression prints, or None when the environment refuses it."""
    program = _program(payload)
    try:
        template = ENVIRONMENT.from_string(PRELUDE + expression)
        return template.render(program=program, **{NAMES_KEY: program_names(program)})
    except Exception:  # refused (unsafe output, TypeError from a misused filter, ...)
        return None


FILTER_FORMS = [
    "{{{{ data | {f} }}}}",
    "{{{{ data | {f}(data) }}}}",
    "{{{{ [data] | {f} }}}}",
    "{{{{ [data, data] | {f}(data) }}}}",
    "{{{{ code | {f}(data) }}}}",
    "{{{{ [code, data] | {f} }}}}",
    "{{{{ (data, code) | {f} }}}}",
    "{{{{ {{'k': data}} | {f} }}}}",
    "{{{{ data | list | {f} }}}}",
    "{{{{ [data] | map('string') | {f} }}}}",
    "{{% filter {f} %}}{{{{ code }}}}{{{{ data }}}}{{% endfilter %}}",
]


#: stitchgen's own filters: the way to print values, each with its contract
#: (``names``/``dotted`` print identifiers, ``comment`` one line for a ``#``)
OURS = {"arguments", "atom", "comment", "dotted", "expr", "literal", "names", "params", "subscript"}


def test_the_environment_has_our_filters():
    assert OURS <= set(ENVIRONMENT.filters)


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("name", sorted(set(ENVIRONMENT.filters) - OURS))
def test_no_filter_prints_a_string_constant_as_code(name, payload):
    for form in FILTER_FORMS:
        out = _render(form.format(f=name), payload)
        assert out is None or not UNQUOTED.search(out), (form.format(f=name), out)


@pytest.mark.parametrize("name", sorted(OURS - {"comment"}))
def test_our_filters_never_print_code_from_a_string(name):
    for form in FILTER_FORMS:
        out = _render(form.format(f=name), "PWNED_7f3a()")
        assert out is None or not UNQUOTED.search(out), (form.format(f=name), out)


def test_the_comment_filter_keeps_text_on_its_comment_line():
    out = _render("# {{ data | comment }}", "x\nPWNED_7f3a()\r\x0bimport os")
    assert out is not None and len(out.splitlines()) == 1


TEST_FORMS = [
    "{{{{ data is {t} }}}}",
    "{{{{ data is {t}(data) }}}}",
    "{{% if data is {t} %}}{{{{ data }}}}{{% endif %}}",
    "{{% if data is {t}(data) %}}{{{{ data }}}}{{% endif %}}",
    "{{% if code is {t}(data) %}}{{{{ code ~ data }}}}{{% endif %}}",
]


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("name", sorted(ENVIRONMENT.tests))
def test_no_test_prints_a_string_constant_as_code(name, payload):
    for form in TEST_FORMS:
        out = _render(form.format(t=name), payload)
        assert out is None or not UNQUOTED.search(out), (form.format(t=name), out)


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize(
    "expression",
    [
        "{{ data }}",
        "{{ code + data }}",
        "{{ data + code }}",
        "{{ code ~ data }}",
        "{{ data ~ code }}",
        "{{ code ~ ' ' ~ data }}",
        "{{ code % data }}",
        "{{ code % (data,) }}",
        "{{ code * 2 ~ data }}",
        "{{ code.join([data]) }}",
        "{{ code.format(data) }}",
        "{{ code.replace('x', data) }}",
        "{{ code.__class__(data) }}",
        "{{ code.__html__() ~ data }}",
        "{{ code.escape(data) }}",
        "{{ code[0:0] ~ data }}",
        "{{ data.__class__ }}",
        "{{ '%s' % data }}",
        "{{ '{}'.format(data) }}",
        "{{ data ~ '' }}",
        "{{ lipsum() ~ data }}",
        "{{ joiner(data)() }}{{ joiner(data)() }}",
        "{% set joined %}{{ code }}{% endset %}{{ joined ~ data }}",
        "{% macro m() %}{{ code }}{% endmacro %}{{ m() + data }}",
        "{% for ch in data %}{{ ch }}{% endfor %}",
        "{{ data | attr('upper') }}",
        "{{ code | attr('join') }}",
        "{{ [data] | map('safe') | first }}",
        "{{ [data] | map('e') | join }}",
    ],
)
def test_no_operator_or_method_prints_a_string_constant_as_code(expression, payload):
    out = _render(expression, payload)
    assert out is None or not UNQUOTED.search(out), out


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("{{ data | literal }}", '"PWNED_7f3a()"'),
        ("{{ code }}", '(x, "PWNED_7f3a()")'),
        ("{{ code | indent(4) }}", '(x, "PWNED_7f3a()")'),
        ("{{ [code, code] | join(', ') }}", '(x, "PWNED_7f3a()"), (x, "PWNED_7f3a()")'),
        ("{{ code ~ code }}", '(x, "PWNED_7f3a()")(x, "PWNED_7f3a()")'),
        ("{{ [code] | first }}", '(x, "PWNED_7f3a()")'),
        ("{{ stmt.value.items[0] | expr }} {{ program.name }}", "x execution_fn"),
    ],
)
def test_code_and_the_programs_names_still_print(expression, expected):
    assert _render(expression, PAYLOADS[0]) == expected


def test_an_escaping_filter_in_an_override_is_a_template_error_naming_the_line(tmp_path):
    override_return(tmp_path, "stmt.value.items[1].value | e")
    gm = returning_constant("PWNED_7f3a()")
    with pytest.raises(TemplateError, match=r"function\.py\.j2:3: unsafe output: filter 'e'"):
        stitchgen.generate(gm, template_dirs=[tmp_path])


@pytest.mark.parametrize(
    "call",
    [
        "emit.getitem(\"x = __import__('os')\")",
        "emit.call_expr({'callee': 1})",
        "emit.signature(program.name)",
        "emit.return_(program.binder)",
    ],
)
def test_emit_takes_ir_objects_only(tmp_path, call):
    (tmp_path / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n'
        f"{{% block return %}}{{{{ {call} }}}}\n{{% endblock %}}\n"
    )
    with pytest.raises(TemplateError, match=r"emit\.\w+\(\) takes an IR object, not (str|dict)"):
        stitchgen.generate(fx.symbolic_trace(lambda x: x + 1), template_dirs=[tmp_path])


def test_emit_cannot_be_replaced_by_a_global():
    with pytest.raises(ValueError, match="'emit' is stitchgen's"):
        stitchgen.Templates(globals={"emit": object()})

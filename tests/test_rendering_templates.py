"""Template customization: overrides, blocks, variants, extension API, safety."""

import functools
import operator

import downstream_hooks
import pytest
import torch
import torch.fx as fx
from builders import override_return, returning_constant
from golden_cases import CASES, downstream_templates
from oracle import assert_runs_same, assert_same

import stitchgen
from stitchgen import Code, TemplateError, Templates
from stitchgen.cli import main
from stitchgen.loading import compile_cache_info


def _gm():
    return fx.symbolic_trace(lambda x: x * 3)


def test_downstream_hook_runs_before_every_piece_call_in_order():
    case = CASES["nested_children"]("cpu")
    fn = stitchgen.compile(case.gm, templates=downstream_templates())
    downstream_hooks.calls.clear()
    assert_runs_same(fn, case.reference, case.inputs, case.gm)
    assert downstream_hooks.calls == [
        "piece:submod_0", "piece:inner", "piece:scale",
        "piece:linear", "piece:submod_1",
        "piece:submod_2", "piece:inner", "piece:scale",
    ]  # fmt: skip


def test_profiled_variant_records_a_range_per_piece():
    case = CASES["decoder_1_layer"]("cpu")
    fn = stitchgen.compile(case.gm, templates="profiled")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = fn(*case.inputs)
    assert_same(out, case.expected())
    names = {event.name for event in prof.events()}
    assert {"submod_0", "submod_1", "submod_2"} <= names


def test_profiled_variant_enters_no_range_when_no_profiler_runs(monkeypatch):
    case = CASES["decoder_1_layer"]("cpu")
    fn = stitchgen.compile(case.gm, templates="profiled")

    def no_range(name):
        raise AssertionError(f"a range for {name} was entered with no profiler on")

    monkeypatch.setattr(torch.profiler, "record_function", no_range)
    assert_runs_same(fn, case.reference, case.inputs, case.gm)  # the plain branch, every piece
    with pytest.raises(AssertionError, match="a range for submod_0"):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            fn(*case.inputs)


def test_a_node_named_like_the_profiled_check_is_renamed():
    gm = CASES["decoder_1_layer"]("cpu").gm
    for node in gm.graph.nodes:
        if node.op == "call_function":  # a getitem of the entry
            node.name = "profiling"
            break
    code = stitchgen.generate(gm, templates="profiled").code
    assert "profiling = torch.autograd._profiler_enabled()" in code
    assert "profiling_1, getitem_1, getitem_2 = inlined_submod_0(" in code
    profiled = stitchgen.Templates(variant="profiled")
    program = stitchgen.lower(gm, reserve=profiled.reserve, unpack=False)  # a getitem per item
    assert "profiling_1 = submod_0[0]" in stitchgen.render(program, templates=profiled)


def test_profiled_variant_costs_nothing_unless_selected():
    gm = CASES["decoder_1_layer"]("cpu").gm
    assert "record_function" not in stitchgen.generate(gm).code
    assert stitchgen.generate(gm, templates="profiled").code.count("record_function") == 3
    assert "_profiler_enabled" not in stitchgen.generate(gm).code


def _vllm_style_load(code, submod_callables, submod_names, consts=None):
    """How vLLM's compile_execution_fn binds code (written here from its
    documented behaviour): consts as a global, pieces by keyword, partial."""
    namespace = {} if consts is None else {"__vllm_consts__": consts}
    exec(code, namespace)
    pieces = [submod_callables.get(name) for name in submod_names]
    return functools.partial(namespace["execution_fn"], __vllm_submods__=pieces)


@pytest.mark.parametrize("name", ["decoder_opaque_pieces", "nested_children", "constants"])
def test_vllm_variant_loads_the_way_vllm_loads_it(name):
    case = CASES[name]("cpu")
    generated = stitchgen.generate(case.gm, opaque=tuple(case.submods), templates="vllm")
    assert generated.convention == "vllm"
    callables = {**generated.submods, **case.submods}
    fn = _vllm_style_load(generated.code, callables, generated.submod_names, generated.consts)
    assert_runs_same(fn, case.reference, case.inputs, case.gm)
    assert_runs_same(stitchgen.load(generated, case.submods), case.reference, case.inputs, case.gm)


def test_vllm_variant_without_constants_loads_like_legacy_code():
    case = CASES["decoder_opaque_pieces"]("cpu")
    generated = stitchgen.generate(case.gm, opaque=tuple(case.submods), templates="vllm")
    assert generated.consts == [] and "__vllm_consts__" not in generated.code
    fn = _vllm_style_load(generated.code, case.submods, generated.submod_names)  # no consts
    assert_runs_same(fn, case.reference, case.inputs, case.gm)


def test_printing_a_raw_constant_is_refused_naming_template_and_line(tmp_path):
    (tmp_path / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n'
        "{% block before_call %}\n"
        "    print({{ stmt.node }})\n"
        "{% endblock %}\n"
    )
    graph = fx.Graph()
    node = graph.call_function(torch.zeros, (1,))
    node.name = "x; import os"  # an adversarial node name
    graph.output(node)
    from torch.fx._lazy_graph_module import _make_graph_module, _use_lazy_graph_module

    with _use_lazy_graph_module(True):
        gm = _make_graph_module({}, graph)
    misses = compile_cache_info().misses
    with pytest.raises(
        TemplateError, match=r"function\.py\.j2:3: unsafe output: .*raw str"
    ) as info:
        stitchgen.compile(gm, template_dirs=[tmp_path])
    assert info.value.template.endswith("function.py.j2") and info.value.lineno == 3
    assert compile_cache_info().misses == misses  # nothing was compiled


def test_a_string_constant_cannot_be_printed_as_code(tmp_path):
    override_return(tmp_path, "stmt.value.items[1].value")
    gm = returning_constant("__import__('os').getcwd()")
    with pytest.raises(TemplateError, match="unsafe output"):
        stitchgen.generate(gm, template_dirs=[tmp_path])
    override_return(tmp_path, "stmt.value.items[1].value | literal")
    assert stitchgen.compile(gm, template_dirs=[tmp_path])(1) == "__import__('os').getcwd()"


def test_custom_filters_and_globals_extend_without_replacing_ours(tmp_path):
    (tmp_path / "module.py.j2").write_text(
        '{% extends "stitchgen/module.py.j2" %}\n'
        "{% block header %}\n# {{ project | shout }}\n{{ super() -}}\n{% endblock %}\n"
    )
    templates = Templates(
        tmp_path, filters={"shout": lambda s: Code(s.upper())}, globals={"project": "acme"}
    )
    assert stitchgen.generate(_gm(), templates=templates).code.startswith("# ACME\n")
    with pytest.raises(ValueError, match=r"filters \['expr', 'literal'\] are stitchgen's own"):
        Templates(filters={"expr": str, "literal": str})
    plain = Templates(
        tmp_path, filters={"shout": lambda s: s.upper() + "!"}, globals={"project": "a"}
    )
    with pytest.raises(TemplateError, match="module.py.j2:3: unsafe output"):
        stitchgen.generate(_gm(), templates=plain)


def test_helper_names_are_configurable_and_still_collision_free():
    graph = fx.Graph()
    x = graph.placeholder("make")  # collides with the configured binder name
    graph.output(graph.call_function(operator.neg, (x,)))
    gm = fx.GraphModule({}, graph)
    templates = Templates(names={"binder": "make"}, reserve=["acme"])
    code = stitchgen.generate(gm, templates=templates).code
    # the parameter keeps the placeholder's name (callers pass it by it); the binder yields
    assert "def make_1():" in code and "def execution_fn(make):" in code
    assert stitchgen.compile(gm, templates=templates)(make=2) == -2
    with pytest.raises(ValueError, match="unknown name formats"):
        Templates(names={"helper": "x"})


def test_bad_template_configurations_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown template variant 'fast'"):
        Templates(variant="fast")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Templates(tmp_path / "missing")
    with pytest.raises(ValueError, match="not both"):
        stitchgen.generate(_gm(), templates=Templates(), template_dirs=[tmp_path])


def test_user_directories_come_before_the_variant(tmp_path):
    (tmp_path / "module.py.j2").write_text(
        '{% extends "stitchgen/variants/profiled/module.py.j2" %}\n'
        "{% block header %}\n# mine\n{% endblock %}\n"
    )
    gm = CASES["decoder_1_layer"]("cpu").gm
    code = stitchgen.generate(gm, templates=Templates(tmp_path, variant="profiled")).code
    assert code.startswith("# mine\n") and "record_function" in code


def test_cli_demo_takes_template_dirs_and_variants(tmp_path, capsys):
    (tmp_path / "module.py.j2").write_text(
        '{% extends "stitchgen/module.py.j2" %}{% block header %}# from my dir\n{% endblock %}'
    )
    args = ["demo", "--layers", "1", "--template-dir", str(tmp_path), "--variant", "profiled"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "# from my dir" in out and "record_function" in out and "equal" in out


@pytest.mark.parametrize("format", [False, True], ids=["raw", "black"])
@pytest.mark.parametrize(
    ("name", "text"),
    [
        # a dedent that matches nothing: an IndentationError from compile()
        ("function.py.j2", "{% block return %}\n  return {{ stmt.value | expr }}\n{% endblock %}"),
        # black accepts a module-level return; compile() does not
        ("module.py.j2", "{% block binder_return %}\n{{ super() }}return 1\n{% endblock %}"),
    ],
    ids=["bad-indent", "return-outside-function"],
)
def test_rendered_source_that_is_not_python_is_a_template_error_naming_the_file(
    tmp_path, name, text, format
):
    (tmp_path / name).write_text(f'{{% extends "stitchgen/{name}" %}}\n{text}\n')
    with pytest.raises(TemplateError, match="the rendered source is not valid Python") as info:
        stitchgen.generate(_gm(), template_dirs=[tmp_path], format=format)
    assert str(tmp_path / name) in str(info.value)
    assert str(tmp_path / name) in info.value.template


def test_generate_checks_templates_of_your_own_and_load_reuses_the_compile(tmp_path):
    (tmp_path / "module.py.j2").write_text('{% extends "stitchgen/module.py.j2" %}\n')
    generated = stitchgen.generate(_gm(), format=False, template_dirs=[tmp_path])
    assert generated.code_object is not None
    assert generated.code_object.co_filename.startswith("<stitchgen:execution_fn:")
    misses = compile_cache_info().misses
    assert stitchgen.load(generated)(2) == 6
    assert compile_cache_info().misses == misses


def test_the_shipped_templates_code_is_compiled_once_by_load():
    gm = torch.fx.symbolic_trace(lambda x: x * 3 + 7)  # source no other test compiles
    misses = compile_cache_info().misses
    generated = stitchgen.generate(gm, format=False)
    assert generated.code_object is None and compile_cache_info().misses == misses
    assert stitchgen.load(generated)(2) == 13
    assert compile_cache_info().misses == misses + 1


def test_decorators_prologue_and_epilogue_blocks_and_signature_keeps_the_unboxing(tmp_path):
    (tmp_path / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n'
        "{% block decorators %}@torch.no_grad()\n{% endblock %}\n"
        "{% block signature %}# the signature of {{ fn.name }}\n{{ super() }}{% endblock %}\n"
        "{% block prologue %}    grad = torch.is_grad_enabled()\n{% endblock %}\n"
        "{% block epilogue %}# end of {{ fn.name }}\n{% endblock %}\n"
    )
    case = CASES["decoder_1_layer"]("cpu")
    templates = Templates(tmp_path)
    generated = stitchgen.generate(case.gm, templates=templates, boxed=True, format=False)
    code = generated.code
    entry = code[code.index("    @torch.no_grad()\n    # the signature of execution_fn\n") :]
    lines = entry.splitlines()
    assert lines[2].startswith("    def execution_fn(args):")
    assert lines[3].endswith("= args") and lines[4] == "        args.clear()"
    assert lines[5] == "        grad = torch.is_grad_enabled()"
    assert "    # end of execution_fn\n" in code
    assert code.count("@torch.no_grad()") == len(generated.program.functions)
    assert_same(stitchgen.load(generated)(list(case.inputs)), case.expected())

"""One options record for every stage, one linkage record read by every
consumer (issue 51 item 2)."""

import pytest
import torch
import torch.fx as fx
from golden_cases import CASES

import stitchgen
from stitchgen.conventions import Linkage


def _gm():
    return fx.symbolic_trace(lambda x: torch.relu(x) + 1)


@pytest.mark.parametrize(
    "stage",
    [
        lambda gm, **kw: stitchgen.generate(gm, **kw),
        lambda gm, **kw: stitchgen.compile(gm, **kw),
        lambda gm, **kw: stitchgen.lower(gm, **kw),
        lambda gm, **kw: stitchgen.backend([torch.relu], **kw),
    ],
    ids=["generate", "compile", "lower", "backend"],
)
def test_every_stage_refuses_an_unknown_option_in_one_words(stage):
    with pytest.raises(TypeError, match=r"unknown generate option\(s\) \['fromat'\]; known: "):
        stage(_gm(), fromat=True)


def test_lower_refuses_what_only_rendering_reads():
    with pytest.raises(TypeError, match=r"lower renders nothing: it takes no \['dump_dir'\]"):
        stitchgen.lower(_gm(), dump_dir="x")


def test_lower_takes_the_names_and_convention_of_the_templates_it_is_given():
    graph = fx.Graph()
    x = graph.placeholder("profiling")
    graph.output(graph.call_function(torch.relu, (x,)))
    gm = fx.GraphModule({}, graph)
    program = stitchgen.lower(gm, templates="profiled")
    assert "profiling" in program.reserved
    assert stitchgen.lower(gm, templates="vllm").linkage.convention == "vllm"
    code = stitchgen.render(program, format=False, templates="profiled")
    assert code == stitchgen.generate(gm, templates="profiled", format=False).code


def test_options_record_defaults_and_is_immutable():
    options = stitchgen.Options(opaque=["a"], format=False)
    assert options.opaque == ("a",) and options.format is False and options.name == "execution_fn"
    with pytest.raises(AttributeError):
        options.name = "f"  # type: ignore[misc]


@pytest.mark.parametrize("templates", [None, "vllm"])
def test_the_lowering_linkage_is_what_generated_load_and_the_manifest_read(tmp_path, templates):
    case = CASES["decoder_1_layer"]("cpu")
    generated = stitchgen.generate(case.gm, templates=templates, opaque=["submod_1"])
    linkage = generated.linkage
    assert linkage == generated.program.linkage
    assert linkage.bound == ("submod_1",)
    assert set(linkage.inlined) == {n for n, _ in case.gm.named_children()} - {"submod_1"}
    assert Linkage.from_manifest(linkage.manifest()) == linkage
    if templates is None:
        path = generated.save(tmp_path / "artifact")
        assert stitchgen.read_artifact(path).linkage == linkage
    fn = stitchgen.load(generated, {"submod_1": case.gm.submod_1})
    assert torch.equal(fn(*case.inputs), case.gm(*case.inputs))


def test_a_renamed_binder_is_the_linkage_binder():
    graph = fx.Graph()
    x = graph.placeholder("bind")
    graph.output(graph.call_function(torch.relu, (x,)))
    generated = stitchgen.generate(fx.GraphModule({}, graph), format=False)
    assert generated.binder != "bind" and f"def {generated.binder}(" in generated.code
    assert generated.linkage.binder == generated.program.binder


def _input_named(name):
    graph = fx.Graph()
    x = graph.placeholder(name)
    graph.output(graph.call_function(torch.relu, (x,)))
    return fx.GraphModule({}, graph)


def test_reserve_as_one_string_is_refused():
    with pytest.raises(TypeError, match="reserve= takes a sequence of names, not the string 'x'"):
        stitchgen.Templates(reserve="x")


def test_render_refuses_a_program_that_defines_a_name_its_templates_reserve():
    gm = _input_named("profiling")
    refused = r"defines \['profiling'\], which the templates"
    with pytest.raises(stitchgen.TemplateError, match=refused):
        stitchgen.render(stitchgen.lower(gm), templates="profiled")
    # lowered with the same templates, the input is named apart and the code runs
    program = stitchgen.lower(gm, templates="profiled")
    code = stitchgen.render(program, format=False, templates="profiled")
    assert code == stitchgen.generate(gm, templates="profiled", format=False).code
    x = torch.randn(3)
    assert torch.equal(stitchgen.compile(gm, templates="profiled")(x), gm(x))


def test_render_takes_a_program_lowered_apart_that_uses_no_reserved_name():
    gm = _input_named("x")
    plain = stitchgen.render(stitchgen.lower(gm), format=False, templates="profiled")
    assert plain == stitchgen.generate(gm, templates="profiled", format=False).code


@pytest.mark.parametrize(
    "given, message",
    [
        ({"format": "no"}, "option 'format' takes bool, not str"),
        ({"boxed": 1}, "option 'boxed' takes bool, not int"),
        ({"name": None}, "option 'name' takes str, not NoneType"),
        (
            {"opaque": ["submod_1", 2]},
            r"option 'opaque' takes tuple\[str, \.\.\.\], not tuple whose item 1 is int",
        ),
        ({"passes": [None]}, "option 'passes' takes .*, not tuple whose item 0 is NoneType"),
        ({"dump_dir": 3}, "option 'dump_dir' takes str | os.PathLike"),
    ],
)
def test_options_are_type_checked_naming_the_option_and_its_type(given, message):
    """A wrong type is a TypeError naming the option (``format="no"`` is no true)."""
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    rendering = {"format", "dump_dir"}.intersection(given)  # lower takes neither
    for entry in (stitchgen.generate, stitchgen.compile, stitchgen.lower)[: 3 - len(rendering)]:
        with pytest.raises(TypeError, match=message):
            entry(gm, **given)

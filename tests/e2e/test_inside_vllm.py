"""The vLLM plugin against the real vLLM (``nox -s vllm``: vLLM 0.34.0 on
torch 2.14.0 and vLLM 0.22.0 on torch 2.11.0, on the CPU): each test runs
tests/vllm_app.py as a fresh process (forked: tests/vllm_runner.py), which
loads the plugin only through vLLM's own ``load_general_plugins()`` (so the
installed entry point is what is tested) and compiles a small model through
vLLM's real ``VllmBackend``.

Skipped where vLLM is not installed (the main suite)."""

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here: `nox -s vllm` runs these")

import torch  # noqa: E402
import vllm  # noqa: E402
from builders import vllm_header  # noqa: E402
from vllm_runner import OURS, VLLMS, bound_to, ours_ran, run_app  # noqa: E402

import stitchgen  # noqa: E402

pytestmark = pytest.mark.slow  # a fresh vLLM process each

MODELS = {
    "2-layers": {"layers": 2, "width": 16, "sizes": [4, 7, 1, 33]},
    "3-layers": {"layers": 3, "width": 8, "sizes": [2, 5, 16]},
}


def _run(tmp_path, env=None, check=True, **options):
    return run_app(tmp_path, env, check, **{**MODELS["2-layers"], **options})


@pytest.mark.parametrize("value", [None, "0"], ids=["unset", "zero"])
def test_off_the_code_vllm_runs_is_vllms(tmp_path, value):
    ran = _run(tmp_path, {} if value is None else {"STITCHGEN_VLLM": value})
    assert ran.report["callers"] == ["<string>"]  # vLLM's exec of its own code
    assert bound_to(ran.report, VLLMS) and ran.report["before"] == ran.report["after"]
    assert ran.report["log"] == []


@pytest.mark.parametrize("model", list(MODELS))
def test_on_stitchgens_code_runs_bit_identical_to_vllms(tmp_path, model):
    theirs = _run(tmp_path, **MODELS[model])
    ours = _run(tmp_path, {"STITCHGEN_VLLM": "1"}, **MODELS[model])
    assert ours_ran(ours.report) and bound_to(ours.report, OURS)
    assert "def execution_fn(" in ours.report["sources"][0]
    assert len(ours.outputs) == len(MODELS[model]["sizes"])
    for mine, vllms in zip(ours.outputs, theirs.outputs, strict=True):
        assert mine.dtype == vllms.dtype and mine.shape == vllms.shape
        assert torch.equal(mine, vllms)
    assert ours.report["log"] == [
        f"INFO stitchgen {stitchgen.__version__} writes vLLM's stitching code in this "
        "process (STITCHGEN_VLLM=1; vLLM's compile-cache key holds STITCHGEN_VLLM_CODEGEN)"
    ]
    # through vLLM's handler and format (its stream: stdout)
    line = next(x for x in ours.result.stdout.splitlines() if "writes vLLM's stitching" in x)
    assert " INFO " in f" {line}" and "[vllm_plugin.py:" in line


def test_loading_twice_changes_nothing(tmp_path):
    """vllm_app.py asserts the bindings after the second load are those of
    the first; the plugin logs its line once."""
    ran = _run(tmp_path, {"STITCHGEN_VLLM": "1"}, load_twice=True)
    assert ours_ran(ran.report) and bound_to(ran.report, OURS)
    assert len(ran.report["log"]) == 1


def test_the_cache_loaders_name_is_rebound_and_the_cache_keeps_its_format(tmp_path):
    """A warm start from vLLM's compile cache loads the cached code through
    ``vllm.compilation.caching.compile_execution_fn``: with the plugin on,
    ours. The cache keeps vLLM's format both ways: ours loads code vLLM's
    codegen wrote, and vLLM's loader loads code ours wrote."""
    on = _run(tmp_path, {"STITCHGEN_VLLM": "1"}, warm_start=True, sizes=[3])
    assert on.report["warm_start"] == {
        "loader": OURS,
        "generator": OURS,
        "loads_vllms_code": True,
        "vllm_loads_its_code": True,
    }
    off = _run(tmp_path, warm_start=True, sizes=[3])
    assert off.report["warm_start"]["loader"] == VLLMS


@pytest.mark.parametrize(
    "how, named",
    [
        ("signature", "vllm.compilation.codegen.compile_execution_fn(code, submod_callables"),
        ("moved", "no vllm.compilation.caching.compile_execution_fn"),
    ],
)
def test_a_vllm_api_the_plugin_does_not_know_is_left_untouched(tmp_path, how, named):
    ran = _run(tmp_path, {"STITCHGEN_VLLM": "1"}, **{"break": how})
    assert ran.report["callers"] == ["<string>"]
    assert ran.report["after"] == ran.report["before"]  # nothing rebound, not even in part
    [warning] = ran.report["log"]
    assert warning.startswith("WARNING stitchgen ")
    assert f"vLLM {vllm.__version__} does not have the codegen API" in warning and named in warning
    assert "vLLM's own codegen stays in use" in warning


def test_an_unknown_value_warns_naming_the_accepted_ones(tmp_path):
    ran = _run(tmp_path, {"STITCHGEN_VLLM": "yes"}, sizes=[3])
    assert ran.report["callers"] == ["<string>"] and bound_to(ran.report, VLLMS)
    [warning] = ran.report["log"]
    assert "STITCHGEN_VLLM='yes'" in warning and "STITCHGEN_VLLM=1" in warning
    assert "0 (or leave it unset)" in warning


def test_a_template_directory_applies_inside_vllm(tmp_path):
    templates = tmp_path / "templates"
    templates.mkdir()
    vllm_header(templates, "acme: written for vLLM by acme's templates")
    env = {"STITCHGEN_VLLM": "1", "STITCHGEN_TEMPLATE_DIR": str(templates)}
    ours = _run(tmp_path, env)
    assert ours_ran(ours.report)
    assert "# acme: written for vLLM by acme's templates" in ours.report["sources"][0]
    assert f", templates from {templates};" in ours.report["log"][0]
    theirs = _run(tmp_path)
    for mine, vllms in zip(ours.outputs, theirs.outputs, strict=True):
        assert torch.equal(mine, vllms)


@pytest.mark.parametrize(
    "template, says",
    [
        (None, "no such directory"),
        ("{% block header %", "module.py.j2"),  # does not parse
        # a header that leaves a bracket open: code that is no Python
        (
            '{% extends "stitchgen/module.py.j2" %}{% block header %}x = (\n{% endblock %}',
            "not valid Python",
        ),
    ],
    ids=["missing", "unparsable", "not-python"],
)
def test_a_broken_template_directory_fails_at_load_naming_it(tmp_path, template, says):
    templates = tmp_path / "templates"
    if template is not None:
        templates.mkdir()
        (templates / "module.py.j2").write_text(template)
    env = {"STITCHGEN_VLLM": "1", "STITCHGEN_TEMPLATE_DIR": str(templates)}
    result = _run(tmp_path, env, check=False)
    assert result.returncode != 0
    assert "stitchgen.errors.TemplateError: STITCHGEN_TEMPLATE_DIR=" in result.stderr
    assert str(templates) in result.stderr and says in result.stderr
    assert "execution_fn" not in result.stdout  # nothing ran

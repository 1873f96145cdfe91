"""vLLM's compile cache knows stitchgen (``nox -s vllm``, the real vLLM on
the CPU): fresh processes share one cache folder, with the ``inductor``
backend and the cache on, as vLLM keeps it by default. On means on, off
means off, and a template change recompiles; every output equals the
plugin-off run's, bit for bit.

Skipped where vLLM is not installed (the main suite)."""

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here: `nox -s vllm` runs these")

import torch  # noqa: E402
from builders import vllm_header  # noqa: E402
from vllm_runner import ours_ran, run_app  # noqa: E402

pytestmark = pytest.mark.slow  # a fresh vLLM process each

MODEL = {"layers": 1, "width": 8, "sizes": [4, 7], "backend": "inductor"}
ON = {"STITCHGEN_VLLM": "1"}


def _compiled(ran):
    """Compiled anew: inductor ran (vLLM 0.34 and 0.22 alike)."""
    return ran.report["counter"]["num_inductor_compiles"] > 0


def _loaded(ran):
    """From the cache, with no new compile (vLLM 0.22 still runs its
    backend over the loaded pieces: no inductor compile, though)."""
    counter = ran.report["counter"]
    loads = counter["num_aot_artifacts_loaded"] + counter["num_compiled_artifacts_loaded"]
    return loads > 0 and counter["num_inductor_compiles"] == counter["num_aot_compiles"] == 0


def _vllms_ran(ran):
    return ran.report["callers"] == ["<string>"]  # vLLM's exec of its own code


def _same_outputs(ran, reference):
    assert len(ran.outputs) == len(reference.outputs)
    for mine, theirs in zip(ran.outputs, reference.outputs, strict=True):
        assert torch.equal(mine, theirs)


def test_one_cache_folder_across_plugin_switches(tmp_path):
    cache = tmp_path / "cache"
    off = run_app(tmp_path, cache=cache, **MODEL)
    assert _compiled(off) and _vllms_ran(off)
    again = run_app(tmp_path, cache=cache, **MODEL)  # off, then off: loaded, vLLM's own code
    assert _loaded(again) and _vllms_ran(again)
    on = run_app(tmp_path, ON, cache=cache, **MODEL)  # off, then on: compiled anew, ours
    assert _compiled(on) and ours_ran(on.report)
    on_again = run_app(tmp_path, ON, cache=cache, **MODEL)  # on, then on: loaded, ours
    assert _loaded(on_again) and ours_ran(on_again.report)
    assert on_again.report["sources"] == on.report["sources"]
    for ran in (again, on, on_again):
        _same_outputs(ran, off)


def test_one_cache_folder_across_template_changes(tmp_path):
    """From a cache the plugin (on) filled, without templates: a template
    directory compiles anew, unchanged templates load, a changed one
    compiles anew; each output equals the first run's (the run above proves
    that one bit-equal to the plugin-off run's)."""
    cache = tmp_path / "cache"
    templates = tmp_path / "templates"
    templates.mkdir()

    def run(env):
        return run_app(tmp_path, env, cache=cache, **MODEL)

    on = run(ON)
    assert _compiled(on) and ours_ran(on.report)
    with_templates = {**ON, "STITCHGEN_TEMPLATE_DIR": str(templates)}
    vllm_header(templates, "acme: one")
    one = run(with_templates)  # a template directory: compiled anew, its header in the code
    assert _compiled(one) and "# acme: one\n" in one.report["sources"][0]
    same = run(with_templates)  # unchanged templates: loaded
    assert _loaded(same) and "# acme: one\n" in same.report["sources"][0]
    vllm_header(templates, "acme: two")
    two = run(with_templates)  # a changed header: compiled anew, the new line runs
    assert _compiled(two) and "# acme: two\n" in two.report["sources"][0]
    for ran in (one, same, two):
        _same_outputs(ran, on)


def test_on_then_off_compiles_anew_with_vllms_own_codegen(tmp_path):
    cache = tmp_path / "cache"
    on = run_app(tmp_path, ON, cache=cache, **MODEL)
    assert _compiled(on) and ours_ran(on.report)
    off = run_app(tmp_path, cache=cache, **MODEL)
    assert _compiled(off) and _vllms_ran(off)
    assert "writes vLLM's stitching code" not in off.result.stdout
    _same_outputs(on, off)

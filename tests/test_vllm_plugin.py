"""stitchgen.vllm_plugin where vLLM need not be installed: the entry point
vLLM finds, and what loading it costs a vLLM process while it is off.
(Against the real vLLM: tests/e2e/test_inside_vllm.py, ``nox -s vllm``.)"""

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

import stitchgen
from stitchgen import vllm_plugin


def test_vllm_finds_the_plugin_by_its_entry_point():
    [found] = [e for e in entry_points(group="vllm.general_plugins") if e.name == "stitchgen"]
    assert found.value == "stitchgen.vllm_plugin:register"
    assert found.load() is vllm_plugin.register


def _registered_twice(then: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """A fresh process that calls ``register()`` twice, as vLLM may, then
    runs ``then``: no STITCHGEN_* variables but ``env``'s; it must succeed."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("STITCHGEN_")},
        **env,
    }
    script = "import json\nfrom stitchgen.vllm_plugin import register\nregister(); register()\n"
    result = subprocess.run(
        [sys.executable, "-c", script + then], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.parametrize("value", [None, "", "0"], ids=["unset", "empty", "zero"])
def test_off_the_plugin_imports_nothing_but_itself(value):
    """vLLM loads general plugins in every process (API server, engine,
    each worker): off, loading stitchgen's costs the import of this module."""
    result = _registered_twice(
        "import sys\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'vllm', 'stitchgen', 'jinja2', 'black'))))\n",
        {} if value is None else {"STITCHGEN_VLLM": value},
    )
    assert json.loads(result.stdout) == ["stitchgen", "stitchgen.vllm_plugin"]
    assert result.stderr == ""


FAKE_CODEGEN = """\
compile_execution_fn = min  # a builtin with no signature to read
def generate_execution_code(split_gm):
    return "vllm's"
def generate_execution_code_with_name(split_gm, fn_name, with_submod, consts=None,
                                      const_index=None):
    return "vllm's"
"""


def test_a_vllm_of_another_api_is_warned_about_and_left_untouched(tmp_path):
    """A vLLM that is not 0.34 (here one without vllm.logger, whose loader
    is a builtin): one warning naming its version and what differs, every
    name as it was, and its start goes on."""
    env = _fake_vllm(tmp_path, version="9.9.9", codegen=FAKE_CODEGEN, envs=None)
    result = _registered_twice(
        "import vllm.compilation.backends as b, vllm.compilation.caching as c\n"
        "print(json.dumps([b.compile_execution_fn is min, c.compile_execution_fn is min,\n"
        "                  b.generate_execution_code.__module__]))\n",
        {**env, "STITCHGEN_VLLM": "1"},
    )
    assert json.loads(result.stdout) == [True, True, "vllm.compilation.codegen"]
    [warning] = [line for line in result.stderr.splitlines() if line.startswith("stitchgen ")]
    assert "vLLM 9.9.9 does not have the codegen API" in warning
    assert "vllm.compilation.codegen.compile_execution_fn (no signature) is not" in warning


FAKE_API = """\
def generate_execution_code(split_gm):
    return "vllm's"
def generate_execution_code_with_name(split_gm, fn_name, with_submod, consts=None,
                                      const_index=None):
    return "vllm's"
def compile_execution_fn(code, submod_callables, submod_names, consts=None):
    return "vllm's"
"""
FAKE_ENVS = """\
environment_variables = {"VLLM_SOMETHING": lambda: "1"}
def compile_factors():
    return {name: get() for name, get in environment_variables.items()}
"""
PRINT_FACTORS = "import vllm.envs\nprint(json.dumps(vllm.envs.compile_factors()))\n"


def _fake_vllm(tmp_path, *, version="0.34.0", codegen=FAKE_API, envs=FAKE_ENVS):
    """A vLLM ``version`` with the ``codegen`` module given (by default the
    API the plugin accepts), and (``envs``) the table of environment
    variables its compile-cache key hashes; the environment that finds it."""
    package = tmp_path / "vllm"
    (package / "compilation").mkdir(parents=True)
    (package / "__init__.py").write_text(f'__version__ = "{version}"\n')
    (package / "compilation" / "__init__.py").write_text("")
    (package / "compilation" / "codegen.py").write_text(codegen)
    for module in ("backends", "caching"):
        (package / "compilation" / f"{module}.py").write_text(
            "from vllm.compilation.codegen import *  # noqa\n"
            "from vllm.compilation.codegen import compile_execution_fn, generate_execution_code\n"
        )
    if envs is not None:
        (package / "envs.py").write_text(envs)
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}


@pytest.mark.slow  # fresh processes with torch: about 5 s
def test_on_the_compile_cache_key_holds_the_plugin_and_its_templates(tmp_path):
    env = _fake_vllm(tmp_path)
    off = json.loads(_registered_twice(PRINT_FACTORS, env).stdout)
    assert off == {"VLLM_SOMETHING": "1"}  # off: vLLM's own key, exactly
    on = json.loads(_registered_twice(PRINT_FACTORS, {**env, "STITCHGEN_VLLM": "1"}).stdout)
    assert set(on) == {"VLLM_SOMETHING", vllm_plugin.CACHE_FACTOR}
    assert on[vllm_plugin.CACHE_FACTOR] == vllm_plugin.cache_factor(None)
    assert on[vllm_plugin.CACHE_FACTOR].startswith(f"on; stitchgen {stitchgen.__version__}; ")

    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "module.py.j2").write_text(HEADER.format(comment="one"))
    with_dir = {**env, "STITCHGEN_VLLM": "1", "STITCHGEN_TEMPLATE_DIR": str(templates)}
    first = json.loads(_registered_twice(PRINT_FACTORS, with_dir).stdout)[vllm_plugin.CACHE_FACTOR]
    (templates / "module.py.j2").write_text(HEADER.format(comment="two"))
    second = json.loads(_registered_twice(PRINT_FACTORS, with_dir).stdout)[vllm_plugin.CACHE_FACTOR]
    assert len({first, second, on[vllm_plugin.CACHE_FACTOR]}) == 3  # a changed header: a new key


def test_a_vllm_without_the_table_is_told_what_to_do_instead(tmp_path):
    env = _fake_vllm(tmp_path, envs=None)
    result = _registered_twice(
        "import vllm.compilation.backends as b\nprint(b.generate_execution_code.__module__)\n",
        {**env, "STITCHGEN_VLLM": "1"},
    )
    assert result.stdout.strip() == "stitchgen.compat"  # on all the same
    [warning] = [line for line in result.stderr.splitlines() if "compile-cache key" in line]
    assert "VLLM_DISABLE_COMPILE_CACHE=1" in warning and "clear vLLM's compile cache" in warning


HEADER = (
    '{{% extends "stitchgen/variants/vllm/module.py.j2" %}}\n{{% block header %}}\n# {comment}\n'
    "{{{{ super() -}}}}\n{{% endblock %}}\n"
)

"""stitchgen.vllm_plugin where vLLM need not be installed: the entry point
vLLM finds, and what loading it costs a vLLM process while it is off.
(Against the real vLLM: tests/e2e/test_inside_vllm.py, ``nox -s vllm``.)"""

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from stitchgen import vllm_plugin


def test_vllm_finds_the_plugin_by_its_entry_point():
    [found] = [e for e in entry_points(group="vllm.general_plugins") if e.name == "stitchgen"]
    assert found.value == "stitchgen.vllm_plugin:register"
    assert found.load() is vllm_plugin.register


@pytest.mark.parametrize("value", [None, "", "0"], ids=["unset", "empty", "zero"])
def test_off_the_plugin_imports_nothing_but_itself(value):
    """vLLM loads general plugins in every process (API server, engine,
    each worker): off, loading stitchgen's costs the import of this module."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STITCHGEN_")}
    if value is not None:
        env["STITCHGEN_VLLM"] = value
    script = (
        "import json, sys\n"
        "from stitchgen.vllm_plugin import register\n"
        "register(); register()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'vllm', 'stitchgen', 'jinja2', 'black'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["stitchgen", "stitchgen.version", "stitchgen.vllm_plugin"]
    assert result.stderr == ""

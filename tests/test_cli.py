"""The console script: demo and golden."""

import subprocess
import sys

from stitchgen.cli import main


def test_demo_prints_code_equality_and_timings(capsys):
    assert main(["demo", "--layers", "1"]) == 0
    out = capsys.readouterr().out
    assert "def execution_fn(" in out
    assert "outputs equal to the GraphModule: True" in out
    assert "GraphModule" in out and "stitchgen" in out and "us" in out


def test_console_script_is_installed():
    out = subprocess.run(
        [sys.executable, "-m", "stitchgen.cli", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0 and "golden" in out.stdout and "demo" in out.stdout

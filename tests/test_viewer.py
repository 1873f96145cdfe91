"""``stitchgen show``: an artifact viewer that runs nothing (``viewer.py``)."""

import os
import subprocess
import sys

import pytest
import torch
import torch.fx as fx

import stitchgen

SCRIPT = os.path.join(os.path.dirname(sys.executable), "stitchgen")


def _show(*args):
    return subprocess.run(
        [SCRIPT, "show", *map(str, args)], capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def artifact(tmp_path):
    gm = fx.symbolic_trace(lambda x: torch.full((2,), 3.0, dtype=torch.float64) + x)
    return stitchgen.generate(gm, format=False).save(tmp_path / "artifact")


@pytest.mark.slow
def test_show_prints_code_bindings_versions_and_verifies(artifact):
    result = _show(artifact)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "entry: execution_fn (closure)" in out and "digests: all files verify" in out
    assert "code.py: ok" in out and "consts.pt: ok" in out
    assert f"'stitchgen': '{stitchgen.__version__}'" in out and "same as this process" in out
    assert "constants:\n  const__tensor_constant0: Tensor[2] torch.float64 on cpu" in out
    assert "def execution_fn(x):" in out and "signature: none" in out
    formatted = _show(artifact, "--format", "--ir")
    assert formatted.returncode == 0 and "IR:\nProgram(name='execution_fn'" in formatted.stdout


@pytest.mark.slow
def test_show_reports_a_tampered_artifact_without_running_it(artifact, tmp_path):
    marker = tmp_path / "ran"
    code = artifact / "code.py"
    code.write_text(f"open({str(marker)!r}, 'w').close()\n" + code.read_text())
    result = _show(artifact)
    assert result.returncode == 1
    assert "digests: VERIFICATION FAILED" in result.stdout
    assert "code.py: FAILED (does not match its digest" in result.stdout
    assert not marker.exists()  # shown, never executed
    with pytest.raises(stitchgen.ArtifactError, match="code.py does not match its digest"):
        stitchgen.load_artifact(artifact)
    assert not marker.exists()


@pytest.mark.slow
def test_show_refuses_what_is_not_an_artifact(tmp_path):
    result = _show(tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert (
        result.stderr
        == f"stitchgen show: error: {tmp_path}: not a stitchgen artifact (no manifest.json)\n"
    )

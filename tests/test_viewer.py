"""``stitchgen show``: an artifact viewer that runs nothing (``viewer.py``),
its command line run in this process (``stitchgen.cli.main``)."""

import subprocess

import pytest
import torch
import torch.fx as fx

import stitchgen
from stitchgen.cli import main


@pytest.fixture
def show(capsys):
    def run(*args):
        capsys.readouterr()  # what came before
        returncode = main(["show", *map(str, args)])
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["stitchgen", "show", *args], returncode, out, err)

    return run


@pytest.fixture
def artifact(tmp_path):
    gm = fx.symbolic_trace(lambda x: torch.full((2,), 3.0, dtype=torch.float64) + x)
    return stitchgen.generate(gm, format=False).save(tmp_path / "artifact")


def test_show_prints_code_bindings_versions_and_verifies(artifact, show):
    result = show(artifact)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "entry: execution_fn (closure)" in out and "digests: all files verify" in out
    assert "code.py: ok" in out and "consts.pt: ok" in out
    assert f"'stitchgen': '{stitchgen.__version__}'" in out and "same as this process" in out
    assert "constants:\n  const__tensor_constant0: Tensor[2] torch.float64 on cpu" in out
    assert "def execution_fn(x):" in out and "signature: none" in out
    formatted = show(artifact, "--format", "--ir")
    assert formatted.returncode == 0 and "IR:\nProgram(name='execution_fn'" in formatted.stdout


def test_show_reports_a_tampered_artifact_without_running_it(artifact, tmp_path, show):
    marker = tmp_path / "ran"
    code = artifact / "code.py"
    code.write_text(f"open({str(marker)!r}, 'w').close()\n" + code.read_text())
    result = show(artifact)
    assert result.returncode == 1
    assert "digests: VERIFICATION FAILED" in result.stdout
    assert "code.py: FAILED (does not match its digest" in result.stdout
    assert not marker.exists()  # shown, never executed
    with pytest.raises(stitchgen.ArtifactError, match="code.py does not match its digest"):
        stitchgen.load_artifact(artifact)
    assert not marker.exists()


def test_show_refuses_what_is_not_an_artifact(tmp_path, show):
    result = show(tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert (
        result.stderr
        == f"stitchgen show: error: {tmp_path}: not a stitchgen artifact (no manifest.json)\n"
    )

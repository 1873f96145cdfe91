"""``stitchgen golden --cases ... --dir ...`` for a downstream project laid out
as its own small project: its command line run in this process
(``stitchgen.cli.main``, from the project's folder, the project importable),
and once through the installed console script, in a fresh process."""

import os
import shutil
import subprocess
import sys
from importlib.metadata import requires
from pathlib import Path

import pytest

from stitchgen.cli import main
from stitchgen.torch_versions import torch_version

SCRIPT = Path(sys.executable).parent / "stitchgen"


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "downstream_project"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """acme (examples/downstream_project): its own pyproject, templates, cases
    and golden directory, copied where the test may change it; the current
    folder, and importable (``--cases cases:SMALL``), as its own CI has it."""
    target = tmp_path / "acme"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(target)
    monkeypatch.syspath_prepend(str(target))
    sys.modules.pop("cases", None)  # another test's copy
    yield target
    sys.modules.pop("cases", None)


@pytest.fixture
def golden(project, capsys):
    """``stitchgen golden ARGS`` run in this process, from the project's folder."""

    def run(*args):
        capsys.readouterr()  # what came before
        returncode = main(["golden", *args])
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["stitchgen", "golden", *args], returncode, out, err)

    return run


ARGS = ["--cases", "cases.py", "--dir", "golden", "--template-dir", "templates"]


def test_the_shipped_example_is_up_to_date(project, golden):
    result = golden(*ARGS, "--check")
    assert result.returncode == 0, result.stderr
    assert "all files match" in result.stdout


@pytest.mark.slow  # a fresh process: the point is the installed console script
def test_the_console_script_checks_the_shipped_example(project):
    assert SCRIPT.is_file(), f"the console script is not installed beside {sys.executable}"
    result = subprocess.run(
        [str(SCRIPT), "golden", *ARGS, "--check"],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(project)},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "all files match" in result.stdout


def test_update_writes_one_formatted_file_per_case_and_the_versions(project, golden):
    shutil.rmtree(project / "golden")
    result = golden(*ARGS, "--update")
    assert result.returncode == 0, result.stderr
    assert "updated 2 golden file(s)" in result.stdout
    double = (project / "golden" / "double.py").read_text()
    assert double.startswith("# acme: generated, do not edit\n")
    assert "return mul" in double
    versions = (project / "golden" / "VERSIONS").read_text()
    assert versions.startswith("stitchgen==") and "\nblack==" in versions
    # the torch releases stitchgen declares: the files are the same on each
    torch_line = versions.splitlines()[-1]
    assert torch_line in {f"torch{r.partition('torch')[2]}" for r in requires("stitchgen")}
    check = golden(*ARGS, "--check")
    assert check.returncode == 0 and "all files match" in check.stdout


def test_a_drifting_file_is_a_diff_and_the_command_that_regenerates(project, golden):
    assert golden(*ARGS, "--update").returncode == 0
    path = project / "golden" / "double.py"
    path.write_text(path.read_text().replace("return mul", "return mul + 0"))
    result = golden(*ARGS, "--check")
    assert result.returncode == 1
    assert "--- golden/double.py" in result.stderr and "+++ generated (double)" in result.stderr
    regen = "stitchgen golden --cases cases.py --dir golden --template-dir templates"
    assert f"to accept: {regen} --update -k double" in result.stderr
    assert "relu_plus_one" not in result.stderr  # only the drifting file is reported


def test_a_version_mismatch_is_reported_as_such_with_the_diff_it_makes(project, golden):
    assert golden(*ARGS, "--update").returncode == 0
    versions = project / "golden" / "VERSIONS"
    versions.write_text(versions.read_text().replace("black==", "black==0.0.0+"))
    result = golden(*ARGS, "--check")
    assert result.returncode == 1
    assert "version mismatch: the golden files were made with" in result.stderr
    assert "---" not in result.stderr  # the files themselves match
    path = project / "golden" / "double.py"  # as an upgrade changes a file
    path.write_text(path.read_text().replace("return mul", "return mul + 0"))
    result = golden(*ARGS, "--check")
    assert "version mismatch" in result.stderr and "--- golden/double.py" in result.stderr
    assert "golden check: 2 problem(s)" in result.stderr


@pytest.mark.parametrize(
    "torch_line, holds",
    [
        (f"torch=={torch_version()}", True),  # as older files record it: exactly
        ("torch==0.0.1", False),
        ("torch<99,>=2.11", True),
        ("torch<2.11,>=2.6", False),  # a torch outside the range the files hold for
        ("torch>=9.0", False),
    ],
)
def test_the_running_torch_must_be_the_one_or_in_the_range_recorded(
    project, golden, torch_line, holds
):
    assert golden(*ARGS, "--update").returncode == 0
    versions = project / "golden" / "VERSIONS"
    lines = versions.read_text().splitlines()
    versions.write_text("\n".join([*lines[:-1], torch_line]) + "\n")
    result = golden(*ARGS, "--check")
    assert (result.returncode == 0) is holds, result.stderr
    if not holds:
        assert "version mismatch: the golden files were made with" in result.stderr
        assert f"torch=={torch_version()}\n" in result.stderr  # what this environment has


def test_a_module_and_attribute_by_name_and_one_case(project, golden):
    args = ["--cases", "cases:SMALL", "--dir", "small", "--variant", "profiled"]
    assert golden(*args, "--update").returncode == 0
    assert sorted(p.name for p in (project / "small").iterdir()) == [
        "FILES",
        "VERSIONS",
        "double.py",
    ]
    assert golden(*args, "--check", "-k", "double").returncode == 0
    unknown = golden(*args, "--check", "-k", "nope")
    assert unknown.returncode != 0 and "unknown golden case" in unknown.stderr


def test_missing_and_stale_files_are_named(project, golden):
    assert golden(*ARGS, "--update").returncode == 0
    (project / "golden" / "double.py").unlink()
    (project / "golden" / "relu_plus_one.py").rename(project / "golden" / "gone.py")
    record = project / "golden" / "FILES"  # as if a case "gone" had been written and dropped
    record.write_text(record.read_text() + "gone\n")
    (project / "golden" / "notes.py").write_text("# the user's own: never stale\n")
    result = golden(*ARGS, "--check")
    assert result.returncode == 1
    assert (
        "double.py: missing" in result.stderr and "gone.py: no case of that name" in result.stderr
    )
    assert "notes.py" not in result.stderr


def test_options_that_need_cases_are_refused(project, golden):
    result = golden("--check", "--dir", "golden")
    assert result.returncode == 2 and "no cases: name them with --cases" in result.stderr
    result = golden("--check", "--cases", "cases.py")
    assert result.returncode == 2 and "--cases needs --dir" in result.stderr

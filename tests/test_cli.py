"""The console script: demo and golden."""

import os
import subprocess
import sys

import pytest
import torch

import stitchgen
from stitchgen import GoldenError
from stitchgen.cli import main
from stitchgen.demo import instant_pieces, split_decoder


def test_demo_prints_code_equality_and_timings(capsys):
    assert main(["demo", "--layers", "1"]) == 0
    out = capsys.readouterr().out
    assert "def execution_fn(" in out
    assert "outputs equal to the GraphModule: True" in out
    assert "GraphModule" in out and "stitchgen" in out and "us" in out
    [overhead] = [line for line in out.splitlines() if line.startswith("overhead")]
    assert "pieces that return at once" in overhead and "per layer" in overhead


def test_the_demo_times_both_sides_in_alternating_rounds():
    from stitchgen.demo import side_by_side

    calls = []
    gm = lambda *args: calls.append("gm")  # noqa: E731
    fn = lambda *args: calls.append("fn")  # noqa: E731
    t_gm, t_fn = side_by_side(gm, fn, (), number=3, rounds=4)
    assert calls == (["gm"] * 3 + ["fn"] * 3) * 4  # work elsewhere slows both alike
    assert t_gm > 0 and t_fn > 0


def test_console_script_is_installed():
    out = subprocess.run(
        [sys.executable, "-m", "stitchgen.cli", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0 and "golden" in out.stdout and "demo" in out.stdout


# --- every bad input: one line on stderr naming it, exit 2 (usage) or 1 (failure)

CASES_PY = """\
import torch.fx as fx

def tiny():
    return fx.symbolic_trace(lambda x: x + 1)

def broken():
    raise ZeroDivisionError("division by zero")

CASES = {"tiny": tiny}
BROKEN = {"broken": broken}
NUMBER = 3
NOT_FUNCTIONS = {"tiny": 3}
"""


@pytest.fixture
def cases_dir(tmp_path, monkeypatch):
    (tmp_path / "cases.py").write_text(CASES_PY)
    (tmp_path / "raises.py").write_text("raise RuntimeError('cannot import me')\n")
    (tmp_path / "afile").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STITCHGEN_DEBUG", raising=False)
    return tmp_path


GOLDEN = ["golden", "--check", "--dir", "golden"]


@pytest.mark.parametrize(
    "argv, code, said",
    [
        (
            [*GOLDEN, "--cases", "cases.py", "-k", "no_such_case"],
            2,
            "unknown golden case(s) no_such_case; known: tiny",
        ),
        (
            ["golden", "--check", "-k", "x"],
            2,
            "no cases: name them with --cases MODULE[:ATTR] --dir DIR, or as cases in "
            "[tool.stitchgen]",
        ),
        ([*GOLDEN, "--cases", "no_such_file.py"], 2, "--cases no_such_file.py: no file"),
        ([*GOLDEN, "--cases", "no_such_module"], 2, "no module named 'no_such_module'"),
        ([*GOLDEN, "--cases", "cases.py:NOPE"], 2, "cases.py has no attribute 'NOPE'"),
        (
            [*GOLDEN, "--cases", "cases.py:NUMBER"],
            2,
            "NUMBER in cases.py is not a mapping of case names to functions returning a "
            "GraphModule (its type is int)",
        ),
        (
            [*GOLDEN, "--cases", "cases.py:NOT_FUNCTIONS"],
            2,
            "not a mapping of case names to functions",
        ),
        (
            [*GOLDEN, "--cases", "raises.py"],
            2,
            "importing raises.py raised RuntimeError: cannot import me",
        ),
        (
            [*GOLDEN, "--cases", "cases.py", "--template-dir", "nope"],
            2,
            "argument --template-dir: 'nope' does not exist",
        ),
        (
            ["golden", "--check", "--cases", "cases.py", "--dir", "afile"],
            2,
            "argument --dir: 'afile' is not a directory",
        ),
        (["golden", "--check", "--cases", "cases.py"], 2, "--cases needs --dir"),
        (["golden", "--check", "--dir", "golden"], 2, "no cases: name them with --cases"),
        (["golden"], 2, "one of the arguments --check --update is required"),
        (
            [*GOLDEN, "--cases", "cases.py:BROKEN"],
            1,
            "golden case 'broken': its builder raised ZeroDivisionError: division by zero",
        ),
        (["demo", "--layers", "0"], 2, "argument --layers: must be a positive integer, not '0'"),
        (["demo", "--layers", "-3"], 2, "argument --layers: must be a positive integer, not '-3'"),
        (
            ["demo", "--layers", "two"],
            2,
            "argument --layers: must be a positive integer, not 'two'",
        ),
        (["demo", "--template-dir", "nope"], 2, "argument --template-dir: 'nope' does not exist"),
        (["demo", "--variant", "nope"], 2, "argument --variant: invalid choice: 'nope'"),
        (["show", "no_such_artifact"], 2, "argument artifact: 'no_such_artifact' does not exist"),
        (["show", "."], 1, "not a stitchgen artifact (no manifest.json)"),
        (["nope"], 2, "invalid choice: 'nope'"),
        ([], 2, "the following arguments are required: COMMAND"),
    ],
)
def test_bad_input_is_one_line_naming_it(cases_dir, capsys, argv, code, said):
    assert main(argv) == code
    out, err = capsys.readouterr()
    command = " ".join(["stitchgen", *argv[:1]]) if argv and argv[0] != "nope" else "stitchgen"
    assert err.startswith(f"{command}: error: "), err
    assert said in err and err.count("\n") == 1, err
    assert "Traceback" not in err and out == ""


def test_the_console_script_answers_without_a_traceback(cases_dir):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "stitchgen.cli",
            "golden",
            "--check",
            "--cases",
            "cases.py:NOPE",
            "--dir",
            "g",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "STITCHGEN_DEBUG": ""},
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == (
        "stitchgen golden: error: --cases cases.py:NOPE: cases.py has no attribute 'NOPE'\n"
    )


def test_stitchgen_debug_shows_the_traceback(cases_dir, monkeypatch):
    monkeypatch.setenv("STITCHGEN_DEBUG", "1")
    with pytest.raises(GoldenError, match="has no attribute 'NOPE'"):
        main([*GOLDEN, "--cases", "cases.py:NOPE"])


def test_the_demos_instant_pieces_keep_the_stitching_and_return_at_once():
    """The overhead figure times the same stitching graph with pieces that
    return what the real ones returned, and attention replaced: stitchgen's
    code for it computes what the GraphModule computes."""
    split, inputs = split_decoder(2)
    stub = instant_pieces(split, inputs)
    assert [n.op for n in stub.graph.nodes] == [n.op for n in split.graph.nodes]
    assert all(type(c).__name__ == "_Instant" for c in stub.children())
    assert torch.equal(stitchgen.compile(stub)(*inputs), stub(*inputs))

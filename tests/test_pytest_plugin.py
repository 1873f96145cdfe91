"""The pytest plugin (entry point ``pytest11``, name ``stitchgen``): the
``stitchgen_golden`` fixture, ``--stitchgen-update``, and the stale files a
whole, green update run removes — run through pytest's own ``pytester``."""

import torch.fx as fx

import stitchgen
from stitchgen.cli import main
from stitchgen.golden import RECORD, VERSIONS

TESTS = """
import torch.fx as fx

def test_inc(stitchgen_golden):
    stitchgen_golden(fx.symbolic_trace(lambda x: x + {n}), "inc")

def test_double(stitchgen_golden):
    stitchgen_golden(fx.symbolic_trace(lambda x: x * 2), "double")
"""


def _tests(pytester, n=1, extra=""):
    pytester.makepyfile(test_graphs=TESTS.format(n=n) + extra)


def _code(fn):
    return stitchgen.generate(fx.symbolic_trace(fn)).code


def test_a_missing_file_fails_and_nothing_is_written(pytester):
    _tests(pytester)
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*golden/inc.py: missing (run `pytest --stitchgen-update *"])
    assert not (pytester.path / "golden").exists()


def test_update_writes_what_the_command_writes_and_a_plain_run_then_passes(pytester):
    _tests(pytester)
    result = pytester.runpytest("--stitchgen-update")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*wrote 2 golden file(s): *"])
    golden = pytester.path / "golden"
    assert (golden / "inc.py").read_text() == _code(lambda x: x + 1)
    assert (golden / RECORD).read_text().splitlines()[1:] == ["double", "inc"]
    assert (golden / VERSIONS).read_text().startswith("stitchgen==")
    pytester.runpytest().assert_outcomes(passed=2)
    # the command reads the same folder: the same cases, checked by it
    pytester.makepyfile(
        cases="import torch.fx as fx\n"
        "CASES = {'inc': lambda: fx.symbolic_trace(lambda x: x + 1),\n"
        "         'double': lambda: fx.symbolic_trace(lambda x: x * 2)}\n"
    )
    assert main(["golden", "--cases", str(pytester.path / "cases.py"), "--dir", str(golden),
                 "--check"]) == 0  # fmt: skip


def test_drift_fails_with_a_diff_and_the_command_that_accepts_it(pytester):
    _tests(pytester)
    pytester.runpytest("--stitchgen-update").assert_outcomes(passed=2)
    _tests(pytester, n=5)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["-*add = operator_add(x, 1)", "+*add = operator_add(x, 5)"])
    result.stdout.fnmatch_lines(["*to accept: pytest --stitchgen-update test_graphs.py::test_inc*"])
    assert "(x, 1)" in (pytester.path / "golden" / "inc.py").read_text()  # nothing written


def test_a_golden_file_that_is_not_python_fails_naming_it(pytester):
    _tests(pytester)
    pytester.runpytest("--stitchgen-update").assert_outcomes(passed=2)
    (pytester.path / "golden" / "inc.py").write_text("def (:\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*golden/inc.py: the golden file is not Python*"])


def test_a_file_stitchgen_did_not_write_is_never_replaced(pytester):
    _tests(pytester)
    golden = pytester.path / "golden"
    golden.mkdir()
    (golden / "inc.py").write_text("# mine\n")
    result = pytester.runpytest("--stitchgen-update")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*golden/inc.py (a file of other content) is not a golden file*"])
    assert (golden / "inc.py").read_text() == "# mine\n"


def test_a_filtered_update_run_removes_nothing(pytester):
    _tests(pytester)
    pytester.runpytest("--stitchgen-update").assert_outcomes(passed=2)
    pytester.makepyfile(test_graphs=TESTS.format(n=1).split("def test_double")[0])
    result = pytester.runpytest("--stitchgen-update", "-k", "inc")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*kept 1 stale golden file(s) that no test produced: double*-k*"])
    assert (pytester.path / "golden" / "double.py").is_file()
    result = pytester.runpytest("--stitchgen-update", "test_graphs.py::test_inc")
    result.stdout.fnmatch_lines(["*kept 1 stale*paths or node ids named*"])
    assert (pytester.path / "golden" / "double.py").is_file()


def test_a_failing_or_skipping_update_run_removes_nothing(pytester):
    _tests(pytester)
    pytester.runpytest("--stitchgen-update").assert_outcomes(passed=2)
    failing = "\ndef test_broken():\n    assert False\n"
    pytester.makepyfile(test_graphs=TESTS.format(n=1).split("def test_double")[0] + failing)
    result = pytester.runpytest("--stitchgen-update")
    result.stdout.fnmatch_lines(["*kept 1 stale*a test failed*"])
    skipped = TESTS.format(n=1).replace(
        "def test_double(", "import pytest\n@pytest.mark.skip\ndef test_double("
    )
    pytester.makepyfile(test_graphs=skipped)
    result = pytester.runpytest("--stitchgen-update")
    result.stdout.fnmatch_lines(["*kept 1 stale*test_double skipped*"])
    assert (pytester.path / "golden" / "double.py").is_file()


def test_a_whole_green_update_run_removes_only_the_stale_golden_file(pytester):
    _tests(pytester)
    pytester.runpytest("--stitchgen-update").assert_outcomes(passed=2)
    golden = pytester.path / "golden"
    (golden / "notes.txt").write_text("mine\n")
    (golden / "mine.py").write_text("# mine\n")
    pytester.makepyfile(test_graphs=TESTS.format(n=1).split("def test_double")[0])
    result = pytester.runpytest("--stitchgen-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*removed the stale golden file(s): double (removed)*"])
    assert sorted(p.name for p in golden.iterdir()) == [
        RECORD, VERSIONS, "inc.py", "mine.py", "notes.txt"
    ]  # fmt: skip
    assert (golden / RECORD).read_text().splitlines()[1:] == ["inc"]


def test_the_ini_option_names_the_folder_and_without_the_flag_nothing_is_written(pytester):
    pytester.makeini("[pytest]\nstitchgen_golden_dir = snapshots/code\n")
    _tests(pytester)
    pytester.runpytest("--stitchgen-update").assert_outcomes(passed=2)
    assert (pytester.path / "snapshots" / "code" / "inc.py").is_file()
    assert not (pytester.path / "golden").exists()


def test_the_plugin_can_be_turned_off(pytester):
    _tests(pytester, extra="\ndef test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:stitchgen")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(["*fixture 'stitchgen_golden' not found*"])

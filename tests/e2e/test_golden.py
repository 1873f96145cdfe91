"""The golden corpus: emitted code locked on disk, and run against the oracle."""

import sys
from pathlib import Path

import pytest
import torch
from golden_cases import CASES, GOLDEN, TEMPLATE_SETS
from oracle import assert_runs_same, assert_same

import stitchgen
from stitchgen import golden
from stitchgen.cli import main

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(CASES)
ENTRIES = golden.entries_from_cases(GOLDEN, ROOT / "golden")


def test_corpus_has_at_least_15_cases():
    assert len(CASES) >= 15


def test_every_template_set_is_golden_locked():
    sets = {key.split("/")[0] for key in ENTRIES if "/" in key}
    assert sets == {"profiled", "vllm", "downstream"}


@pytest.mark.parametrize("key", sorted(ENTRIES))
def test_golden_code_matches_and_runs_equal_to_graphmodule(key):
    entry = ENTRIES[key]
    case = entry.build()
    generated = stitchgen.generate(case.gm, opaque=tuple(case.submods), templates=case.templates)
    expected_code = entry.path.read_text(encoding="utf-8")
    assert generated.code == expected_code, golden.check(ENTRIES, ROOT / "golden", [key])[0]
    fn = stitchgen.load(generated, case.submods)
    assert_runs_same(fn, case.reference, case.inputs, case.gm)


@pytest.mark.parametrize("name", NAMES)
def test_compile_path_equals_graphmodule(name):
    case = CASES[name]("cpu")
    fn = stitchgen.compile(case.gm, case.submods)
    assert_runs_same(fn, case.reference, case.inputs, case.gm)
    assert_runs_same(fn, case.reference, case.inputs, case.gm)  # and again: nothing consumed


@pytest.mark.gpu
@pytest.mark.parametrize("key", sorted(ENTRIES))
def test_cuda_bit_exact(key):
    set_name, _, name = key.rpartition("/")
    case = CASES[name]("cuda")
    templates = TEMPLATE_SETS[set_name][0]() if set_name else None
    fn = stitchgen.compile(case.gm, case.submods, templates=templates)
    expected = case.expected()
    actual = fn(*case.inputs)
    torch.cuda.synchronize()
    assert_same(actual, expected)


def test_golden_check_reports_drift_with_a_diff(tmp_path, monkeypatch, capsys):
    """A copy of this repository's configuration and corpus, found from the
    working directory."""
    monkeypatch.setitem(sys.modules, "golden_cases", sys.modules["golden_cases"])
    (tmp_path / "tests").mkdir()
    (tmp_path / "golden").mkdir()
    (tmp_path / "tests" / "golden_cases.py").write_text(
        (ROOT / "tests" / "golden_cases.py").read_text()
    )
    (tmp_path / "pyproject.toml").write_text(
        '[tool.stitchgen]\ncases = "tests/golden_cases.py:GOLDEN"\n'
    )
    monkeypatch.chdir(tmp_path / "tests")  # found upward
    original = (ROOT / "golden" / "moe_piece.py").read_text()
    (tmp_path / "golden" / "moe_piece.py").write_text(original.replace("2.0", "3.0"))
    record = (ROOT / "golden" / golden.RECORD).read_text()  # stitchgen wrote it: recorded
    (tmp_path / "golden" / golden.RECORD).write_text(record)
    assert main(["golden", "--check", "-k", "moe_piece"]) == 1
    err = capsys.readouterr().err
    assert "--- golden/moe_piece.py" in err and "stitchgen golden --update -k moe_piece" in err
    assert main(["golden", "--update", "-k", "moe_piece"]) == 0
    assert (tmp_path / "golden" / "moe_piece.py").read_text() == original
    assert main(["golden", "--check", "-k", "moe_piece"]) == 0


def test_golden_check_flags_missing_and_stale_files(tmp_path):
    directory = tmp_path / "golden"
    directory.mkdir()
    (directory / "gone.py").write_text("")  # a golden file stitchgen wrote...
    (directory / golden.RECORD).write_text(
        (ROOT / "golden" / golden.RECORD).read_text().splitlines()[0] + "\ngone\n"
    )
    (directory / "helper.py").write_text("")  # ...and one it did not
    entries = golden.entries_from_cases({"zero_inputs": GOLDEN["zero_inputs"]}, directory)
    problems = golden.check(entries, directory)
    assert any("zero_inputs.py: missing" in p for p in problems)
    assert any("gone.py: no case of that name" in p for p in problems)
    assert not any("helper.py" in p for p in problems)


def test_dynamo_graph_runs_at_other_sequence_lengths():
    """SymInt placeholders: one compiled function serves every size."""
    case = CASES["dynamo_dynamic_shapes"]("cpu")
    fn = stitchgen.compile(case.gm)
    size_at = next(i for i, x in enumerate(case.inputs) if isinstance(x, int))
    x_at = size_at + 1  # Dynamo passes the size symbol right before the tensor it sizes
    assert case.inputs[x_at].shape[0] == case.inputs[size_at]
    for rows in (2, 7, 11):
        inputs = list(case.inputs)
        inputs[size_at], inputs[x_at] = rows, torch.randn(rows, 8)
        assert_runs_same(fn, case.gm, inputs)

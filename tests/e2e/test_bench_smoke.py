"""The benchmark script runs (a smoke run: it measures, nothing here is timed)."""

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_benchmark_suite_runs(capsys):
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench.py"
    spec = importlib.util.spec_from_file_location("stitchgen_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--layers", "1", "2", "--quick"])
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["layers", "opaque", "us"]
    assert "cold compile growth 1 -> 2 layers" in out
    fresh = out.splitlines().index(next(x for x in out.splitlines() if "ours/concat" in x))
    assert out.splitlines()[fresh + 1].split()[0] == "1"  # a fresh-process row was measured


def test_process_cold_benchmark_runs(capsys):
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "process_cold.py"
    spec = importlib.util.spec_from_file_location("stitchgen_process_cold", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--layers", "1", "--samples", "1", "--markdown", "--quick"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| layers | compile ms | compat ms |")
    row = lines[2].strip("| ").split(" | ")
    assert row[0] == "1" and len(row) == len(lines[0].strip("| ").split(" | "))
    assert all(float(cell) > 0 for cell in row[1:])  # every path measured

#!/usr/bin/env bash
# The GPU check, as one prepared script: installs nothing, runs the GPU test
# suite (`pytest -m gpu`: the golden corpus bit-exact on CUDA, CUDA-graph
# capture and replay, peak memory with and without dels) and the benchmark's
# CUDA rows, and writes everything to a log (GPU_CHECK_LOG, default
# gpu_check.log). Where CUDA is absent the GPU tests skip and the benchmark
# rows are not run: the script still exits 0. Budget: well under 8 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
log=${GPU_CHECK_LOG:-gpu_check.log}
{
  echo "== gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  python -c "import torch; print('torch', torch.__version__, '| cuda available:', torch.cuda.is_available(), '|', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no device')"
  # -o addopts=: not the quick suite's `-n auto` (the image may have no pytest-xdist)
  timeout 420 python -m pytest -o addopts= -m gpu -q -rs -p no:cacheprovider tests
  status=$?
  if python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    timeout 120 python benchmarks/bench.py --device cuda --layers 8 32 80 --quick || status=1
  else
    echo "no CUDA device: GPU tests skipped, benchmark CUDA rows not run"
  fi
  echo "== gpu_check exit status $status"
  exit "$status"
} 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"

"""Functional collectives between pieces, 2 processes over gloo on loopback."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed as dist

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("collective_worker.py")


@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="no gloo")
def test_two_ranks_all_reduce_and_all_gather_equal_the_graphmodule(tmp_path):
    store = tmp_path / "store"
    world = 2
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(rank), str(world), str(store)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(world)
    ]
    outputs = []
    try:
        for proc in procs:
            out, _ = proc.communicate(timeout=120)
            outputs.append(out)
    finally:
        for proc in procs:  # bounded: never leave a rank behind
            if proc.poll() is None:
                proc.kill()
    for rank, (proc, out) in enumerate(zip(procs, outputs, strict=True)):
        assert proc.returncode == 0, f"rank {rank} failed:\n{out}"
        assert f"rank {rank}: equal" in out

"""GPU-only checks (skipped where CUDA is absent): CUDA-graph capture and
replay, and the peak-memory effect of dels. The golden corpus runs bit-exact
on CUDA in test_golden.py; scripts/gpu_check.sh runs all of them."""

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest
import torch

import stitchgen
from stitchgen.demo import decoder_inputs, split_decoder

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.gpu
def test_cuda_graph_capture_and_replay_match_eager():
    gm, inputs = split_decoder(2, device="cuda")
    fn = stitchgen.compile(gm)
    static = [t.clone() for t in inputs]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up outside the capture
        for _ in range(3):
            fn(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(*static)
    fresh = decoder_inputs(2, device="cuda", seed=1)
    for dst, src in zip(static, fresh, strict=True):
        dst.copy_(src)
    graph.replay()
    torch.cuda.synchronize()
    # replay may pick other cuBLAS algorithms than eager: equal up to rounding
    torch.testing.assert_close(out, gm(*fresh), rtol=1e-5, atol=1e-6)
    assert not torch.equal(out, gm(*inputs))  # it computed the new inputs, not the old


@pytest.mark.gpu
def test_dels_lower_the_cuda_memory_peak():
    gm, inputs = split_decoder(8, tokens=4096, device="cuda")  # activations dominate
    generated = stitchgen.generate(gm, format=False)
    lines = generated.code.splitlines()
    without_dels = "\n".join(line for line in lines if not line.lstrip().startswith("del "))
    ours = stitchgen.load(generated)
    kept = stitchgen.load(dataclasses.replace(generated, code=without_dels))

    def peak(fn):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        out = fn(*inputs)
        torch.cuda.synchronize()
        used = torch.cuda.max_memory_allocated() - base
        del out
        return used

    assert torch.equal(ours(*inputs), kept(*inputs))
    assert peak(ours) < peak(kept)


@pytest.mark.slow  # the whole script: two interpreters and a collection of the suite
def test_gpu_check_script_skips_cleanly_without_cuda(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("CUDA is present: the script runs for real (scripts/gpu_check.sh)")
    log = tmp_path / "gpu.log"
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_check.sh")],
        env={**os.environ, "GPU_CHECK_LOG": str(log)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    text = log.read_text()
    assert "cuda available: False" in text and "skipped" in text
    assert "benchmark CUDA rows not run" in text and "exit status 0" in text

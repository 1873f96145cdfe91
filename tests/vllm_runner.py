"""Running tests/vllm_app.py, a vLLM process in miniature, in a fresh
process (the tests against the real vLLM: ``nox -s vllm``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

APP = Path(__file__).resolve().parent / "vllm_app.py"
#: where the codegen names are bound: stitchgen's, or vLLM's own
OURS = "stitchgen.compat"
VLLMS = "vllm.compilation.codegen"


class Ran:
    """A finished run: the process, its report (one JSON line) and its outputs."""

    def __init__(self, result: subprocess.CompletedProcess, out: Path) -> None:
        self.result = result
        self.report = json.loads(result.stdout.strip().splitlines()[-1])
        self.outputs = torch.load(out)


def run_app(
    tmp_path: Path,
    env: dict[str, str] | None = None,
    check: bool = True,
    cache: Path | None = None,
    **options: Any,
) -> Any:
    """tests/vllm_app.py in a fresh process: no STITCHGEN_* or VLLM_PLUGINS
    but ``env``, vLLM's caches under ``cache`` (default: ``tmp_path``)."""
    out = tmp_path / f"outputs-{len(list(tmp_path.glob('outputs-*')))}.pt"
    child_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("STITCHGEN_", "VLLM_PLUGINS"))
    }
    child_env.update(VLLM_CACHE_ROOT=str(cache or tmp_path / "vllm-cache"), **(env or {}))
    result = subprocess.run(
        [sys.executable, str(APP), json.dumps({**options, "out": str(out)})],
        capture_output=True,
        text=True,
        env=child_env,
        timeout=600,
    )
    if not check:
        return result
    assert result.returncode == 0, result.stderr[-4000:]
    return Ran(result, out)


def bound_to(report: dict, module: str) -> bool:
    return set(report["after"].values()) == {module}


def ours_ran(report: dict) -> bool:
    return len(report["callers"]) == 1 and report["callers"][0].startswith("<stitchgen:")

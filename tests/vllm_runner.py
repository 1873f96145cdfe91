"""Running tests/vllm_app.py, a vLLM process in miniature, as a fresh
process (the tests against the real vLLM: ``nox -s vllm``).

Importing vLLM takes seconds, most of a run that does not compile with
inductor; so each run is a child forked by one server per test process
(``vllm_app.py --serve``), which has imported vLLM's modules and nothing
else: no plugin loaded, no stitchgen imported, nothing compiled. The child
gets the environment, the stdout and stderr, and the exit status of the
script run of old."""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

APP = Path(__file__).resolve().parent / "vllm_app.py"
#: where the codegen names are bound: stitchgen's, or vLLM's own
OURS = "stitchgen.compat"
VLLMS = "vllm.compilation.codegen"
#: the server's answer lines (tests/vllm_app.py ANSWER)
ANSWER = "@@vllm_app "


class Ran:
    """A finished run: the process, its report (one JSON line) and its outputs."""

    def __init__(self, result: subprocess.CompletedProcess, out: Path) -> None:
        self.result = result
        self.report = json.loads(result.stdout.strip().splitlines()[-1])
        self.outputs = torch.load(out)


def _environment() -> dict[str, str]:
    """This process's environment, less what the tests set per run."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("STITCHGEN_", "VLLM_PLUGINS"))}


class _Server:
    """``vllm_app.py --serve``: started at the first run, stopped at exit."""

    def __init__(self) -> None:
        self.log = tempfile.TemporaryFile(mode="w+")  # what the server itself says
        self.process = subprocess.Popen(
            [sys.executable, str(APP), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=_environment(),
        )
        atexit.register(self.stop)

    def run(self, request: dict) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        for line in self.process.stdout:
            if line.startswith(ANSWER):
                return int(json.loads(line[len(ANSWER) :])["returncode"])
        self.log.seek(0)
        raise RuntimeError(f"vllm_app.py --serve ended:\n{self.log.read()[-4000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()  # type: ignore[union-attr]
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()


_SERVERS: list[_Server] = []  # this test process's one server (a cache)


def _server() -> _Server:
    if not _SERVERS or _SERVERS[0].process.poll() is not None:
        _SERVERS[:] = [_Server()]
    return _SERVERS[0]


def run_app(
    tmp_path: Path,
    env: dict[str, str] | None = None,
    check: bool = True,
    cache: Path | None = None,
    **options: Any,
) -> Any:
    """tests/vllm_app.py as a fresh process: no STITCHGEN_* or VLLM_PLUGINS
    but ``env``, vLLM's caches under ``cache`` (default: ``tmp_path``)."""
    n = len(list(tmp_path.glob("stdout-*")))  # one number per run, failed ones too
    out = tmp_path / f"outputs-{n}.pt"
    stdout, stderr = tmp_path / f"stdout-{n}.txt", tmp_path / f"stderr-{n}.txt"
    child_env = _environment()
    child_env.update(VLLM_CACHE_ROOT=str(cache or tmp_path / "vllm-cache"), **(env or {}))
    request = {
        "options": {**options, "out": str(out)},
        "env": child_env,
        "stdout": str(stdout),
        "stderr": str(stderr),
    }
    returncode = _server().run(request)
    result = subprocess.CompletedProcess(
        [str(APP), json.dumps(request["options"])],
        returncode,
        stdout.read_text(),
        stderr.read_text(),
    )
    if not check:
        return result
    assert result.returncode == 0, result.stderr[-4000:]
    return Ran(result, out)


def bound_to(report: dict, module: str) -> bool:
    return set(report["after"].values()) == {module}


def ours_ran(report: dict) -> bool:
    return len(report["callers"]) == 1 and report["callers"][0].startswith("<stitchgen:")

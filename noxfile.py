"""nox sessions: tests, golden, lint, demo. ``nox -s golden -- --update`` regenerates.

``tests`` is the matrix of supported Pythons and torch releases (README:
supported versions): ``nox -s "tests-3.13(torch='2.15.0')"`` runs the whole
suite and the golden check in a fresh venv with that torch, installed first.
Plain ``nox`` runs the main combination, the one CI's main run uses.
"""

import nox

#: the supported ranges: every torch release in them, vLLM 0.34's pin (2.14.0) included
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
TORCHES = ["2.11.0", "2.12.0", "2.13.0", "2.14.0", "2.15.0"]
MAIN = "tests-3.11(torch='2.13.0')"
#: the sessions that install a CUDA torch from PyPI (several GB each) make
#: their venvs with uv where it is installed (CI's runner has it: its cache
#: unpacks the CUDA libraries the torches share once), else with virtualenv and pip
FAST_INSTALLS = "uv|virtualenv"
#: their installs: exactly the torch asked for (a pip constraint that caps it,
#: as this machine's caps torch at 2.14.1, must not swap in another release),
#: and bytecode compiled at install as pip does (uv does not by default; with
#: PYTHONDONTWRITEBYTECODE set, every process would compile torch's sources)
INSTALLS = {"PIP_CONSTRAINT": "/dev/null", "UV_COMPILE_BYTECODE": "1"}

nox.options.sessions = [MAIN, "golden", "lint"]


def _install(session: nox.Session) -> None:
    session.install("torch==2.13.0")  # the CPU build; never a multi-GB CUDA one
    session.install("-e", ".[test]")


@nox.session(python=PYTHONS, venv_backend=FAST_INSTALLS)
@nox.parametrize("torch", TORCHES)
def tests(session: nox.Session, torch: str) -> None:
    """The whole suite and the golden check on one Python and one torch."""
    session.install(f"torch=={torch}", env=INSTALLS)
    session.install("-e", ".[test]", env=INSTALLS)
    installed = session.run("python", "-c", "import torch; print(torch.__version__)", silent=True)
    if installed is not None and not str(installed).startswith(torch):  # None: --install-only
        session.error(f"asked for torch {torch}, the venv has {installed}")
    # every test, on every core (pytest-xdist: pyproject's addopts)
    session.run("pytest", "-m", "slow or not slow", *session.posargs)
    session.run("stitchgen", "golden", "--check")


#: the vLLMs the plugin is proven against (the ends of the range it accepts,
#: which share the codegen API), and the torch each pins
VLLMS = {"0.34.0": "2.14.0", "0.22.0": "2.11.0"}
#: the pure-Python packages vLLM's compilation modules import (vLLM itself is
#: installed without its dependencies: no CUDA kernels, no GPU), at vLLM's
#: own pins where it has them
VLLM_NEEDS = [
    "pydantic", "regex", "numpy", "psutil", "pyzmq", "urllib3",
    "transformers>=5.16.1,<5.23", "aiohttp", "requests", "pillow", "pybase64",
    "cachetools", "cbor2", "msgspec", "cloudpickle", "uvloop", "py-cpuinfo",
    "prometheus_client", "llguidance>=1.7.0,<1.8.0", "xgrammar==0.2.8",
]  # fmt: skip


#: what vLLM 0.22's modules import beyond that, at its pins
VLLM_NEEDS_BY_RELEASE = {"0.22.0": ["gguf>=0.17.0", "openai>=2.0.0", "openai-harmony>=0.0.3"]}


@nox.session(python="3.11", venv_backend=FAST_INSTALLS)
@nox.parametrize("vllm", list(VLLMS))
def vllm(session: nox.Session, vllm: str) -> None:
    """The vLLM plugin inside the real vLLM (0.34.0, and 0.22.0, the oldest
    it accepts), on the CPU: the entry point loaded by vLLM's own
    load_general_plugins(), the stitching code compiled by vLLM's real
    VllmBackend, warm starts from vLLM's compile cache
    (tests/e2e/test_inside_vllm.py, tests/e2e/test_vllm_warm_start.py)."""
    session.install(f"torch=={VLLMS[vllm]}", env=INSTALLS)
    session.install("--no-deps", f"vllm=={vllm}", env=INSTALLS)
    session.install(*VLLM_NEEDS, *VLLM_NEEDS_BY_RELEASE.get(vllm, []), env=INSTALLS)
    session.install("-e", ".[test]", env=INSTALLS)  # the entry point vLLM looks up
    # each test runs vLLM processes, on every core; the warm starts (inductor
    # compiles: the longest tests) first, the rest stolen by the idle workers
    tests = ["tests/e2e/test_vllm_warm_start.py", "tests/e2e/test_inside_vllm.py"]
    tests.append("tests/test_vllm_plugin.py")
    session.run("pytest", "-m", "slow or not slow", *tests, *session.posargs)


@nox.session
def golden(session: nox.Session) -> None:
    _install(session)
    session.run("stitchgen", "golden", *(session.posargs or ["--check"]))


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", ".")


@nox.session
def demo(session: nox.Session) -> None:
    _install(session)
    session.run("stitchgen", "demo", *session.posargs)


@nox.session
def fuzz(session: nox.Session) -> None:
    """The long fuzzing profile: 2,000 random stitching graphs (override with
    STITCHGEN_FUZZ_EXAMPLES)."""
    _install(session)
    examples = session.env.get("STITCHGEN_FUZZ_EXAMPLES", "2000")
    session.run(
        "pytest",
        "tests/e2e/test_fuzz.py",
        "-n",
        "0",  # one process: hypothesis's statistics are shown only there
        "--hypothesis-show-statistics",
        env={"STITCHGEN_FUZZ_EXAMPLES": examples},
    )


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmark table (benchmarks/bench.py); pass --quick for a smoke run."""
    _install(session)
    session.run("python", "benchmarks/bench.py", *session.posargs)


@nox.session
def cold(session: nox.Session) -> None:
    """What each path costs a fresh process (benchmarks/process_cold.py)."""
    _install(session)
    session.run("python", "benchmarks/process_cold.py", *session.posargs)

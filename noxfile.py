"""nox sessions: tests, golden, lint, demo. ``nox -s golden -- --update`` regenerates."""

import nox

nox.options.sessions = ["tests", "golden", "lint"]


def _install(session: nox.Session) -> None:
    session.install("torch==2.13.0")  # the CPU build; never a multi-GB CUDA one
    session.install("-e", ".[test]")


@nox.session
def tests(session: nox.Session) -> None:
    _install(session)
    session.run("pytest", *session.posargs)


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

"""stitchgen's pytest plugin: golden files where a downstream project tests.

Loaded by pytest (entry point ``pytest11``, name ``stitchgen``; ``-p
no:stitchgen`` turns it off); it does nothing unless a test uses its
fixture, and stitchgen itself never imports it (nor pytest).

``stitchgen_golden(gm, name, *, templates=None, **generate_options)``
compares the code ``stitchgen.generate`` writes for ``gm`` with
``<dir>/<name>.py``, ``<dir>`` being the ini option ``stitchgen_golden_dir``
(default ``golden``, relative to the rootdir)::

    def test_decoder_code(stitchgen_golden):
        stitchgen_golden(build_decoder(), "decoder", templates=TEMPLATES)

* Drift fails with a unified diff and the command that accepts it; a missing
  file fails and writes nothing; a golden file that is not Python fails,
  naming it. Without ``--stitchgen-update`` nothing is ever written.
* ``pytest --stitchgen-update`` writes new and drifted files exactly as
  ``stitchgen golden --update`` does (:func:`stitchgen.golden.write_case`:
  the same ``FILES`` record, written first; atomic writes; a file stitchgen
  did not write is refused, and the test fails naming it).
* Stale files — in ``FILES``, produced by no test — are removed at the end
  of an update run only if the run was whole (no ``-k``, ``-m``, named paths
  or node ids, nothing deselected, no test using the fixture skipped) and
  green (no test failed or errored); otherwise the summary lists them as
  kept, with the command that removes them. The judgment is
  :func:`stitchgen.golden.files.stale`, the one ``golden --check`` makes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

__all__ = ["INI", "UPDATE"]

#: the flag that writes
UPDATE = "--stitchgen-update"
#: the ini option naming the golden directory
INI = "stitchgen_golden_dir"
_FIXTURE = "stitchgen_golden"


class _Run:
    """One session of the plugin (registered per session by
    ``pytest_configure``): what its tests produced and wrote, and why the
    run is not whole; its hooks see only this session's tests."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.directory = (config.rootpath / str(config.getini(INI))).resolve()
        self.update = bool(config.getoption(UPDATE))
        self.produced: dict[str, tuple[str, str]] = {}  # key -> (node id, code)
        self.written: list[str] = []
        self.users: set[str] = set()  # the tests that use the fixture
        self.partial: list[str] = []  # why the run is not whole
        self.kept: list[Path] = []
        self.removed: list[str] = []
        self.error = ""

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        if items:
            self.partial.append(f"{len(items)} test(s) deselected")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.users = {
            item.nodeid for item in session.items if _FIXTURE in getattr(item, "fixturenames", ())
        }

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # a skipped test produced nothing: its golden file is not stale
        if report.skipped and report.nodeid in self.users:
            self.partial.append(f"{report.nodeid} skipped")

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.update or not self.users:
            return  # no test of ours ran: nothing to do
        from .errors import GoldenError
        from .golden import finish

        why = self._not_whole(session, int(exitstatus))
        try:
            gone, self.removed = finish(self.directory, set(self.produced), prune=not why)
        except GoldenError as exc:
            self.error = str(exc)
            return
        if why:
            self.kept, self.partial = gone, why

    def _not_whole(self, session: pytest.Session, exitstatus: int) -> list[str]:
        """Why this run is not whole and green ([] when it is)."""
        config = session.config
        why = list(self.partial)
        if config.getoption("keyword", ""):
            why.append("-k")
        if config.getoption("markexpr", ""):
            why.append("-m")
        if config.args_source == pytest.Config.ArgsSource.ARGS:
            why.append("paths or node ids named")
        if hasattr(config, "workerinput"):
            why.append("a pytest-xdist worker")
        if session.testsfailed or exitstatus != 0:
            why.append("a test failed")
        return why

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.users:
            return
        lines = []
        if self.written:
            lines.append(f"wrote {len(self.written)} golden file(s): {', '.join(self.written)}")
        if self.removed:
            lines.append(f"removed the stale golden file(s): {', '.join(self.removed)}")
        if self.kept:
            names = ", ".join(p.relative_to(self.directory).as_posix() for p in self.kept)
            lines.append(
                f"kept {len(self.kept)} stale golden file(s) that no test produced: {names} "
                f"(not removed: {'; '.join(self.partial)}); a whole, green `pytest {UPDATE}` "
                "removes them"
            )
        if self.error:
            lines.append(self.error)
        if lines:
            terminalreporter.write_sep("-", "stitchgen golden")
            for line in lines:
                terminalreporter.write_line(line)


_RUN = pytest.StashKey[_Run]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stitchgen", "stitchgen golden files")
    group.addoption(
        UPDATE,
        action="store_true",
        default=False,
        help="write new and drifted stitchgen golden files; after a whole, green run, remove "
        "the stale ones",
    )
    parser.addini(
        INI, "the folder of stitchgen_golden's files, relative to the rootdir", default="golden"
    )


def pytest_configure(config: pytest.Config) -> None:
    run = _Run(config)
    config.stash[_RUN] = run
    config.pluginmanager.register(run, "stitchgen-golden-run")


@pytest.fixture
def stitchgen_golden(request: pytest.FixtureRequest) -> Callable[..., None]:
    """``stitchgen_golden(gm, name, *, templates=None, **generate_options)``:
    the generated code of ``gm`` against ``<stitchgen_golden_dir>/<name>.py``."""
    run = request.config.stash[_RUN]
    node = request.node.nodeid

    def check(gm: Any, name: str, *, templates: Any = None, **generate_options: Any) -> None:
        from .errors import GoldenError
        from .golden import compare, write_case, written
        from .golden.files import is_key
        from .pipeline import generate

        if not isinstance(name, str) or not is_key(name):
            raise ValueError(
                f"golden name {name!r}: a file name, or folder/name (no leading dot, no '..')"
            )
        code = generate(gm, templates=templates, **generate_options).code
        earlier = run.produced.get(name)
        if earlier is not None and earlier[1] != code:
            pytest.fail(
                f"golden {name!r} is produced by {earlier[0]} and by {node} with other code; "
                "give each its own name",
                pytrace=False,
            )
        run.produced[name] = (node, code)
        try:
            if run.update:
                if write_case(run.directory, name, code):
                    run.written.append(name)
                return
            path = run.directory / f"{name}.py"
            _compiles(path)
            problem = compare(run.directory, name, code, written(run.directory), _regen(node))
        except GoldenError as exc:
            pytest.fail(str(exc), pytrace=False)
        if problem:
            pytest.fail(problem, pytrace=False)

    return check


def _compiles(path: Path) -> None:
    """Fail naming ``path`` where it holds text that is not Python."""
    if not path.is_file():
        return
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        compile(text, str(path), "exec")
    except SyntaxError as exc:
        pytest.fail(
            f"{path}: the golden file is not Python ({exc.msg}, line {exc.lineno}); restore it, "
            f"or accept the generated code: pytest {UPDATE}",
            pytrace=False,
        )


def _regen(node: str) -> str:
    return f"pytest {UPDATE} {node}"

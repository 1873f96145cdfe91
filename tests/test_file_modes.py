"""Files stitchgen writes get the mode a plain ``open(path, "w")`` would give
them under the process's umask (an artifact directory: a plain ``mkdir``'s),
and a file replaced in place keeps its mode: golden files and their
records, a template directory's lock, dumps, artifacts."""

import os
import stat
import sys

import pytest
import torch.fx as fx

import stitchgen
from stitchgen.authoring.lock import LOCK
from stitchgen.cli import main
from stitchgen.golden import entries_from_cases, load_cases, update

CASES = """\
import os
import torch.fx as fx

N = int(os.environ.get("GOLDEN_N", "1"))
CASES = {"one": lambda: fx.symbolic_trace(lambda x: x + N)}
"""


@pytest.fixture(params=[0o022, 0o077], ids=["umask-022", "umask-077"])
def umask(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def _plain(umask, directory=False):
    """What ``open(path, "w")`` (or ``mkdir``) gives under ``umask``."""
    return (0o777 if directory else 0o666) & ~umask


def _modes(folder):
    return {p.name: _mode(p) for p in folder.iterdir()}


def _golden_update(root, n, monkeypatch):
    monkeypatch.setenv("GOLDEN_N", str(n))
    sys.modules.pop("cases", None)
    entries = entries_from_cases(load_cases(str(root / "cases.py")), root / "golden")
    return update(entries, root / "golden")


def test_golden_files_and_their_records(tmp_path, umask, monkeypatch):
    (tmp_path / "cases.py").write_text(CASES)
    assert _golden_update(tmp_path, 1, monkeypatch) == ["one"]
    golden = tmp_path / "golden"
    modes = _modes(golden)
    assert {"FILES", "VERSIONS", "one.py"} <= set(modes)
    assert set(modes.values()) == {_plain(umask)}, modes
    for path in golden.iterdir():  # the user opens them up; an update keeps that
        path.chmod(0o644)
    assert _golden_update(tmp_path, 2, monkeypatch) == ["one"]
    assert set(_modes(golden).values()) == {0o644}


def test_the_template_lock(tmp_path, umask):
    override = '{% extends "stitchgen/function.py.j2" %}\n'
    for block in ("before_call", "after_call"):
        override += f"{{% block {block} %}}\n    pass\n{{% endblock %}}\n"
        (tmp_path / "function.py.j2").write_text(override)
        before = (tmp_path / LOCK).read_text() if (tmp_path / LOCK).exists() else ""
        assert main(["templates", "lock", str(tmp_path)]) == 0
        assert (tmp_path / LOCK).read_text() != before
        if block == "before_call":
            assert _mode(tmp_path / LOCK) == _plain(umask)
            (tmp_path / LOCK).chmod(0o644)  # the second lock replaces it, keeping that
    assert _mode(tmp_path / LOCK) == 0o644


def test_a_dump(tmp_path, umask):
    stitchgen.generate(fx.symbolic_trace(lambda x: x * 2), dump_dir=tmp_path)
    assert set(_modes(tmp_path).values()) == {_plain(umask)}


def test_an_artifact(tmp_path, umask):
    generated = stitchgen.generate(fx.symbolic_trace(lambda x: x - 1))
    path = generated.save(tmp_path / "artifact")
    assert _mode(path) == _plain(umask, directory=True)
    assert set(_modes(path).values()) == {_plain(umask)}
    path.chmod(0o755)  # an artifact saved again over itself keeps the folder's mode
    assert _mode(generated.save(path)) == 0o755

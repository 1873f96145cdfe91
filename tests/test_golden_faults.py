"""Golden files survive any fault: a disk that fills at any write of an
update, a SIGKILL at any moment. Each golden file is then whole (the old
text or the new one), what the error says is true, and the next plain
``--update`` finishes unaided."""

import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

import stitchgen.atomic as atomic
import stitchgen.golden.writing as writing
from stitchgen import GoldenError
from stitchgen.cli import main
from stitchgen.golden import RECORD, check, entries_from_cases, load_cases, update, written

CASES = """\
import os
import torch.fx as fx

N = int(os.environ.get("GOLDEN_N", "1"))
CASES = {{
    f"case_{{i:02d}}": (lambda i=i: fx.symbolic_trace(lambda x: x + i * N)) for i in range({count})
}}
if N > 1:  # the new version: one case gone, one new
    CASES.pop("case_00")
    CASES["case_new"] = lambda: fx.symbolic_trace(lambda x: x - 1)
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A golden folder made by the old cases (``GOLDEN_N=1``); the new ones
    (``GOLDEN_N=2``) change every file, remove one and add one."""
    (tmp_path / "cases.py").write_text(CASES.format(count=4))
    monkeypatch.setenv("GOLDEN_N", "1")
    golden = tmp_path / "golden"
    update(_entries(tmp_path), golden)
    old = _texts(golden)
    monkeypatch.setenv("GOLDEN_N", "2")
    new = {key: e.code() for key, e in _entries(tmp_path).items()}
    return tmp_path, golden, old, new


def _entries(root):
    sys.modules.pop("cases", None)
    return entries_from_cases(load_cases(str(root / "cases.py")), root / "golden")


def _texts(golden):
    return {p.stem: p.read_text() for p in golden.glob("*.py")}


def _whole(golden, old, new):
    """Every golden file is the old text or the new one; no temporary file
    is left; the record is stitchgen's and lists every golden file there."""
    for key, text in _texts(golden).items():
        assert text in (old.get(key), new.get(key)), f"{key} is torn"
    recorded = written(golden)  # raises if the record is not stitchgen's
    assert set(_texts(golden)) <= recorded | set(old)


def _finishes(root, golden, new):
    assert update(_entries(root), golden) is not None
    assert _texts(golden) == new
    assert check(_entries(root), golden) == []
    assert writing.leftovers(golden) == []


def _full_disk_at(monkeypatch, n):
    """The n-th fsync of the writer fails as a full disk does."""
    calls = []
    real = os.fsync

    def fsync(fd):
        calls.append(fd)
        if len(calls) == n:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    return calls


def test_a_full_disk_at_any_write_leaves_every_file_whole_and_says_what_changed(
    project, monkeypatch
):
    root, golden, old, new = project
    pristine = root / "pristine"
    shutil.copytree(golden, pristine)
    n = 1
    while True:
        shutil.rmtree(golden)
        shutil.copytree(pristine, golden)  # each fault meets the same old folder
        with monkeypatch.context() as m:
            calls = _full_disk_at(m, n)
            try:
                update(_entries(root), golden)
            except GoldenError as exc:
                message = str(exc)
                assert "No space left on device" in message
                assert message.split(":")[0].startswith(str(golden))  # it names the file
                assert ("no golden file was changed" in message) == (_texts(golden) == old)
            else:
                assert len(calls) < n
                break
        _whole(golden, old, new)
        assert writing.leftovers(golden) == []
        n += 1
    assert n == 8  # the record, four golden files, VERSIONS, the record again: 7 writes
    _finishes(root, golden, new)


def test_the_record_lists_a_new_file_before_it_can_appear(project, monkeypatch):
    """Stopped right after writing a new case's file, the next plain
    --update adopts it as its own: the record listed it first."""
    root, golden, old, new = project
    real = os.replace

    def replace(src, dst):
        real(src, dst)
        if str(dst).endswith("case_new.py"):
            raise KeyboardInterrupt  # Ctrl-C the moment the new file appeared

    monkeypatch.setattr(atomic.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        update(_entries(root), golden)
    monkeypatch.undo()
    monkeypatch.setenv("GOLDEN_N", "2")
    assert "case_new" in written(golden)
    _whole(golden, old, new)
    _finishes(root, golden, new)


def test_the_command_says_it_in_one_line(project, monkeypatch, capsys):
    root, golden, old, _ = project
    _full_disk_at(monkeypatch, 2)  # the record was written, then the first golden file fails
    argv = ["golden", "--cases", str(root / "cases.py"), "--dir", str(golden), "--update"]
    sys.modules.pop("cases", None)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"stitchgen golden: error: {golden / 'case_01.py'}: No space left")
    assert err.rstrip().endswith("(no golden file was changed)")
    assert _texts(golden) == old


def test_only_stitchgens_temporary_files_are_swept(project):
    root, golden, _, new = project
    ours = golden / ".case_01.py.k3j2h1.stitchgen-tmp"
    ours.write_text("half a fi")
    mine = [golden / ".hidden", golden / "notes.stitchgen-tmp", golden / "keep.txt"]
    for path in mine:
        path.write_text("mine\n")
    _finishes(root, golden, new)
    assert not ours.exists() and all(p.read_text() == "mine\n" for p in mine)


KILLED = """\
import os, sys, time
import stitchgen.atomic as atomic
from stitchgen.cli import main

real = os.fsync
def slow_fsync(fd):  # a slow disk: each write takes a while
    time.sleep(0.03)
    real(fd)
atomic.os.fsync = slow_fsync
print("ready", flush=True)
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_sigkill_at_random_moments_leaves_every_file_whole(tmp_path):
    (tmp_path / "cases.py").write_text(CASES.format(count=12))
    (tmp_path / "killed.py").write_text(KILLED)
    golden, pristine = tmp_path / "golden", tmp_path / "pristine"
    argv = ["golden", "--cases", str(tmp_path / "cases.py"), "--dir", str(golden), "--update"]
    env = {**os.environ, "GOLDEN_N": "1", "PYTHONPATH": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "stitchgen.cli", *argv], env=env, check=True)
    old = _texts(golden)
    shutil.copytree(golden, pristine)
    record = (golden / RECORD).read_text()
    os.environ["GOLDEN_N"] = "2"
    try:
        new = {key: e.code() for key, e in _entries(tmp_path).items()}
        rng = random.Random(1234)
        mixed = 0
        for _ in range(4):
            shutil.rmtree(golden)
            shutil.copytree(pristine, golden)
            child = subprocess.Popen(
                [sys.executable, str(tmp_path / "killed.py"), *argv],
                env={**env, "GOLDEN_N": "2"},
                stdout=subprocess.PIPE,
                text=True,
            )
            assert child.stdout.readline().strip() == "ready"
            deadline = time.monotonic() + 120
            while not writing.leftovers(golden) and (golden / RECORD).read_text() == record:
                assert time.monotonic() < deadline and child.poll() is None
                time.sleep(0.005)  # until the writing starts
            time.sleep(rng.uniform(0, 0.4))  # then anywhere in it (~0.5 s: a slow disk)
            child.send_signal(signal.SIGKILL)
            child.wait()
            _whole(golden, old, new)
            texts = _texts(golden)
            mixed += texts != old and texts != new
        assert mixed  # the kills landed while files were being written
        _finishes(tmp_path, golden, new)
    finally:
        os.environ.pop("GOLDEN_N")

"""Compiled templates kept across processes (stitchgen/template_cache.py):
reused, keyed by the source, never trusted when corrupt, refused in a folder
other users can write, and off on request."""

import os
import stat
import subprocess
import sys
import textwrap

import jinja2
import pytest
import torch.fx as fx

import stitchgen
from stitchgen import Templates
from stitchgen.template_cache import CACHE_ENV, cache_directory


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache" / "templates"


@pytest.fixture
def compiles(monkeypatch):
    """The template files Jinja compiles from source in this test (yours:
    ``acme/<name>``; the built-in it extends: ``stitchgen/<name>``)."""
    files = []
    original = jinja2.Environment.compile

    def counting(self, source, name=None, filename=None, raw=False, defer_init=False):
        parent = os.path.basename(os.path.dirname(filename))
        files.append(f"{'acme' if parent == 'acme' else 'stitchgen'}/{name}")
        return original(self, source, name, filename, raw, defer_init)

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    return files


def _templates(tmp_path, header="# acme"):
    directory = tmp_path / "acme"
    directory.mkdir(exist_ok=True)
    (directory / "module.py.j2").write_text(
        '{% extends "stitchgen/module.py.j2" %}\n'
        f"{{% block header %}}\n{header}\n{{{{ super() -}}}}\n{{% endblock %}}\n"
    )
    return directory


def _code(directory):
    # a new Templates: a new Jinja environment, as in a new process
    return stitchgen.generate(
        fx.symbolic_trace(lambda x: x + 1), templates=Templates(directory)
    ).code


def test_compiled_templates_are_kept_and_reused(tmp_path, cache, compiles):
    directory = _templates(tmp_path)
    first = _code(directory)
    assert sorted(compiles) == ["acme/module.py.j2", "stitchgen/module.py.j2"]
    entries = sorted(cache.glob("*.jbc"))
    assert len(entries) == 2
    # and one record of templates whose checks passed, so a later process skips them
    assert {p.suffix for p in cache.iterdir()} == {".jbc", ".checked"}
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    compiles.clear()
    assert _code(directory) == first
    assert compiles == []  # read back, not compiled


def test_an_edited_template_is_compiled_again(tmp_path, cache, compiles):
    directory = _templates(tmp_path)
    _code(directory)
    compiles.clear()
    code = _code(_templates(tmp_path, header="# acme, edited"))
    assert compiles == ["acme/module.py.j2"] and code.startswith("# acme, edited\n")


def test_a_corrupt_entry_is_compiled_again_and_rewritten(tmp_path, cache, compiles):
    directory = _templates(tmp_path)
    first = _code(directory)
    for entry in cache.glob("*.jbc"):
        data = bytearray(entry.read_bytes())
        data[-5] ^= 0xFF  # one flipped byte in the compiled code
        entry.write_bytes(bytes(data))
    compiles.clear()
    assert _code(directory) == first
    assert sorted(compiles) == ["acme/module.py.j2", "stitchgen/module.py.j2"]
    compiles.clear()
    assert _code(directory) == first and compiles == []  # rewritten whole


def test_a_folder_other_users_can_write_is_refused(tmp_path, cache, compiles):
    cache.mkdir(parents=True)
    cache.chmod(0o777)
    with pytest.warns(RuntimeWarning, match="is writable by other users"):
        code = _code(_templates(tmp_path))
    assert code.startswith("# acme\n")
    assert list(cache.iterdir()) == []  # nothing read or written there


def test_a_named_folder_keeps_the_users_own_files(tmp_path, cache, compiles):
    """STITCHGEN_CACHE_DIR may name a folder of the user's: stitchgen only adds
    its own ``<key>.jbc`` entries (and ``<key>.checked`` records) there, in
    ``templates/``."""
    cache.mkdir(parents=True, mode=0o700)
    (cache.parent / "notes.txt").write_text("mine\n")
    (cache / "module.py.j2").write_text("{# the user's template #}\n")
    before = {p: p.read_bytes() for p in cache.parent.rglob("*") if p.is_file()}
    _code(_templates(tmp_path))
    _code(_templates(tmp_path, header="# acme, edited"))  # entries rewritten, not others
    after = {p: p.read_bytes() for p in cache.parent.rglob("*") if p.is_file()}
    assert {p: after[p] for p in before} == before
    added = set(after) - set(before)
    assert all(p.suffix in (".jbc", ".checked") and p.parent == cache for p in added)


def test_off_keeps_nothing_on_disk(tmp_path, monkeypatch, compiles):
    monkeypatch.setenv(CACHE_ENV, "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_directory() is None
    _code(_templates(tmp_path))
    assert not (tmp_path / "xdg").exists()


def test_the_default_is_the_users_cache_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_directory() == tmp_path / "xdg" / "stitchgen" / "templates"


@pytest.mark.slow
def test_a_fresh_process_reads_the_templates_another_compiled(tmp_path, cache):
    directory = _templates(tmp_path)
    script = textwrap.dedent(
        f"""
        import jinja2, torch.fx as fx, stitchgen
        compiled = []
        original = jinja2.Environment.compile
        jinja2.Environment.compile = lambda *a, **k: compiled.append(a[2]) or original(*a, **k)
        gm = fx.symbolic_trace(lambda x: x + 1)
        code = stitchgen.generate(gm, templates=stitchgen.Templates({str(directory)!r})).code
        print(len(compiled), code.splitlines()[0])
        """
    )
    env = {**os.environ, CACHE_ENV: str(cache.parent)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs == [["2", "#", "acme"], ["0", "#", "acme"]]

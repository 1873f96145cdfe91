"""The lock names what an upgrade changed under an override: ``stitchgen
templates lock`` records the shipped text of each overridden block; after
an upgrade (here: a copy of the shipped templates with one block changed)
``templates check`` names that block alone, with a diff, and generating
warns once per process. Without a lock nothing is said."""

import shutil
import warnings

import pytest
import torch.fx as fx

import stitchgen
import stitchgen.rendering as rendering
from stitchgen import StaleTemplateWarning, Templates
from stitchgen.authoring.lock import LOCK, LOCK_HEADER
from stitchgen.cli import main

#: the shipped templates, before a fixture swaps in an upgraded copy
SHIPPED = rendering.templates_dir()

OVERRIDE = (
    '{% extends "stitchgen/function.py.j2" %}\n'
    "{% block before_call %}\n    pass\n{% endblock %}\n"
    "{% block call %}\n{{ super() -}}\n{% endblock %}\n"
)


@pytest.fixture
def project(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "function.py.j2").write_text(OVERRIDE)
    return mine


@pytest.fixture
def upgraded(tmp_path, monkeypatch):
    """The shipped templates after an upgrade that changed the call block's text."""
    copy = tmp_path / "upgraded"
    shutil.copytree(SHIPPED, copy)
    path = copy / "function.py.j2"
    text = path.read_text()
    assert "{% block call scoped %}\n" in text
    path.write_text(
        text.replace("{% block call scoped %}\n", "{% block call scoped %}\n{#- new #}\n")
    )
    monkeypatch.setattr(rendering, "templates_dir", lambda: copy)
    return copy


def test_lock_records_each_overridden_block_with_its_shipped_text(project, capsys):
    assert main(["templates", "lock", str(project)]) == 0
    assert "locked 2 overridden block(s)" in capsys.readouterr().out
    text = (project / LOCK).read_text()
    assert text.splitlines()[0] == LOCK_HEADER
    assert "{% block before_call scoped %}{% endblock %}" in text
    assert main(["templates", "check", str(project)]) == 0
    assert "no problems" in capsys.readouterr().out


def _lock_with_shipped(project):
    """Lock ``project`` against the shipped templates as they were before the upgrade."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(rendering, "templates_dir", lambda: SHIPPED)
        assert main(["templates", "lock", str(project)]) == 0


def test_after_an_upgrade_check_names_only_the_changed_block_with_a_diff(project, upgraded, capsys):
    _lock_with_shipped(project)
    capsys.readouterr()
    assert main(["templates", "check", str(project)]) == 1
    err = capsys.readouterr().err
    assert f"{project / 'function.py.j2'}: block 'call' overrides stitchgen/function.py.j2's" in err
    assert err.count("overrides stitchgen/function.py.j2's") == 1  # before_call is not named
    assert "+{#- new #}" in err  # the diff of the base block, locked against today's


def test_generating_with_a_stale_override_warns_once_per_process(project, upgraded):
    _lock_with_shipped(project)
    gm = fx.symbolic_trace(lambda x: x + 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stitchgen.generate(gm, templates=Templates(project))
        stitchgen.generate(fx.symbolic_trace(lambda x: x * 2), templates=Templates(project))
    stale = [w for w in caught if issubclass(w.category, StaleTemplateWarning)]
    assert len(stale) == 1, [str(w.message) for w in caught]
    message = str(stale[0].message)
    assert "function.py.j2 call (stitchgen/function.py.j2)" in message
    assert "before_call" not in message
    assert f"stitchgen templates check {project}" in message


def test_without_a_lock_nothing_is_said(project, upgraded):
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleTemplateWarning)
        stitchgen.generate(fx.symbolic_trace(lambda x: x + 1), templates=Templates(project))
    assert Templates(project).check().clean


def test_lock_replaces_only_its_own_file(project, capsys):
    (project / LOCK).write_text("my notes\n")
    assert main(["templates", "lock", str(project)]) == 1
    assert "not a lock stitchgen wrote" in capsys.readouterr().err
    assert (project / LOCK).read_text() == "my notes\n"


def test_golden_check_names_the_stale_blocks_that_may_explain_a_drift(
    project, upgraded, tmp_path, capsys
):
    cases = tmp_path / "cases.py"
    cases.write_text(
        "import torch.fx as fx\nCASES = {'inc': lambda: fx.symbolic_trace(lambda x: x + 1)}\n"
    )
    golden = tmp_path / "golden"
    flags = ["--cases", str(cases), "--dir", str(golden), "--template-dir", str(project)]
    _lock_with_shipped(project)
    with pytest.warns(StaleTemplateWarning):
        assert main(["golden", *flags, "--update"]) == 0
    (golden / "inc.py").write_text((golden / "inc.py").read_text() + "# drift\n")
    capsys.readouterr()
    assert main(["golden", *flags, "--check"]) == 1
    err = capsys.readouterr().err
    assert "the drift may come from overridden blocks" in err
    assert "function.py.j2 call (stitchgen/function.py.j2)" in err

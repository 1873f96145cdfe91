"""``stitchgen golden --update`` replaces or removes only the golden files it
wrote (recorded in ``DIR/FILES``); everything else under ``--dir`` is the
user's, and a case that would overwrite one is refused before anything is
written."""

import pytest

from stitchgen import GoldenError
from stitchgen.cli import main

CASES_PY = """\
import torch.fx as fx


def tiny():
    return fx.symbolic_trace(lambda x: x + 1)


def twice():
    return fx.symbolic_trace(lambda x: x * 2)


CASES = {"tiny": tiny, "twice": twice}
ONE = {"tiny": tiny}
NESTED = {"tiny": tiny, "deep/er/twice": twice}
SETTINGS = {"settings": tiny}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A user's project folder: their own sources beside the cases."""
    (tmp_path / "cases.py").write_text(CASES_PY)
    (tmp_path / "settings.py").write_text("DEBUG = True\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('app')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _golden(*args):
    return main(["golden", *args])


def _tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_update_in_the_project_folder_keeps_every_file_the_user_wrote(project, capsys):
    before = _tree(project)
    assert _golden("--update", "--cases", "cases.py:ONE", "--dir", ".") == 0
    assert "updated 1 golden file(s): tiny" in capsys.readouterr().out
    after = _tree(project)
    assert {k: v for k, v in after.items() if k in before} == before  # nothing lost or changed
    assert set(after) - set(before) == {"tiny.py", "VERSIONS", "FILES"}
    assert _golden("--check", "--cases", "cases.py:ONE", "--dir", ".") == 0


def test_a_golden_folder_with_the_users_own_files_keeps_them(project, capsys):
    golden = project / "golden"
    golden.mkdir()
    (golden / "conftest.py").write_text("# the user's\n")
    (golden / "helpers").mkdir()
    (golden / "helpers" / "util.py").write_text("X = 1\n")
    assert _golden("--update", "--cases", "cases.py", "--dir", "golden") == 0
    assert (golden / "conftest.py").read_text() == "# the user's\n"
    assert (golden / "helpers" / "util.py").read_text() == "X = 1\n"
    capsys.readouterr()
    assert _golden("--check", "--cases", "cases.py", "--dir", "golden") == 0  # not "stale"
    assert "conftest" not in capsys.readouterr().err


def test_a_stale_file_stitchgen_wrote_is_reported_and_removed(project, capsys):
    assert _golden("--update", "--cases", "cases.py", "--dir", "golden") == 0
    assert (project / "golden" / "twice.py").is_file()
    capsys.readouterr()
    assert _golden("--check", "--cases", "cases.py:ONE", "--dir", "golden") == 1
    assert "twice.py: no case of that name (stale" in capsys.readouterr().err
    assert _golden("--update", "--cases", "cases.py:ONE", "--dir", "golden") == 0
    assert "twice (removed)" in capsys.readouterr().out
    assert not (project / "golden" / "twice.py").exists()
    assert (project / "golden" / "FILES").read_text().splitlines()[1:] == ["tiny"]


def test_a_case_over_a_file_the_user_wrote_is_refused_and_nothing_is_written(project, capsys):
    assert _golden("--update", "--cases", "cases.py:SETTINGS", "--dir", ".") == 1
    err = capsys.readouterr().err
    assert err.startswith("stitchgen golden: error: not updated: stitchgen did not write ")
    assert "settings.py" in err and err.count("\n") == 1
    assert (project / "settings.py").read_text() == "DEBUG = True\n"
    assert not (project / "VERSIONS").exists() and not (project / "FILES").exists()
    assert _golden("--check", "--cases", "cases.py:SETTINGS", "--dir", ".") == 1
    assert "settings.py: not a golden file stitchgen wrote" in capsys.readouterr().err


def test_a_file_already_holding_the_generated_code_is_adopted(project):
    from stitchgen import golden

    assert _golden("--update", "--cases", "cases.py:ONE", "--dir", "golden") == 0
    (project / "golden" / "FILES").unlink()  # as a golden folder from before the record
    assert _golden("--update", "--cases", "cases.py:ONE", "--dir", "golden") == 0
    assert golden.written(project / "golden") == {"tiny"}


def test_versions_and_files_are_replaced_only_when_they_are_stitchgens(project, capsys):
    (project / "VERSIONS").write_text("1.2.3\n")
    assert _golden("--update", "--cases", "cases.py:ONE", "--dir", ".") == 1
    err = capsys.readouterr().err
    assert "VERSIONS is not a VERSIONS record that stitchgen wrote" in err
    assert (project / "VERSIONS").read_text() == "1.2.3\n" and not (project / "tiny.py").exists()
    (project / "VERSIONS").unlink()
    (project / "FILES").write_text("settings\nsrc/app\n")  # the user's, not a record
    assert _golden("--update", "--cases", "cases.py:ONE", "--dir", ".") == 1
    assert "FILES is not a record that stitchgen wrote" in capsys.readouterr().err
    assert (project / "settings.py").exists() and (project / "src" / "app.py").exists()


def test_a_record_naming_paths_outside_the_folder_removes_nothing_there(project):
    from stitchgen import golden

    assert _golden("--update", "--cases", "cases.py:ONE", "--dir", "golden") == 0
    record = project / "golden" / "FILES"
    record.write_text(record.read_text() + "../settings\n.hidden\n")
    assert golden.written(project / "golden") == {"tiny"}
    assert _golden("--update", "--cases", "cases.py:ONE", "--dir", "golden") == 0
    assert (project / "settings.py").read_text() == "DEBUG = True\n"


def test_golden_errors_are_stitchgen_errors_naming_the_input(project):
    from stitchgen import golden

    with pytest.raises(GoldenError, match=r"--cases cases.py:NOPE: cases.py has no attribute"):
        golden.load_cases("cases.py:NOPE")
    with pytest.raises(GoldenError, match=r"no file .*missing.py"):
        golden.load_cases("missing.py")
    cases = golden.load_cases("cases.py")
    entries = golden.entries_from_cases(cases, project / "golden")
    with pytest.raises(GoldenError, match="unknown golden case.*nope; known: tiny, twice"):
        golden.selected(entries, ["nope"])
    (project / "bad.py").write_text("CASES = {'../x': lambda: None}\n")
    with pytest.raises(GoldenError, match=r"case name '\.\./x' is not a file name"):
        golden.load_cases("bad.py")


def test_removing_a_case_removes_the_folders_it_emptied_never_the_golden_dir(project, capsys):
    golden = project / "golden"
    assert _golden("--update", "--cases", "cases.py:NESTED", "--dir", "golden") == 0
    assert (golden / "deep" / "er" / "twice.py").is_file()
    (golden / "deep" / "mine.txt").write_text("the user's")
    assert _golden("--update", "--cases", "cases.py:ONE", "--dir", "golden") == 0
    assert "deep/er/twice (removed)" in capsys.readouterr().out
    assert not (golden / "deep" / "er").exists()  # emptied by the removal: gone
    assert (golden / "deep" / "mine.txt").read_text() == "the user's"  # not emptied: kept
    (golden / "deep" / "mine.txt").unlink()
    assert _golden("--update", "--cases", "cases.py:NESTED", "--dir", "golden") == 0
    assert _golden("--update", "--cases", "cases.py:ONE", "--dir", "golden") == 0
    assert not (golden / "deep").exists()  # both folders emptied: both gone
    assert sorted(p.name for p in golden.iterdir()) == ["FILES", "VERSIONS", "tiny.py"]

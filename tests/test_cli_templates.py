"""``stitchgen templates``: blocks, check, diff and lock — one line per
problem, the exit codes of the other commands (0 clean, 1 problems, 2 a
wrong command line), never a traceback."""

import pytest

from stitchgen.cli import main

TYPO = (
    '{% extends "stitchgen/function.py.j2" %}\n{% block befor_call %}\n    pass\n{% endblock %}\n'
)
HEADER = (
    '{% extends "stitchgen/module.py.j2" %}\n{% block header %}\n# mine\n{{ super() -}}\n'
    "{% endblock %}\n"
)
MARK = (
    '{% extends "stitchgen/function.py.j2" %}\n{% block before_call %}\n'
    "{% if stmt.is_piece %}\n    # piece {{ stmt.node | comment }}\n{% endif %}\n{% endblock %}\n"
)


def _dir(tmp_path, **files):
    for name, text in files.items():
        (tmp_path / name.replace("_py", ".py").replace("_j2", ".j2")).write_text(text)
    return str(tmp_path)


def test_blocks_lists_every_block_with_its_scope_and_emit_method(capsys):
    assert main(["templates", "blocks"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("module.py.j2\n")
    assert "  header            emit.header()" in out
    assert "stmt: Call | UnpackCall" in out
    assert main(["templates", "blocks", "--variant", "profiled"]) == 0
    assert "emit.call_head(), emit.call_tail(), emit.call_else()" in capsys.readouterr().out


def test_blocks_marks_the_blocks_a_directory_overrides(tmp_path, capsys):
    directory = _dir(tmp_path, function_py_j2=MARK)
    assert main(["templates", "blocks", "--template-dir", directory]) == 0
    out = capsys.readouterr().out
    assert "before_call  -  (yours: function.py.j2)" in out


def test_check_exits_0_when_clean_and_1_with_one_line_per_problem(tmp_path, capsys):
    clean = _dir(tmp_path, module_py_j2=HEADER)
    assert main(["templates", "check", clean]) == 0
    assert "no problems" in capsys.readouterr().out
    (tmp_path / "function.py.j2").write_text(TYPO)
    assert main(["templates", "check", clean]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{tmp_path / 'function.py.j2'}:2: ")
    assert "did you mean 'before_call'" in err[0]
    assert err[-1] == "stitchgen templates check: 1 problem(s)"


@pytest.mark.parametrize(
    "argv, said",
    [
        (["templates"], "the following arguments are required: ACTION"),
        (["templates", "check"], "the following arguments are required: DIR"),
        (["templates", "check", "/no/such/dir"], "'/no/such/dir' does not exist"),
        (["templates", "check", ".", "--variant", "nope"], "invalid choice: 'nope'"),
        (["templates", "diff", ".", "-k", "no_such_case"], "unknown golden case(s) no_such_case"),
        (["templates", "diff", ".", "--cases", "/no/such.py"], "/no/such.py"),
    ],
)
def test_a_wrong_command_line_is_one_line_and_exit_2(argv, said, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and said in err and "Traceback" not in err


def test_diff_previews_a_two_file_override_case_by_case(tmp_path, capsys):
    directory = _dir(tmp_path, module_py_j2=HEADER, function_py_j2=MARK)
    cases = ["-k", "decoder_1_layer", "-k", "nested_output"]
    assert main(["templates", "diff", directory, *cases]) == 0
    out = capsys.readouterr().out
    assert out.count("--- decoder_1_layer (shipped templates)") == 1
    assert out.count("+++ nested_output (yours)") == 1
    assert "+# mine\n" in out
    assert '+        # piece "submod_0"' in out or "+        # piece submod_0" in out
    added = [line for line in out.splitlines() if line.startswith("+") and "+++" not in line]
    assert all("# mine" in line or "# piece" in line for line in added), added
    assert out.rstrip().endswith("changes 2 of 2 case(s)")


def test_diff_and_lock_refuse_templates_with_problems(tmp_path, capsys):
    directory = _dir(tmp_path, function_py_j2=TYPO)
    assert main(["templates", "diff", directory, "-k", "decoder_1_layer"]) == 1
    assert "'befor_call'" in capsys.readouterr().err
    assert main(["templates", "lock", directory]) == 1
    assert "not locked" in capsys.readouterr().err
    assert not (tmp_path / "stitchgen.lock").exists()


@pytest.mark.parametrize("action", ["check", "lock", "blocks", "diff"])
def test_a_jinja_syntax_error_is_one_line_naming_file_and_line(tmp_path, capsys, action):
    broken = '{% extends "stitchgen/function.py.j2" %}\n{% block prologue %}\n    {{ x + }}\n'
    directory = _dir(tmp_path, function_py_j2=broken + "{% endblock %}\n")
    argv = ["templates", action, *(["--template-dir"] if action == "blocks" else []), directory]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{tmp_path / 'function.py.j2'}:3: TemplateSyntaxError: unexpected" in err
    assert not (tmp_path / "stitchgen.lock").exists()


def test_a_render_error_is_printed_once_with_its_lines_each_on_its_own(tmp_path, capsys):
    """Code that is not Python: said once, however many specimens it fails;
    what and where first, then the generated lines around it, one a line."""
    (tmp_path / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n{% block before_call %}\nx = (((\n'
        "{% endblock %}\n"
    )
    assert main(["templates", "check", str(tmp_path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("specimen pieces: ") and "function.py.j2:3" in err[0]
    assert "not valid Python" in err[0] and "(also specimen boxed" in err[0]
    context = err[1:-1]
    assert len(context) >= 3 and any(line.startswith("  >") for line in context)
    assert all(" | " in line for line in context)
    assert err[-1] == "stitchgen templates check: 1 problem(s)"
    assert "Traceback" not in "\n".join(err)

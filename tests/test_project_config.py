"""``[tool.stitchgen]`` in pyproject.toml: the command line checks, previews,
locks and golden-files with the project's own Templates object (issue 52)."""

import sys
import uuid

import stitchgen
from stitchgen.cli import main

PROLOGUE = (
    '{% extends "stitchgen/function.py.j2" %}\n{% block prologue %}\n'
    "{% if loop.last %}\n    acme_calls[{{ counter_key | literal }}] += 1\n{% endif %}\n"
    "{% endblock %}\n"
)
IMPORTS = (
    '{% extends "stitchgen/module.py.j2" %}\n{% block imports %}\n{{ super() -}}\n'
    "import acme_counters\n{% endblock %}\n"
    "{% block targets %}\n    acme_calls = acme_counters.CALLS\n{{ super() -}}\n{% endblock %}\n"
)


def _project(tmp_path, monkeypatch, *, config=None):
    """A fresh project folder: templates, an engine module, cases, pyproject.toml."""
    engine = f"engine_{uuid.uuid4().hex[:8]}"
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "function.py.j2").write_text(PROLOGUE)
    (tmp_path / "templates" / "module.py.j2").write_text(IMPORTS)
    counters = "import collections\nCALLS = collections.Counter()\n"
    (tmp_path / "acme_counters.py").write_text(counters)
    (tmp_path / f"{engine}.py").write_text(
        "import pathlib, stitchgen\n"
        "HERE = pathlib.Path(__file__).parent\n"
        "TEMPLATES = stitchgen.Templates(HERE / 'templates', globals={'counter_key': 'fwd'},\n"
        "                                reserve=['acme_calls', 'acme_counters'])\n"
    )
    (tmp_path / "cases.py").write_text(
        "import torch, torch.fx as fx\n"
        "def _input(name):\n"
        "    g = fx.Graph(); x = g.placeholder(name); g.output(g.call_function(torch.relu, (x,)))\n"
        "    return fx.GraphModule({}, g)\n"
        "CASES = {'plain': lambda: _input('x'), 'clash': lambda: _input('acme_calls')}\n"
    )
    text = config or (
        f'[project]\nname = "acme"\n\n[tool.stitchgen]\ntemplates = "{engine}:TEMPLATES"\n'
        'cases = "cases.py"\ngolden-dir = "golden"\n'
    )
    (tmp_path / "pyproject.toml").write_text(text)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # found from below, as ruff and pytest find theirs
    monkeypatch.setattr(sys, "path", list(sys.path))
    return engine


def test_every_command_needs_no_argument_and_uses_the_engines_object(tmp_path, monkeypatch, capsys):
    engine = _project(tmp_path, monkeypatch)
    assert main(["templates", "check"]) == 0
    assert f"{tmp_path / 'templates'}: no problems" in capsys.readouterr().out
    assert main(["templates", "diff"]) == 0
    out = capsys.readouterr().out
    assert '+        acme_calls["fwd"] += 1' in out and "changes 2 of 2 case(s)" in out
    assert main(["golden", "--update"]) == 0
    assert main(["golden", "--check"]) == 0
    assert "all files match" in capsys.readouterr().out
    # what is locked is byte for byte what the engine generates: reserve= honoured
    templates = sys.modules[engine].TEMPLATES
    path = (tmp_path / "cases.py").resolve()
    loaded = (m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == str(path))
    cases = next(loaded).CASES
    for name in ("plain", "clash"):
        expected = stitchgen.generate(cases[name](), templates=templates).code
        assert (tmp_path / "golden" / f"{name}.py").read_text() == expected
    assert "def execution_fn(acme_calls_1)" in (tmp_path / "golden" / "clash.py").read_text()
    assert main(["templates", "lock"]) == 0
    assert (tmp_path / "templates" / "stitchgen.lock").is_file()


def test_templates_flag_overrides_the_configured_set(tmp_path, monkeypatch, capsys):
    _project(tmp_path, monkeypatch)
    (tmp_path / "shipped.py").write_text("import stitchgen\nPLAIN = stitchgen.Templates\n")
    assert main(["golden", "--update", "--templates", "shipped:PLAIN"]) == 0
    assert "acme_calls" not in (tmp_path / "golden" / "plain.py").read_text()
    capsys.readouterr()
    assert main(["golden", "--check"]) == 1  # the configured set writes other code
    assert 'acme_calls["fwd"] += 1' in capsys.readouterr().err


def test_a_bad_configuration_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys):
    _project(tmp_path, monkeypatch, config='[tool.stitchgen]\ntemplate = "x:Y"\n')
    assert main(["golden", "--check"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{tmp_path / 'pyproject.toml'} [tool.stitchgen]: unknown key(s) ['template']" in err


def test_templates_that_are_not_a_templates_object_are_named(tmp_path, monkeypatch, capsys):
    _project(tmp_path, monkeypatch)
    (tmp_path / "wrong.py").write_text("VALUE = 3\n")
    assert main(["templates", "check", "--templates", "wrong:VALUE"]) == 2
    assert "wrong:VALUE': VALUE is an int, not a stitchgen.Templates" in capsys.readouterr().err


def test_a_folder_with_only_templates_and_its_configuration(tmp_path, monkeypatch, capsys):
    """``templates`` may name a directory: check, diff (on the specimen
    graphs) and lock need no argument; golden says it has no cases."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n{% block del %}\n{{ super() -}}\n'
        "{% endblock %}\n{% block before_call %}\n    # piece\n{% endblock %}\n"
    )
    (tmp_path / "pyproject.toml").write_text('[tool.stitchgen]\ntemplates = "templates"\n')
    assert main(["templates", "check"]) == 0
    assert "templates check: " + str(tmp_path / "templates") + ": no problems" in (
        capsys.readouterr().out
    )
    assert main(["templates", "diff"]) == 0
    out, err = capsys.readouterr()
    assert "previewing on stitchgen's specimen graphs" in err and "+        # piece" in out
    assert main(["templates", "lock"]) == 0
    assert (tmp_path / "templates" / "stitchgen.lock").is_file()
    assert main(["golden", "--check"]) == 2
    assert "no cases: name them with --cases" in capsys.readouterr().err
    (tmp_path / "pyproject.toml").write_text('[tool.stitchgen]\ntemplates = "nope"\n')
    assert main(["templates", "check"]) == 2
    assert "templates 'nope': no directory" in capsys.readouterr().err


def test_golden_cases_named_keep_the_configured_templates(tmp_path, monkeypatch, capsys):
    _project(tmp_path, monkeypatch)
    argv = ["golden", "--update", "--cases", str(tmp_path / "cases.py"), "--dir", "mine"]
    assert main(argv) == 0
    assert 'acme_calls["fwd"] += 1' in (tmp_path / "sub" / "mine" / "plain.py").read_text()
    (tmp_path / "shipped.py").write_text("import stitchgen\nPLAIN = stitchgen.Templates\n")
    assert main([*argv, "--templates", "shipped:PLAIN"]) == 0  # unless named otherwise
    assert "acme_calls" not in (tmp_path / "sub" / "mine" / "plain.py").read_text()


def test_lock_refuses_templates_whose_code_check_finds_not_python(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n{% block prologue %}\n    if x\n{% endblock %}\n'
    )
    assert main(["templates", "check", "mine"]) == 1
    assert main(["templates", "lock", "mine"]) == 1
    err = capsys.readouterr().err
    assert "the rendered source is not valid Python" in err and "not locked" in err
    assert not (tmp_path / "mine" / "stitchgen.lock").exists()


def test_diff_renders_each_specimen_once_per_template_set(tmp_path, monkeypatch, capsys):
    from stitchgen import pipeline
    from stitchgen.authoring.specimens import previews

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n{% block before_call %}\n    # piece\n'
        "{% endblock %}\n"
    )
    renders = []
    generate = pipeline.generate

    def counted(gm, **options):
        renders.append(options["templates"])
        return generate(gm, **options)

    monkeypatch.setattr(pipeline, "generate", counted)
    assert main(["templates", "diff", "mine"]) == 0
    sets = {id(t) for t in renders}
    count = len(previews(stitchgen.Templates(tmp_path / "mine")))
    assert len(sets) == 2 and len(renders) == 2 * count  # the shipped set and yours, once each

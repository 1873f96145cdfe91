"""The specimen graphs shipped for template authors, and the lock that
records what each overridden shipped block writes on them."""

import json
import warnings

import pytest
from oracle import assert_specimen_runs

import stitchgen
from stitchgen import emitter, ir
from stitchgen.authoring.lock import LOCK
from stitchgen.authoring.specimens import SPECIMENS
from stitchgen.cli import main
from stitchgen.errors import StaleTemplateWarning

VARIANTS = [None, "profiled", "vllm"]


def _specimens(variant):
    templates = stitchgen.Templates(variant=variant)
    return [(name, s) for name, build in SPECIMENS.items() if (s := build()).fits(templates)]


def test_the_specimens_hold_every_statement_kind():
    kinds = {cls for cls in ir.CLASSES.values() if isinstance(getattr(cls, "template", None), str)}
    seen = set()
    for _, specimen in _specimens(None):
        program = stitchgen.lower(specimen.gm, opaque=specimen.submods, **specimen.options)
        for fn in program.functions:
            seen |= {type(stmt) for stmt in ir.iter_statements((*fn.opening, *fn.statements))}
    assert kinds and seen == kinds, sorted(c.__name__ for c in kinds ^ seen)


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_specimens_run_equal_to_the_graphmodule(variant):
    for _, specimen in _specimens(variant):
        assert_specimen_runs(specimen, variant)


@pytest.mark.parametrize("variant", VARIANTS)
def test_through_jinja_the_shipped_templates_write_the_fast_paths_text(variant):
    templates = stitchgen.Templates(variant=variant)
    for _, specimen in _specimens(variant):
        program = stitchgen.lower(
            specimen.gm, opaque=specimen.submods, templates=templates, **specimen.options
        )
        fast = templates.render(program, format=False)
        assert templates.through_jinja(program, shipped_function=False) == fast


FUNCTION = """{% extends "stitchgen/function.py.j2" %}
{% block del %}
{{ super() -}}
{% endblock %}
{% block return %}
    return {{ stmt.value | expr }}
{% endblock %}
"""


@pytest.fixture
def locked(tmp_path, monkeypatch, capsys):
    """A directory of templates (one block through super(), one replaced), locked."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "function.py.j2").write_text(FUNCTION)
    assert main(["templates", "lock", "mine"]) == 0
    assert "locked 2 overridden block(s)" in capsys.readouterr().out
    return tmp_path / "mine"


def test_the_lock_records_what_each_overridden_block_writes_on_the_specimens(locked):
    body = json.loads((locked / LOCK).read_text().partition("\n")[2])
    emitted = {entry["block"]: entry["emitted"] for entry in body["blocks"]}
    assert set(emitted) == {"del", "return"}
    assert set(emitted["del"]) == set(SPECIMENS)
    assert "    del x\n" in emitted["del"]["no_pieces"]
    assert emitted["return"]["no_pieces"] == "    return mul\n"


def _wrapped(method, old, new):
    def changed(self, stmt, indent):
        method(self, stmt, indent)
        self.out[-1] = self.out[-1].replace(old, new, 1)

    return changed


def test_check_names_a_change_in_the_emitters_text_with_its_diff(locked, monkeypatch, capsys):
    assert main(["templates", "check", "mine"]) == 0  # nothing changed yet
    capsys.readouterr()
    # a release that changes two lines in the emitter, not in any template
    monkeypatch.setattr(
        emitter.Emitter, "del_", _wrapped(emitter.Emitter.del_, "\n", "  # freed\n")
    )
    monkeypatch.setattr(
        emitter.Emitter, "return_", _wrapped(emitter.Emitter.return_, "return", "return  ")
    )
    assert main(["templates", "check", "mine"]) == 1
    err = capsys.readouterr().err
    assert "block 'del' overrides stitchgen/function.py.j2's, whose output on the specimen" in err
    assert "your block calls super(), so it now writes the new text" in err
    assert "block 'return'" in err and "your block replaces it, so it keeps the old text" in err
    assert "-    del x\n" in err and "+    del x  # freed\n" in err
    assert "+    return   mul\n" in err
    assert "stitchgen templates check: 2 problem(s)" in err


def test_a_lock_without_the_emitted_text_is_still_read(locked, capsys):
    path = locked / LOCK
    header, _, rest = path.read_text().partition("\n")
    body = json.loads(rest)
    for entry in body["blocks"]:
        del entry["emitted"]  # as a lock written before it was recorded
    path.write_text(header + "\n" + json.dumps(body))
    assert main(["templates", "check", "mine"]) == 0
    assert "no problems" in capsys.readouterr().out


def test_the_stale_warning_names_the_caller(locked):
    path = locked / LOCK
    header, _, rest = path.read_text().partition("\n")
    body = json.loads(rest)
    body["blocks"][0]["text"] += "{# as it was before an upgrade #}\n"
    path.write_text(header + "\n" + json.dumps(body))
    _, specimen = _specimens(None)[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stitchgen.generate(specimen.gm, templates=stitchgen.Templates(str(locked)))
    stale = [w for w in caught if issubclass(w.category, StaleTemplateWarning)]
    assert len(stale) == 1 and stale[0].filename == __file__


def _header_override(directory, base="stitchgen/module.py.j2"):
    directory.mkdir()
    (directory / "module.py.j2").write_text(
        f'{{% extends "{base}" %}}\n{{% block header %}}\n# acme\n{{{{ super() -}}}}\n'
        "{% endblock %}\n"
    )


def test_diff_without_cases_previews_on_the_specimens(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no pyproject.toml here or above with [tool.stitchgen]
    _header_override(tmp_path / "mine")
    assert main(["templates", "diff", "mine"]) == 0
    out, err = capsys.readouterr()
    assert "previewing on stitchgen's specimen graphs" in err
    assert "+++ specimen pieces (yours)" in out and "+# acme" in out
    assert f"changes {len(SPECIMENS)} of {len(SPECIMENS)} case(s)" in out
    _header_override(tmp_path / "vllm", "stitchgen/variants/vllm/module.py.j2")
    assert main(["templates", "diff", "vllm", "--variant", "vllm"]) == 0
    fits = len(_specimens("vllm"))  # no boxed entry in vLLM's convention
    assert fits < len(SPECIMENS) and f"changes {fits} of {fits}" in capsys.readouterr().out


def test_check_renders_the_specimens_and_names_code_that_is_not_python(
    tmp_path, monkeypatch, capsys
):
    """The base module extended under the vllm variant, a line added to the
    binder's opening: indented where vLLM's convention has no binder."""
    monkeypatch.chdir(tmp_path)
    _header_override(tmp_path / "mine")
    with (tmp_path / "mine" / "module.py.j2").open("a") as file:
        file.write("{% block binder_signature %}{{ super() }}    acme = 1\n{% endblock %}\n")
    assert main(["templates", "check", "mine"]) == 0
    assert main(["templates", "check", "mine", "--variant", "vllm"]) == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("specimen ")]
    assert lines and all("the rendered source is not valid Python" in line for line in lines)
    assert "specimen pieces: mine/module.py.j2" in err


def test_check_notes_an_override_that_drops_the_frees(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n{% block del %}{% endblock %}\n'
    )
    assert main(["templates", "check", "mine"]) == 0  # a note, not an error
    out, err = capsys.readouterr()
    assert "no problems" in out
    assert (
        "note: specimen no_pieces: your templates give 0 frees where the shipped ones give 1" in err
    )
    assert "piece calls" not in err and "returns" not in err
    assert main(["templates", "diff", "mine"]) == 0
    assert "0 frees where the shipped ones give 1" in capsys.readouterr().err
    (tmp_path / "cases.py").write_text(
        "import torch.fx as fx\nCASES = {'inc': lambda: fx.symbolic_trace(lambda x: x + 1)}\n"
    )
    assert main(["templates", "diff", "mine", "--cases", "cases.py"]) == 0
    out, err = capsys.readouterr()
    assert "changes 1 of 1 case(s)" in out and "0 frees where the shipped ones give 1" in err


@pytest.mark.parametrize("format", [True, False])
def test_code_that_is_not_python_names_the_template_line_that_wrote_it(tmp_path, format):
    mine = tmp_path / "mine"
    mine.mkdir()
    # the whitespace trap: -}} after super() eats the next line's indentation
    (mine / "module.py.j2").write_text(
        '{% extends "stitchgen/module.py.j2" %}\n{% block targets %}\n{{ super() -}}\n'
        "    acme_calls = 1\n{% endblock %}\n"
    )
    _, specimen = _specimens(None)[0]
    templates = stitchgen.Templates(str(mine))
    with pytest.raises(stitchgen.TemplateError) as caught:
        stitchgen.generate(specimen.gm, opaque=specimen.submods, templates=templates, format=format)
    error = caught.value
    assert (error.template, error.lineno) == (str(mine / "module.py.j2"), 4)
    message = str(error)
    assert message.startswith(f"{mine / 'module.py.j2'}:4: the rendered source is not valid")
    assert "| acme_calls = 1\n" in message and "  >" in message  # the lines around it
    # a line of a block of yours, inside each function
    (mine / "module.py.j2").unlink()
    (mine / "function.py.j2").write_text(
        '{% extends "stitchgen/function.py.j2" %}\n{% block prologue %}\n'
        "{# a comment #}\n    checked = (\n{% endblock %}\n"
    )
    with pytest.raises(stitchgen.TemplateError) as caught:
        stitchgen.generate(specimen.gm, opaque=specimen.submods, templates=templates, format=format)
    assert (caught.value.template, caught.value.lineno) == (str(mine / "function.py.j2"), 4)


@pytest.mark.parametrize("variant", ["profiled", "vllm"])
def test_a_lock_over_a_variant_is_clean_until_something_changes(
    variant, tmp_path, monkeypatch, capsys
):
    """No false alarm: the variant's own blocks (which call super()) record
    and compare as they render."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "function.py.j2").write_text(
        f'{{% extends "stitchgen/variants/{variant}/function.py.j2" %}}\n'
        "{% block call %}\n{{ super() -}}\n{% endblock %}\n"
        "{% block del %}\n{{ super() -}}\n{% endblock %}\n"
    )
    assert main(["templates", "lock", "mine", "--variant", variant]) == 0
    assert main(["templates", "check", "mine", "--variant", variant]) == 0
    assert "no problems" in capsys.readouterr().out
    monkeypatch.setattr(emitter.Emitter, "del_", _wrapped(emitter.Emitter.del_, "\n", "  # 2\n"))
    assert main(["templates", "check", "mine", "--variant", variant]) == 1
    assert "+    del x  # 2\n" in capsys.readouterr().err

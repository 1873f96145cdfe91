"""The template examples of docs/templates.md run: each section's Jinja
examples, written where their comment or ``extends`` says, with the
section's Python (which builds the ``Templates``), render every specimen
graph to code that runs equal to the ``GraphModule``."""

import ast
import re
from pathlib import Path

import pytest
from oracle import assert_same

import stitchgen
from stitchgen import Code, Templates
from stitchgen.authoring.specimens import SPECIMENS
from stitchgen.literals import literal_source

DOCS = Path(__file__).resolve().parents[1] / "docs" / "templates.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _sections():
    """(title, [(language, text)]) for each section of the page with a Jinja example."""
    parts = re.split(r"^(#{2,3} .*)$", DOCS.read_text(), flags=re.MULTILINE)
    found = []
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        blocks = [(m.group(1), m.group(2)) for m in FENCE.finditer(body)]
        if any(lang == "jinja" for lang, _ in blocks):
            found.append((title.lstrip("# "), blocks))
    return found


SECTIONS = _sections()


def _file(text):
    """Where an example goes: its ``{# templates/X #}`` comment, else the
    template it extends."""
    named = re.match(r"\{# templates/([\w./]+) #\}", text)
    if named:
        return named.group(1)
    return re.search(r'extends "stitchgen/(?:variants/\w+/)?([\w.]+)"', text).group(1)


def _label(node_name):
    return Code(literal_source(f"piece:{node_name}"))


def test_the_sections_with_examples_are_found():
    titles = [title for title, _ in SECTIONS]
    assert len(titles) >= 5 and any(t.startswith("3. Wrapping") for t in titles), titles


@pytest.mark.parametrize("title, blocks", SECTIONS, ids=[t for t, _ in SECTIONS])
def test_each_example_renders_code_equal_to_the_graphmodule(
    title, blocks, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "templates").mkdir()
    (tmp_path / "myproject" / "templates").mkdir(parents=True)
    (tmp_path / "my_checks.py").write_text("def checked(name, value):\n    return value\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for lang, text in blocks:
        if lang == "jinja":
            (tmp_path / "templates" / _file(text)).write_text(text)
    specimen = SPECIMENS["pieces"]()
    namespace = {
        "stitchgen": stitchgen,
        "Templates": Templates,
        "Code": Code,
        "split_gm": specimen.gm,
        "my_label": _label,
    }
    for lang, text in blocks:
        if lang == "python":
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue  # a result shown, not code to run
            exec(compile(tree, f"{DOCS.name}: {title}", "exec"), namespace)
    templates = namespace.get("templates", Templates("templates"))
    if "templates" not in templates.dirs:  # the section's python names other dirs
        templates = Templates("templates")
    assert templates.check().problems == []
    for name, build in SPECIMENS.items():
        specimen = build()
        if not specimen.fits(templates):
            continue
        submods = {n: getattr(specimen.gm, n) for n in specimen.submods}
        fn = stitchgen.compile(specimen.gm, submods, templates=templates, **specimen.options)
        args = [list(specimen.inputs)] if specimen.options.get("boxed") else specimen.inputs
        assert_same(fn(*args), specimen.gm(*specimen.inputs)), name
    capsys.readouterr()  # what the examples print


def test_example_3_wraps_the_entrys_piece_calls_only(tmp_path):
    _, blocks = next(s for s in SECTIONS if s[0].startswith("3. Wrapping"))
    for lang, text in blocks:
        if lang == "jinja":
            (tmp_path / _file(text)).write_text(text)
    specimen = SPECIMENS["pieces"]()
    templates = Templates(str(tmp_path))
    code = stitchgen.generate(specimen.gm, opaque=specimen.submods, templates=templates).code
    inlined, entry = code.split("def execution_fn", 1)
    assert "record_function" not in inlined  # no range around calls inside a piece
    assert entry.count("with torch.profiler.record_function(") == 3  # submod_0, _1, _2
    assert code.count("import torch\n") == 1

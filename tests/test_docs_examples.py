"""Every example of README.md and docs/templates.md runs.

Each Jinja example is written where its comment or ``extends`` says; each
Python example runs with its section's templates and Python before it, on
the names the prose takes as given (:func:`_givens`: a specimen graph, its
inputs and children, a model, a traced graph), and whatever it builds —
``fn``, ``out``, a compiled ``model`` — is then checked equal to the
``GraphModule`` (or eager) it came from. The pytest fixture's examples run
as a test file under pytest, the TOML example as a project's configuration,
and the generated code the README shows is checked against the golden file
it shortens.
"""

import ast
import inspect
import re
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from oracle import assert_runs_same, assert_same, assert_specimen_runs
from torch.fx.experimental.proxy_tensor import make_fx

import stitchgen
import stitchgen.passes
from stitchgen import Code, Templates
from stitchgen.authoring.specimens import SPECIMENS
from stitchgen.cli import main
from stitchgen.demo import decoder, decoder_inputs
from stitchgen.literals import literal_source

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "templates.md"
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _sections(path):
    """(title, [(language, text)]) for each section of the page with an example."""
    parts = re.split(r"^(#{2,3} .*)$", path.read_text(), flags=re.MULTILINE)
    found = []
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        blocks = [(m.group(1), m.group(2)) for m in FENCE.finditer(body)]
        if blocks:
            found.append((title.lstrip("# "), blocks))
    return found


def _with(sections, *languages):
    return [(t, b) for t, b in sections if any(lang in languages for lang, _ in b)]


DOCS_SECTIONS = _sections(DOCS)
DOCS_JINJA = _with(DOCS_SECTIONS, "jinja")
README_SECTIONS = _sections(README)


def _file(text):
    """Where a Jinja example goes: its ``{# templates/X #}`` comment, else
    the template it extends."""
    named = re.match(r"\{# templates/([\w./]+) #\}", text)
    if named:
        return named.group(1)
    return re.search(r'extends "stitchgen/(?:variants/\w+/)?([\w.]+)"', text).group(1)


def _write_templates(blocks, folder):
    """Each Jinja example of a section, written into ``folder`` where it goes."""
    for lang, text in blocks:
        if lang == "jinja":
            (folder / _file(text)).write_text(text)


def _label(node_name):
    return Code(literal_source(f"piece:{node_name}"))


class _Attention(torch.nn.Module):
    def forward(self, x):
        q = torch.relu(x)
        a = torch.nn.functional.scaled_dot_product_attention(q, x, x)
        return torch.tanh(a) + x


def _mark_pieces_source():
    """The pass of ``stitchgen.passes``'s docstring, the one the docs cite."""
    doc = inspect.getdoc(stitchgen.passes)
    example = textwrap.dedent(doc.split("a hook before every piece call", 1)[1].split("::\n", 1)[1])
    return example.split("\nfn = ", 1)[0]


def _givens(tmp_path, monkeypatch):
    """A folder to work in and the names the prose of both pages takes as given."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "templates").mkdir()
    (tmp_path / "myproject" / "templates").mkdir(parents=True)
    (tmp_path / "myproject" / "__init__.py").write_text("")
    hooks = "MARKED = []\nmark = MARKED.append\nDEBUG = False\n"
    (tmp_path / "myproject" / "hooks.py").write_text(hooks)
    (tmp_path / "my_checks.py").write_text("def checked(name, value):\n    return value\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    for name in [m for m in sys.modules if m == "myproject" or m.startswith("myproject.")]:
        monkeypatch.delitem(sys.modules, name)
    specimen = SPECIMENS["pieces"]()
    namespace = {
        "split_gm": specimen.gm,
        "inputs": specimen.inputs,
        # what generate(split_gm) binds: the child that is not a GraphModule
        "submods": {"submod_2": specimen.gm.submod_2},
        "submod_callables": dict(specimen.gm.named_children()),
        "traced_gm": make_fx(decoder(1))(*decoder_inputs(1)),
        "model": _Attention(),
        "my_label": _label,
        "stitchgen": stitchgen,  # each page imports it at its top
        "Templates": Templates,
        "Code": Code,
    }
    exec(_mark_pieces_source(), namespace)
    return namespace


def _run(text, where, namespace):
    """Run one Python example, then check what it built against its origin."""
    eager = namespace["model"]
    for built in ("fn", "out"):
        namespace.pop(built, None)
    exec(compile(ast.parse(text), where, "exec"), namespace)
    split_gm, inputs = namespace["split_gm"], namespace["inputs"]
    if "fn" in namespace:
        assert_runs_same(namespace["fn"], split_gm, inputs)
    if "out" in namespace:
        assert_same(namespace["out"], split_gm(*inputs))
    if namespace["model"] is not eager:
        x = torch.randn(2, 4, 8)
        assert_runs_same(namespace["model"], eager, (x,))


def _shown(text):
    """A block that shows generated code rather than code to run."""
    return text.startswith("import torch\n\n\ndef bind(")


def _fixture_example(text):
    return "stitchgen_golden" in text


# --- docs/templates.md ------------------------------------------------------


def test_the_sections_with_examples_are_found():
    titles = [title for title, _ in DOCS_JINJA]
    assert len(titles) >= 5 and any(t.startswith("3. Wrapping") for t in titles), titles
    python_only = [t for t, b in _with(DOCS_SECTIONS, "python") if t not in titles]
    assert python_only == ["A pass of your own"], python_only
    readme = [t for t, _ in _with(README_SECTIONS, "python")]
    assert {"The library", "Artifacts (a compile cache's warm start)", "In pytest"} <= set(readme)


@pytest.mark.parametrize("title, blocks", DOCS_JINJA, ids=[t for t, _ in DOCS_JINJA])
def test_each_template_example_renders_code_equal_to_the_graphmodule(
    title, blocks, tmp_path, monkeypatch, capsys
):
    namespace = _givens(tmp_path, monkeypatch)
    _write_templates(blocks, tmp_path / "templates")
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
    for build in SPECIMENS.values():
        specimen = build()
        if specimen.fits(templates):
            assert_specimen_runs(specimen, templates)
    capsys.readouterr()  # what the examples print


def test_the_python_only_examples_run_equal_to_the_graphmodule(tmp_path, monkeypatch):
    namespace = _givens(tmp_path, monkeypatch)
    for title, blocks in _with(DOCS_SECTIONS, "python"):
        if any(lang == "jinja" for lang, _ in blocks):
            continue
        for lang, text in blocks:
            if lang == "python":
                _run(text, f"{DOCS.name}: {title}", namespace)
    import myproject.hooks  # the docstring's pass put its hook before each piece call

    assert myproject.hooks.MARKED == ["submod_0", "submod_1", "submod_2"]


def test_example_3_wraps_the_entrys_piece_calls_only(tmp_path):
    _, blocks = next(s for s in DOCS_SECTIONS if s[0].startswith("3. Wrapping"))
    _write_templates(blocks, tmp_path)
    specimen = SPECIMENS["pieces"]()
    templates = Templates(str(tmp_path))
    code = stitchgen.generate(specimen.gm, opaque=specimen.submods, templates=templates).code
    inlined, entry = code.split("def execution_fn", 1)
    assert "record_function" not in inlined  # no range around calls inside a piece
    assert entry.count("with torch.profiler.record_function(") == 3  # submod_0, _1, _2
    assert code.count("import torch\n") == 1


# --- README.md --------------------------------------------------------------


def _runnable(lang, text):
    return lang == "python" and not _shown(text) and not _fixture_example(text)


README_RUN = [(t, b) for t, b in README_SECTIONS if any(_runnable(*block) for block in b)]


@pytest.mark.parametrize("title, blocks", README_RUN, ids=[t for t, _ in README_RUN])
def test_each_readme_example_runs_equal_to_the_graphmodule(
    title, blocks, tmp_path, monkeypatch, capsys
):
    namespace = _givens(tmp_path, monkeypatch)
    _write_templates(blocks, tmp_path / "templates")
    for lang, text in blocks:
        if _runnable(lang, text):
            _run(text, f"{README.name}: {title}", namespace)
    capsys.readouterr()  # what the examples print


def test_the_generated_code_shown_is_the_golden_files_shortened():
    _, blocks = next(s for s in README_SECTIONS if s[0] == "The library")
    (shown,) = [text for lang, text in blocks if lang == "python" and _shown(text)]
    named = re.findall(r"`(golden/[\w/]+\.py)`, shortened", README.read_text())
    assert len(named) == 1, named
    golden = (ROOT / named[0]).read_text().splitlines()
    at = 0
    for line in shown.splitlines():
        if line.strip() in ("", "..."):
            continue
        assert line in golden[at:], f"README's {named[0]}, shortened: {line!r} not in order"
        at = golden.index(line, at) + 1


def test_the_pytest_fixture_examples_pass_under_pytest(pytester):
    examples = [
        text
        for _, blocks in README_SECTIONS
        for lang, text in blocks
        if lang == "python" and _fixture_example(text)
    ]
    assert len(examples) == 2
    given = (
        "import stitchgen\n"
        "from stitchgen.authoring.specimens import SPECIMENS\n"
        "split_gm = SPECIMENS['no_pieces']().gm\n"
        "build_decoder = lambda: SPECIMENS['pieces']().gm\n"
        "TEMPLATES = stitchgen.Templates(reserve=['acme'])\n"
    )
    for i, text in enumerate(examples):
        pytester.makepyfile(**{f"test_example_{i}": given + text})
        pytester.runpytest(f"test_example_{i}.py", "--stitchgen-update").assert_outcomes(passed=1)
        pytester.runpytest(f"test_example_{i}.py").assert_outcomes(passed=1)
    golden = pytester.path / "golden" / "decoder.py"
    specimen = SPECIMENS["pieces"]()
    templates = Templates(reserve=["acme"])
    code = stitchgen.generate(specimen.gm, templates=templates, format=True).code
    assert golden.read_text() == code


def test_the_toml_example_configures_the_golden_command(tmp_path, monkeypatch, capsys):
    (toml,) = [text for _, blocks in README_SECTIONS for lang, text in blocks if lang == "toml"]
    spec = re.search(r'^templates = "([\w.]+):(\w+)"', toml, re.MULTILINE)
    package, module = spec.group(1).split(".")
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / f"{module}.py").write_text(
        f"import stitchgen\n{spec.group(2)} = stitchgen.Templates(reserve=['acme'])\n"
    )
    cases = tmp_path / re.search(r'^cases = "([\w/.]+)"', toml, re.MULTILINE).group(1)
    cases.parent.mkdir(parents=True)
    cases.write_text(
        "from stitchgen.authoring.specimens import SPECIMENS\n"
        "CASES = {'pieces': SPECIMENS['pieces']}\n"
    )
    (tmp_path / "pyproject.toml").write_text(toml)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        assert main(["golden", "--update"]) == 0
        assert main(["golden", "--check"]) == 0
    finally:
        for name, loaded in list(sys.modules.items()):  # the example's modules
            if str(getattr(loaded, "__file__", None) or "").startswith(str(tmp_path)):
                del sys.modules[name]
    capsys.readouterr()
    specimen = SPECIMENS["pieces"]()
    code = stitchgen.generate(
        specimen.gm, opaque=specimen.submods, templates=Templates(reserve=["acme"]), format=True
    ).code
    golden = tmp_path / re.search(r'^golden-dir = "(\w+)"', toml, re.MULTILINE).group(1)
    assert (golden / "pieces.py").read_text() == code

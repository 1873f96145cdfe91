"""The examples in the docstrings run and say what they show: every module
of the package is searched (discovered, not listed)."""

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import stitchgen
from stitchgen import Templates
from stitchgen.authoring.catalogue import catalogue, markdown
from stitchgen.authoring.sources import Library

MODULES = sorted(
    ["stitchgen"] + [m.name for m in pkgutil.walk_packages(stitchgen.__path__, prefix="stitchgen.")]
)
#: the documented doors: each shows an example
DOORS = ["stitchgen", "stitchgen.compat", "stitchgen.passes", "stitchgen.ir"]


def _examples(name):
    """Run the docstring examples of module ``name``: (failed, attempted).
    Each example's globals outlive it (``testmod`` clears them): the guards
    of a ``torch.compile`` in an example delete from them at exit."""
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS, verbose=False)
    for test in finder.find(importlib.import_module(name)):
        runner.run(test, clear_globs=False)
    return runner.summarize(verbose=False)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    assert _examples(name).failed == 0


def test_discovery_finds_the_examples():
    attempted = {
        name: _examples(name).attempted
        for name in ("stitchgen", "stitchgen.compat", "stitchgen.pipeline")
    }
    assert all(attempted.values()), attempted


def test_the_block_tables_of_the_docs_are_the_catalogue():
    """docs/templates.md's generated tables are `stitchgen templates blocks
    --markdown` for the built-ins, and each hand-written block table lists
    exactly the blocks the catalogue finds for its file."""
    docs = (Path(__file__).resolve().parents[1] / "docs" / "templates.md").read_text()
    entries = catalogue(Library(Templates().environment, ()), None)
    begin = "<!-- stitchgen templates blocks --markdown: begin -->\n"
    end = "\n<!-- stitchgen templates blocks --markdown: end -->"
    generated = docs.split(begin, 1)[1].split(end, 1)[0]
    assert generated == markdown(entries).rstrip("\n"), "run: stitchgen templates blocks --markdown"
    for file in ("module.py.j2", "function.py.j2"):
        section = docs.split(f"### `{file}`", 1)[1].split("\n#", 1)[0]
        listed = re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)
        assert listed == [e.block for e in entries if e.file == file], file

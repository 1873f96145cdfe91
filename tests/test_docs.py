"""The examples in the public docstrings run and say what they show."""

import doctest
import importlib

import pytest

MODULES = [
    "stitchgen",
    "stitchgen.backend",
    "stitchgen.compat",
    "stitchgen.generate",
    "stitchgen.literals",
    "stitchgen.load",
    "stitchgen.lower",
    "stitchgen.naming",
    "stitchgen.render",
    "stitchgen.split",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0

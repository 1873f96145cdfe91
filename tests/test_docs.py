"""The examples in the docstrings run and say what they show: every module
of the package is searched (discovered, not listed)."""

import doctest
import importlib
import pkgutil

import pytest

import stitchgen

MODULES = sorted(
    ["stitchgen"] + [m.name for m in pkgutil.walk_packages(stitchgen.__path__, prefix="stitchgen.")]
)
#: the documented doors: each shows an example
DOORS = ["stitchgen", "stitchgen.compat", "stitchgen.passes", "stitchgen.ir"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_discovery_finds_the_examples():
    attempted = {
        name: doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS).attempted
        for name in ("stitchgen", "stitchgen.compat", "stitchgen.artifact", "stitchgen.pipeline")
    }
    assert all(attempted.values()), attempted

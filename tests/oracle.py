"""Equality with the GraphModule: the oracle for every semantic test."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.fx.immutable_collections import immutable_dict, immutable_list

# fx.Interpreter returns FX's immutable containers where generated code (FX's
# own included) builds plain ones; they are the same value.
_PLAIN = {immutable_list: list, immutable_dict: dict}


def assert_same(actual: Any, expected: Any, path: str = "output") -> None:
    """Bit-exact, type-exact, structure-exact equality (nan equals nan)."""
    kind = _PLAIN.get(type(expected), type(expected))
    assert type(actual) is kind, f"{path}: {type(actual)} != {kind}"
    if isinstance(expected, torch.Tensor):
        assert actual.dtype == expected.dtype, f"{path}: dtype {actual.dtype} != {expected.dtype}"
        assert actual.device == expected.device, f"{path}: device differs"
        assert actual.shape == expected.shape, f"{path}: shape {actual.shape} != {expected.shape}"
        assert torch.equal(actual, expected), f"{path}: values differ"
    elif isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected), f"{path}: length differs"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_same(a, e, f"{path}[{i}]")
    elif isinstance(expected, dict):
        assert list(actual) == list(expected), f"{path}: keys differ"
        for key in expected:
            assert_same(actual[key], expected[key], f"{path}[{key!r}]")
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual), f"{path}: {actual} is not nan"
    elif isinstance(expected, (float, complex)):
        assert repr(actual) == repr(expected), f"{path}: {actual!r} != {expected!r}"
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def assert_specimen_runs(specimen: Any, templates: Any) -> None:
    """A specimen graph (``stitchgen.authoring.specimens``) compiled with
    ``templates``, its opaque children bound, runs equal to its GraphModule."""
    import stitchgen

    submods = {name: getattr(specimen.gm, name) for name in specimen.submods}
    fn = stitchgen.compile(specimen.gm, submods, templates=templates, **specimen.options)
    args = [list(specimen.inputs)] if specimen.options.get("boxed") else specimen.inputs
    assert_same(fn(*args), specimen.gm(*specimen.inputs))

"""Equality with the GraphModule: the oracle for every semantic test."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
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
        assert torch.equal(actual, expected) or _equal_with_nans(actual, expected), (
            f"{path}: values differ"
        )
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


def _equal_with_nans(actual: torch.Tensor, expected: torch.Tensor) -> bool:
    """Bit-exact where both are numbers, and NaN at the same places (a value
    that overflows gives NaN on both sides: equal, as a NaN float is)."""
    if not expected.is_floating_point() and not expected.is_complex():
        return False
    nan = expected.isnan()
    return torch.equal(actual.isnan(), nan) and torch.equal(actual[~nan], expected[~nan])


def assert_runs_same(
    actual: Callable[..., Any],
    expected: Callable[..., Any],
    inputs: Sequence[Any],
    state: torch.nn.Module | None = None,
) -> Any:
    """``actual(*inputs)`` is ``expected(*inputs)`` under every observation:
    equal values (:func:`assert_same`); an output shares memory with an
    input, or with ``state``'s tensors (``expected``'s own where it is a
    module: its parameters, buffers and tensor attributes, which ``actual``
    binds), exactly where ``expected``'s does (a view counts as sharing);
    and the same inputs and state are written (their version counters).
    Under grad mode, with an input requiring grad, the same outputs
    require grad, and each input and state tensor that requires grad gets
    the same gradient from them (``None`` where ``expected``'s is).
    Each side runs on its own copy of the inputs, and on the state as it
    was: what ``actual`` writes in the state is put back before
    ``expected`` runs. Returns ``expected``'s value."""
    if state is None and isinstance(expected, torch.nn.Module):
        state = expected
    tracked = _state_tensors(state)
    saved = {name: t.detach().clone() for name, t in tracked.items()}
    got = _observed(actual, inputs, tracked)
    with torch.no_grad():
        for name, t in tracked.items():
            t.copy_(saved[name])
    want = _observed(expected, inputs, tracked)
    assert_same(got[0], want[0])
    assert got[1] == want[1], f"outputs sharing memory with inputs: {got[1]} != {want[1]}"
    assert got[2] == want[2], f"inputs and state written: {got[2]} != {want[2]}"
    assert got[3] == want[3], f"outputs requiring grad: {got[3]} != {want[3]}"
    for key, grad in want[4].items():
        assert (got[4][key] is None) == (grad is None), (
            f"gradient of {key}: {got[4][key]} != {grad}"
        )
        if isinstance(grad, str) or isinstance(got[4][key], str):
            assert got[4][key] == grad, f"gradient of {key}: {got[4][key]} != {grad}"
        elif grad is not None:  # (the operators' backward adds in another order: close)
            torch.testing.assert_close(
                got[4][key], grad, equal_nan=True, msg=f"gradient of {key} differs"
            )  # (NaN equals NaN, as for values: an overflow gives it on both sides)
    return want[0]


def _state_tensors(module: torch.nn.Module | None) -> dict[str, torch.Tensor]:
    """A module's tensors by name: parameters, buffers, tensor attributes."""
    found: dict[str, torch.Tensor] = {}
    for path, sub in module.named_modules() if module is not None else ():
        for name, value in vars(sub).items():
            if isinstance(value, torch.Tensor):
                found[f"{path}.{name}".lstrip(".")] = value
        for kind in ("_parameters", "_buffers"):
            for name, value in getattr(sub, kind).items():
                if value is not None:
                    found[f"{path}.{name}".lstrip(".")] = value
    return found


def _observed(
    fn: Callable[..., Any], inputs: Sequence[Any], state: dict[str, torch.Tensor]
) -> tuple[Any, dict[str, list[str]], list[str], list[str], dict[str, Any]]:
    """``fn`` run on a copy of ``inputs``: its value, what each output tensor
    (by its path) shares memory with, which inputs and state it wrote, and,
    under grad mode, which outputs require grad and the gradient each input
    and state tensor that requires grad gets from them (ones for each)."""
    memo: dict[int, Any] = {}
    copies = [_copy(value, memo) for value in inputs]
    seen = {f"input {i}": t for i, t in enumerate(_tensors(copies))}
    seen.update((f"state {name}", t) for name, t in state.items())
    before = {key: _version(t) for key, t in seen.items()}
    value = fn(*copies)
    storages = {key: _storage(t) for key, t in seen.items()}
    shared = {}
    for path, out in _leaves(value, "output"):
        found = sorted(key for key, storage in storages.items() if storage == _storage(out))
        if found:
            shared[path] = found
    written = sorted(key for key, t in seen.items() if _version(t) != before[key])
    leaves = {key: t for key, t in seen.items() if t.requires_grad}
    if not (torch.is_grad_enabled() and any(key.startswith("input") for key in leaves)):
        return value, shared, written, [], {}
    requiring = [(path, out) for path, out in _leaves(value, "output") if out.requires_grad]
    grads: tuple[Any, ...] = (None,) * len(leaves)
    if requiring:
        outs = [out for _, out in requiring]
        ones = [torch.ones_like(out) for out in outs]
        try:
            grads = torch.autograd.grad(outs, list(leaves.values()), ones, allow_unused=True)
        except RuntimeError as e:  # (an op with no backward: the same on both sides)
            grads = (f"RuntimeError: {e}",) * len(leaves)
    return value, shared, written, [p for p, _ in requiring], dict(zip(leaves, grads, strict=True))


def _copy(value: Any, memo: dict[int, Any]) -> Any:
    """A copy of an input: tensors cloned (one clone per tensor, however
    often it is passed), containers rebuilt, anything else as it is."""
    if isinstance(value, torch.Tensor):
        if id(value) not in memo:
            copy = value.detach().clone()
            memo[id(value)] = copy.requires_grad_(value.requires_grad)
        return memo[id(value)]
    if type(value) in (list, tuple):
        return type(value)(_copy(item, memo) for item in value)
    if type(value) is dict:
        return {key: _copy(item, memo) for key, item in value.items()}
    return value


def _tensors(values: Any) -> list[torch.Tensor]:
    return [t for _, t in _leaves(values, "")]


def _leaves(value: Any, path: str) -> list[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        return [(path, value)]
    if isinstance(value, (list, tuple)):
        return [leaf for i, item in enumerate(value) for leaf in _leaves(item, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, f"{path}[{key!r}]")]
    return []


def _storage(t: torch.Tensor) -> tuple[Any, int]:
    """Where a tensor's memory lies: views of one tensor share it."""
    try:
        pointer = t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # no storage (a sparse or meta tensor)
        pointer = 0
    return (t.device, pointer or id(t))  # (an empty tensor's is 0: itself alone)


def _version(t: torch.Tensor) -> int:
    try:
        return t._version
    except RuntimeError:  # an inference tensor keeps no version counter
        return -1


def assert_specimen_runs(specimen: Any, templates: Any) -> None:
    """A specimen graph (``stitchgen.authoring.specimens``) compiled with
    ``templates``, its opaque children bound, runs equal to its GraphModule."""
    import stitchgen

    submods = {name: getattr(specimen.gm, name) for name in specimen.submods}
    fn = stitchgen.compile(specimen.gm, submods, templates=templates, **specimen.options)
    args = [list(specimen.inputs)] if specimen.options.get("boxed") else specimen.inputs
    assert_same(fn(*args), specimen.gm(*specimen.inputs))

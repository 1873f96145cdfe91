"""Programs from ``torch.export``: control flow that reads the module's state
(parameters, buffers, constants, closures) is lowered as code, equal to
``ep.module()`` on every path."""

from __future__ import annotations

import functools
import warnings

import pytest
import torch
from oracle import assert_runs_same

import stitchgen


class _LinearInBranch(torch.nn.Module):
    """A ``cond`` whose true branch calls an ``nn.Linear`` and reads a buffer."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("shift", torch.arange(4.0))

    def forward(self, x):
        return torch.cond(
            x.sum() > 0, lambda t: self.lin(t) + self.shift, lambda t: t - self.shift, (x,)
        )


class _WeightInLoop(torch.nn.Module):
    """A ``while_loop`` whose body reads a weight (an additional input)."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 4) / 4)

    def forward(self, n, x):
        from torch._higher_order_ops.while_loop import while_loop

        def step(i, t):
            return i + 1, torch.tanh(t @ self.weight)

        return while_loop(lambda i, t: i < n, step, (torch.zeros_like(n), x))


class _Nested(torch.nn.Module):
    """A ``cond`` in a branch of a ``cond``, the inner one reading a weight,
    and a closure's tensor read in the outer one."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.scale = torch.tensor([1.0, 2.0, 3.0, 4.0])  # a constant, not a buffer

    def forward(self, x, y):
        bias = torch.ones(4) * 0.5  # a closure's tensor

        def inner(t):
            return torch.cond(t.mean() > 0, lambda u: self.lin(u), lambda u: u * self.scale, (t,))

        return torch.cond(x.sum() > 0, lambda t, u: inner(t) + bias, lambda t, u: t * u, (x, y))


@functools.cache
def _exported(kind: type) -> torch.export.ExportedProgram:
    model = kind()
    inputs = {_WeightInLoop: (torch.tensor(2), torch.randn(4))}.get(kind)
    inputs = inputs or (torch.randn(4),) * (2 if kind is _Nested else 1)
    return torch.export.export(model, inputs)


def _lowered(kind: type) -> tuple[torch.fx.GraphModule, str, object]:
    gm = _exported(kind).module()
    with warnings.catch_warnings():
        warnings.simplefilter("error", stitchgen.LeftAsCallWarning)  # every operator lowered
        generated = stitchgen.generate(gm)
    return gm, generated.code, stitchgen.load(generated, {"_guards_fn": gm._guards_fn})


def _paths(*inputs):
    """Each input set as given, and again with its first floating tensor
    requiring grad (the weights' gradients are then compared too)."""
    for args in inputs:
        yield args
        grad = [a.clone().requires_grad_() if a.is_floating_point() else a for a in args]
        yield tuple(grad)


def test_a_branch_calling_a_linear_and_reading_a_buffer_is_an_if():
    gm, code, fn = _lowered(_LinearInBranch)
    assert "if gt:" in code and "aten_linear_default(" in code and "cond" not in code
    for args in _paths((torch.ones(4),), (-torch.ones(4),)):
        assert_runs_same(fn, gm, args)


@pytest.mark.slow
def test_a_loop_body_reading_a_weight_is_a_while():
    """At zero iterations the gradient is the identity's, as the README
    rules (test_control_flow.py holds it), not the operator's one-step one."""
    gm, code, fn = _lowered(_WeightInLoop)
    assert "while True:" in code and "while_loop" not in code.replace("while_loop_", "")
    assert_runs_same(fn, gm, (torch.tensor(0), torch.randn(4)))  # (its gradient: ruled, below)
    for n in (1, 3):
        for args in _paths((torch.tensor(n), torch.randn(4))):
            assert_runs_same(fn, gm, args)


@pytest.mark.slow
def test_nested_branches_reading_a_weight_a_constant_and_a_closure_are_ifs():
    gm, code, fn = _lowered(_Nested)
    assert code.count(" if ") + code.count("\n        if ") >= 2 and "cond(" not in code
    up, down = torch.ones(4), -torch.ones(4)
    for args in _paths((up, up), (up, down), (down, up), (down * 2, down)):
        assert_runs_same(fn, gm, args)

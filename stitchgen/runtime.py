"""What generated code calls at run time, beside the graph's own targets:
lowered control flow's gradients and refusals, as the operators have them.
Imported by generated code (never by the rest of stitchgen): it imports
torch alone.

:func:`tie` gives the operators' gradients. ``cond`` and ``while_loop`` run
as one autograd node each. Every operand that requires grad gets a
gradient from it, zeros where the path taken never reached it (a
``cond``'s branch not taken, an input a loop's body ignores), and every
output of a floating type requires grad. Lowered as Python, the same
computation gives ``None`` for those operands, which an optimizer treats
differently (momentum and weight decay step on zeros, and skip ``None``).
:func:`tie` puts the outputs through one node whose backward passes their
gradients on and gives the operands zeros, which autograd adds to what the
computation itself gives them: the operator's gradients, from plain code.
The generated code calls it only where grad mode is on (``if
torch.is_grad_enabled():``), so under ``torch.no_grad()`` and
``torch.inference_mode()`` it costs that one test.

:func:`condition` refuses what ``while_loop`` refuses of its condition's
value, where the graph's metadata does not tell its type (the lowering
refuses the rest when it makes the program).

:func:`grad_mode` and :func:`autocast` run a subgraph under grad mode or
autocast, as ``wrap_with_set_grad_enabled`` and ``wrap_with_autocast`` do
(``torch.no_grad()`` or ``torch.autocast`` blocks in an exported model);
:func:`inputs` takes an exported program's inputs, as ``ep.module()``
checks them.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["autocast", "condition", "grad_mode", "inputs", "tie"]


def condition(value: Any) -> Any:
    """``value``, a ``while_loop`` condition's, if the operator takes it (a
    bool, or a boolean tensor of no dimension); else the ``RuntimeError``
    the operator raises.

    >>> condition(True), condition(torch.tensor(False))
    (True, tensor(False))
    >>> condition(torch.tensor([True]))
    Traceback (most recent call last):
    ...
    RuntimeError: cond_fn must return a boolean scalar tensor or a boolean but got tensor([True])
    """
    if isinstance(value, (bool, torch.SymBool)) or (
        isinstance(value, torch.Tensor) and value.dtype == torch.bool and value.dim() == 0
    ):
        return value
    raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a boolean but got {value}")


def grad_mode(enabled: bool, fn: Any, *args: Any) -> Any:
    """``fn(*args)`` with grad mode ``enabled``, as
    ``wrap_with_set_grad_enabled`` runs its subgraph (``fn``: the
    subgraph, a function of the generated code).

    >>> with torch.enable_grad():
    ...     grad_mode(False, torch.is_grad_enabled)
    False
    """
    with torch.set_grad_enabled(enabled):
        return fn(*args)


def autocast(
    device_type: str, dtype: Any, enabled: bool, cache_enabled: Any, fn: Any, *args: Any
) -> Any:
    """``fn(*args)`` under ``torch.autocast(device_type, dtype, enabled,
    cache_enabled)``, as ``wrap_with_autocast`` runs its subgraph."""
    with torch.autocast(device_type, dtype, enabled, cache_enabled):
        return fn(*args)


def inputs(
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    spec: Any,
    count: int,
    keywords: tuple[str, ...],
    leaves: bool,
) -> list[Any]:
    """The flat inputs of an exported program's call, ``args`` and
    ``kwargs`` flattened with its input ``spec``: what ``ep.module()``
    takes, refusing what its check of their structure refuses with the
    same ``ValueError`` (torch's own check, run where the quick test below
    fails). Where every input is a leaf of the spec (``leaves``), ``count``
    positional ones and the ``keywords``, no more is needed than their
    number, their names, and no container among them.

    >>> import torch.utils._pytree as pytree
    >>> spec = pytree.tree_structure(((1, 2), {"k": 3}))
    >>> inputs((1, 2), {"k": 3}, spec, 2, ("k",), True)
    [1, 2, 3]
    >>> inputs((1, 2, 3), {}, spec, 2, ("k",), True)
    Traceback (most recent call last):
    ...
    ValueError: Ran into a kwarg keyword mismatch: Got the following keywords [] but expected ['k']
    """
    if leaves and len(args) == count and len(kwargs) == len(keywords):
        try:
            flat = [*args, *[kwargs[k] for k in keywords]]
        except KeyError:
            pass
        else:
            if not any(type(value) in _CONTAINERS or isinstance(value, tuple) for value in flat):
                return flat
    from torch.export._unlift import _check_inputs_match  # torch's check, as the pre-hook's

    return [value for _, value in _check_inputs_match(args, kwargs, spec)]


#: what a pytree flattens (a value of another type is a leaf, but a tuple
#: of any kind: checked by torch, as a named tuple is a container)
_CONTAINERS = (dict, list)


def tie(*values_and_operands: Any, outputs: int, copy: bool = False) -> tuple[Any, ...]:
    """The first ``outputs`` of ``values_and_operands`` tied to the rest (a
    control-flow statement's outputs, then its operands). Where no operand
    tensor requires grad, the outputs as they are; else the tensors among
    them through one autograd node (ints and other values pass as they are),
    as copies where ``copy`` (a loop's carried values, which ``while_loop``
    never hands back as its inputs under grad).

    >>> import torch
    >>> x, y = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    >>> (out,) = tie(x * 3, x, y, outputs=1)  # a branch that never reads y
    >>> out.sum().backward()
    >>> x.grad, y.grad
    (tensor([3., 3.]), tensor([0., 0.]))
    """
    values, operands = values_and_operands[:outputs], values_and_operands[outputs:]
    tensors = [o for o in (*values, *operands) if isinstance(o, torch.Tensor)]
    if not any(t.requires_grad for t in tensors):
        return values
    places = [i for i, v in enumerate(values) if isinstance(v, torch.Tensor)]
    operand_tensors = [o for o in operands if isinstance(o, torch.Tensor)]
    tied = _Tie.apply(len(places), copy, *(values[i] for i in places), *operand_tensors)
    out = list(values)
    for i, value in zip(places, tied, strict=True):
        out[i] = value
    return tuple(out)


class _Tie(torch.autograd.Function):
    """``count`` values, then the operands: the values as they were (an
    operand, or a view, as a view: written in place it is an error, as the
    operators' outputs are) or copied, gradients passed on to them and zeros
    to the operands."""

    @staticmethod
    def forward(
        ctx: Any, count: int, copy: bool, *tensors: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        values, operands = tensors[:count], tensors[count:]
        ctx.count = count
        ctx.zeros = [(o.shape, o.dtype, o.device) for o in operands]
        if copy:
            return tuple(v.clone() for v in values)
        return tuple(
            v if v._is_view() or any(v is o for o in operands) else v.detach() for v in values
        )

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[Any, ...]:
        needed = ctx.needs_input_grad[2 + ctx.count :]
        zeros = [
            torch.zeros(shape, dtype=dtype, device=device) if need else None
            for (shape, dtype, device), need in zip(ctx.zeros, needed, strict=True)
        ]
        return (None, None, *grads, *zeros)

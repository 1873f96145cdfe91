"""What the lowering reads from FX: nodes' source locations, attributes,
a graph's pytree convention, whether a child can be inlined — and how an
argument value is classified (a display, one holding graph values, a
reference-type object) and described."""

from __future__ import annotations

import enum
import os
import re
from typing import Any

import torch
import torch.fx as fx
from torch.fx.immutable_collections import immutable_dict, immutable_list

from ..conventions import ConstantPolicy
from ..errors import CodegenError

_LISTS = (list, immutable_list)
_DICTS = (dict, immutable_dict)


_FRAME = r'File "([^"\n]+)", line (\d+), in ([^\n]+)'


def source_location(node: fx.Node) -> str:
    """Where the user's code made ``node``: ``"model.py:42 in forward"`` (the
    innermost frame of its recorded ``stack_trace``: file basename, line,
    function), ``""`` when none was recorded."""
    trace = node.meta.get("stack_trace")
    if not isinstance(trace, str):
        return ""
    frames = re.findall(_FRAME, trace)
    if not frames:
        return ""
    path, line, function = frames[-1]
    return f"{os.path.basename(path)}:{line} in {function.strip()}"


def fetch_attr(owner: torch.nn.Module, target: str) -> Any:
    """``owner.a.b.c`` for ``target == "a.b.c"``, the way FX looks it up."""
    obj: Any = owner
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


def pytree_info(gm: fx.GraphModule) -> Any:
    """The graph's pytree calling convention (``make_fx`` over dicts or
    tuples, ``torch.export``'s ``module()``): its ``orig_args``, ``in_spec``
    and ``out_spec``; None for a graph called with flat arguments."""
    codegen = getattr(gm.graph, "_codegen", None)
    if not isinstance(codegen, fx.graph._PyTreeCodeGen):
        return None
    return codegen.pytree_info


def is_inlinable(child: Any) -> bool:
    """A GraphModule whose call does nothing but run its graph: no hooks
    registered on it (module-global hooks are not consulted), no
    ``__call__`` of its class's own, called with flat arguments (a pytree
    convention is kept by calling it as it is)."""
    if not isinstance(child, fx.GraphModule) or pytree_info(child) is not None:
        return False
    return not (
        child._forward_hooks
        or child._forward_pre_hooks
        or getattr(child, "_backward_hooks", None)
        or getattr(child, "_backward_pre_hooks", None)
        or has_own_call(type(child))
    )


def has_own_call(cls: type) -> bool:
    """Does a GraphModule class define a ``__call__`` of its own? The one
    every GraphModule gets from ``recompile`` (``call_wrapped``) runs the
    class's ``__call__`` where there is one, so calling the child is not
    running its graph."""
    for klass in cls.__mro__:
        if klass is fx.GraphModule:
            return False
        call = vars(klass).get("__call__")
        if call is not None and getattr(call, "__name__", None) != "call_wrapped":
            return True
    return False


def holds_node(value: Any) -> bool:
    if isinstance(value, fx.Node):
        return True
    if isinstance(value, (tuple, list)):
        return any(holds_node(x) for x in value)
    if isinstance(value, dict):
        return any(holds_node(k) or holds_node(v) for k, v in value.items())
    if isinstance(value, slice):
        return holds_node((value.start, value.stop, value.step))
    return False


def refuse_reference(value: Any, node: fx.Node) -> None:
    """A reference-type opaque object is state the graph must take as an
    input (torch.compile makes it one): as a constant it would be frozen
    into the code, shared by every call. (``torch_versions`` is imported
    here: only a graph with an object constant needs it.)"""
    from ..torch_versions import is_opaque_reference_type

    if is_opaque_reference_type(type(value)):
        raise CodegenError(
            f"argument of type {type(value).__qualname__} is a reference-type opaque object "
            "(torch 2.14+: symbolic; torch._library.opaque_object): such an object is a "
            "graph input, never a constant; pass it to the graph as an input",
            node,
        )


def hint_for(value: Any) -> str:
    if isinstance(value, torch.device):
        return f"device_{value.type}" + ("" if value.index is None else f"_{value.index}")
    return type(value).__name__.lower()


def describe(value: Any) -> str:
    """A deterministic one-line description (no ids, no addresses)."""
    if isinstance(value, torch.Tensor):
        return f"Tensor{list(value.shape)} {value.dtype} on {value.device.type}"
    if isinstance(value, (torch.device, torch.Size)):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"enum member {type(value).__qualname__}.{value.name}"
    if isinstance(value, type):
        return f"class {value.__module__}.{value.__qualname__}"
    name = getattr(value, "__qualname__", None)
    if callable(value) and isinstance(name, str):
        return f"{type(value).__name__} {name}"
    return f"{type(value).__module__}.{type(value).__qualname__} object"


def display_of(value: Any, policy: ConstantPolicy) -> type | None:
    """``list``, ``tuple`` or ``dict`` if ``policy`` writes ``value`` as
    that display (FX's immutable containers included), else None."""
    kind = type(value)
    if kind in _LISTS:
        return list
    if kind is tuple:
        return tuple
    if kind in _DICTS:
        return dict
    if policy.display_subclasses:
        for display in (list, tuple, dict):
            if isinstance(value, display):
                return display
    return None

"""What the lowering reads from FX: nodes' source locations, attributes,
a graph's pytree convention, whether a child can be inlined — and how an
argument value is classified (a display, one holding graph values, a
reference-type object) and described.

And how an object is named by an exact qualified name (the second answer
to what a constant is written as; :mod:`stitchgen.literals` has the
three): :func:`qualified_ref`, which resolves the name it finds and keeps
it only if that gives back the very same object.
"""

from __future__ import annotations

import builtins
import enum
import os
import re
import sys
import types
from typing import Any

import torch
import torch.fx as fx
from torch.fx.immutable_collections import immutable_dict, immutable_list

from ..conventions import ConstantPolicy
from ..errors import CodegenError
from ..identifiers import is_dotted
from ..ir import GlobalRef
from ..literals import is_primitive

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


# ==========================================================================
# Objects written by their exact qualified name (``torch.float32``,
# ``torch.ops.aten.mm.default``, ``operator.add``, an enum member):
# :func:`qualified_ref` finds a name and verifies that it resolves to the very
# same object, using only modules that are already imported (it imports
# nothing). Where it finds none, the object is lifted as a constant (see
# :mod:`stitchgen.literals` for the three answers).


#: private C modules whose objects are also reachable from a public module
_PUBLIC_ALIASES = {"_operator": "operator", "posix": "os", "_functools": "functools"}


def _resolve(module: str, path: str) -> Any:
    """Follow ``module.path`` the way the generated code will: from the
    top-level package, attribute by attribute."""
    root, *atoms = module.split(".")
    obj: Any = sys.modules[root]
    for atom in atoms + (path.split(".") if path else []):
        obj = getattr(obj, atom)
    return obj


def _candidates(obj: Any) -> list[tuple[str, str]]:
    if isinstance(obj, (torch.dtype, torch.layout, torch.memory_format)):
        text = str(obj)  # "torch.float32"
        module, _, path = text.partition(".")
        return [(module, path)]
    if isinstance(obj, torch._ops.OpOverload):
        ns, _, name = obj._schema.name.partition("::")
        return [("torch", f"ops.{ns}.{name}.{obj._overloadname}")]
    if isinstance(obj, torch._ops.OpOverloadPacket):
        ns, _, name = obj._qualified_op_name.partition("::")
        return [("torch", f"ops.{ns}.{name}")]
    if isinstance(obj, enum.Enum):
        cls = type(obj)
        return [(cls.__module__, f"{cls.__qualname__}.{obj.name}")]
    if isinstance(obj, types.ModuleType):
        return [(obj.__name__, "")]
    owner = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(owner, str) or not isinstance(qualname, str):
        return []
    names = [qualname]
    short = getattr(obj, "__name__", None)
    if isinstance(short, str) and short != qualname:
        names.append(short)  # torch.ones: qualname "_VariableFunctionsClass.ones"
    modules = [_PUBLIC_ALIASES[owner], owner] if owner in _PUBLIC_ALIASES else [owner]
    return [(m, n) for m in modules for n in names]


def qualified_ref(obj: Any) -> GlobalRef | None:
    """A :class:`GlobalRef` that resolves to ``obj`` itself, or None.

    Only modules already in ``sys.modules`` are consulted (lowering imports
    nothing), ``__main__`` is never used (it differs between processes), and
    the candidate is accepted only if resolving it gives ``obj`` back
    (identity, not equality).
    """
    if is_primitive(obj):
        return None
    try:
        candidates = _candidates(obj)
    except Exception:  # an object whose metadata raises is simply lifted
        return None
    for module, path in candidates:
        if module == "__main__" or not is_dotted(module) or module not in sys.modules:
            continue
        if path and not is_dotted(path):
            continue  # "<lambda>", "f.<locals>.g"
        if module == "builtins" and "." not in path and getattr(builtins, path, None) is obj:
            return GlobalRef("builtins", path)
        try:
            found = _resolve(module, path)
        except Exception:
            continue
        if found is obj:
            return GlobalRef(module, path)
    return None

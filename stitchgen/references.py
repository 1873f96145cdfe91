"""Objects written by their exact qualified name (``torch.float32``,
``torch.ops.aten.mm.default``, ``operator.add``, an enum member):
:func:`qualified_ref` finds a name and verifies that it resolves to the very
same object, using only modules that are already imported (it imports
nothing). Where it finds none, the object is lifted as a constant (see
:mod:`stitchgen.literals` for the three answers)."""

from __future__ import annotations

import builtins
import enum
import sys
import types
from typing import Any

import torch

from .identifiers import is_dotted
from .ir import GlobalRef
from .literals import is_primitive

__all__ = ["qualified_ref"]


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

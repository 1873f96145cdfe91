"""What a constant may be written as in generated code.

Three answers, decided here and nowhere else:

* a primitive (``None``, bool, int, float, complex, str, bytes, ``...``) is
  written inline by :func:`literal_source`, built on ``repr`` (never a
  hand-rolled escape), with ``float("inf")``-style spellings for non-finite
  numbers and black's spelling where it is the same literal (double quotes,
  ``1e300``) — a string is always data, never code;
* an object reachable by an exact qualified name (``torch.float32``,
  ``torch.ops.aten.mm.default``, ``operator.add``, an enum member) is written
  as that name — :func:`qualified_ref` verifies that the name resolves to the
  very same object, using only modules that are already imported;
* anything else is lifted: bound into the generated function as a constant.
"""

from __future__ import annotations

import builtins
import enum
import math
import sys
import types
from typing import Any

import torch

from .ir import PRIMITIVE_TYPES, GlobalRef

__all__ = ["is_primitive", "literal_source", "qualified_ref"]


def is_primitive(value: Any) -> bool:
    """True for values written inline (exact types only: an ``int`` subclass
    such as an ``IntEnum`` member is not primitive)."""
    return type(value) in PRIMITIVE_TYPES


def _float_source(value: float) -> str:
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return 'float("inf")' if value > 0 else '-float("inf")'
    return repr(value).replace("e+", "e")  # 1e300, as black spells it


def _quoted_source(value: str | bytes) -> str:
    """``repr``, requoted with double quotes unless that needs more escapes
    (black's rule, so formatted code keeps the spelling)."""
    text = repr(value)
    start = 2 if type(value) is bytes else 1
    if text[start - 1] == '"':
        return text  # repr chose double quotes: the text has a ' and no "
    body = text[start:-1]
    if body.count('"') > body.count("\\'"):
        return text  # double quotes would need more escapes than there are now
    out = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            pair = body[i : i + 2]
            out.append("'" if pair == "\\'" else pair)
            i += 2
            continue
        out.append('\\"' if char == '"' else char)
        i += 1
    return f'{text[: start - 1]}"{"".join(out)}"'


def literal_source(value: Any) -> str:
    """Python source that evaluates to ``value`` (a primitive).

    >>> print(literal_source(float("-inf")), literal_source("a'\\n"), literal_source("b"))
    -float("inf") "a'\\n" "b"
    """
    kind = type(value)
    if kind is float:
        return _float_source(value)
    if kind is complex:
        # never repr: "-0j" evaluates to complex(-0.0, -0.0), not complex(0.0, -0.0)
        return f"complex({_float_source(value.real)}, {_float_source(value.imag)})"
    if value is Ellipsis:
        return "..."
    if kind is str or kind is bytes:
        return _quoted_source(value)
    if kind in PRIMITIVE_TYPES:
        # None, bool, int, str, bytes: repr is an exact, inert literal.
        return repr(value)
    raise TypeError(f"{kind.__name__} is not written as a literal")


# --------------------------------------------------------------------------
# qualified names

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


def _valid_dotted(name: str) -> bool:
    return bool(name) and all(atom.isidentifier() for atom in name.split("."))


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
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return []
    names = [qualname]
    short = getattr(obj, "__name__", None)
    if isinstance(short, str) and short != qualname:
        names.append(short)  # torch.ones: qualname "_VariableFunctionsClass.ones"
    modules = [_PUBLIC_ALIASES[module], module] if module in _PUBLIC_ALIASES else [module]
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
        if module == "__main__" or not _valid_dotted(module) or module not in sys.modules:
            continue
        if path and not _valid_dotted(path):
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

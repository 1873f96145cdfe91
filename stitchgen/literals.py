"""What a constant may be written as in generated code: the first of three
answers is this module's, the other two are named here with their owners.

* a primitive (``None``, bool, int, float, complex, str, bytes, ``...``) is
  written inline by :func:`literal_source`, built on ``repr`` (never a
  hand-rolled escape), with ``float("inf")``-style spellings for non-finite
  numbers and black's spelling where it is the same literal (double quotes,
  ``1e300``) — a string is always data, never code (decided here);
* an object reachable by an exact qualified name (``torch.float32``,
  ``torch.ops.aten.mm.default``, ``operator.add``, an enum member) is written
  as that name — :func:`stitchgen.lowering.qualified_ref` decides it,
  verifying that the name resolves to the very same object, using only
  modules that are already imported;
* anything else is lifted: bound into the generated function as a constant
  — where a convention's constant policy says so
  (:class:`stitchgen.conventions.ConstantPolicy`, read by the lowering's
  ``Scope.arg``: vLLM's lifts some objects that have a name).

This module writes the first kind and imports nothing but the IR (rendering
uses it, and rendering never imports torch).
"""

from __future__ import annotations

import math
from typing import Any

from .ir import PRIMITIVE_TYPES

__all__ = ["is_primitive", "literal_source"]


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

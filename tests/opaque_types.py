"""Constants a user's own module defines, for artifact tests: an enum, and
torch's opaque object types (a value type with ``__fx_repr__``, as vLLM
passes layer names to its ops, and a reference type; torch 2.14 renamed
them constant and symbolic)."""

import enum

from torch._library import opaque_object
from torch._opaque_base import OpaqueBase


class Mode(enum.Enum):
    PREFILL = 1
    DECODE = 2


class LayerName(OpaqueBase):
    """A value-type opaque object: a constant, written by ``__fx_repr__``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return type(other) is LayerName and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"LayerName({self.name!r})"

    def __fx_repr__(self):
        return f"LayerName({self.name!r})", {"LayerName": LayerName}


class Cache(OpaqueBase):
    """A reference-type opaque object: state, always a graph input."""

    def __init__(self) -> None:
        self.items = []


if hasattr(opaque_object, "register_custom_class"):  # torch 2.14+: the new names
    opaque_object.register_custom_class(LayerName, typ="constant")
    opaque_object.register_custom_class(Cache, typ="symbolic")
else:
    opaque_object.register_opaque_type(LayerName, typ="value")
    opaque_object.register_opaque_type(Cache, typ="reference")

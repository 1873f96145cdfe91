"""Calling conventions: how generated code receives its bindings.

One object per convention owns everything about it: the names its code uses
(reserved in the naming pass, so no generated identifier can take them), how
a binding is spelled in an expression, its constant policy
(:class:`ConstantPolicy`), what goes into the module's globals and how the
entry function is bound after the module runs. ``lower``, ``render``,
``load``, ``artifact`` and ``compat`` ask the convention; none of them
spells its names; how one program links is its :class:`Linkage`. Which
template variant writes which convention is its record
(:class:`stitchgen.emitter.Variant`).

* :data:`CLOSURE` (the built-in templates, and the ``profiled`` variant): a
  binder whose parameters are the bindings returns the entry function, which
  reaches them through closure cells. Constants are written as verified
  qualified names where they have one, lifted otherwise.
* :data:`VLLM` (the ``vllm`` variant, and :mod:`stitchgen.compat`): vLLM
  0.34's ``vllm/compilation/codegen.py`` contract. The entry is
  ``execution_fn(..., *, __vllm_submods__)``; ``__vllm_submods__[i]`` is the
  ``i``-th child in first-call order — every child, inlined ones too (their
  callable may be ``None``); every argument that is not an ``int``, ``float``,
  ``bool``, ``str``, ``bytes``, ``None`` or a list/tuple/dict of them is a
  lifted constant, ``__vllm_consts__[i]`` (a module global), deduplicated by
  identity in first-use order across all pieces.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import field
from types import MappingProxyType
from typing import Any

from .records import Record, record

__all__ = [
    "CLOSURE",
    "CONVENTIONS",
    "ConstantPolicy",
    "Linkage",
    "NAME_FORMATS",
    "PRIMITIVE_TYPES",
    "VLLM",
    "Convention",
    "convention_named",
    "name_formats",
]

#: how helpers and bindings are named before the naming pass makes the names
#: valid and unique; override any of them with ``names=``
#: (``inlined`` may use ``{path}`` and ``{index}``, its place among the functions)
NAME_FORMATS: Mapping[str, str] = MappingProxyType(
    {
        "binder": "bind",
        "submod": "call_{path}",
        "inlined": "inlined_{path}",
        "const": "const_{hint}",
    }
)


def name_formats(overrides: Mapping[str, str] | None) -> dict[str, str]:
    """:data:`NAME_FORMATS` with ``overrides`` applied (unknown keys refused)."""
    unknown = sorted(set(overrides or {}) - set(NAME_FORMATS))
    if unknown:
        raise ValueError(f"unknown name formats {unknown}; known: {sorted(NAME_FORMATS)}")
    formats = {**NAME_FORMATS, **(overrides or {})}
    inlined = formats["inlined"]
    if "{path}" not in inlined and "{index}" not in inlined:
        raise ValueError(
            f"name format 'inlined' ({inlined!r}) must contain {{path}} or {{index}}: "
            "each inlined function needs a name of its own"
        )
    return formats


#: The exact types that render as Python literals (see ``literals.py``):
#: every convention writes them inline (``stitchgen.ir`` re-exports them)
PRIMITIVE_TYPES = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis))


@record
class ConstantPolicy(Record):
    """How a convention writes the values in a graph's arguments — what is
    written inline, what is a display, what is lifted into a binding. One
    argument path and one twin key (``lowering``) read it; a value that holds
    graph values is never lifted, whatever the policy."""

    #: the exact types written as literals
    inline: frozenset[type]
    #: list/tuple/dict subclasses written as displays too (vLLM writes a
    #: namedtuple or a ``torch.Size`` as a tuple display); else exact types only
    display_subclasses: bool = False
    #: slices of constants written as slices; else lifted (vLLM)
    constant_slices: bool = True
    #: objects reached by a verified qualified name written by it; else lifted (vLLM)
    qualified_names: bool = True

    def __init__(
        self,
        inline: Collection[type],
        display_subclasses: bool = False,
        constant_slices: bool = True,
        qualified_names: bool = True,
    ) -> None:
        d = self.__dict__
        d["inline"] = frozenset(inline)
        d["display_subclasses"] = display_subclasses
        d["constant_slices"] = constant_slices
        d["qualified_names"] = qualified_names


@record
class Convention(Record):
    """A calling convention (see the module docstring for the two shipped)."""

    #: the name stored in ``Generated.convention`` and artifact manifests
    name: str
    #: names the code uses that no generated identifier may take
    helpers: tuple[str, ...] = ()
    #: how references are spelled (the emitter's ``Writer``): ``submod``, ``const``, ``function``
    refs: Mapping[str, str] = field(default_factory=dict)
    #: name formats for the lowering (``NAME_FORMATS`` keys)
    names: Mapping[str, str] = field(default_factory=dict)
    #: how the values in arguments are written (inline, display, lifted)
    constants: ConstantPolicy = field(default_factory=lambda: ConstantPolicy(PRIMITIVE_TYPES))
    #: ``submod_names`` lists inlined children too (their binding is None)
    lists_inlined: bool = False
    #: does it have the boxed-inputs entry (one list argument, cleared)?
    boxed: bool = True
    #: the keyword-only parameter that takes the bound pieces, as a list
    #: (``""``: bindings reach the code another way, as closure cells)
    submods_param: str = ""
    #: the module global that holds the lifted constants, as a list (``""``: none)
    consts_global: str = ""

    def __init__(
        self,
        name: str,
        helpers: tuple[str, ...] = (),
        refs: Mapping[str, str] | None = None,
        names: Mapping[str, str] | None = None,
        constants: ConstantPolicy | None = None,
        lists_inlined: bool = False,
        boxed: bool = True,
        submods_param: str = "",
        consts_global: str = "",
    ) -> None:
        d = self.__dict__
        d["name"] = name
        d["helpers"] = helpers
        d["refs"] = MappingProxyType(dict(refs or {}))
        d["names"] = MappingProxyType(dict(names or {}))
        d["constants"] = constants if constants is not None else ConstantPolicy(PRIMITIVE_TYPES)
        d["lists_inlined"] = lists_inlined
        d["boxed"] = boxed
        d["submods_param"] = submods_param
        d["consts_global"] = consts_global

    def module_globals(self, consts: Sequence[Any]) -> dict[str, Any]:
        """Globals the module needs before it runs (none for closures)."""
        return {}

    def bind(
        self,
        namespace: Mapping[str, Any],
        *,
        name: str,
        binder: str,
        pieces: list[Any],
        consts: list[Any],
    ) -> Callable[..., Any]:
        """The entry function, from the namespace the module ran in."""
        bound: Callable[..., Any] = namespace[binder](*pieces, *consts)
        return bound


class _Vllm(Convention):
    """vLLM's convention: the pieces passed as a keyword list, the constants
    read from a module global list."""

    def module_globals(self, consts: Sequence[Any]) -> dict[str, Any]:
        # code from before constants (vLLM's consts=None) gets [] and reads none
        return {self.consts_global: consts}

    def bind(
        self,
        namespace: Mapping[str, Any],
        *,
        name: str,
        binder: str,
        pieces: list[Any],
        consts: list[Any],
    ) -> Callable[..., Any]:
        return functools.partial(namespace[name], **{self.submods_param: pieces})


@record
class Linkage(Record):
    """How generated code links to what runs it, as the lowering decided
    it (``Program.linkage``), read by ``Generated``, ``load``, an
    artifact's manifest and ``compat``: the entry function's ``name``, the
    ``binder``'s, the ``convention``'s, the children it takes bindings for
    (``submod_names``, in binding order; the vllm convention lists inlined
    children too) and the children it calls by itself (``inlined``, sorted:
    no binding needed, and one given — a compile cache hands over every
    piece it holds — is ignored)."""

    name: str
    binder: str = ""
    convention: str = "closure"
    submod_names: tuple[str, ...] = ()
    inlined: tuple[str, ...] = ()

    def __init__(
        self,
        name: str,
        binder: str = "",
        convention: str = "closure",
        submod_names: Sequence[str] = (),
        inlined: Sequence[str] = (),
    ) -> None:
        d = self.__dict__
        d["name"] = name
        d["binder"] = binder
        d["convention"] = convention
        d["submod_names"] = tuple(submod_names)
        d["inlined"] = tuple(inlined)

    @property
    def bound(self) -> tuple[str, ...]:
        """The children the code calls through their bindings, in binding order."""
        inlined = frozenset(self.inlined)
        return tuple(p for p in self.submod_names if p not in inlined)

    def manifest(self) -> dict[str, Any]:
        """The linkage as an artifact's manifest records it."""
        names = ("name", "binder", "convention")
        return {
            **{n: getattr(self, n) for n in names},
            "submod_names": list(self.submod_names),
            "inlined_submods": list(self.inlined),
        }

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> Linkage:
        """The linkage an artifact's manifest records."""
        m = manifest
        submods, inlined = m["submod_names"], m.get("inlined_submods", ())
        return cls(m["name"], m["binder"], m["convention"], submods, inlined)


CLOSURE = Convention("closure")
#: vLLM's names: the only place they are spelled (every other module asks VLLM)
_SUBMODS, _CONSTS = "__vllm_submods__", "__vllm_consts__"
VLLM = _Vllm(
    "vllm",
    helpers=(_SUBMODS, _CONSTS),
    refs={"submod": _SUBMODS + "[{index}]", "const": _CONSTS + "[{index}]"},
    names={"inlined": "__vllm_inlined_submods__{index}"},
    # vLLM's: int, float, bool, str, bytes and None inline, list/tuple/dict
    # displays (subclasses too), every other object lifted, slices included
    constants=ConstantPolicy(
        (type(None), bool, int, float, str, bytes),
        display_subclasses=True,
        constant_slices=False,
        qualified_names=False,
    ),
    lists_inlined=True,
    boxed=False,
    submods_param=_SUBMODS,
    consts_global=_CONSTS,
)

CONVENTIONS: Mapping[str, Convention] = MappingProxyType({c.name: c for c in (CLOSURE, VLLM)})


def convention_named(name: str) -> Convention:
    """The convention called ``name``; ValueError for one we do not have."""
    try:
        return CONVENTIONS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown calling convention {name!r}; known: {sorted(CONVENTIONS)}"
        ) from None

"""Names in the code we write, decided here, once: what counts as an
identifier, what no generated identifier may take (:data:`RESERVED`), and a
scope's fresh names (:class:`Namespace`, :func:`sanitize`), which the
lowering and the naming pass (:mod:`stitchgen.passes`) both hand out; and the
exact qualified name of an object (:func:`qualified_name`), which the
lowering writes and an artifact stores.

An identifier is ASCII, ``str.isidentifier`` and not a keyword: Python
NFKC-normalizes non-ASCII identifiers, so two spellings could name one
variable or attribute, and a keyword is no name at all. Every name the
naming pass hands out, every name the emitter writes, every dotted target
and every attribute or keyword argument written as such passes this test;
anything else is sanitized (names), spelled another way (``getattr``,
``**{...}``) or refused.
"""

from __future__ import annotations

import builtins
import enum
import keyword
import re
import sys
import types
from collections.abc import Iterable
from typing import Any

__all__ = [
    "BUILTINS",
    "RESERVED",
    "SHARED_GLOBALS",
    "WRITER_BUILTINS",
    "NotAnIdentifier",
    "Namespace",
    "checked",
    "is_dotted",
    "is_identifier",
    "qualified_name",
    "resolve",
    "sanitize",
]

_KEYWORDS = frozenset(keyword.kwlist)


def is_identifier(text: str) -> bool:
    """An ASCII identifier that is not a keyword.

    >>> is_identifier("x_1"), is_identifier("class"), is_identifier("é")
    (True, False, False)
    """
    return text.isascii() and text.isidentifier() and text not in _KEYWORDS


def is_dotted(text: str) -> bool:
    """``a.b.c`` with every part an identifier."""
    return bool(text) and all(is_identifier(atom) for atom in text.split("."))


class NotAnIdentifier(ValueError):
    """A name the code writer refuses to write as code: the one refusal the
    fast path reports as a :class:`~stitchgen.errors.TemplateError` (any other
    exception there is a bug of ours and surfaces as itself)."""


def checked(name: str, what: str = "", *, dotted: bool = False) -> str:
    """``name`` itself if it is an identifier (``dotted``: a dotted path of
    them), else :class:`NotAnIdentifier` naming it (``what``: its role).

    >>> checked("x_1"), checked("torch.nn", dotted=True)
    ('x_1', 'torch.nn')
    """
    if not (is_dotted(name) if dotted else is_identifier(name)):
        kind = "a dotted name" if dotted else "an identifier"
        raise NotAnIdentifier(f"{what + ' ' if what else ''}{name!r} is not {kind}")
    return name


# --------------------------------------------------------------------------
# names: what no identifier may take, and a scope's fresh ones

#: the globals of :data:`RESERVED` an entry parameter never takes, not even
#: to keep the keyword callers pass it by: ``torch``, which templates use in
#: function bodies without reserving it (profiler ranges), and the globals
#: FX reserves
SHARED_GLOBALS = frozenset({"inf", "nan", "torch"})
#: the builtins the expression writer spells (``float("inf")``,
#: ``complex(re, im)``, ``slice(...)``, ``getattr(obj, "not-an-identifier")``)
WRITER_BUILTINS = frozenset({"float", "complex", "slice", "getattr"})
#: the builtins' names
BUILTINS = frozenset(dir(builtins))
#: names no generated identifier may take: keywords, builtins, the globals FX
#: reserves, and the modules generated code (ours or a template override)
#: most often refers to, whether or not this program imports them (an entry
#: parameter may keep such a name: see the naming pass, :mod:`stitchgen.passes`)
RESERVED = frozenset(keyword.kwlist) | BUILTINS | SHARED_GLOBALS | {"operator", "math", "builtins"}

# compiled on first use (by re's cache): a name to sanitize, a collision
_INVALID = r"[^0-9A-Za-z_]"
_SUFFIX = r"(.*)_(\d+)$"


def sanitize(hint: str) -> str:
    """An ASCII identifier close to ``hint`` (not yet checked for collisions)."""
    if is_identifier(hint):
        return hint
    name = re.sub(_INVALID, "_", hint) or "_"
    return "_" + name if name[0].isdigit() else name


class Namespace:
    """The names taken in one scope; :meth:`create` hands out fresh ones.

    >>> ns = Namespace()
    >>> ns.create("torch"), ns.create("x"), ns.create("x"), ns.create("class")
    ('torch_1', 'x', 'x_1', 'class_1')
    """

    def __init__(self, taken: frozenset[str] | set[str] = RESERVED) -> None:
        self._taken = set(taken)
        self._next: dict[str, int] = {}

    def reserve(self, name: str) -> None:
        self._taken.add(name)

    def release(self, names: Iterable[str]) -> None:
        """Free ``names`` in this scope (reserved in an outer one for
        another scope's sake)."""
        self._taken.difference_update(names)

    def __contains__(self, name: str) -> bool:
        return name in self._taken

    def create(self, hint: str) -> str:
        taken = self._taken
        if hint not in taken and is_identifier(hint):
            taken.add(hint)  # the common case: an FX name, free
            return hint
        # FX's rule (torch.fx.graph._Namespace): a taken ``x_1`` becomes ``x_2``
        name = sanitize(hint)
        suffixed = re.match(_SUFFIX, name)
        if suffixed is None:
            base, n = name, 0
        else:
            base, n = suffixed.group(1), int(suffixed.group(2))
        if not n:
            n = self._next.get(base, 0)
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        self._next[base] = n
        taken.add(name)
        return name

    def copy(self) -> Namespace:
        other = Namespace(self._taken)
        other._next = dict(self._next)
        return other


# ==========================================================================
# Objects reached by their exact qualified name (``torch.float32``,
# ``torch.ops.aten.mm.default``, ``operator.add``, an enum member): the
# names the generated code writes (``lowering.qualified_ref``) and the names
# an artifact stores (``portable``), found and verified in one place, which
# loads neither torch nor the artifact store.

#: private C modules whose objects are also reachable from a public module
_PUBLIC_ALIASES = {"_operator": "operator", "posix": "os", "_functools": "functools"}


def resolve(module: str, path: str) -> Any:
    """Follow ``module.path`` the way the generated code will: from the
    top-level package, attribute by attribute."""
    root, *atoms = module.split(".")
    obj: Any = sys.modules[root]
    for atom in atoms + (path.split(".") if path else []):
        obj = getattr(obj, atom)
    return obj


def _candidates(obj: Any) -> list[tuple[str, str]]:
    torch = sys.modules.get("torch")  # no torch imported: no torch object to name
    if torch is not None:
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


def qualified_name(obj: Any) -> tuple[str, str] | None:
    """``(module, path)`` naming ``obj`` itself, or None.

    Only modules already in ``sys.modules`` are consulted (nothing is
    imported), ``__main__`` is never used (it differs between processes), and
    the candidate is accepted only if resolving it gives ``obj`` back
    (identity, not equality).
    """
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
            return module, path
        try:
            found = resolve(module, path)
        except Exception:
            continue
        if found is obj:
            return module, path
    return None

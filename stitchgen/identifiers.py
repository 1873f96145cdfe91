"""Names in the code we write, decided here, once: what counts as an
identifier, what no generated identifier may take (:data:`RESERVED`), and a
scope's fresh names (:class:`Namespace`, :func:`sanitize`), which the
lowering and the naming pass (:mod:`stitchgen.passes`) both hand out.

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
import keyword
import re
from collections.abc import Iterable

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

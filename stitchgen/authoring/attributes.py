"""The attributes a template may read on an IR object (or on ``emit``), and
the closest names to one that is misspelt: the static check
(:mod:`stitchgen.authoring.checks`) and the render-time error
(:mod:`stitchgen.environment`) word it the same way."""

from __future__ import annotations

import dataclasses
import difflib
import functools
from collections.abc import Iterable

__all__ = ["closest", "no_attribute", "public_attributes"]


@functools.cache
def public_attributes(cls: type) -> frozenset[str]:
    """What a template can read on an instance of ``cls``: its dataclass
    fields, properties, methods and class variables, less the names with a
    leading ``_`` (the sandbox hides them)."""
    names = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    names.update(dir(cls))
    return frozenset(n for n in names if not n.startswith("_"))


def closest(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """The names in ``candidates`` closest to ``name`` (difflib), best first."""
    return difflib.get_close_matches(name, sorted(set(candidates)), n=n, cutoff=0.6)


def no_attribute(types: Iterable[type], attr: str) -> str:
    """``'Call' has no attribute 'nde' (did you mean 'node'?)``: the error for
    ``attr`` on objects of ``types`` (one or several classes)."""
    types = list(types)
    names = " or ".join(repr(t.__name__) for t in types)
    has = "has" if len(types) == 1 else "have"
    known = frozenset().union(*(public_attributes(t) for t in types))
    near = closest(attr, known)
    hint = f" (did you mean {' or '.join(repr(n) for n in near)}?)" if near else ""
    private = " (names starting with '_' are hidden from templates)" if attr[:1] == "_" else ""
    return f"{names} {has} no attribute {attr!r}{hint}{private}"

"""The filters templates see, and :class:`Code`, the type they return.

Each filter wraps a method of :class:`~stitchgen.expressions.Writer` (or a
helper beside it) and marks its text as code; Jinja's environment
(``environment.py``) prints nothing else but template text, ints and the
program's own names. Imported only where templates render through Jinja (or
where a user builds a filter of their own): the fast path writes the same
text without it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from markupsafe import Markup

from .expressions import Writer, comment_source, dotted_source, name_items
from .literals import literal_source

__all__ = ["FILTER_NAMES", "Code", "build_filters", "comment", "dotted", "literal", "names"]


class Code(Markup):
    """Source text vouched for as code. stitchgen's filters return it; a
    downstream filter that builds source must return it too (after making
    sure every constant in it went through ``literal_source``).

    >>> from stitchgen.literals import literal_source
    >>> Code(literal_source("piece"))
    Code('"piece"')
    """

    __slots__ = ()


def literal(value: Any) -> Code:
    """A primitive constant as a Python literal (``"a\\nb"``, ``float("inf")``)."""
    return Code(literal_source(value))


def names(items: Iterable[Any]) -> Code:
    """``a, b, c`` from identifiers, or from objects with a ``name``."""
    return Code(", ".join(name_items(items)))


def dotted(name: str) -> Code:
    """A dotted module or attribute path, checked atom by atom."""
    return Code(dotted_source(name))


def comment(text: Any) -> Code:
    """``text`` made safe for a one-line comment (newlines and controls escaped)."""
    return Code(comment_source(text))


def build_filters(writer: Writer) -> dict[str, Callable[..., Code]]:
    """stitchgen's filters for one convention's writer; every one returns
    :class:`Code` (see docs/templates.md)."""
    return {
        "expr": lambda e: Code(writer.source(e)),
        "atom": lambda e: Code(writer.atom_source(e)),
        "subscript": lambda e: Code(writer.subscript_source(e)),
        "arguments": lambda s: Code(writer.arguments_source(s)),
        "params": lambda ps: Code(writer.params_source(ps)),
        "literal": literal,
        "names": names,
        "dotted": dotted,
        "comment": comment,
    }


#: the names of stitchgen's own filters (a ``Templates`` may not replace them)
FILTER_NAMES = frozenset(build_filters(Writer()))

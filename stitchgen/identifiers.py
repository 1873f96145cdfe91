"""What counts as an identifier in the code we write — decided here, once.

An identifier is ASCII, ``str.isidentifier`` and not a keyword: Python
NFKC-normalizes non-ASCII identifiers, so two spellings could name one
variable or attribute, and a keyword is no name at all. Every name the
naming pass hands out, every name the emitter writes, every dotted target
and every attribute or keyword argument written as such passes this test;
anything else is sanitized (names), spelled another way (``getattr``,
``**{...}``) or refused.
"""

from __future__ import annotations

import keyword

__all__ = ["NotAnIdentifier", "checked", "is_dotted", "is_identifier"]

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

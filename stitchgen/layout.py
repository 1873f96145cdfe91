"""Black's layout for the few line shapes stitchgen emits.

The built-in templates emit five statement shapes (a call, a getitem, an
assign, a ``del``, a ``return``) and ``def`` lines. Black, given such a line
when it is longer than 88 columns, splits it at its last bracket pair:

* ``head(`` on the first line, the items on one line indented once more,
  ``)`` and the rest on the last line;
* the items one per line, each with a comma, when they do not fit on one
  line — or always, for a tuple, list or dict display and for ``del`` (whose
  names black puts in parentheses), when there are two or more;
* a ``def`` with one parameter gets a trailing comma after it.

:func:`bracketed` writes exactly that, and raises :class:`Unsure` for every
case outside it (a head too long to fit, an item that would need splitting
itself, a ``*``/``**`` item, where black's trailing comma depends on the
target versions it infers). The caller then lets black decide. Tests hold
black to it: every golden file and every fuzzed program laid out here is
checked with ``black.format_str(code) == code``.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["LINE_LENGTH", "Unsure", "bracketed", "fits"]

#: black's default line length, which ``format=True`` uses
LINE_LENGTH = 88

_BRACKETS = frozenset("([{")


class Unsure(Exception):
    """A line outside the shapes this module lays out: black must decide."""


def fits(line: str) -> bool:
    """Is ``line`` (indentation included, no newline) short enough for black?
    Non-ASCII text is measured by black in display width, so it is only
    trusted where even double width would fit."""
    if len(line) > LINE_LENGTH:
        return False
    return line.isascii() or 2 * len(line) <= LINE_LENGTH


def _splittable(text: str) -> bool:
    return not _BRACKETS.isdisjoint(text)


def bracketed(
    indent: str,
    head: str,
    opening: str,
    items: Sequence[str],
    closing: str,
    *,
    display: bool = False,
    one_tuple: bool = False,
    is_def: bool = False,
) -> str:
    """``indent + head + opening + items + closing`` as black lays it out,
    newline included. ``display``: the brackets are a tuple/list/dict display
    (or ``del``'s); ``one_tuple``: a 1-tuple, written ``(x,)``; ``is_def``:
    the parameters of a ``def``.

    >>> print(bracketed("", "x = f", "(", ["a" * 40, "b" * 40], ")"), end="")
    x = f(
        aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
    )
    """
    body = ", ".join(items) + ("," if one_tuple else "")
    line = f"{indent}{head}{opening}{body}{closing}"
    if fits(line):
        return line + "\n"
    if len(line) <= LINE_LENGTH:  # non-ASCII: black splits it by its display width
        raise Unsure(line)
    first = f"{indent}{head}{opening}"
    last = f"{indent}{closing}"
    if not items or not fits(first) or not fits(last):
        raise Unsure(line)
    inner = indent + "    "
    if len(items) > 1 and (display or not fits(inner + body)):
        if any(item.startswith("*") for item in items):
            raise Unsure(line)
        lines = []
        for item in items:
            text = f"{inner}{item},"
            if not fits(text) and _splittable(item):
                raise Unsure(line)
            lines.append(text)
        return f"{first}\n" + "\n".join(lines) + f"\n{last}\n"
    if is_def and len(items) == 1:
        if body.startswith("*"):
            raise Unsure(line)
        body += ","  # black's trailing comma after a lone parameter
    if not fits(inner + body) and (_splittable(body) or body.startswith("*")):
        raise Unsure(line)
    return f"{first}\n{inner}{body}\n{last}\n"

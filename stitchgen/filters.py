"""The filters templates see, :class:`Code`, the type they return, and
:class:`BlockText`, the shipped templates' text (the ``emit`` variable).

Each filter wraps a method of :class:`~stitchgen.emitter.Writer` (or a
helper beside it) and marks its text as code; Jinja's environment
(``environment.py``) prints nothing else but template text, ints and the
program's own names. Imported only where templates render through Jinja (or
where a user builds a filter of their own): the fast path writes the same
text without it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, cast

from markupsafe import Markup

from .emitter import HEADS, INDENT, Emitter, Writer, comment_source, dotted_source, name_items
from .errors import TemplateError
from .ir import STATEMENTS, Unbox, block_method
from .literals import literal_source

__all__ = [
    "FILTER_NAMES",
    "BlockText",
    "Code",
    "build_filters",
    "comment",
    "dotted",
    "literal",
    "names",
]


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


class BlockText:
    """The shipped templates' text, block by block: what the template
    variable ``emit`` gives the built-in blocks (``emit.getitem(stmt)``,
    ``emit.signature(fn)``, ...). Each method hands one IR object to the
    emitter of the template set in use (:mod:`stitchgen.emitter`) — the one
    source of every line the shipped templates write, on the fast path and
    through Jinja alike — and returns its text as :class:`Code`. It takes IR
    objects only: nothing a template writes can pass through it as code.
    """

    __slots__ = ("_emitter", "shipped_function")

    def __init__(self, emitter: Emitter, shipped_function: bool = False) -> None:
        self._emitter = emitter
        #: does ``function.py.j2`` resolve to the shipped one (no directory of
        #: yours overrides it)? Then the shipped module template writes each
        #: function with :meth:`function`: the same text, without a Jinja
        #: render per statement
        self.shipped_function = shipped_function

    def _capture(self, method: Callable[..., None], *args: Any) -> Code:
        emitter = self._emitter
        saved, emitter.out = emitter.out, []
        try:
            method(*args)
            return Code("".join(emitter.out))
        finally:
            emitter.out = saved

    # module.py.j2
    def header(self) -> Code:
        return self._capture(self._emitter.header)

    def imports(self) -> Code:
        return self._capture(self._emitter.imports)

    def binder_signature(self) -> Code:
        return self._capture(self._emitter.binder_signature)

    def bindings(self) -> Code:
        return self._capture(self._emitter.bindings)

    def targets(self) -> Code:
        return self._capture(self._emitter.targets)

    def binder_return(self) -> Code:
        return self._capture(self._emitter.binder_return)

    # function.py.j2 (statements at one level of indentation)
    def function(self, fn: Any) -> Code:
        """The whole function as the shipped ``function.py.j2`` renders it."""
        return self._capture(self._emitter.function, _ir(fn, "function"), "")

    def signature(self, fn: Any) -> Code:
        return self._capture(self._emitter.signature, _ir(fn, "signature"), "")

    def unbox(self, fn: Any) -> Code:
        """The function's opening (a boxed function's unpacking), as the
        ``unbox`` block writes it."""
        return self._capture(self._emitter.opening, _ir(fn, "unbox"), INDENT)

    def statement(self, stmt: Any) -> Code:
        """Any statement, by its kind's emitter method: the generic
        ``statement`` block, for a kind with no block of its own. An
        :class:`~stitchgen.ir.Unbox` is refused: it opens the function, and
        the ``unbox`` block has written it (a loop over ``fn.body``, not
        ``fn.statements``, meets it again)."""
        if type(stmt) is Unbox:
            raise TemplateError(
                "function.py.j2: an Unbox reached the statement block: it opens the "
                "function and the unbox block writes it; loop over fn.statements, not fn.body",
                template="function.py.j2",
            )
        return self._capture(self._emitter.statement, _ir(stmt, "statement"), INDENT)

    def call_head(self, stmt: Any) -> Code:
        return Code(self._emitter.call_head(_ir(stmt, "call_head"), INDENT))

    def call_else(self, stmt: Any) -> Code:
        return Code(self._emitter.call_else(_ir(stmt, "call_else"), INDENT))

    def call_tail(self, stmt: Any) -> Code:
        return Code(self._emitter.call_tail(_ir(stmt, "call_tail")))

    def call_expr(self, stmt: Any) -> Code:
        return Code(self._emitter.call_expr(_ir(stmt, "call_expr")))


def _statement_text(method: str) -> Callable[[BlockText, Any], Code]:
    def text(self: BlockText, stmt: Any) -> Code:
        return self._capture(getattr(self._emitter, method), _ir(stmt, method), INDENT)

    text.__name__ = text.__qualname__ = method
    text.__doc__ = f"The statement as its block writes it (the emitter's ``{method}``)."
    return text


# one method per statement kind, named by the one rule (``emit.getitem(stmt)``,
# ``emit.del_(stmt)``), and the heads of the statements with bodies (whose
# bodies the template nests: ``emit.if_head(stmt)``): a kind's own methods
# above (``call``'s parts, the ``unbox`` block's function-wide text) are kept
for _method in [block_method(cast(Any, k).template) for k in STATEMENTS] + list(HEADS):
    if not hasattr(BlockText, _method):
        setattr(BlockText, _method, _statement_text(_method))
del _method


def _ir(node: Any, method: str) -> Any:
    """``node`` if it is an IR object (a dataclass instance), else a TypeError."""
    if isinstance(node, type) or not dataclasses.is_dataclass(node):
        raise TypeError(f"emit.{method}() takes an IR object, not {type(node).__name__}")
    return node

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

    def function_indent(self) -> str:
        """How deep the module's functions sit: in the binder, or at module level (vllm)."""
        return self._emitter.function_indent

    def _capture(self, method: Callable[..., Any], *args: Any) -> Code:
        """What ``method(*args)`` writes, followed by what it returns (a
        piece of a line: ``call_head``, ``call_expr``)."""
        emitter = self._emitter
        saved, emitter.out = emitter.out, []
        try:
            returned = method(*args)
            return Code("".join(emitter.out) + (returned or ""))
        finally:
            emitter.out = saved

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


def _forward(name: str, call: Callable[[Emitter, Any], Any], doc: str) -> Any:
    """A method of :class:`BlockText` named ``name``: ``call(emitter, node)``,
    ``node`` the IR object the template passes (none for a module block),
    its text as :class:`Code` — what the emitter writes, or returns."""
    if name in _MODULE_BLOCKS:

        def text(self: BlockText) -> Code:
            return self._capture(call, self._emitter, None)

    else:

        def text(self: BlockText, node: Any) -> Code:  # type: ignore[misc]
            return self._capture(call, self._emitter, _ir(node, name))

    text.__name__ = text.__qualname__ = name
    text.__doc__ = doc
    return text


def _calling(name: str, *extra: str) -> Callable[[Emitter, Any], Any]:
    """``emitter.<name>(node, *extra)``; ``emitter.<name>()`` for a module block."""

    def call(emitter: Emitter, node: Any) -> Any:
        method = getattr(emitter, name)
        return method() if node is None else method(node, *extra)

    return call


#: the module template's blocks: the emitter method of each name writes it
_MODULE_BLOCKS = ("header", "imports", "binder_signature", "bindings", "targets", "binder_return")
#: ``emit.<name>`` -> the emitter call that gives its text, and what it is:
#: the one list (no method written by hand per block)
_FORWARDS: dict[str, tuple[Callable[[Emitter, Any], Any], str]] = {
    **{name: (_calling(name), f"The ``{name}`` block's text.") for name in _MODULE_BLOCKS},
    "function": (
        _calling("function", ""),
        "The whole function as the shipped ``function.py.j2`` renders it.",
    ),
    "signature": (_calling("signature", ""), "The ``def`` line."),
    "unbox": (
        _calling("opening", INDENT),
        "The function's opening (a boxed function's unpacking), as the ``unbox`` block writes it.",
    ),
    "call_head": (_calling("call_head", INDENT), "What the ``call`` block writes first."),
    "call_else": (_calling("call_else", INDENT), "A second branch of the call, if any."),
    "call_tail": (_calling("call_tail"), "What follows the call expression."),
    "call_expr": (_calling("call_expr"), "The ``call_expr`` block: ``callee(args)``."),
}
# one method per statement kind, named by the one rule (``emit.getitem(stmt)``,
# ``emit.del_(stmt)``), and the heads of the statements with bodies (whose
# bodies the template nests: ``emit.if_head(stmt)``)
for _name in [block_method(cast(Any, k).template) for k in STATEMENTS] + list(HEADS):
    _doc = f"The statement as its block writes it (``{_name}``)."
    _FORWARDS.setdefault(_name, (_calling(_name, INDENT), _doc))
for _name, (_call, _doc) in _FORWARDS.items():
    if not hasattr(BlockText, _name):
        setattr(BlockText, _name, _forward(_name, _call, _doc))
del _name, _call, _doc


def _ir(node: Any, method: str) -> Any:
    """``node`` if it is an IR object (a dataclass instance), else a TypeError."""
    if isinstance(node, type) or not dataclasses.is_dataclass(node):
        raise TypeError(f"emit.{method}() takes an IR object, not {type(node).__name__}")
    return node

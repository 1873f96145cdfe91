"""IR expressions → Python source: the one place that writes them.

Templates place text; this module decides it. The emitter (the fast path)
writes with :class:`Writer` directly; the templates' filters
(:mod:`stitchgen.filters`) wrap the same methods. Every value a template
prints comes from one of those filters, or is a plain identifier or an int —
the environment's ``finalize`` refuses anything else, so no constant can ever
reach the source except through :func:`~stitchgen.literals.literal_source`.
This module imports no Jinja and no markupsafe.

How a binding is spelled depends on the calling convention: by its closure
name (``call_submod_1``) by default, or by index (``__vllm_submods__[0]``)
in the ``vllm`` variant. :class:`Writer` holds those spellings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .identifiers import checked, is_identifier
from .ir import (
    ConstRef,
    DictExpr,
    FunctionRef,
    GlobalRef,
    ListExpr,
    Literal,
    MethodRef,
    Name,
    Param,
    SliceExpr,
    SubmodRef,
    TargetRef,
    TupleExpr,
)
from .literals import literal_source

__all__ = [
    "Writer",
    "comment_source",
    "dotted_source",
    "name_items",
]


def _is_none(e: Any) -> bool:
    return isinstance(e, Literal) and e.value is None


class Writer:
    """Writes expressions for one calling convention.

    ``refs`` maps ``"submod"``, ``"const"`` and ``"function"`` to a format
    string with ``{name}`` and ``{index}``; a missing key means "by name".
    """

    __slots__ = ("refs",)

    def __init__(self, refs: Iterable[tuple[str, str]] = ()) -> None:
        self.refs: tuple[tuple[str, str], ...] = tuple(refs)

    def __repr__(self) -> str:
        return f"Writer(refs={self.refs!r})"

    @classmethod
    def for_refs(cls, refs: Mapping[str, str]) -> Writer:
        return cls(tuple(sorted(refs.items())))

    def _ref(self, kind: str, name: str, index: int) -> str:
        for key, fmt in self.refs:
            if key == kind:
                return fmt.format(name=name, index=index)
        return name

    # -- expressions ------------------------------------------------------

    def source(self, e: Any) -> str:
        """Python source for an IR expression or callee."""
        if isinstance(e, Name):
            return e.id
        if isinstance(e, Literal):
            return literal_source(e.value)
        if isinstance(e, SubmodRef):
            return self._ref("submod", e.name, e.index)
        if isinstance(e, ConstRef):
            return self._ref("const", e.name, e.index)
        if isinstance(e, FunctionRef):
            return self._ref("function", e.name, e.index)
        if isinstance(e, TargetRef):
            return self._ref("target", e.name, e.index)
        if isinstance(e, GlobalRef):
            if e.module == "builtins":
                return e.path
            return f"{e.module}.{e.path}" if e.path else e.module
        if isinstance(e, TupleExpr):
            if len(e.items) == 1:
                return f"({self.source(e.items[0])},)"
            return f"({', '.join(self.display_items(e))})"
        if isinstance(e, ListExpr):
            return f"[{', '.join(self.display_items(e))}]"
        if isinstance(e, DictExpr):
            return "{" + ", ".join(self.display_items(e)) + "}"
        if isinstance(e, SliceExpr):
            return f"slice({self._items((e.start, e.stop, e.step))})"
        if isinstance(e, MethodRef):
            if is_identifier(e.method):
                return f"{self.atom_source(e.receiver)}.{e.method}"
            return f"getattr({self.source(e.receiver)}, {literal_source(e.method)})"
        raise TypeError(f"cannot render {type(e).__name__} as an expression")

    def _items(self, items: Sequence[Any]) -> str:
        return ", ".join(self.source(x) for x in items)

    def atom_source(self, e: Any) -> str:
        """``e`` as something ``[...]``, ``.attr`` or ``(...)`` may follow."""
        text = self.source(e)
        return f"({text})" if isinstance(e, (Literal, SliceExpr)) else text

    def _subscript_item(self, e: Any) -> str:
        if isinstance(e, SliceExpr):
            start = "" if _is_none(e.start) else self.source(e.start)
            stop = "" if _is_none(e.stop) else self.source(e.stop)
            text = f"{start}:{stop}"
            return text if _is_none(e.step) else f"{text}:{self.source(e.step)}"
        return self.source(e)

    def subscript_source(self, index: Any) -> str:
        """The text between the brackets of ``obj[...]``: slices as ``a:b:c``,
        a tuple of two or more items without parentheses, ``...`` for Ellipsis."""
        if isinstance(index, TupleExpr) and len(index.items) > 1:
            return ", ".join(self._subscript_item(x) for x in index.items)
        return self._subscript_item(index)

    def argument_items(self, stmt: Any) -> list[str]:
        """A call's arguments, one source text each (see :meth:`arguments_source`)."""
        parts = [self.source(a) for a in stmt.args]
        odd = []
        for key, value in stmt.kwargs:
            if is_identifier(key):
                parts.append(f"{key}={self.source(value)}")
            else:
                odd.append(f"{literal_source(key)}: {self.source(value)}")
        if odd:
            parts.append("**{" + ", ".join(odd) + "}")
        return parts

    def arguments_source(self, stmt: Any) -> str:
        """``a, b, k=v`` for a call; keyword names that are not identifiers go
        through ``**{...}`` so they stay data."""
        return ", ".join(self.argument_items(stmt))

    def param_items(self, params: Sequence[Param]) -> list[str]:
        """Parameters, one source text each (``x``, ``y=2``, ``*rest``)."""
        out = []
        for p in params:
            text = p.kind + checked(p.name, "parameter")
            if p.default is not None:
                text += "=" + self.source(p.default)
            out.append(text)
        return out

    def params_source(self, params: Sequence[Param]) -> str:
        return ", ".join(self.param_items(params))

    def display_items(self, e: Any) -> list[str]:
        """The items of a tuple, list or dict display, one source text each."""
        if isinstance(e, DictExpr):
            return [f"{self.source(k)}: {self.source(v)}" for k, v in e.items]
        return [self.source(x) for x in e.items]


def name_items(items: Iterable[Any]) -> list[str]:
    """Identifiers, or the ``name`` of objects that have one, each checked."""
    out = []
    for item in items:
        out.append(checked(item if isinstance(item, str) else item.name))
    return out


def dotted_source(name: str) -> str:
    """A dotted module or attribute path, checked atom by atom."""
    return checked(name, dotted=True)


def comment_source(text: Any) -> str:
    """``text`` made safe for a one-line comment (newlines and controls escaped)."""
    return repr(str(text))[1:-1]

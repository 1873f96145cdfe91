"""The code's text: every expression (:class:`Writer`) and every line the
shipped templates write (:class:`Emitter` and its variants), written
without Jinja — the fast path, and the one source of that text. One module
in three sections: the expression writer, the emitter, the variants.

Where the shipped templates are in effect — the built-ins, or the
``profiled`` or ``vllm`` variant, with no template directory overriding
``module.py.j2`` or ``function.py.j2`` — rendering through Jinja would cost a
parse of the templates per process and a scoped block per statement; this
module writes the same text directly. :class:`Emitter` has a method per
template block (``header``, ``imports``, ``binder``, ``signature``, and one
per statement kind, named for the block the statement's class names by one
rule, :func:`~stitchgen.ir.block_method`: ``call``, ``getitem``,
``assign``, ``del_``, ``return_``, ``unbox``; ``call`` is built from
``call_head``, ``call_expr`` and ``call_tail``, as its block is), and
each shipped variant is a subclass that overrides the blocks whose text
differs (the variants, each one :class:`Variant` record, and :func:`emit`).
Expressions come from the same writer the templates' filters use
(:class:`Writer`). The shipped templates'
blocks call these same methods (the template variable ``emit``,
:class:`stitchgen.filters.BlockText`), so Jinja renders what it always did
and serves overrides only; a test renders the golden corpus and fuzzed
graphs both ways, for every shipped template set, and requires identical
text (it holds the templates' structure and whitespace to ``render``).

``Emitter(program, black=True)`` writes the code as black would format it
(:mod:`stitchgen.layout` splits the long lines), so ``format=True`` costs no
black run; a line outside the shapes ``layout`` knows raises
:class:`~stitchgen.layout.Unsure`, and the caller runs black instead.

The module runs past 800 lines for that reason: it is the one source of
the shipped templates' text, every statement kind's included, and the
fast path pays one import for all.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

from .conventions import CLOSURE, CONVENTIONS, VLLM, Convention
from .errors import TemplateError
from .identifiers import NotAnIdentifier, checked, is_identifier
from .ir import (
    ARITHMETIC,
    COMPARISONS,
    ERRORS,
    GRAD_MODE,
    STATEMENTS,
    TIE,
    BinOp,
    Compare,
    ConstRef,
    DictExpr,
    Function,
    FunctionRef,
    GlobalRef,
    ListExpr,
    Literal,
    MethodRef,
    Name,
    Param,
    Program,
    Size,
    SliceExpr,
    SubmodRef,
    TargetRef,
    TupleExpr,
    UnpackCall,
    block_method,
    iter_statements,
)
from .literals import literal_source
from .records import Record, record

__all__ = [
    "BUILTIN",
    "Emitter",
    "HEADER",
    "HEADS",
    "INDENT",
    "ProfiledEmitter",
    "VARIANTS",
    "Variant",
    "VllmEmitter",
    "Writer",
    "comment_source",
    "dotted_source",
    "emit",
    "emit_for",
    "variant_of",
    "name_items",
]


# ==========================================================================
# IR expressions → Python source: the one place that writes them.
#
# Templates place text; this module decides it. The emitter (the fast path)
# writes with :class:`Writer` directly; the templates' filters
# (:mod:`stitchgen.filters`) wrap the same methods. Every value a template
# prints comes from one of those filters, or is a plain identifier or an int —
# the environment's ``finalize`` refuses anything else, so no constant can ever
# reach the source except through :func:`~stitchgen.literals.literal_source`.
# This module imports no Jinja and no markupsafe.
#
# How a binding is spelled depends on the calling convention: by its closure
# name (``call_submod_1``) by default, or by index (``__vllm_submods__[0]``)
# in the ``vllm`` variant. :class:`Writer` holds those spellings.


#: how tightly an arithmetic operator binds (Python's order)
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "//": 2, "%": 2}


def _is_none(e: Any) -> bool:
    return isinstance(e, Literal) and e.value is None


class Writer:
    """Writes expressions for one calling convention.

    ``refs`` maps ``"submod"``, ``"const"`` and ``"function"`` to a format
    string with ``{name}`` and ``{index}``; a missing key means "by name".
    """

    __slots__ = ("refs",)

    def __init__(self, refs: Mapping[str, str] | None = None) -> None:
        self.refs: Mapping[str, str] = refs or {}

    def __repr__(self) -> str:
        return f"Writer(refs={dict(sorted(self.refs.items()))!r})"

    def _ref(self, kind: str, name: str, index: int) -> str:
        fmt = self.refs.get(kind)
        return name if fmt is None else fmt.format(name=name, index=index)

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
        if isinstance(e, (Compare, BinOp)):
            ops = COMPARISONS if isinstance(e, Compare) else ARITHMETIC
            if e.op not in ops:
                raise ValueError(f"{type(e).__name__} has no operator {e.op!r}: {sorted(ops)}")
            return f"{self._operand(e.left, e, 0)} {e.op} {self._operand(e.right, e, 1)}"
        if isinstance(e, Size):
            return f"{self.atom_source(e.value)}.size()[{int(e.dim)}]"
        raise TypeError(f"cannot render {type(e).__name__} as an expression")

    def _operand(self, e: Any, parent: Compare | BinOp, right: int) -> str:
        """``e`` as the left (``right`` 0) or right operand of ``parent``:
        bracketed where Python's precedence would read it otherwise (a
        comparison in anything; a sum in a product; a right operand of
        the same precedence)."""
        text = self.source(e)
        if isinstance(e, Compare):
            return f"({text})"
        if isinstance(e, BinOp) and isinstance(parent, BinOp):
            if _PRECEDENCE[e.op] - right >= _PRECEDENCE[parent.op]:
                return text
            return f"({text})"
        return text

    def _items(self, items: Sequence[Any]) -> str:
        return ", ".join(self.source(x) for x in items)

    def atom_source(self, e: Any) -> str:
        """``e`` as something ``[...]``, ``.attr`` or ``(...)`` may follow."""
        text = self.source(e)
        return f"({text})" if isinstance(e, (Literal, SliceExpr, Compare, BinOp)) else text

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


def unpacking(names: Sequence[str]) -> str:
    """Targets a value is unpacked into: ``a, b`` (``(a,)`` for one, as
    black writes it)."""
    return f"({names[0]},)" if len(names) == 1 else ", ".join(names)


def dotted_source(name: str) -> str:
    """A dotted module or attribute path, checked atom by atom."""
    return checked(name, dotted=True)


def comment_source(text: Any) -> str:
    """``text`` made safe for a one-line comment (newlines and controls escaped)."""
    return repr(str(text))[1:-1]


# ==========================================================================
# The emitter: the built-in templates' text, block by block.


#: the built-in ``header`` block
HEADER = "# Generated by stitchgen from an FX graph. Do not edit: regenerate.\n"

_OPENING = {TupleExpr: ("(", ")"), ListExpr: ("[", "]"), DictExpr: ("{", "}")}
#: one level of indentation
INDENT = "    "


def _where(stmt: Any) -> str:
    """A statement's source location as a trailing comment, or ``""``."""
    where = getattr(stmt, "where", "")
    return f"  # {comment_source(where)}" if where else ""


def _layout() -> Any:
    """:mod:`stitchgen.layout`, black's layout: imported for ``format=True``
    only (the compile path renders without it)."""
    from . import layout

    return layout


class Emitter:
    """The built-in templates (``module.py.j2``, ``function.py.j2``; the
    closure convention), block by block. One instance writes one program."""

    #: the ``header`` block's text
    header_text: ClassVar[str] = HEADER

    def __init__(
        self,
        program: Program,
        *,
        black: bool = False,
        writer: Writer | None = None,
        options: Mapping[str, Any] | None = None,
        kinds: Mapping[type, Callable[..., None]] | None = None,
        variant: str | None = None,
    ) -> None:
        self.program = program
        #: the template set it writes, as errors name it
        self.origin = f"the {variant} variant" if variant else "built-in"
        #: the writers of statement kinds of yours (``Templates(kinds=...)``)
        self.kinds = kinds or {}
        self.black = black
        #: black's layout (``layout.py``), where ``black`` asks for it
        self.layout: Any = _layout() if black else None
        self.writer = writer if writer is not None else Writer()
        #: the templates' globals (a variant may read one, as its template does)
        self.options = options or {}
        self.out: list[str] = []
        #: where the templates render (the Jinja path), what writes a body
        #: instead of this emitter: each statement through the templates'
        #: blocks, at ``indent`` (:meth:`statements`, the one entry)
        self.through: Callable[[Sequence[Any], str], str] | None = None
        #: the statement :meth:`call` writes, and its :meth:`call_parts`
        self.parts: tuple[Any, tuple[str, list[str]]] = (None, ("", []))

    # -- output --------------------------------------------------------------

    def render(self) -> str:
        """The whole module's source."""
        self.header()
        self.imports()
        self.out.append("\n\n")
        self.binder()
        return "".join(self.out)

    def line(self, text: str) -> None:
        """One line; in black's layout it must fit (else :class:`Unsure`)."""
        if self.black and not self.layout.fits(text):
            raise self.layout.Unsure(text)
        self.out.append(text + "\n")

    def wrapped(
        self,
        text: str,
        indent: str,
        head: str,
        items: Sequence[str],
        closing: str = ")",
        *,
        split: bool = True,
        **how: bool,
    ) -> None:
        """The line ``text`` (``head(items)``, or a shorter form of it); where
        it does not fit (:meth:`fits`), ``head(items)`` split as black splits
        it (:func:`stitchgen.layout.bracketed`, ``how`` its keywords), or
        ``Unsure`` where black's split is not known (``split=False``)."""
        if self.fits(text):
            self.out.append(text + "\n")
        elif not split:
            raise self.layout.Unsure(text)
        else:
            self.out.append(self.layout.bracketed(indent, head, "(", items, closing, **how))

    def fits(self, text: str) -> bool:
        """Is ``text`` one line as it is: always in the plain layout; in
        black's, where it fits in black's line length."""
        return not self.black or self.layout.fits(text)

    def comment(self, text: str) -> None:
        if self.black and text != text.rstrip():
            raise self.layout.Unsure(text)  # black strips trailing whitespace from comments
        self.out.append(text + "\n")

    def define(self, indent: str, name: str, params: list[str]) -> None:
        """``def name(params):``, split as black splits it."""
        text = f"{indent}def {name}({', '.join(params)}):"
        self.wrapped(text, indent, f"def {name}", params, "):", is_def=True)

    # -- module.py.j2 ----------------------------------------------------------

    def header(self) -> None:
        self.out.append(self.header_text)

    def imports(self) -> None:
        for module in self.program.imports:
            self.out.append(f"import {dotted_source(module)}\n")

    #: where the functions are defined: inside the binder (a variant whose
    #: functions are module-level has none, and its binder blocks write nothing)
    function_indent = INDENT

    def binder(self) -> None:
        """``binder_signature``, ``bindings``, ``targets``, ``functions``,
        ``binder_return``."""
        self.binder_signature()
        self.bindings()
        self.targets()
        indent, last = self.function_indent, len(self.program.functions) - 1
        for i, fn in enumerate(self.program.functions):
            self.function(fn, indent)
            if indent or not self.black:
                self.out.append("\n")
            elif i < last:  # black: two blank lines between top-level defs
                self.out.append("\n\n")
        self.binder_return()

    def binder_signature(self) -> None:
        program = self.program
        self.define("", checked(program.binder), name_items(program.submods + program.consts))

    def bindings(self) -> None:
        """A comment per binding (what it is)."""
        for s in self.program.submods:
            self.comment(f"    # {checked(s.name)}: submodule {comment_source(s.path)}")
        for c in self.program.consts:
            self.comment(f"    # {checked(c.name)}: {comment_source(c.description)}")

    def targets(self) -> None:
        """The call targets bound once, in the binder's body (closure cells),
        then the blank line black puts before the nested functions."""
        if self.program.targets:
            self.target_lines(INDENT)
            self.out.append("\n")

    def target_lines(self, indent: str) -> None:
        """``name = module.path`` for each call target bound once."""
        for t in self.program.targets:
            self.line(f"{indent}{checked(t.name)} = {self.writer.source(t.ref)}")

    def binder_return(self) -> None:
        self.out.append(f"    return {checked(self.program.name)}\n")

    # -- function.py.j2 --------------------------------------------------------

    def function(self, fn: Function, indent: str) -> None:
        """``signature``, ``unbox`` (:meth:`opening`), then ``body``
        (``decorators``, ``prologue`` and ``epilogue`` are empty in the
        shipped templates)."""
        self.signature(fn, indent)
        self.opening(fn, indent + INDENT)
        self.body(fn, indent + INDENT)

    def signature(self, fn: Function, indent: str) -> None:
        """The ``def`` line."""
        self.define(indent, checked(fn.name), self.writer.param_items(fn.params))

    def opening(self, fn: Function, indent: str) -> None:
        """What runs first — the ``unbox`` block of ``function.py.j2``: the
        statements that open the body (:attr:`~stitchgen.ir.Function.opening`:
        a boxed function's unpacking of its list, and the list emptied);
        nothing for a plain function."""
        self.statements(fn.opening, indent)

    def unbox(self, stmt: Any, indent: str) -> None:
        """``a, b = args`` and ``args.clear()`` (an :class:`~stitchgen.ir.Unbox`)."""
        box = checked(stmt.box)
        if stmt.targets:
            targets = name_items(stmt.targets)
            head, many = f"{indent}{unpacking(targets)} = ", len(targets) > 1
            wraps = many and self.black and self.layout.fits(head + "(")
            if wraps and not self.layout.fits(head + box):  # black wraps the value in ()
                self.out.append(f"{head}(\n{indent}    {box}\n{indent})\n")
            else:  # ... or it explodes the targets
                closing = f") = {box}"
                self.wrapped(head + box, indent, "", targets, closing, split=many, display=True)
        self.line(f"{indent}{box}.clear()")

    def body(self, fn: Function, indent: str) -> None:
        """The ``body`` block: the statements after the opening."""
        self.statements(fn.statements, indent)

    def statements(self, body: Iterable[Any], indent: str) -> None:
        """Each statement of ``body`` (a function's, or a nested one: a
        statement that holds a body writes it with this) at ``indent``: the
        one entry every body is written through. On the Jinja path
        (:attr:`through`), through the templates' blocks, so a block of
        yours (``before_call``) reaches a statement at any depth, inside a
        kind of yours or a variant's method too."""
        if self.through is not None:
            self.out.append(self.through(tuple(body), indent))
        else:
            self.write(body, indent)

    def write(self, body: Iterable[Any], indent: str) -> None:
        """Each statement of ``body`` by this emitter's method for its kind."""
        # the class's methods, as plain functions: bound methods kept on the
        # instance would tie it (and the program) into a reference cycle
        methods = _METHODS.get(type(self))
        if methods is None:
            methods = _METHODS[type(self)] = {}
        for stmt in body:
            method = methods.get(type(stmt))
            if method is None:
                method = self.kinds.get(type(stmt)) or _method_for(self, type(stmt))
                if type(stmt) in _IR_KINDS:  # a kind of yours is this emitter's own
                    methods[type(stmt)] = method
            method(self, stmt, indent)

    def statement(self, stmt: Any, indent: str) -> None:
        """One statement, by the method its class's block names
        (:func:`~stitchgen.ir.block_method`: ``getitem`` for a ``GetItem``,
        ``del_`` for a ``Del``); a kind with no such method is a
        :class:`TemplateError`, never nothing."""
        self.write((stmt,), indent)

    def call(self, stmt: Any, indent: str) -> None:
        """``target = callee(arguments)``, as the ``call`` block writes it:
        ``call_head``, ``call_expr``, ``call_tail``; where a variant writes
        a second branch (``call_else``), that branch's head with the same
        expression and tail. A head may open lines before its own."""
        callee, items = parts = self.call_parts(stmt)
        self.parts = (stmt, parts)  # call_expr's, for this statement (computed once)
        expr, tail = self.call_expr(stmt), self.call_tail(stmt)
        head, other = self.call_head(stmt, indent), self.call_else(stmt, indent)
        text = head + expr + tail
        if not other and "\n" not in head and self.fits(text):  # one line, as most are
            self.out.append(text + "\n")
            return
        split = not ("(" in callee or "[" in callee or tail)  # (else black's split is unknown)
        for branch in filter(None, (head, other)):
            *opening, last = branch.split("\n")
            for line in opening:
                self.line(line)
            inner = last[: len(last) - len(last.lstrip())]
            self.wrapped(last + expr + tail, inner, last[len(inner) :] + callee, items, split=split)

    def call_tail(self, stmt: Any) -> str:
        """What the ``call`` block writes after ``call_expr``: the source
        location comment (``source_lines``), or nothing."""
        return _where(stmt)

    def call_head(self, stmt: Any, indent: str) -> str:
        """What the ``call`` block writes before ``call_expr``: ``target = ``
        (an :class:`~stitchgen.ir.UnpackCall`: ``a, b = ``)."""
        return f"{indent}{self.assigned(stmt)} = "

    def assigned(self, stmt: Any) -> str:
        """The left of a call's ``=``: its target, or the targets an
        :class:`~stitchgen.ir.UnpackCall` unpacks into (``(a,)`` for one,
        as black writes it)."""
        if type(stmt) is not UnpackCall:
            return checked(stmt.target)
        return unpacking(name_items(stmt.targets))

    def call_else(self, stmt: Any, indent: str) -> str:
        """A second branch of the call, before its ``call_expr`` (the
        ``profiled`` variant's plain branch; none here)."""
        return ""

    def call_expr(self, stmt: Any) -> str:
        """The ``call_expr`` block: ``callee(arguments)``."""
        callee, items = self.parts[1] if self.parts[0] is stmt else self.call_parts(stmt)
        return f"{callee}({', '.join(items)})"

    def call_parts(self, stmt: Any) -> tuple[str, list[str]]:
        """The callee's source and the argument items."""
        return self.writer.source(stmt.callee), self.writer.argument_items(stmt)

    def getitem(self, stmt: Any, indent: str) -> None:
        w = self.writer
        obj, index = w.atom_source(stmt.obj), w.subscript_source(stmt.index)
        self.line(f"{indent}{checked(stmt.target)} = {obj}[{index}]{_where(stmt)}")

    def assign(self, stmt: Any, indent: str) -> None:
        self.value(indent, f"{checked(stmt.target)} = ", stmt.value)

    def del_(self, stmt: Any, indent: str) -> None:
        """``del names`` (the ``del`` block)."""
        names = name_items(stmt.names)
        text = f"{indent}del {', '.join(names)}"
        self.wrapped(text, indent, "del ", names, split=len(names) > 1, display=True)

    def return_(self, stmt: Any, indent: str) -> None:
        """``return value`` (the ``return`` block)."""
        self.value(indent, "return ", stmt.value)

    # -- control flow: statements with bodies, and what only they hold --------
    # (a head writes a statement's lines before a body; the Jinja path nests
    # the bodies through the templates' blocks: :data:`HEADS`)

    def nested(self, body: Sequence[Any], indent: str) -> None:
        """A nested body, one level in from ``indent`` (``pass`` for none)."""
        if body:
            self.statements(body, indent + INDENT)
        else:
            self.line(f"{indent}{INDENT}pass")

    def if_(self, stmt: Any, indent: str) -> None:
        """``if test:``, its body, and ``else:`` and its own (the ``if`` block)."""
        self.if_head(stmt, indent)
        self.nested(stmt.body, indent)
        if stmt.orelse:
            self.else_head(stmt, indent)
            self.nested(stmt.orelse, indent)

    def if_head(self, stmt: Any, indent: str) -> None:
        self.line(f"{indent}if {self.writer.source(stmt.test)}:")

    def else_head(self, stmt: Any, indent: str) -> None:
        """``else:``, where the ``if`` has an ``orelse`` (else nothing)."""
        if stmt.orelse:
            self.line(f"{indent}else:")

    def while_(self, stmt: Any, indent: str) -> None:
        """``while True:`` and the body (the ``while`` block)."""
        self.while_head(stmt, indent)
        self.nested(stmt.body, indent)

    def while_head(self, stmt: Any, indent: str) -> None:
        """``while True:``, after the carried values' tie (where ``tied``)."""
        if stmt.tied:  # the carried values it names first, then the other operands
            count, most = 0, min(len(stmt.tied), len(stmt.carried))
            while count < most and stmt.tied[count] == Name(stmt.carried[count]):
                count += 1
            self.tie(stmt.carried[:count], stmt.tied[count:], indent, copy=stmt.copy)
        self.line(f"{indent}while True:")

    def break_(self, stmt: Any, indent: str) -> None:
        """``if not test: break`` (the ``break`` block)."""
        inner, test = indent + INDENT, self.writer.atom_source(stmt.test)
        if stmt.check:  # the test through the operator's refusal
            test = f"{self.writer.atom_source(stmt.check[0])}({self.writer.source(stmt.test)})"
        self.line(f"{indent}if not {test}:")
        if stmt.copies:  # the loop ran no iteration: copies, as while_loop's
            self.line(f"{inner}if {self.writer.atom_source(stmt.first[0])}:")
            for name in map(self.writer.source, stmt.copies):
                self.line(f"{inner}{INDENT}{name} = {name}.clone()")
        self.line(f"{inner}break")

    def check(self, stmt: Any, indent: str) -> None:
        """``if not test:`` / ``raise error(message)`` (the ``check`` block)."""
        if stmt.error not in ERRORS:
            raise ValueError(f"a Check raises one of {sorted(ERRORS)}, not {stmt.error!r}")
        self.line(f"{indent}if not {self.writer.source(stmt.test)}:")
        inner, head, message = indent + INDENT, f"raise {stmt.error}", literal_source(stmt.message)
        self.wrapped(f"{inner}{head}({message})", inner, head, [message])

    def rebind(self, stmt: Any, indent: str) -> None:
        """``a, b = x, y`` (``a = x`` for one: the ``rebind`` block)."""
        head = f"{', '.join(name_items(stmt.targets))} = "
        if len(stmt.values) == 1:
            self.value(indent, head, stmt.values[0])
        else:
            items = [self.writer.source(v) for v in stmt.values]
            text = f"{indent}{head}{', '.join(items)}"
            plain = all(type(v) in (Name, Literal) for v in stmt.values)  # (else: black's unknown)
            self.wrapped(text, indent, head, items, split=plain, display=True)
        if stmt.tied:
            self.tie(stmt.targets, stmt.tied, indent)

    def tie(
        self, targets: Sequence[str], operands: Sequence[Any], indent: str, copy: bool = False
    ) -> None:
        """``targets`` tied to ``operands`` for their gradients, under grad
        mode only (:attr:`~stitchgen.ir.Rebind.tied`); ``copy``: copied (a
        loop's carried values: :func:`stitchgen.runtime.tie`)."""
        if not targets:
            return  # (nothing to tie)
        w, inner = self.writer, indent + INDENT
        self.line(f"{indent}if {w.source(GRAD_MODE)}():")
        names = name_items(targets)
        head = f"{unpacking(names)} = {w.source(TIE)}"
        items = [*names, *map(w.source, operands), f"outputs={len(names)}"]
        if copy:
            items.append("copy=True")
        self.wrapped(f"{inner}{head}({', '.join(items)})", inner, head, items)

    def value(self, indent: str, head: str, value: object) -> None:
        """``head`` and ``value``; a display that does not fit split as
        black splits it."""
        text = f"{indent}{head}{self.writer.source(value)}"
        brackets = _OPENING.get(type(value))
        if brackets is None or self.fits(text):
            self.line(text)
            return
        items = self.writer.display_items(value)
        one_tuple = type(value) is TupleExpr and len(items) == 1
        opening, closing = brackets
        self.out.append(
            self.layout.bracketed(
                indent, head, opening, items, closing, display=True, one_tuple=one_tuple
            )
        )


#: the methods that write a statement's lines around its bodies (the
#: templates' ``emit.if_head(stmt)``; ``nested(stmt.body)`` writes the bodies)
HEADS = ("if_head", "else_head", "while_head")

#: by emitter class, the method (a plain function) that writes each of the
#: IR's statement classes (a cache, safe to share: filled once per pair)
_METHODS: dict[type, dict[type, Callable[[Any, Any, str], None]]] = {}
_IR_KINDS = frozenset(STATEMENTS)


def _method_for(emitter: Emitter, kind: type) -> Callable[[Any, Any, str], None]:
    """The method of ``emitter`` that writes a ``kind`` statement of the
    IR's (or a subclass of one): named for the block the class names
    (:func:`~stitchgen.ir.block_method`); for any other kind (one of yours
    not registered with ``Templates(kinds=...)``), a :class:`TemplateError`
    naming it."""
    block = getattr(kind, "template", None)
    name = block_method(block) if isinstance(block, str) else ""
    ours = kind in _IR_KINDS or issubclass(kind, STATEMENTS)  # a subclass of yours: as its base
    method = getattr(type(emitter), name, None) if name and ours else None
    if method is None:
        raise TemplateError(
            f"function.py.j2 ({emitter.origin}): no block renders a {kind.__name__} statement "
            f"(its class names the block {block!r}; a kind of yours is written by the function "
            "Templates(kinds={...}) gives it, through the generic statement block)",
            template="function.py.j2",
        )
    found: Callable[[Any, Any, str], None] = method
    return found


# ==========================================================================
# The shipped template variants' emitters and the registry that picks one:
# :class:`ProfiledEmitter` (``profiled``), :class:`VllmEmitter` (``vllm``),
# each overriding the blocks of :class:`~stitchgen.emitter.Emitter` (the
# built-ins) whose text differs; :func:`emit` writes a program with the
# emitter of its template set.


class ProfiledEmitter(Emitter):
    """The ``profiled`` variant: a function that calls pieces checks once
    per call whether a profiler is on (``profiling``); then each piece call
    runs inside ``torch.profiler.record_function("<node>")``, or plainly —
    nothing but a branch when no profiler runs. ``torch`` imported."""

    def imports(self) -> None:
        super().imports()
        if "torch" not in self.program.imports:
            self.out.append("import torch\n")

    def opening(self, fn: Function, indent: str) -> None:
        """The unpacking, then — in a function that calls a piece — the one
        check per call of whether a profiler is on."""
        super().opening(fn, indent)
        if any(getattr(stmt, "is_piece", False) for stmt in iter_statements(fn.body)):
            self.line(f"{indent}profiling = torch.autograd._profiler_enabled()")

    def call_head(self, stmt: Any, indent: str) -> str:
        """A piece call: its profiled branch, up to its call expression."""
        if not stmt.is_piece:
            return super().call_head(stmt, indent)
        inner, node = indent + INDENT, literal_source(stmt.node)
        ranged = f"{indent}if profiling:\n{inner}with torch.profiler.record_function({node}):\n"
        return ranged + super().call_head(stmt, inner + INDENT)

    def call_else(self, stmt: Any, indent: str) -> str:
        """A piece call: its plain branch, up to its call expression."""
        if not stmt.is_piece:
            return ""
        return f"{indent}else:\n{super().call_head(stmt, indent + INDENT)}"


class VllmEmitter(Emitter):
    """The ``vllm`` variant: module-level functions; the entry (unless the
    option ``vllm_entry_submods`` is false) and every inlined piece that
    calls a bound piece take ``*, __vllm_submods__`` and are passed it."""

    header_text = "# Generated by stitchgen (vllm variant). Do not edit: regenerate.\n"

    def __init__(self, program: Program, **kwargs: Any) -> None:
        super().__init__(program, **kwargs)
        self.needs_submods = functions_calling_submods(program)

    function_indent = ""  # module-level functions: no binder

    def binder_signature(self) -> None:
        pass

    def bindings(self) -> None:
        pass

    def binder_return(self) -> None:
        pass

    def targets(self) -> None:
        """The call targets bound once, at module level (globals: vLLM's
        ``compile_execution_fn`` runs the module as it is)."""
        if self.program.targets:
            if self.black and self.out[-1:] == ["\n\n"]:
                self.out[-1] = "\n"  # black: one blank line from imports to an assignment
            self.target_lines("")
            self.out.append("\n\n" if self.black else "\n")

    def signature(self, fn: Function, indent: str) -> None:
        params = self.writer.param_items(fn.params)
        entry = fn.name == self.program.name and self.options.get("vllm_entry_submods", True)
        if fn.name in self.needs_submods or entry:
            params = keyword_only(fn.params, params, VLLM.submods_param)
        self.define(indent, checked(fn.name), params)

    def call_parts(self, stmt: Any) -> tuple[str, list[str]]:
        callee, items = super().call_parts(stmt)
        if stmt.inlined in self.needs_submods:
            items.append(f"{VLLM.submods_param}={VLLM.submods_param}")
        return callee, items


def functions_calling_submods(program: Program) -> frozenset[str]:
    """Names of the functions that call a bound submodule, directly or
    through an inlined function, at any depth of their bodies (the vllm
    convention passes ``__vllm_submods__`` to these)."""
    direct: dict[str, set[str]] = {}
    needs: set[str] = set()
    for fn in program.functions:
        calls = direct.setdefault(fn.name, set())
        for stmt in iter_statements(fn.body):
            callee = getattr(stmt, "callee", None)
            if isinstance(callee, SubmodRef):
                needs.add(fn.name)
            elif isinstance(callee, FunctionRef):
                calls.add(callee.name)
    for fn in program.functions:  # callees come first: one ordered sweep suffices
        if direct[fn.name] & needs:
            needs.add(fn.name)
    return frozenset(needs)


def keyword_only(params: Sequence[Param], items: list[str], name: str) -> list[str]:
    """``items`` (the source of ``params``) with the keyword-only parameter
    ``name`` added where Python allows it: after ``*args`` (or a bare ``*``),
    before ``**kwargs``.

    >>> keyword_only([Param("x"), Param("kw", kind="**")], ["x", "**kw"], "s")
    ['x', '*', 's', '**kw']
    """
    kinds = [p.kind for p in params]
    at = kinds.index("**") if "**" in kinds else len(items)
    star = [] if "*" in kinds else ["*"]
    return [*items[:at], *star, name, *items[at:]]


@record
class Variant(Record):
    """A template set, in one record: its ``name`` (None: the built-ins),
    the ``convention`` its code uses (one of
    :data:`~stitchgen.conventions.CONVENTIONS`: ``load`` links code by it),
    the ``emitter`` class that writes its templates' text without Jinja,
    its templates' ``folder`` (searched after yours, before the built-ins,
    and reachable as ``stitchgen/variants/<name>/``; empty for a shipped
    one: ``templates/variants/<name>/``), and the ``locals`` its code
    defines itself (no identifier may take them). A variant of your own is
    its record, its templates and its test: ``Templates(variant=record)``.
    """

    name: str | None
    convention: Convention = CLOSURE
    emitter: type[Emitter] = Emitter
    folder: str = ""
    locals: tuple[str, ...] = ()

    def __init__(
        self,
        name: str | None,
        convention: Convention = CLOSURE,
        emitter: type[Emitter] = Emitter,
        folder: str | os.PathLike[str] = "",
        locals: Sequence[str] = (),
    ) -> None:
        if name is not None and not is_identifier(name):
            raise ValueError(f"a variant's name is an identifier, not {name!r}")
        if convention not in CONVENTIONS.values():
            raise ValueError(f"variant {name!r}: its convention is one of {sorted(CONVENTIONS)}")
        if not (isinstance(emitter, type) and issubclass(emitter, Emitter)):
            raise TypeError(
                f"variant {name!r}: its emitter is an Emitter subclass, not {emitter!r}"
            )
        self.name = name  # each field set once (Record)
        self.convention = convention
        self.emitter = emitter
        self.folder = os.fspath(folder)
        self.locals = tuple(locals)


#: the built-in templates (``templates/``), as a variant
BUILTIN = Variant(None)
#: the shipped template sets (``templates/variants/<name>/``), by name
VARIANTS: Mapping[str, Variant] = MappingProxyType(
    {
        "profiled": Variant("profiled", CLOSURE, ProfiledEmitter, locals=("profiling",)),
        "vllm": Variant("vllm", VLLM, VllmEmitter),
    }
)


def variant_of(variant: str | Variant | None) -> Variant:
    """The template set ``variant`` stands for: a record as it is, None
    the built-ins, a string a shipped set's name (else a ValueError)."""
    if isinstance(variant, Variant):
        return variant
    if variant is None:
        return BUILTIN
    found = VARIANTS.get(variant) if isinstance(variant, str) else None
    if found is None:
        raise ValueError(f"unknown template variant {variant!r}; shipped: {sorted(VARIANTS)}")
    return found


def emit_for(
    program: Program,
    variant: str | Variant | None = None,
    writer: Writer | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    black: bool = False,
    kinds: Mapping[type, Callable[..., None]] | None = None,
) -> Emitter:
    """The emitter that writes ``program`` as the template set ``variant``
    does (the templates' ``emit`` wraps one), with the writers of ``kinds``
    of yours."""
    chosen = variant_of(variant)
    return chosen.emitter(
        program, black=black, writer=writer, options=options, kinds=kinds, variant=chosen.name
    )


def emit(
    program: Program,
    *,
    black: bool = False,
    variant: str | Variant | None = None,
    writer: Writer | None = None,
    options: Mapping[str, Any] | None = None,
    kinds: Mapping[type, Callable[..., None]] | None = None,
) -> str:
    """``program``'s source as the shipped templates (``variant``) render it;
    with ``black=True``, laid out as black formats it (or :class:`Unsure`);
    ``kinds``: the writers of statement kinds of yours.

    >>> import torch.fx as fx, stitchgen
    >>> print(emit(stitchgen.lower(fx.symbolic_trace(lambda x: x + 1))), end="")
    # Generated by stitchgen from an FX graph. Do not edit: regenerate.
    import operator
    <BLANKLINE>
    <BLANKLINE>
    def bind():
        operator_add = operator.add
    <BLANKLINE>
        def execution_fn(x):
            add = operator_add(x, 1)
            del x
            return add
    <BLANKLINE>
        return execution_fn
    """
    emitter = emit_for(program, variant, writer, options, black=black, kinds=kinds)
    try:
        return emitter.render()
    except NotAnIdentifier as exc:  # a name the filters would refuse; anything else is a bug
        raise TemplateError(
            f"module.py.j2 ({emitter.origin}): {exc}", template="module.py.j2"
        ) from exc

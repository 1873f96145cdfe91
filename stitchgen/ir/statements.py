"""The IR's statements (assign, call, unpacked call, getitem, del, return)
and the program around them: parameters, functions, the declarations of
bindings, constants and targets, and :class:`Program`."""

from __future__ import annotations

import keyword
import typing
from dataclasses import field
from typing import Any, ClassVar

from ..records import record
from .nodes import (
    CONSUMES,
    DELETES,
    EXPR,
    EXPRS,
    KWARGS,
    TARGET,
    TARGETS,
    Callee,
    Expr,
    FunctionRef,
    GlobalRef,
    Node,
    SubmodRef,
)

# --------------------------------------------------------------------------
# statements


def block_method(block: str) -> str:
    """The emitter method, and ``emit``'s, that writes a statement whose
    class names the template block ``block`` (``template: ClassVar[str]``):
    the block's own name, with ``_`` appended where it is a keyword — the
    one rule from a statement kind to its code, as sqlglot derives
    ``<key>_sql``.

    >>> block_method("getitem"), block_method("del"), block_method("return")
    ('getitem', 'del_', 'return_')
    """
    return block + "_" if keyword.iskeyword(block) else block


@record
class Assign(Node):
    """``target = value``"""

    target: str = field(metadata=TARGET)
    value: Expr = field(metadata=EXPR)
    template: ClassVar[str] = "assign"  # the template block that renders it

    def __init__(self, target: str, value: Expr) -> None:
        d = self.__dict__
        d["target"] = target
        d["value"] = value


class Calling:
    """What the call statements (:class:`Call`, :class:`UnpackCall`) tell
    about their callee."""

    __slots__ = ()
    callee: Callee

    @property
    def inlined(self) -> str | None:
        """The name of the inlined function called, if that is the callee."""
        return self.callee.name if isinstance(self.callee, FunctionRef) else None

    @property
    def is_piece(self) -> bool:
        """Does this call a piece (a child module, inlined or bound)?"""
        return isinstance(self.callee, (SubmodRef, FunctionRef))


@record
class Call(Calling, Node):
    """``target = callee(*args, **kwargs)``; ``node`` is the FX node's name;
    ``where`` the user's source line it came from (``model.py:42 in
    forward``; with ``source_lines=True``), written as a trailing comment."""

    target: str = field(metadata=TARGET)
    callee: Callee = field(metadata=EXPR)
    args: tuple[Expr, ...] = field(default=(), metadata=EXPRS)
    kwargs: tuple[tuple[str, Expr], ...] = field(default=(), metadata=KWARGS)
    node: str = ""
    where: str = ""
    template: ClassVar[str] = "call"

    def __init__(
        self,
        target: str,
        callee: Callee,
        args: tuple[Expr, ...] = (),
        kwargs: tuple[tuple[str, Expr], ...] = (),
        node: str = "",
        where: str = "",
    ) -> None:
        d = self.__dict__
        d["target"] = target
        d["callee"] = callee
        d["args"] = args
        d["kwargs"] = kwargs
        d["node"] = node
        d["where"] = where


@record
class UnpackCall(Calling, Node):
    """``targets[0], targets[1], ... = callee(*args, **kwargs)``: a call whose
    result, a tuple of exactly ``len(targets)`` items, is unpacked into
    locals (``(t,) = ...`` for one) — what a call of an inlined piece and
    one getitem per item of its result are lowered to
    (``build_program(..., unpack=True)``); the ``call`` block renders it.
    ``node`` and ``where`` as for :class:`Call`."""

    targets: tuple[str, ...] = field(metadata=TARGETS)
    callee: Callee = field(metadata=EXPR)
    args: tuple[Expr, ...] = field(default=(), metadata=EXPRS)
    kwargs: tuple[tuple[str, Expr], ...] = field(default=(), metadata=KWARGS)
    node: str = ""
    where: str = ""
    template: ClassVar[str] = "call"

    def __init__(
        self,
        targets: tuple[str, ...],
        callee: Callee,
        args: tuple[Expr, ...] = (),
        kwargs: tuple[tuple[str, Expr], ...] = (),
        node: str = "",
        where: str = "",
    ) -> None:
        d = self.__dict__
        d["targets"] = targets
        d["callee"] = callee
        d["args"] = args
        d["kwargs"] = kwargs
        d["node"] = node
        d["where"] = where


@record
class GetItem(Node):
    """``target = obj[index]``; ``where`` as for :class:`Call`."""

    target: str = field(metadata=TARGET)
    obj: Expr = field(metadata=EXPR)
    index: Expr = field(metadata=EXPR)
    where: str = ""
    template: ClassVar[str] = "getitem"

    def __init__(self, target: str, obj: Expr, index: Expr, where: str = "") -> None:
        d = self.__dict__
        d["target"] = target
        d["obj"] = obj
        d["index"] = index
        d["where"] = where


@record
class Del(Node):
    """``del names...`` — emitted by the liveness pass."""

    names: tuple[str, ...] = field(metadata=DELETES)
    template: ClassVar[str] = "del"

    def __init__(self, names: tuple[str, ...]) -> None:
        self.__dict__["names"] = names


@record
class Return(Node):
    """``return value``"""

    value: Expr = field(metadata=EXPR)
    template: ClassVar[str] = "return"

    def __init__(self, value: Expr) -> None:
        self.__dict__["value"] = value


@record
class Unbox(Node):
    """``targets[0], targets[1], ... = box`` then ``box.clear()``: the
    boxed-inputs convention (Inductor's ``call(args)``). The function takes
    one list, ``box``; this statement, which opens its body, takes the inputs
    from it and empties it, so the caller's list does not keep them alive.
    It is the list's last use: it *consumes* ``box`` (:func:`deletes` names
    it, and no ``del`` is written for it). The ``unbox`` block renders it."""

    targets: tuple[str, ...] = field(metadata=TARGETS)
    box: str = field(metadata=CONSUMES)
    template: ClassVar[str] = "unbox"

    def __init__(self, targets: tuple[str, ...], box: str) -> None:
        d = self.__dict__
        d["targets"] = targets
        d["box"] = box


Stmt = Assign | Call | UnpackCall | GetItem | Del | Return | Unbox
#: what a function's body holds after its opening (:attr:`Function.statements`)
BodyStmt = Assign | Call | UnpackCall | GetItem | Del | Return

#: every statement class, from the ``Stmt`` union
STATEMENTS: tuple[type, ...] = typing.get_args(Stmt)

# --------------------------------------------------------------------------
# program


@record
class Param(Node):
    """A parameter. ``kind`` is ``""``, ``"*"`` or ``"**"``; ``keyword`` is the
    name callers pass it by (the FX placeholder target)."""

    name: str
    default: Expr | None = None
    kind: str = ""
    keyword: str = ""

    def __init__(
        self, name: str, default: Expr | None = None, kind: str = "", keyword: str = ""
    ) -> None:
        d = self.__dict__
        d["name"] = name
        d["default"] = default
        d["kind"] = kind
        d["keyword"] = keyword


@record
class Function(Node):
    """A function of the program: its name, parameters and body."""

    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    #: where the function came from: "" for the root graph, else the
    #: qualified name of the inlined child module.
    origin: str = ""

    def __init__(
        self,
        name: str,
        params: tuple[Param, ...],
        body: tuple[Stmt, ...],
        origin: str = "",
    ) -> None:
        d = self.__dict__
        d["name"] = name
        d["params"] = params
        d["body"] = body
        d["origin"] = origin

    @property
    def opening(self) -> tuple[Stmt, ...]:
        """The statements that open the body — a boxed function's
        :class:`Unbox` — which the ``unbox`` block renders."""
        count = 0
        for stmt in self.body:
            if type(stmt) is not Unbox:
                break
            count += 1
        return self.body[:count]

    @property
    def statements(self) -> tuple[BodyStmt, ...]:
        """The body after its :attr:`opening` (what the ``body`` block
        renders: no :class:`Unbox`, which only opens a function)."""
        return self.body[len(self.opening) :]  # type: ignore[return-value]


@record
class SubmodDecl(Node):
    """A child called through a binding; ``path`` is its qualified name in
    the root module (the key users bind it by). ``inlined`` marks a child
    that is listed but inlined (the vllm convention lists every child; the
    code never calls an inlined one through its binding)."""

    name: str
    path: str
    inlined: bool = False

    def __init__(self, name: str, path: str, inlined: bool = False) -> None:
        d = self.__dict__
        d["name"] = name
        d["path"] = path
        d["inlined"] = inlined


@record
class ConstDecl(Node):
    """A lifted constant; ``description`` says what it is, for readers."""

    name: str
    description: str

    def __init__(self, name: str, description: str) -> None:
        d = self.__dict__
        d["name"] = name
        d["description"] = description


@record
class TargetDecl(Node):
    """A call target bound once under ``name``: ``name = <ref>`` where the
    module is bound (the binder's body; module level for a convention
    without a binder), so a call reads one name instead of following
    ``torch.ops.aten.mm.default`` every time."""

    name: str
    ref: GlobalRef

    def __init__(self, name: str, ref: GlobalRef) -> None:
        d = self.__dict__
        d["name"] = name
        d["ref"] = ref


@record
class Program(Node):
    """A module: imports, a binder function whose parameters are the
    submodule and constant bindings, and the functions defined inside it.
    ``functions[-1]`` is the entry point (``name``)."""

    name: str
    binder: str
    imports: tuple[str, ...]
    submods: tuple[SubmodDecl, ...]
    consts: tuple[ConstDecl, ...]
    functions: tuple[Function, ...]
    #: extra names no identifier may take (modules a template imports, say)
    reserved: tuple[str, ...] = ()
    const_values: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    #: call targets bound once (the ``targets`` pass fills it)
    targets: tuple[TargetDecl, ...] = ()
    #: the child object the lowering found for each of ``submods`` (None for
    #: one named opaque: its caller binds it); beside the program, as
    #: ``const_values``: never compared, never in the JSON
    submod_values: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    def __init__(
        self,
        name: str,
        binder: str,
        imports: tuple[str, ...],
        submods: tuple[SubmodDecl, ...],
        consts: tuple[ConstDecl, ...],
        functions: tuple[Function, ...],
        reserved: tuple[str, ...] = (),
        const_values: tuple[Any, ...] = (),
        targets: tuple[TargetDecl, ...] = (),
        submod_values: tuple[Any, ...] = (),
    ) -> None:
        d = self.__dict__
        d["name"] = name
        d["binder"] = binder
        d["imports"] = imports
        d["submods"] = submods
        d["consts"] = consts
        d["functions"] = functions
        d["reserved"] = reserved
        d["const_values"] = const_values
        d["targets"] = targets
        d["submod_values"] = submod_values

    @property
    def entry(self) -> Function:
        return self.functions[-1]

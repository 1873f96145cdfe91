"""The program that stitchgen emits, as plain immutable dataclasses.

``lowering`` builds a :class:`Program` from an FX graph, the passes
(:mod:`stitchgen.passes`) rewrite it, ``rendering`` writes it as Python.
Every node is plain data: printable, comparable, hashable and JSON
round-trippable (:func:`to_json`, :func:`from_json`); the lifted constant
objects travel beside the program (``Program.const_values``), never inside.
Each class is a :class:`~stitchgen.records.Record` declared ``@record`` (see
there why its ``__init__`` is written out).

A statement class names its block (``template``: the emitter method and the
``function.py.j2`` block, :func:`block_method`), and each field says what it
holds (``field(metadata={"role": ...})``: the roles below). Which classes
hold bodies is read from those fields, for the IR's classes and yours alike;
``If`` and ``While`` are the IR's own (``torch.cond`` and ``while_loop``
lowered as code).
One walker reads the roles — :func:`map_expr`, :func:`map_stmt`,
:func:`map_bodies`, :func:`reads`, :func:`writes`, :func:`iter_statements`
— so a field added to a class is carried by every pass, and a statement
nothing changed comes back as the very same object. :func:`verify` checks a
program's invariants (the passes' contract).

The classes and their walker change together, so they share one module,
past 800 lines for that reason; ``verifier`` and ``serialization`` are
imported when first used (off the compile path).
"""

from __future__ import annotations

import dataclasses
import importlib
import keyword
import operator
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import field
from typing import Any, ClassVar

from ..conventions import PRIMITIVE_TYPES, Linkage
from ..records import BODY_ROLES, SCHEMAS, Record, Schema, record, schema_of

# ==========================================================================
# the base class and the expressions

# what a field holds, for the walker (``field(metadata=...)``); a field
# without a role is plain information the walker leaves alone
EXPR = {"role": "expr"}  # one expression (or callee)
EXPRS = {"role": "exprs"}  # a tuple of expressions
PAIRS = {"role": "pairs"}  # a tuple of (expression, expression) pairs
KWARGS = {"role": "kwargs"}  # a tuple of (keyword, expression) pairs
TARGET = {"role": "target"}  # the local a statement assigns
TARGETS = {"role": "targets"}  # the locals a statement assigns, unpacked in order
DELETES = {"role": "deletes"}  # the locals a statement deletes
#: the local a statement reads for the last time and ends (no ``del`` is
#: written for it: a boxed function's list, emptied by its unpacking)
CONSUMES = {"role": "consumes"}
#: a nested body that runs once, always (a ``with``): a tuple of statements
#: the walker maps; what they read and assign is the statement's own (no
#: ``del`` is placed inside it)
BODY = {"role": "body"}
#: a nested body that may not run (an ``if``'s arms): what it binds is its
#: own — freed inside it, never read after the statement — and what it
#: reads from outside is freed after the statement, never inside it
BRANCH = {"role": "branch"}
#: a nested body that may run any number of times (a loop's): as
#: ``BRANCH``, and nothing bound outside it is freed inside it
LOOP = {"role": "loop"}
#: the locals a statement assigns again that the statement around it binds
#: (a :class:`Rebind`: an ``if``'s outputs, a loop's carried values)
REBINDS = {"role": "rebinds"}
#: the locals, bound before it, that a statement reads and its body binds
#: again (a loop's carried values: a :class:`Rebind` ends its body)
CARRIES = {"role": "carries"}

#: the IR's classes by name (``from_json``), filled by ``Node``
CLASSES: dict[str, type[Node]] = {}


class Node(Record):
    """The base of every IR class (a :class:`~stitchgen.records.Record`:
    see there what it gives). The classes of this package register
    themselves."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__ == __name__ and cls.__name__[0] != "_":
            CLASSES[cls.__name__] = cls


# --------------------------------------------------------------------------
# expressions


@record
class Name(Node):
    """A local variable or parameter of the function being rendered."""

    id: str

    def __init__(self, id: str) -> None:
        self.__dict__["id"] = id


@record
class Literal(Node):
    """A primitive value written inline: None, bool, int, float (inf and nan
    included), complex, str, bytes or Ellipsis. Two literals are equal when
    they have the same type and the same spelling (so ``True != 1`` and
    ``0.0 != -0.0`` here, unlike in Python)."""

    value: Any

    def __init__(self, value: Any) -> None:
        if type(value) not in PRIMITIVE_TYPES:
            raise TypeError(f"Literal holds a primitive value, not {type(value).__name__}")
        self.__dict__["value"] = value

    def _key(self) -> tuple[str, str]:
        return (type(self.value).__name__, repr(self.value))


@record
class _Indexed(Node):
    """A reference by place: ``index`` into one of the program's tables,
    bound under ``name`` (the four kinds below share its fields and
    ``__init__``)."""

    index: int
    name: str

    def __init__(self, index: int, name: str) -> None:
        d = self.__dict__
        d["index"] = index
        d["name"] = name


@record
class ConstRef(_Indexed):
    """A lifted constant: ``Program.consts[index]``, bound under ``name``."""


@record
class GlobalRef(Node):
    """An object reached by an exact qualified name: ``module`` is imported,
    ``path`` is the attribute chain inside it (``torch`` + ``ops.aten.mm.default``).
    ``builtins`` objects render as their bare name."""

    module: str
    path: str

    def __init__(self, module: str, path: str) -> None:
        d = self.__dict__
        d["module"] = module
        d["path"] = path


@record
class TupleExpr(Node):
    """A tuple display ``(a, b)``."""

    items: tuple[Expr, ...] = field(metadata=EXPRS)

    def __init__(self, items: tuple[Expr, ...]) -> None:
        self.__dict__["items"] = items


@record
class ListExpr(Node):
    """A list display ``[a, b]``."""

    items: tuple[Expr, ...] = field(metadata=EXPRS)

    def __init__(self, items: tuple[Expr, ...]) -> None:
        self.__dict__["items"] = items


@record
class DictExpr(Node):
    """A dict display ``{k: v}``."""

    items: tuple[tuple[Expr, Expr], ...] = field(metadata=PAIRS)

    def __init__(self, items: tuple[tuple[Expr, Expr], ...]) -> None:
        self.__dict__["items"] = items


@record
class SliceExpr(Node):
    """A slice ``start:stop:step`` (``slice(...)`` outside a subscript)."""

    start: Expr = field(metadata=EXPR)
    stop: Expr = field(metadata=EXPR)
    step: Expr = field(metadata=EXPR)

    def __init__(self, start: Expr, stop: Expr, step: Expr) -> None:
        d = self.__dict__
        d["start"] = start
        d["stop"] = stop
        d["step"] = step


#: the operators a :class:`Compare` and a :class:`BinOp` may hold (what an
#: exported program's input checks write: sizes against bounds and each other)
COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">="})
ARITHMETIC = frozenset({"+", "-", "*", "//", "%"})


@record
class _Binary(Node):
    """``left op right`` (the two kinds below share its fields and ``__init__``)."""

    left: Expr = field(metadata=EXPR)
    op: str
    right: Expr = field(metadata=EXPR)

    def __init__(self, left: Expr, op: str, right: Expr) -> None:
        d = self.__dict__
        d["left"] = left
        d["op"] = op
        d["right"] = right


@record
class Compare(_Binary):
    """``left op right``, ``op`` one of :data:`COMPARISONS`."""


@record
class BinOp(_Binary):
    """``left op right``, ``op`` one of :data:`ARITHMETIC`."""


@record
class Size(Node):
    """``value.size()[dim]``: a tensor's size in one dimension (written as
    torch's checks write it, so a check's line reads as its message)."""

    value: Expr = field(metadata=EXPR)
    dim: int

    def __init__(self, value: Expr, dim: int) -> None:
        d = self.__dict__
        d["value"] = value
        d["dim"] = dim


Expr = (
    Name
    | Literal
    | ConstRef
    | GlobalRef
    | TupleExpr
    | ListExpr
    | DictExpr
    | SliceExpr
    | Compare
    | BinOp
    | Size
)

# --------------------------------------------------------------------------
# callees


@record
class SubmodRef(_Indexed):
    """A child module called through a binding: ``Program.submods[index]``."""


@record
class FunctionRef(_Indexed):
    """An inlined GraphModule child: ``Program.functions[index]``."""


@record
class MethodRef(Node):
    """``receiver.method(...)`` (FX ``call_method``)."""

    receiver: Expr = field(metadata=EXPR)
    method: str

    def __init__(self, receiver: Expr, method: str) -> None:
        d = self.__dict__
        d["receiver"] = receiver
        d["method"] = method


@record
class TargetRef(_Indexed):
    """A call target looked up once, when the module is bound:
    ``Program.targets[index]`` (the naming pass's ``name`` for it)."""


Callee = SubmodRef | FunctionRef | GlobalRef | ConstRef | MethodRef | TargetRef

# ==========================================================================
# statements, functions and the program

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


# --------------------------------------------------------------------------
# control flow: statements with bodies (what ``torch.cond`` and
# ``while_loop`` are lowered to), and the two that only they hold


@record
class If(Node):
    """``if test:`` ``body`` ``else:`` ``orelse``. Each arm may not run
    (``BRANCH``); an ``if`` with ``targets`` (``torch.cond``'s outputs) binds
    them in each arm, by the :class:`Rebind` that ends it."""

    targets: tuple[str, ...] = field(metadata=TARGETS)
    test: Expr = field(metadata=EXPR)
    body: tuple[Stmt, ...] = field(metadata=BRANCH)
    orelse: tuple[Stmt, ...] = field(default=(), metadata=BRANCH)
    template: ClassVar[str] = "if"

    def __init__(
        self,
        targets: tuple[str, ...],
        test: Expr,
        body: tuple[Stmt, ...],
        orelse: tuple[Stmt, ...] = (),
    ) -> None:
        d = self.__dict__
        d["targets"] = targets
        d["test"] = test
        d["body"] = body
        d["orelse"] = orelse


@record
class While(Node):
    """``while True:`` ``body`` (``LOOP``): the body's :class:`Break` leaves
    the loop, and the :class:`Rebind` that ends it gives the ``carried``
    locals (bound before the loop, ``CARRIES``) their next values
    (``while_loop``'s); after the loop they hold the last. Where it has
    ``tied`` (the first carried values, each a :class:`Name`, then the
    loop's other operands), those values are tied to the operands before
    the loop, under grad mode only, as a :class:`Rebind`'s targets are;
    ``copy``: as copies (under grad, ``while_loop`` hands back no input as
    it is; inside another operator's subgraph it runs without grad, and
    does)."""

    carried: tuple[str, ...] = field(metadata=CARRIES)
    body: tuple[Stmt, ...] = field(metadata=LOOP)
    tied: tuple[Expr, ...] = field(default=(), metadata=EXPRS)
    copy: bool = False
    template: ClassVar[str] = "while"

    def __init__(
        self,
        carried: tuple[str, ...],
        body: tuple[Stmt, ...],
        tied: tuple[Expr, ...] = (),
        copy: bool = False,
    ) -> None:
        d = self.__dict__
        d["carried"] = carried
        d["body"] = body
        d["tied"] = tied
        d["copy"] = copy


@record
class Break(Node):
    """``if not test: break``: leaves the loop whose body holds it, unless
    ``test`` holds (a bool, or a one-element tensor). Where it has
    ``copies`` (carried values, each a :class:`Name`), a loop that leaves
    on its first test hands them back as copies, as ``while_loop`` does
    when it runs no iteration (nothing the caller holds comes back, to be
    written after): ``first`` (one expression) holds on the first test
    only (``if first: v = v.clone()``); a carried bool, True before the
    loop, that the loop's :class:`Rebind` makes False. Where it has
    ``check`` (a function: :data:`CONDITION`), the test goes through it
    first (``if not check(test):``): what refuses a value the operator
    refuses, where the graph does not tell the test's type."""

    test: Expr = field(metadata=EXPR)
    first: tuple[Expr, ...] = field(default=(), metadata=EXPRS)
    copies: tuple[Expr, ...] = field(default=(), metadata=EXPRS)
    check: tuple[Expr, ...] = field(default=(), metadata=EXPRS)
    template: ClassVar[str] = "break"

    def __init__(
        self,
        test: Expr,
        first: tuple[Expr, ...] = (),
        copies: tuple[Expr, ...] = (),
        check: tuple[Expr, ...] = (),
    ) -> None:
        d = self.__dict__
        d["test"] = test
        d["first"] = first
        d["copies"] = copies
        d["check"] = check


@record
class Rebind(Node):
    """``targets = values``, where ``targets`` (``REBINDS``) are the
    statement's whose body it ends: an :class:`If`'s outputs, bound by each
    arm; a :class:`While`'s carried values, bound again by each iteration.
    Where it has ``tied`` (the operands of the ``cond`` an arm belongs to),
    the targets are then tied to them under grad mode (``if
    torch.is_grad_enabled():`` ``a, b = stitchgen.runtime.tie(a, b, x, y,
    outputs=2)``: :mod:`stitchgen.runtime`), so each operand gets the
    operator's gradient, zeros where the arm never reads it."""

    targets: tuple[str, ...] = field(metadata=REBINDS)
    values: tuple[Expr, ...] = field(metadata=EXPRS)
    tied: tuple[Expr, ...] = field(default=(), metadata=EXPRS)
    template: ClassVar[str] = "rebind"

    def __init__(
        self, targets: tuple[str, ...], values: tuple[Expr, ...], tied: tuple[Expr, ...] = ()
    ) -> None:
        d = self.__dict__
        d["targets"] = targets
        d["values"] = values
        d["tied"] = tied


#: the exceptions a :class:`Check` may raise (built-in classes, by name)
ERRORS = frozenset({"AssertionError", "RuntimeError", "TypeError", "ValueError"})


@record
class Check(Node):
    """``if not test: raise error(message)``: refuses what the code was not
    made for (an exported program's input checks, as ``ep.module()``
    runs them), ``error`` one of :data:`ERRORS`."""

    test: Expr = field(metadata=EXPR)
    error: str
    message: str
    template: ClassVar[str] = "check"

    def __init__(self, test: Expr, error: str, message: str) -> None:
        d = self.__dict__
        d["test"] = test
        d["error"] = error
        d["message"] = message


#: how a check made apart from its call reads the call's i-th argument
#: (``ARGUMENT.format(i)``, a :class:`Name`): what the lowering binds to it
#: (an exported program's checks, :class:`stitchgen.exported.InputChecks`)
ARGUMENT = "__stitchgen_input_{}"


#: what a tie calls (:attr:`Rebind.tied`, :attr:`While.tied`): grad mode's
#: test, and :func:`stitchgen.runtime.tie`; the lowering imports their modules
GRAD_MODE = GlobalRef("torch", "is_grad_enabled")
TIE = GlobalRef("stitchgen.runtime", "tie")
#: what a loop's test goes through where its type is not known (:attr:`Break.check`)
CONDITION = GlobalRef("stitchgen.runtime", "condition")
#: what takes an exported program's inputs, as ``ep.module()`` checks them
INPUTS = GlobalRef("stitchgen.runtime", "inputs")

Stmt = (
    Assign
    | Call
    | UnpackCall
    | GetItem
    | Del
    | Return
    | Unbox
    | If
    | While
    | Break
    | Rebind
    | Check
)
#: what a function's body holds after its opening (:attr:`Function.statements`)
BodyStmt = Assign | Call | UnpackCall | GetItem | Del | Return | If | While | Break | Rebind | Check

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
    #: the calling convention's name (:mod:`stitchgen.conventions`)
    convention: str = "closure"
    #: the children the code calls by itself, sorted: the root's inlined
    #: pieces, and the inlined children the convention lists in ``submods``
    inlined: tuple[str, ...] = ()

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
        convention: str = "closure",
        inlined: tuple[str, ...] = (),
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
        d["convention"] = convention
        d["inlined"] = inlined

    @property
    def entry(self) -> Function:
        return self.functions[-1]

    @property
    def linkage(self) -> Linkage:
        """How the code links, as the lowering decided it (and the naming
        pass named the binder): what ``Generated``, ``load``, an artifact's
        manifest and ``compat`` read."""
        paths = [s.path for s in self.submods]
        return Linkage(self.name, self.binder, self.convention, paths, self.inlined)


# ==========================================================================
# the walker

#: the IR's own classes (the walker copies their fields directly)
_OWN = frozenset(CLASSES.values())
#: the expression classes without expression fields (the walker's leaves)
_LEAVES = frozenset({Name, Literal, ConstRef, GlobalRef, SubmodRef, FunctionRef, TargetRef})


#: a class's fields as the walker reads them: IR classes, and any dataclass
#: (a statement kind of your own that is not a ``Node``)
_schema = schema_of


def _roles(cls: type) -> tuple[tuple[str, str], ...]:
    """``(field, role)`` for the fields of ``cls`` the walker visits."""
    return _schema(cls).roles


def _map_items(items: tuple[Any, ...], fn: Callable[[Any], Any]) -> tuple[Any, ...]:
    """``items`` mapped; the same tuple when no item changed."""
    return _same_or(tuple([fn(x) for x in items]), items)


def _map_field(value: Any, role: str, fn: Callable[[Any], Any]) -> Any:
    if role == "expr":
        return fn(value)
    if role == "exprs":
        return _map_items(value, fn)
    if role == "pairs":
        return _map_items(value, lambda pair: _same_or((fn(pair[0]), fn(pair[1])), pair))
    if role == "kwargs":
        return _map_items(value, lambda pair: _same_or((pair[0], fn(pair[1])), pair))
    return value


def _same_or(new: tuple[Any, ...], old: tuple[Any, ...]) -> tuple[Any, ...]:
    """``old`` if ``new`` holds the very same items, else ``new``."""
    if len(new) == len(old) and all(map(operator.is_, new, old)):
        return old
    return new


def _rebuilt(node: Any, changes: dict[str, Any]) -> Any:
    """``node`` with ``changes`` — itself when every change is the same object."""
    for name, value in changes.items():
        if getattr(node, name) is not value:
            cls = type(node)
            if cls in _OWN:  # our classes' __init__ only stores the fields: copy them
                new = object.__new__(cls)
                state, old = new.__dict__, node.__dict__
                for key in _schema(cls).fields:
                    state[key] = old[key]
                state.update(changes)
                return new
            return dataclasses.replace(node, **changes)
    return node


def map_expr(expr: Any, leaf: Callable[[Any], Any]) -> Any:
    """``expr`` rebuilt with ``leaf`` applied to every leaf (``Name``,
    ``Literal``, ``ConstRef``, ``GlobalRef``, ``SubmodRef``,
    ``FunctionRef``); displays, slices and method receivers — any class
    with expression fields — are walked and rebuilt (``expr`` itself when
    nothing changed)."""
    kind = type(expr)
    if kind in _LEAVES:
        return leaf(expr)
    roles = _roles(kind)
    if not roles:
        return leaf(expr)

    def walk(e: Any) -> Any:
        return leaf(e) if type(e) in _LEAVES else map_expr(e, leaf)

    return _rebuilt(
        expr, {name: _map_field(getattr(expr, name), role, walk) for name, role in roles}
    )


def map_stmt(
    stmt: Stmt,
    expr: Callable[[Any], Any] | None = None,
    local: Callable[[str], str] | None = None,
    nested: Callable[[Stmt], Stmt] | None = None,
) -> Stmt:
    """``stmt`` rebuilt with ``expr`` applied to each of its expressions
    (whole: combine with :func:`map_expr` to reach leaves) and ``local`` to
    each local it assigns, deletes or consumes, and each statement of a
    nested body rebuilt by ``nested`` (default: this function, with the same
    ``expr`` and ``local``); every other field is kept (``stmt`` itself when
    nothing changed)."""
    changes: dict[str, Any] = {}
    for name, role in _roles(type(stmt)):
        value = getattr(stmt, name)
        if role == "target" or role == "consumes":
            if local is not None:
                changes[name] = local(value)
        elif role in ("targets", "deletes", "rebinds", "carries"):
            if local is not None:
                changes[name] = _map_items(value, local)
        elif role in BODY_ROLES:
            inner = nested or (lambda s: map_stmt(s, expr, local))
            changes[name] = _map_items(value, inner)
        elif expr is not None:
            changes[name] = _map_field(value, role, expr)
    result: Stmt = _rebuilt(stmt, changes)
    return result


def _bodies(kind: type) -> tuple[str, ...]:
    """The fields holding ``kind``'s bodies (its schema's: the walker asks
    for every statement it meets, through :data:`~stitchgen.records.SCHEMAS`)."""
    return (SCHEMAS.get(kind) or _schema(kind)).bodies


def _map_body(body: tuple[Stmt, ...], fn: Callable[[Stmt], Iterable[Stmt]]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    schemas = SCHEMAS.get
    for stmt in body:
        kind = type(stmt)
        fields = (schemas(kind) or _schema(kind)).bodies
        if fields:  # its bodies first: fn sees the statement with them mapped
            stmt = _rebuilt(stmt, {f: _map_body(getattr(stmt, f), fn) for f in fields})
        out.extend(fn(stmt))
    return _same_or(tuple(out), body)


def map_bodies(program: Program, fn: Callable[[Stmt], Iterable[Stmt]]) -> Program:
    """``program`` with every statement of every function — nested bodies
    included — replaced by what ``fn`` returns for it (zero, one or more
    statements). A statement's nested bodies are mapped before it; what
    ``fn`` returns is not mapped again (a statement ``fn`` wraps in one with
    a body of its own is not met twice)."""
    functions = tuple(_rebuilt(f, {"body": _map_body(f.body, fn)}) for f in program.functions)
    result: Program = _rebuilt(program, {"functions": _same_or(functions, program.functions)})
    return result


def program_names(program: Program) -> frozenset[str]:
    """The names a program defines: its functions, their parameters and
    the locals they assign (nested bodies included), the binder, the
    bindings and the call targets."""
    names = {program.name, program.binder}
    names.update(s.name for s in program.submods)
    names.update(c.name for c in program.consts)
    names.update(t.name for t in program.targets)
    for fn in program.functions:
        names.add(fn.name)
        names.update(p.name for p in fn.params)
        for stmt in iter_statements(fn.body):
            names.update(writes(stmt))
    return frozenset(names)


def iter_statements(body: Sequence[Stmt]) -> Iterable[Stmt]:
    """Every statement of ``body``, and of the bodies nested in them, in
    source order (a statement before the statements of its bodies): ``body``
    itself where no statement holds a body (the common case, without a
    generator)."""
    schemas = SCHEMAS.get
    for stmt in body:
        kind = type(stmt)
        if (schemas(kind) or _schema(kind)).bodies:
            return _nested_statements(body)
    return body


def _nested_statements(body: Iterable[Stmt]) -> Iterator[Stmt]:
    for stmt in body:
        yield stmt
        for name in _bodies(type(stmt)):
            yield from _nested_statements(getattr(stmt, name))


def _collect_names(expr: Any, out: list[str]) -> None:
    kind = type(expr)
    if kind is Name:
        out.append(expr.id)
        return
    if kind in _LEAVES:
        return
    for name, role in _roles(kind):
        value = getattr(expr, name)
        if role == "expr":
            _collect_names(value, out)
        elif role == "exprs":
            for item in value:
                _collect_names(item, out)
        elif role == "pairs":
            for key, item in value:
                _collect_names(key, out)
                _collect_names(item, out)


def reads(stmt: Stmt) -> list[str]:
    """Local names a statement reads, in source order (repeats possible)."""
    schema = _schema(type(stmt))
    out: list[str] = []
    for name, role in schema.reading:
        value = getattr(stmt, name)
        if role == "expr":
            _collect_names(value, out)
        elif role == "exprs":
            for item in value:
                if type(item) is Name:  # the common case, without a call
                    out.append(item.id)
                else:
                    _collect_names(item, out)
        elif role == "kwargs":
            for _, item in value:
                _collect_names(item, out)
        elif role == "consumes":
            out.append(value)
        elif role == "carries":
            out.extend(value)
        else:  # pairs
            for key, item in value:
                _collect_names(key, out)
                _collect_names(item, out)
    if schema.bodies:  # its bodies' reads of what neither they nor it assign
        own = set(writes(stmt))
        for name in schema.bodies:
            inner: set[str] = set()
            for nested in getattr(stmt, name):
                out.extend(n for n in reads(nested) if n not in inner and n not in own)
                inner.update(writes(nested))
    return out


def writes(stmt: Stmt) -> list[str]:
    """Local names a statement binds for the statements after it, in order:
    its targets, and what its bodies that always run (``BODY``) assign.
    What a ``BRANCH`` or ``LOOP`` body assigns is that body's own
    (:func:`iter_statements` reaches it); a :class:`Rebind`'s targets are
    the enclosing statement's."""
    schema = _schema(type(stmt))
    out: list[str] = []
    for name, role in schema.writing:
        if role == "target":
            out.append(getattr(stmt, name))
        else:
            out.extend(getattr(stmt, name))
    for name in schema.bodies:
        if name not in schema.conditional:
            for nested in getattr(stmt, name):
                out.extend(writes(nested))
    return out


def deletes(stmt: Stmt) -> list[str]:
    """Local names a statement deletes — a ``Del`` — or consumes (reads for
    the last time and ends: an :class:`Unbox`'s list): none is live after it."""
    out: list[str] = []
    for name, role in _schema(type(stmt)).deleting:
        if role == "consumes":
            out.append(getattr(stmt, name))
        else:
            out.extend(getattr(stmt, name))
    return out


def defines(stmt: Stmt) -> str | None:
    """The one local a statement assigns, or None: it assigns none, or
    several (an :class:`UnpackCall`'s: see :func:`writes`)."""
    names = writes(stmt)
    return names[0] if len(names) == 1 else None


# ``verify``, ``to_json`` and ``from_json`` are read from their modules on first
# use (:func:`__getattr__`); those modules import this one, so no import of
# them here, not even for type checkers
__all__ = [
    "ARGUMENT",
    "ARITHMETIC",
    "BODY",
    "BRANCH",
    "CARRIES",
    "CLASSES",
    "COMPARISONS",
    "CONDITION",
    "CONSUMES",
    "DELETES",
    "ERRORS",
    "EXPR",
    "EXPRS",
    "GRAD_MODE",
    "INPUTS",
    "KWARGS",
    "LOOP",
    "PAIRS",
    "REBINDS",
    "TARGET",
    "TARGETS",
    "TIE",
    "Assign",
    "BinOp",
    "Break",
    "Call",
    "Callee",
    "Calling",
    "Check",
    "Compare",
    "ConstDecl",
    "ConstRef",
    "Del",
    "DictExpr",
    "Expr",
    "Function",
    "FunctionRef",
    "GetItem",
    "GlobalRef",
    "If",
    "ListExpr",
    "Literal",
    "MethodRef",
    "Name",
    "Node",
    "PRIMITIVE_TYPES",
    "Param",
    "Program",
    "Rebind",
    "Return",
    "STATEMENTS",
    "Schema",
    "Size",
    "SliceExpr",
    "Stmt",
    "SubmodDecl",
    "SubmodRef",
    "TargetDecl",
    "TargetRef",
    "TupleExpr",
    "Unbox",
    "UnpackCall",
    "While",
    "block_method",
    "defines",
    "deletes",
    "from_json",
    "iter_statements",
    "program_names",
    "map_bodies",
    "map_expr",
    "map_stmt",
    "reads",
    "to_json",
    "verify",
    "writes",
]

#: the door's names imported on first use -> their module
_LAZY = {"verify": "verifier", "to_json": "serialization", "from_json": "serialization"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

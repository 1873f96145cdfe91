"""The program that stitchgen emits, as plain immutable dataclasses.

``lowering`` builds a :class:`Program` from an FX graph; the passes
(:mod:`stitchgen.passes`) rewrite it; ``rendering`` turns it into Python
source. Every node is
plain data: printable, comparable, hashable and, through :func:`to_json` /
:func:`from_json`, JSON-round-trippable. The lifted constant *objects* are the
one exception: they travel beside the program (``Program.const_values``), never
inside the JSON.

Every class derives from :class:`Node` (a :class:`~stitchgen.records.Record`),
which supplies what a frozen dataclass would generate — immutability, ``__eq__``, ``__repr__`` and a
cached ``__hash__`` — once for all of them; each class is declared
``@record`` (a frozen dataclass, nothing generated) with its ``__init__``
written out, so creating the classes costs no generated code at import
(``dataclasses.fields``, ``replace`` and ``is_dataclass`` work as on any
dataclass, and a subclass of your own is declared ``@dataclass(frozen=True)``).

Each statement class names the template block that renders it
(``template: ClassVar[str]``), and each field says what it holds
(``field(metadata=...)``: an expression, expressions, keyword pairs, the
local it assigns, the locals it unpacks into, the locals it deletes, or plain
information); the roles are
read once per class (:meth:`Node.schema`). One generic walker reads them —
:func:`map_expr`, :func:`map_stmt`, :func:`map_bodies`, :func:`reads`,
:func:`writes` — so every pass rebuilds statements through it, a field added
to a class is carried by all of them, and a statement nothing changed comes
back as the very same object. A new kind of statement touches its class, its
block in ``function.py.j2`` and its method in ``emitter.py``; a kind with no
block is a :class:`~stitchgen.errors.TemplateError`, never silent.
:func:`verify` checks a program's invariants (the passes' contract).
"""

from __future__ import annotations

import base64
import dataclasses
import math
import operator
import typing
from collections.abc import Callable, Iterable
from dataclasses import field
from typing import Any, ClassVar

from .errors import ProgramError
from .records import Record, Schema, record, schema_of

__all__ = [
    "Assign",
    "Call",
    "Callee",
    "Calling",
    "ConstDecl",
    "ConstRef",
    "Del",
    "DictExpr",
    "Expr",
    "Function",
    "FunctionRef",
    "GetItem",
    "GlobalRef",
    "ListExpr",
    "Literal",
    "MethodRef",
    "Name",
    "Node",
    "PRIMITIVE_TYPES",
    "Param",
    "Program",
    "Return",
    "STATEMENTS",
    "Schema",
    "SliceExpr",
    "Stmt",
    "SubmodDecl",
    "SubmodRef",
    "TargetDecl",
    "TargetRef",
    "TupleExpr",
    "UnpackCall",
    "defines",
    "deletes",
    "from_json",
    "map_bodies",
    "map_expr",
    "map_stmt",
    "reads",
    "to_json",
    "verify",
    "writes",
]

# what a field holds, for the walker (``field(metadata=...)``); a field
# without a role is plain information the walker leaves alone
_EXPR = {"role": "expr"}  # one expression (or callee)
_EXPRS = {"role": "exprs"}  # a tuple of expressions
_PAIRS = {"role": "pairs"}  # a tuple of (expression, expression) pairs
_KWARGS = {"role": "kwargs"}  # a tuple of (keyword, expression) pairs
_TARGET = {"role": "target"}  # the local a statement assigns
_TARGETS = {"role": "targets"}  # the locals a statement assigns, unpacked in order
_DELETES = {"role": "deletes"}  # the locals a statement deletes

#: the IR classes of this module by name (``from_json``), filled by ``Node``
_CLASSES: dict[str, type[Node]] = {}


class Node(Record):
    """The base of every IR class (a :class:`~stitchgen.records.Record`):
    immutable, equal when of the same class with equal fields, hashed by its
    fields (once: the hash is cached), shown as a dataclass is
    (``Name(id='x')``). The classes of this module register themselves."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__ == __name__:
            _CLASSES[cls.__name__] = cls


# --------------------------------------------------------------------------
# expressions


@record
class Name(Node):
    """A local variable or parameter of the function being rendered."""

    id: str

    def __init__(self, id: str) -> None:
        self.__dict__["id"] = id


#: The exact types that render as Python literals (see ``literals.py``).
PRIMITIVE_TYPES = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis))


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
class ConstRef(Node):
    """A lifted constant: ``Program.consts[index]``, bound under ``name``."""

    index: int
    name: str

    def __init__(self, index: int, name: str) -> None:
        d = self.__dict__
        d["index"] = index
        d["name"] = name


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

    items: tuple[Expr, ...] = field(metadata=_EXPRS)

    def __init__(self, items: tuple[Expr, ...]) -> None:
        self.__dict__["items"] = items


@record
class ListExpr(Node):
    """A list display ``[a, b]``."""

    items: tuple[Expr, ...] = field(metadata=_EXPRS)

    def __init__(self, items: tuple[Expr, ...]) -> None:
        self.__dict__["items"] = items


@record
class DictExpr(Node):
    """A dict display ``{k: v}``."""

    items: tuple[tuple[Expr, Expr], ...] = field(metadata=_PAIRS)

    def __init__(self, items: tuple[tuple[Expr, Expr], ...]) -> None:
        self.__dict__["items"] = items


@record
class SliceExpr(Node):
    """A slice ``start:stop:step`` (``slice(...)`` outside a subscript)."""

    start: Expr = field(metadata=_EXPR)
    stop: Expr = field(metadata=_EXPR)
    step: Expr = field(metadata=_EXPR)

    def __init__(self, start: Expr, stop: Expr, step: Expr) -> None:
        d = self.__dict__
        d["start"] = start
        d["stop"] = stop
        d["step"] = step


Expr = Name | Literal | ConstRef | GlobalRef | TupleExpr | ListExpr | DictExpr | SliceExpr

# --------------------------------------------------------------------------
# callees


@record
class SubmodRef(Node):
    """A child module called through a binding: ``Program.submods[index]``."""

    index: int
    name: str

    def __init__(self, index: int, name: str) -> None:
        d = self.__dict__
        d["index"] = index
        d["name"] = name


@record
class FunctionRef(Node):
    """An inlined GraphModule child: ``Program.functions[index]``."""

    index: int
    name: str

    def __init__(self, index: int, name: str) -> None:
        d = self.__dict__
        d["index"] = index
        d["name"] = name


@record
class MethodRef(Node):
    """``receiver.method(...)`` (FX ``call_method``)."""

    receiver: Expr = field(metadata=_EXPR)
    method: str

    def __init__(self, receiver: Expr, method: str) -> None:
        d = self.__dict__
        d["receiver"] = receiver
        d["method"] = method


@record
class TargetRef(Node):
    """A call target looked up once, when the module is bound:
    ``Program.targets[index]`` (the naming pass's ``name`` for it)."""

    index: int
    name: str

    def __init__(self, index: int, name: str) -> None:
        d = self.__dict__
        d["index"] = index
        d["name"] = name


Callee = SubmodRef | FunctionRef | GlobalRef | ConstRef | MethodRef | TargetRef

# --------------------------------------------------------------------------
# statements


@record
class Assign(Node):
    """``target = value``"""

    target: str = field(metadata=_TARGET)
    value: Expr = field(metadata=_EXPR)
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

    target: str = field(metadata=_TARGET)
    callee: Callee = field(metadata=_EXPR)
    args: tuple[Expr, ...] = field(default=(), metadata=_EXPRS)
    kwargs: tuple[tuple[str, Expr], ...] = field(default=(), metadata=_KWARGS)
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

    targets: tuple[str, ...] = field(metadata=_TARGETS)
    callee: Callee = field(metadata=_EXPR)
    args: tuple[Expr, ...] = field(default=(), metadata=_EXPRS)
    kwargs: tuple[tuple[str, Expr], ...] = field(default=(), metadata=_KWARGS)
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

    target: str = field(metadata=_TARGET)
    obj: Expr = field(metadata=_EXPR)
    index: Expr = field(metadata=_EXPR)
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

    names: tuple[str, ...] = field(metadata=_DELETES)
    template: ClassVar[str] = "del"

    def __init__(self, names: tuple[str, ...]) -> None:
        self.__dict__["names"] = names


@record
class Return(Node):
    """``return value``"""

    value: Expr = field(metadata=_EXPR)
    template: ClassVar[str] = "return"

    def __init__(self, value: Expr) -> None:
        self.__dict__["value"] = value


Stmt = Assign | Call | UnpackCall | GetItem | Del | Return

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
    #: the boxed-inputs convention: the function takes one list, named
    #: ``box``, unpacks it into ``params`` and clears it, so the caller's
    #: list does not keep the inputs alive ("" for a plain signature)
    box: str = ""

    def __init__(
        self,
        name: str,
        params: tuple[Param, ...],
        body: tuple[Stmt, ...],
        origin: str = "",
        box: str = "",
    ) -> None:
        d = self.__dict__
        d["name"] = name
        d["params"] = params
        d["body"] = body
        d["origin"] = origin
        d["box"] = box


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

    @property
    def entry(self) -> Function:
        return self.functions[-1]

    def functions_calling_submods(self) -> frozenset[str]:
        """Names of the functions that call a bound submodule, directly or
        through an inlined function (a convention that passes bindings as
        arguments must pass them to these)."""
        direct: dict[str, set[str]] = {}
        needs: set[str] = set()
        for fn in self.functions:
            calls = direct.setdefault(fn.name, set())
            for stmt in fn.body:
                callee = getattr(stmt, "callee", None)
                if isinstance(callee, SubmodRef):
                    needs.add(fn.name)
                elif isinstance(callee, FunctionRef):
                    calls.add(callee.name)
        for fn in self.functions:  # callees come first: one ordered sweep suffices
            if direct[fn.name] & needs:
                needs.add(fn.name)
        return frozenset(needs)


#: this module's classes (the walker copies their fields directly)
_OWN = frozenset(_CLASSES.values())
#: the expression classes without expression fields (the walker's leaves)
_LEAVES = frozenset({Name, Literal, ConstRef, GlobalRef, SubmodRef, FunctionRef, TargetRef})


# --------------------------------------------------------------------------
# the walker: every pass goes through these


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
) -> Stmt:
    """``stmt`` rebuilt with ``expr`` applied to each of its expressions
    (whole: combine with :func:`map_expr` to reach leaves) and ``local`` to
    each local it assigns or deletes; every other field is kept (``stmt``
    itself when nothing changed)."""
    changes: dict[str, Any] = {}
    for name, role in _roles(type(stmt)):
        value = getattr(stmt, name)
        if role == "target":
            if local is not None:
                changes[name] = local(value)
        elif role in ("targets", "deletes"):
            if local is not None:
                changes[name] = _map_items(value, local)
        elif expr is not None:
            changes[name] = _map_field(value, role, expr)
    result: Stmt = _rebuilt(stmt, changes)
    return result


def map_bodies(program: Program, fn: Callable[[Stmt], Iterable[Stmt]]) -> Program:
    """``program`` with every statement of every function replaced by what
    ``fn`` returns for it (zero, one or more statements)."""
    functions = tuple(
        _rebuilt(f, {"body": _same_or(tuple([out for s in f.body for out in fn(s)]), f.body)})
        for f in program.functions
    )
    result: Program = _rebuilt(program, {"functions": _same_or(functions, program.functions)})
    return result


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
    out: list[str] = []
    for name, role in _schema(type(stmt)).reading:
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
        else:  # pairs
            for key, item in value:
                _collect_names(key, out)
                _collect_names(item, out)
    return out


def writes(stmt: Stmt) -> list[str]:
    """Local names a statement assigns, in order."""
    out: list[str] = []
    for name, role in _schema(type(stmt)).writing:
        if role == "target":
            out.append(getattr(stmt, name))
        else:
            out.extend(getattr(stmt, name))
    return out


def deletes(stmt: Stmt) -> list[str]:
    """Local names a statement deletes."""
    out: list[str] = []
    for name in _schema(type(stmt)).deleting:
        out.extend(getattr(stmt, name))
    return out


def defines(stmt: Stmt) -> str | None:
    """The one local a statement assigns, or None: it assigns none, or
    several (an :class:`UnpackCall`'s: see :func:`writes`)."""
    names = writes(stmt)
    return names[0] if len(names) == 1 else None


#: every statement class, from the ``Stmt`` union
STATEMENTS: tuple[type, ...] = typing.get_args(Stmt)


def verify(program: Program, *, after: str = "", named: bool = True) -> None:
    """Check ``program``'s invariants; a :class:`~stitchgen.errors.ProgramError`
    naming the function, the statement and ``after`` (the pass that ran last)
    if one fails: every local read is defined before (a parameter or an
    earlier statement's target) and not read after its ``del``; a local is
    assigned once and deleted once; names are unique per scope (parameters,
    functions, bindings); every binding reference is declared (index and
    name); every call to an inlined function refers to one defined before
    its caller; the entry is last and named ``program.name``. Module-level
    names are checked for uniqueness only when ``named`` (after the naming
    pass: before it they are hints)."""
    where = f" after {after}" if after else ""

    def fail(message: str) -> None:
        raise ProgramError(f"program {program.name!r}{where}: {message}")

    if not program.functions or program.entry.name != program.name:
        fail("the entry function must come last and be named as the program")
    module = [program.binder, *(s.name for s in program.submods)]
    module += [c.name for c in program.consts] + [f.name for f in program.functions]
    module += [t.name for t in program.targets]
    dupes = sorted({n for n in module if module.count(n) > 1})
    if named and dupes:
        fail(f"module-level names {dupes} are not unique")
    if len(program.const_values) not in (0, len(program.consts)):
        fail(f"{len(program.consts)} constants declared, {len(program.const_values)} bound")
    for position, fn in enumerate(program.functions):
        _verify_function(program, position, fn, fail)


def _verify_function(
    program: Program, position: int, fn: Function, fail: Callable[[str], None]
) -> None:
    live: set[str] = set()
    seen: set[str] = set()
    for p in fn.params:
        if p.name in seen:
            fail(f"function {fn.name!r}: parameter {p.name!r} appears twice")
        seen.add(p.name)
        live.add(p.name)
    for i, stmt in enumerate(fn.body):
        at = f"function {fn.name!r}, statement {i} ({type(stmt).__name__})"
        if not isinstance(stmt, STATEMENTS):
            fail(f"{at}: not an IR statement")
        for name in reads(stmt):
            if name not in live:
                state = "after its del" if name in seen else "before it is defined"
                fail(f"{at}: reads {name!r} {state}")
        for leaf in _leaves(stmt):
            problem = _bad_ref(program, position, leaf)
            if problem:
                fail(f"{at}: {problem}")
        for name in deletes(stmt):
            if name not in live:
                fail(f"{at}: deletes {name!r}, which is not live")
            live.discard(name)
        for name in writes(stmt):
            if name in seen:
                fail(f"{at}: assigns {name!r} a second time")
            seen.add(name)
            live.add(name)
    if not fn.body or type(fn.body[-1]) is not Return:
        fail(f"function {fn.name!r} does not end with a return")


def _leaves(stmt: Stmt) -> list[Any]:
    out: list[Any] = []

    def keep(leaf: Any) -> Any:
        out.append(leaf)
        return leaf

    map_stmt(stmt, expr=lambda e: map_expr(e, keep))
    return out


def _bad_ref(program: Program, position: int, leaf: Any) -> str | None:
    kind = type(leaf)
    if kind is SubmodRef:
        decls: tuple[Any, ...] = program.submods
    elif kind is ConstRef:
        decls = program.consts
    elif kind is TargetRef:
        decls = program.targets
    elif kind is FunctionRef:
        decls = program.functions[:position]  # callees come before their callers
    else:
        return None
    if not 0 <= leaf.index < len(decls) or decls[leaf.index].name != leaf.name:
        return f"{kind.__name__}({leaf.index}, {leaf.name!r}) is not declared as such"
    return None


# --------------------------------------------------------------------------
# JSON


def _literal_to_json(value: Any) -> Any:
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is int:
        return {"int": str(value)}
    if kind is float:
        return {"float": repr(value)}
    if kind is complex:
        return {"complex": [repr(value.real), repr(value.imag)]}
    if kind is bytes:
        return {"bytes": base64.b64encode(value).decode("ascii")}
    if value is Ellipsis:
        return {"ellipsis": True}
    raise TypeError(f"not a literal: {value!r}")


def _float(text: str) -> float:
    value = float(text)
    return math.nan if math.isnan(value) else value


def _literal_from_json(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    ((kind, payload),) = data.items()
    if kind == "int":
        return int(payload)
    if kind == "float":
        return _float(payload)
    if kind == "complex":
        return complex(_float(payload[0]), _float(payload[1]))
    if kind == "bytes":
        return base64.b64decode(payload)
    if kind == "ellipsis":
        return Ellipsis
    raise ValueError(f"unknown literal encoding {kind!r}")


def to_json(node: Any) -> Any:
    """Encode an IR object as JSON-compatible data (lifted objects excluded)."""
    if isinstance(node, Literal):
        return {"_type": "Literal", "value": _literal_to_json(node.value)}
    if dataclasses.is_dataclass(node):
        out: dict[str, Any] = {"_type": type(node).__name__}
        for f in dataclasses.fields(node):
            if f.compare:
                out[f.name] = to_json(getattr(node, f.name))
        return out
    if isinstance(node, tuple):
        return [to_json(item) for item in node]
    if node is None or isinstance(node, (str, int)):
        return node
    raise TypeError(f"cannot encode {type(node).__name__} in IR JSON")


def from_json(data: Any, const_values: tuple[Any, ...] = ()) -> Any:
    """Decode :func:`to_json` output; ``const_values`` is re-attached to a Program."""
    if isinstance(data, list):
        return tuple(from_json(item) for item in data)
    if not isinstance(data, dict):
        return data
    cls = _CLASSES.get(data.get("_type", ""))
    if cls is None:
        raise ValueError(f"unknown IR node type {data.get('_type')!r}")
    if cls is Literal:
        return Literal(_literal_from_json(data["value"]))
    kwargs = {k: from_json(v) for k, v in data.items() if k != "_type"}
    if cls is Program:
        declared = len(kwargs["consts"])
        if len(const_values) != declared:
            raise ValueError(f"program declares {declared} constants, got {len(const_values)}")
        kwargs["const_values"] = tuple(const_values)
    return cls(**kwargs)

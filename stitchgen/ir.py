"""The program that stitchgen emits, as plain frozen dataclasses.

``lower`` builds a :class:`Program` from an FX graph; passes (``liveness``,
``naming``) rewrite it; ``render`` turns it into Python source. Every node is
plain data: printable, comparable, hashable and, through :func:`to_json` /
:func:`from_json`, JSON-round-trippable. The lifted constant *objects* are the
one exception: they travel beside the program (``Program.const_values``), never
inside the JSON.

Each statement class names the template macro that renders it
(``template: ClassVar[str]``), so a new kind of statement touches one class and
one macro.
"""

from __future__ import annotations

import base64
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

# --------------------------------------------------------------------------
# expressions


@dataclass(frozen=True)
class Name:
    """A local variable or parameter of the function being rendered."""

    id: str


#: The exact types that render as Python literals (see ``literals.py``).
PRIMITIVE_TYPES = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis))


@dataclass(frozen=True, eq=False)
class Literal:
    """A primitive value written inline: None, bool, int, float (inf and nan
    included), complex, str, bytes or Ellipsis. Two literals are equal when
    they have the same type and the same spelling (so ``True != 1`` and
    ``0.0 != -0.0`` here, unlike in Python)."""

    value: Any

    def __post_init__(self) -> None:
        if type(self.value) not in PRIMITIVE_TYPES:
            raise TypeError(f"Literal holds a primitive value, not {type(self.value).__name__}")

    def _key(self) -> tuple[str, str]:
        return (type(self.value).__name__, repr(self.value))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Literal) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


@dataclass(frozen=True)
class ConstRef:
    """A lifted constant: ``Program.consts[index]``, bound under ``name``."""

    index: int
    name: str


@dataclass(frozen=True)
class GlobalRef:
    """An object reached by an exact qualified name: ``module`` is imported,
    ``path`` is the attribute chain inside it (``torch`` + ``ops.aten.mm.default``).
    ``builtins`` objects render as their bare name."""

    module: str
    path: str


@dataclass(frozen=True)
class TupleExpr:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class ListExpr:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class DictExpr:
    items: tuple[tuple[Expr, Expr], ...]


@dataclass(frozen=True)
class SliceExpr:
    start: Expr
    stop: Expr
    step: Expr


Expr = Name | Literal | ConstRef | GlobalRef | TupleExpr | ListExpr | DictExpr | SliceExpr

# --------------------------------------------------------------------------
# callees


@dataclass(frozen=True)
class SubmodRef:
    """A child module called through a binding: ``Program.submods[index]``."""

    index: int
    name: str


@dataclass(frozen=True)
class FunctionRef:
    """An inlined GraphModule child: ``Program.functions[index]``."""

    index: int
    name: str


@dataclass(frozen=True)
class MethodRef:
    """``receiver.method(...)`` (FX ``call_method``)."""

    receiver: Expr
    method: str


Callee = SubmodRef | FunctionRef | GlobalRef | ConstRef | MethodRef

# --------------------------------------------------------------------------
# statements


@dataclass(frozen=True)
class Assign:
    """``target = value``"""

    target: str
    value: Expr
    template: ClassVar[str] = "assign"  # the template block that renders it


@dataclass(frozen=True)
class Call:
    """``target = callee(*args, **kwargs)``; ``node`` is the FX node's name."""

    target: str
    callee: Callee
    args: tuple[Expr, ...] = ()
    kwargs: tuple[tuple[str, Expr], ...] = ()
    node: str = ""
    template: ClassVar[str] = "call"

    @property
    def inlined(self) -> str | None:
        """The name of the inlined function called, if that is the callee."""
        return self.callee.name if isinstance(self.callee, FunctionRef) else None

    @property
    def is_piece(self) -> bool:
        """Does this call a piece (a child module, inlined or bound)?"""
        return isinstance(self.callee, (SubmodRef, FunctionRef))


@dataclass(frozen=True)
class GetItem:
    """``target = obj[index]``"""

    target: str
    obj: Expr
    index: Expr
    template: ClassVar[str] = "getitem"


@dataclass(frozen=True)
class Del:
    """``del names...`` — emitted by the liveness pass."""

    names: tuple[str, ...]
    template: ClassVar[str] = "del"


@dataclass(frozen=True)
class Return:
    value: Expr
    template: ClassVar[str] = "return"


Stmt = Assign | Call | GetItem | Del | Return

# --------------------------------------------------------------------------
# program


@dataclass(frozen=True)
class Param:
    """A parameter. ``kind`` is ``""``, ``"*"`` or ``"**"``; ``keyword`` is the
    name callers pass it by (the FX placeholder target)."""

    name: str
    default: Expr | None = None
    kind: str = ""
    keyword: str = ""


@dataclass(frozen=True)
class Function:
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


@dataclass(frozen=True)
class SubmodDecl:
    """A child called through a binding; ``path`` is its qualified name in
    the root module (the key users bind it by). ``inlined`` marks a child
    that is listed but inlined (the vllm convention lists every child; the
    code never calls an inlined one through its binding)."""

    name: str
    path: str
    inlined: bool = False


@dataclass(frozen=True)
class ConstDecl:
    """A lifted constant; ``description`` says what it is, for readers."""

    name: str
    description: str


@dataclass(frozen=True)
class Program:
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


# --------------------------------------------------------------------------
# traversal helpers


def expr_names(expr: Any) -> list[str]:
    """Local names read by an expression or callee, in source order."""
    out: list[str] = []
    _collect_names(expr, out)
    return out


def _collect_names(expr: Any, out: list[str]) -> None:
    kind = type(expr)
    if kind is Name:
        out.append(expr.id)
    elif kind is TupleExpr or kind is ListExpr:
        for item in expr.items:
            _collect_names(item, out)
    elif kind is DictExpr:
        for key, value in expr.items:
            _collect_names(key, out)
            _collect_names(value, out)
    elif kind is SliceExpr:
        _collect_names(expr.start, out)
        _collect_names(expr.stop, out)
        _collect_names(expr.step, out)
    elif kind is MethodRef:
        _collect_names(expr.receiver, out)


def map_expr(expr: Any, leaf: Callable[[Any], Any]) -> Any:
    """``expr`` rebuilt with ``leaf`` applied to every name and reference
    (``Name``, ``ConstRef``, ``SubmodRef``, ``FunctionRef``; literals and
    global references pass through ``leaf`` too); displays, slices and method
    receivers are walked."""
    if isinstance(expr, TupleExpr):
        return TupleExpr(tuple(map_expr(x, leaf) for x in expr.items))
    if isinstance(expr, ListExpr):
        return ListExpr(tuple(map_expr(x, leaf) for x in expr.items))
    if isinstance(expr, DictExpr):
        return DictExpr(tuple((map_expr(k, leaf), map_expr(v, leaf)) for k, v in expr.items))
    if isinstance(expr, SliceExpr):
        return SliceExpr(
            map_expr(expr.start, leaf), map_expr(expr.stop, leaf), map_expr(expr.step, leaf)
        )
    if isinstance(expr, MethodRef):
        return MethodRef(map_expr(expr.receiver, leaf), expr.method)
    return leaf(expr)


def reads(stmt: Stmt) -> list[str]:
    """Local names a statement reads, in source order (repeats possible)."""
    out: list[str] = []
    kind = type(stmt)
    if kind is Call:
        _collect_names(stmt.callee, out)
        for arg in stmt.args:
            if type(arg) is Name:  # the common case, without a call
                out.append(arg.id)
            else:
                _collect_names(arg, out)
        for _, value in stmt.kwargs:
            _collect_names(value, out)
    elif kind is GetItem:
        _collect_names(stmt.obj, out)
        _collect_names(stmt.index, out)
    elif kind is Assign or kind is Return:
        _collect_names(stmt.value, out)
    return out


def defines(stmt: Stmt) -> str | None:
    """The local name a statement assigns, if any."""
    return getattr(stmt, "target", None)


# --------------------------------------------------------------------------
# JSON

_CLASSES = {
    cls.__name__: cls
    for cls in (
        Name,
        Literal,
        ConstRef,
        GlobalRef,
        TupleExpr,
        ListExpr,
        DictExpr,
        SliceExpr,
        SubmodRef,
        FunctionRef,
        MethodRef,
        Assign,
        Call,
        GetItem,
        Del,
        Return,
        Param,
        Function,
        SubmodDecl,
        ConstDecl,
        Program,
    )
}


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

"""The IR's base class and its expressions: values (names, literals,
constants, displays) and callees (bindings, inlined functions, methods,
targets bound once). The statements that use them are in ``statements.py``.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..records import Record, record

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
#: a nested body: a tuple of statements that run inside the statement (a
#: branch, a loop, a ``with``); the walker maps them, and what they read and
#: assign is the statement's own (no ``del`` is placed inside it)
BODY = {"role": "body"}

#: the IR's classes by name (``from_json``), filled by ``Node``
CLASSES: dict[str, type[Node]] = {}


class Node(Record):
    """The base of every IR class (a :class:`~stitchgen.records.Record`):
    immutable, equal when of the same class with equal fields, hashed by its
    fields (once: the hash is cached), shown as a dataclass is
    (``Name(id='x')``). The classes of this package register themselves."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.rpartition(".")[0] == __package__:
            CLASSES[cls.__name__] = cls


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

    receiver: Expr = field(metadata=EXPR)
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

"""The program that stitchgen emits, as plain immutable dataclasses.

``lowering`` builds a :class:`Program` from an FX graph; the passes
(:mod:`stitchgen.passes`) rewrite it; ``rendering`` turns it into Python
source. Every node is
plain data: printable, comparable, hashable and, through :func:`to_json` /
:func:`from_json`, JSON-round-trippable. The lifted constant *objects* are the
one exception: they travel beside the program (``Program.const_values``), never
inside the JSON.

Every class derives from :class:`Node` (a :class:`~stitchgen.records.Record`),
which supplies immutability (each field set once, by ``__init__``),
``__eq__``, ``__repr__`` and a cached ``__hash__`` once for all of them;
each class is declared ``@record`` — ``dataclasses``' own
``@dataclass(init=False, repr=False, eq=False)``, nothing generated — with
its ``__init__`` written out, so creating the classes costs no generated
code at import (``dataclasses.fields``, ``replace``, ``asdict`` and
``is_dataclass`` are the standard library's own; a subclass of your own is
declared ``@dataclass`` and stays hashable and immutable).

Each statement class names the template block that renders it
(``template: ClassVar[str]``), and each field says what it holds
(``field(metadata=...)``: an expression, expressions, keyword pairs, the
local it assigns, the locals it unpacks into, the locals it deletes, the
local it consumes, or plain information); the roles are
read once per class (:func:`stitchgen.records.schema_of`). One generic walker reads them —
:func:`map_expr`, :func:`map_stmt`, :func:`map_bodies`, :func:`reads`,
:func:`writes` — so every pass rebuilds statements through it, a field added
to a class is carried by all of them, and a statement nothing changed comes
back as the very same object. A new kind of statement touches its class, its
block in ``function.py.j2`` and its method in ``emitter.py``; a kind with no
block is a :class:`~stitchgen.errors.TemplateError`, never silent.
:func:`verify` checks a program's invariants (the passes' contract).

This package is the door; each concern has its module: ``nodes`` (the base
class and the expressions), ``statements`` (statements, functions,
declarations, the program), ``walker``, ``verifier`` and ``serialization``
(JSON). The last two are imported when first used (``verify``, ``to_json``
and ``from_json`` are off the compile path).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..records import Schema
from .nodes import (
    BODY,
    CONSUMES,
    DELETES,
    EXPR,
    EXPRS,
    KWARGS,
    PAIRS,
    PRIMITIVE_TYPES,
    TARGET,
    TARGETS,
    Callee,
    ConstRef,
    DictExpr,
    Expr,
    FunctionRef,
    GlobalRef,
    ListExpr,
    Literal,
    MethodRef,
    Name,
    Node,
    SliceExpr,
    SubmodRef,
    TargetRef,
    TupleExpr,
)
from .statements import (
    STATEMENTS,
    Assign,
    Call,
    Calling,
    ConstDecl,
    Del,
    Function,
    GetItem,
    Param,
    Program,
    Return,
    Stmt,
    SubmodDecl,
    TargetDecl,
    Unbox,
    UnpackCall,
    block_method,
)
from .walker import (
    defines,
    deletes,
    iter_statements,
    map_bodies,
    map_expr,
    map_stmt,
    reads,
    writes,
)

if TYPE_CHECKING:
    from .serialization import from_json, to_json
    from .verifier import verify

__all__ = [
    "BODY",
    "CONSUMES",
    "DELETES",
    "EXPR",
    "EXPRS",
    "KWARGS",
    "PAIRS",
    "TARGET",
    "TARGETS",
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
    "Unbox",
    "UnpackCall",
    "block_method",
    "defines",
    "deletes",
    "from_json",
    "iter_statements",
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

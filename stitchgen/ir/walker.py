"""The one walker every pass goes through: :func:`map_expr`,
:func:`map_stmt`, :func:`map_bodies` rebuild what changed (and hand back the
very same object when nothing did); :func:`reads`, :func:`writes`,
:func:`deletes`, :func:`defines` say what a statement does to locals;
:func:`iter_statements` visits every statement of a body, nested bodies
included. Each reads a class's fields by their roles
(:func:`~stitchgen.records.schema_of`), so a field added to a class is
carried by all of them, and a statement that holds a body of its own (the
``body`` role) is walked into by all of them: what its body reads and
assigns is the statement's own."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..records import schema_of
from .nodes import (
    CLASSES,
    ConstRef,
    FunctionRef,
    GlobalRef,
    Literal,
    Name,
    SubmodRef,
    TargetRef,
)
from .statements import STATEMENTS, Program, Stmt

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
        elif role in ("targets", "deletes"):
            if local is not None:
                changes[name] = _map_items(value, local)
        elif role == "body":
            inner = nested or (lambda s: map_stmt(s, expr, local))
            changes[name] = _map_items(value, inner)
        elif expr is not None:
            changes[name] = _map_field(value, role, expr)
    result: Stmt = _rebuilt(stmt, changes)
    return result


def _map_body(body: tuple[Stmt, ...], fn: Callable[[Stmt], Iterable[Stmt]]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for stmt in body:
        fields = _FLAT if type(stmt) in _FLAT_KINDS else _schema(type(stmt)).bodies
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


#: the IR's own statement classes: none holds a body (tests/test_ir_walker.py)
_FLAT_KINDS = frozenset(STATEMENTS)
_FLAT: tuple[str, ...] = ()


def iter_statements(body: Iterable[Stmt]) -> Iterator[Stmt]:
    """Every statement of ``body``, and of the bodies nested in them, in
    source order (a statement before the statements of its bodies)."""
    for stmt in body:
        yield stmt
        fields = _FLAT if type(stmt) in _FLAT_KINDS else _schema(type(stmt)).bodies
        for name in fields:
            yield from iter_statements(getattr(stmt, name))


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
        else:  # pairs
            for key, item in value:
                _collect_names(key, out)
                _collect_names(item, out)
    for name in schema.bodies:  # its body's reads of what it did not assign
        inner: set[str] = set()
        for nested in getattr(stmt, name):
            out.extend(n for n in reads(nested) if n not in inner)
            inner.update(writes(nested))
    return out


def writes(stmt: Stmt) -> list[str]:
    """Local names a statement assigns (its nested bodies' included), in order."""
    schema = _schema(type(stmt))
    out: list[str] = []
    for name, role in schema.writing:
        if role == "target":
            out.append(getattr(stmt, name))
        else:
            out.extend(getattr(stmt, name))
    for name in schema.bodies:
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

"""The liveness pass: a ``del`` right after each local's last use.

For every function of a program, existing ``Del`` statements are dropped
(the pass is idempotent) and a ``Del`` is placed

* after the statement that reads a local for the last time (parameters
  included — a parameter never read is deleted before the first statement);
* right after the statement that makes a local nobody reads (the statement
  still runs: calls keep their side effects and their order);
* never for a local that the ``Return`` reads, and never after the ``Return``;
* never for a local a statement consumes (an ``Unbox``'s list: emptied, it
  holds nothing).

Locals are single-assignment (FX node names), so a name's last use is
unambiguous. Names in one ``Del`` appear in the order they were defined.
"""

from __future__ import annotations

import dataclasses

from ..ir import Del, Function, Program, Return, Stmt, deletes, reads, writes
from ..records import schema_of

__all__ = ["insert_dels", "place_dels"]


def insert_dels(program: Program) -> Program:
    """Return ``program`` with dels placed in every function."""
    functions = tuple(place_dels(fn) for fn in program.functions)
    return dataclasses.replace(program, functions=functions)


def place_dels(fn: Function) -> Function:
    """``fn`` with a del right after each local's last use (existing dels replaced)."""
    body = [stmt for stmt in fn.body if type(stmt) is not Del]
    order: dict[str, int] = {}  # name -> definition order
    position: dict[str, int] = {}  # name -> index of the statement after which it dies
    for param in fn.params:
        order[param.name] = len(order)
        position[param.name] = -1
    keep: set[str] = set()
    consumes: dict[type, bool] = {}  # by statement class: does it consume a local?
    for i, stmt in enumerate(body):
        kind = type(stmt)
        if kind is Return:
            keep.update(reads(stmt))
            continue
        for name in reads(stmt):
            position[name] = i
        consuming = consumes.get(kind)
        if consuming is None:
            consuming = consumes[kind] = bool(schema_of(kind).deleting)
        if consuming:  # (Dels are gone): what it consumes needs no del
            keep.update(deletes(stmt))
        for target in writes(stmt):
            if target not in order:
                order[target] = len(order)
                position.setdefault(target, i)
    dies_after: dict[int, list[str]] = {}
    for name, index in position.items():
        if name not in keep and name in order:
            dies_after.setdefault(index, []).append(name)
    key = order.__getitem__
    out: list[Stmt] = []
    if -1 in dies_after:
        out.append(Del(tuple(sorted(dies_after[-1], key=key))))
    for i, stmt in enumerate(body):
        out.append(stmt)
        dies = dies_after.get(i)
        if dies is not None:
            out.append(Del(tuple(sorted(dies, key=key))))
    return dataclasses.replace(fn, body=tuple(out))

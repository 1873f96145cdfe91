"""The unpack pass: an inlined piece's result unpacked where it is called.

A stitching graph calls a piece and takes its outputs apart with one
``getitem`` per output; lowered as it is, that is a call, a line per item
and a ``del`` of the tuple::

    submod_2 = inlined_submod_2(x, w)
    getitem_4 = submod_2[0]
    getitem_5 = submod_2[1]
    del submod_2

Where the call's callee is an inlined function of the program (so its
result is known to be the tuple its ``return`` builds, of ``n`` items) and
the result is read only by ``n`` getitems with the indices ``0 .. n-1``,
each once, the call becomes an :class:`~stitchgen.ir.UnpackCall` and the
getitems go::

    getitem_4, getitem_5 = inlined_submod_2(x, w)

Same objects, same order of calls; the tuple is never a local, so it needs
no ``del``. A decoder's entry function shrinks to about a third of its
lines, and Python's ``compile()`` of the module — a third of a cold
compile's time — with it. A call whose result is read any other way (a
computed index, passed on, returned), a piece bound from outside (whose
result's length the code cannot know), or a getitem carrying a source
location (``source_lines``) is left as it is.

``generate`` runs the pass where the shipped templates are in effect; with
templates of your own it does not, so their ``call`` and ``getitem`` blocks
see the statements they were written for (``lower(..., unpack=False)``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import (
    Call,
    Function,
    FunctionRef,
    GetItem,
    Literal,
    Name,
    Program,
    Return,
    Stmt,
    TupleExpr,
    UnpackCall,
    deletes,
    reads,
)

__all__ = ["unpack_results"]


def unpack_results(program: Program) -> Program:
    """``program`` with each inlined piece's result unpacked where it is
    called (see the module's docstring); ``program`` itself when nothing is."""
    sizes: dict[str, int] = {}
    for fn in program.functions:
        last = fn.body[-1] if fn.body else None
        if type(last) is Return and type(last.value) is TupleExpr and last.value.items:
            sizes[fn.name] = len(last.value.items)
    if not sizes:
        return program
    functions = tuple(_unpacked(fn, sizes) for fn in program.functions)
    if all(new is old for new, old in zip(functions, program.functions, strict=True)):
        return program
    return dataclasses.replace(program, functions=functions)


def _unpacked(fn: Function, sizes: dict[str, int]) -> Function:
    body: tuple[Any, ...] = fn.body  # statements told apart by their exact class
    calls: dict[str, int] = {}  # a call's target -> its position
    items: dict[str, dict[int, int]] = {}  # ... -> item index -> its getitem's position
    refused: set[str] = set()
    for i, stmt in enumerate(body):
        kind = type(stmt)
        if kind is GetItem:
            obj, index = stmt.obj, stmt.index
            if type(obj) is Name and obj.id in calls:
                taken = items[obj.id]
                if (
                    type(index) is Literal
                    and type(index.value) is int
                    and index.value >= 0
                    and index.value not in taken
                    and not stmt.where
                ):
                    taken[index.value] = i
                else:
                    refused.add(obj.id)
                continue
        used = reads(stmt)
        if kind is not Call:
            used += deletes(stmt)
        if calls and not calls.keys().isdisjoint(used):
            refused.update(calls.keys() & set(used))
        if kind is Call and type(stmt.callee) is FunctionRef and stmt.callee.name in sizes:
            calls[stmt.target] = i
            items[stmt.target] = {}
    replaced: dict[int, Stmt] = {}
    dropped: set[int] = set()
    for name, position in calls.items():
        call, taken = body[position], items[name]
        if name in refused or len(taken) != sizes[call.callee.name] or max(taken) >= len(taken):
            continue  # not every item read once by a getitem (indices 0 .. n-1)
        targets = tuple(body[taken[k]].target for k in range(len(taken)))
        replaced[position] = UnpackCall(
            targets, call.callee, call.args, call.kwargs, call.node, call.where
        )
        dropped.update(taken.values())
    if not replaced:
        return fn
    new_body = tuple(replaced.get(i, stmt) for i, stmt in enumerate(body) if i not in dropped)
    return dataclasses.replace(fn, body=new_body)

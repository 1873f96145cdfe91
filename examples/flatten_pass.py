"""A pass of your own, worked through (docs/templates.md, "A pass of your
own"): splice inlined pieces into their callers. ::

    from flatten_pass import splice_inlined
    fn = stitchgen.compile(split_gm, passes=[splice_inlined])

It was stitchgen's ``inline="flatten"`` until measurement retired it: per
call it ran 1.02-1.04x the default path at 80 layers (three runs of
``benchmarks/bench.py``), whose inlined pieces' results are unpacked where
they are called, and it compiled about three times slower. It stays as the
example of a real ``Program -> Program`` pass on the public IR
(:mod:`stitchgen.ir`), run by ``tests/test_flatten_pass.py`` on the golden
corpus against the ``GraphModule``.

A call ``x, y = inlined_f(a, b)``, or ``t = inlined_f(a, b)`` whose
result is only taken apart (``x = t[0]``, ``y = t[-1]``), becomes ``f``'s statements, with ``f``'s
parameters replaced by the call's arguments and ``x``, ``y`` by the values
``f`` returns — no nested call, no tuple built and unpacked. Statements keep
their order, so side effects do too. A call is left alone where that is not
the same program: ``f`` takes ``*args``/``**kwargs``, ``f`` does not return a
tuple display, or the caller uses the tuple itself (passes it on, returns it,
indexes it with anything but an int constant). Functions no call refers to
any more are dropped. Runs on the raw (pre-naming) program, before liveness,
as every pass of your own does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from stitchgen.ir import (
    Assign,
    Call,
    ConstRef,
    Del,
    Function,
    FunctionRef,
    GetItem,
    GlobalRef,
    Literal,
    Name,
    Program,
    Return,
    Stmt,
    TupleExpr,
    UnpackCall,
    map_expr,
    map_stmt,
    reads,
    writes,
)

__all__ = ["splice_inlined"]


def splice_inlined(program: Program) -> Program:
    """``program`` with every spliceable call to an inlined function spliced."""
    done: dict[str, Function] = {}
    for fn in program.functions:  # callees come before their callers
        done[fn.name] = _flatten_function(fn, done)
    entry = done[program.entry.name]
    used = _reachable(entry, done)
    kept = [done[fn.name] for fn in program.functions[:-1] if fn.name in used]
    index = {fn.name: i for i, fn in enumerate(kept)}
    functions = (*kept, entry)
    if any(index[fn.name] != i for i, fn in enumerate(program.functions[:-1]) if fn.name in index):
        # a function dropped before one kept: the references behind it move up
        functions = tuple(_reindex(fn, index) for fn in functions)
    return dataclasses.replace(program, functions=functions)


def _reachable(entry: Function, functions: dict[str, Function]) -> set[str]:
    seen: set[str] = set()
    todo = [entry]
    while todo:
        for stmt in todo.pop().body:
            callee = getattr(stmt, "callee", None)
            if isinstance(callee, FunctionRef) and callee.name not in seen:
                seen.add(callee.name)
                todo.append(functions[callee.name])
    return seen


def _reindex(fn: Function, index: dict[str, int]) -> Function:
    def fix(leaf: Any) -> Any:
        if isinstance(leaf, FunctionRef):
            return FunctionRef(index[leaf.name], leaf.name)
        return leaf

    body = tuple(map_stmt(s, expr=lambda e: map_expr(e, fix)) for s in fn.body)
    return dataclasses.replace(fn, body=body)


def _is_simple(e: Any) -> bool:
    """Safe to write in place of a name at every use: no new object per use."""
    return isinstance(e, (Name, ConstRef, GlobalRef)) or (
        isinstance(e, Literal) and not isinstance(e.value, (list, dict))
    )


def _uses(body: Sequence[Stmt]) -> dict[str, list[int]]:
    """Each local's readers: the positions of the statements that read it,
    built once per function, so the pass stays linear in the body."""
    uses: dict[str, list[int]] = {}
    for i, stmt in enumerate(body):
        for name in reads(stmt):
            readers = uses.setdefault(name, [])
            if not readers or readers[-1] != i:
                readers.append(i)
    return uses


def _returned(call: Call | UnpackCall, callee: Function) -> int:
    """How many items ``callee`` returns as a tuple display, where ``call``
    passes it arguments it can take in place of its parameters; else -1."""
    if any(p.kind for p in callee.params) or not callee.body:
        return -1
    ret = callee.body[-1]
    if not (isinstance(ret, Return) and isinstance(ret.value, TupleExpr)):
        return -1
    if len(call.args) > len(callee.params):
        return -1
    keywords = {p.keyword or p.name for p in callee.params}
    passed = {k for k, _ in call.kwargs}
    if passed - keywords:
        return -1
    for p in callee.params[len(call.args) :]:
        if (p.keyword or p.name) not in passed and p.default is None:
            return -1  # a missing argument: keep the call (and its TypeError)
    return len(ret.value.items)


def _spliceable(call: Call, callee: Function, body: Sequence[Stmt], readers: list[int]) -> bool:
    size = _returned(call, callee)
    if size < 0:
        return False
    for j in readers:
        stmt = body[j]
        ok = (
            isinstance(stmt, GetItem)
            and type(stmt.obj) is Name
            and stmt.obj.id == call.target
            and isinstance(stmt.index, Literal)
            and type(stmt.index.value) is int
            and -size <= stmt.index.value < size
        )
        if not ok:
            return False
    return True


def _flatten_function(fn: Function, done: dict[str, Function]) -> Function:
    body: list[Stmt] = [s for s in fn.body if not isinstance(s, Del)]  # liveness redoes them
    taken = {p.name for p in fn.params} | {t for s in body for t in writes(s)}
    replace: dict[str, Any] = {}  # unpacked names -> the values they stand for now
    absorbed: set[int] = set()  # the getitems that unpacked a spliced call
    uses = _uses(body)
    out: list[Stmt] = []
    for i, original in enumerate(body):
        if i in absorbed:
            continue
        stmt = _substitute(original, replace)
        if isinstance(stmt, UnpackCall) and isinstance(stmt.callee, FunctionRef):
            callee = done[stmt.callee.name]
            if _returned(stmt, callee) == len(stmt.targets):  # a, b = f(x): f's statements
                spliced, items = _splice(stmt, callee, taken)
                out.extend(spliced)
                replace.update(zip(stmt.targets, items, strict=True))
                continue
        if not (isinstance(stmt, Call) and isinstance(stmt.callee, FunctionRef)):
            out.append(stmt)
            continue
        callee = done[stmt.callee.name]
        readers = uses.get(stmt.target, [])
        if not _spliceable(stmt, callee, body, readers):
            out.append(stmt)
            continue
        spliced, items = _splice(stmt, callee, taken)
        out.extend(spliced)
        for j in readers:  # every reader unpacks it (_spliceable checked)
            later = body[j]
            assert isinstance(later, GetItem) and isinstance(later.index, Literal)
            replace[later.target] = items[later.index.value]
            absorbed.add(j)
    return dataclasses.replace(fn, body=tuple(out))


def _splice(
    call: Call | UnpackCall, callee: Function, taken: set[str]
) -> tuple[list[Stmt], list[Any]]:
    """The callee's statements for this call site, and its returned items."""
    out: list[Stmt] = []
    rename: dict[str, Any] = {}
    site = call.target if isinstance(call, Call) else call.node or call.targets[0]

    def fresh(name: str) -> str:
        candidate, n = f"{site}_{name}", 0
        while candidate in taken:
            n += 1
            candidate = f"{site}_{name}_{n}"
        taken.add(candidate)
        return candidate

    def bind(name: str, value: Any) -> Any:
        if _is_simple(value):
            return value
        local = fresh(name)  # evaluated once, where the call evaluated it
        out.append(Assign(local, value))
        return Name(local)

    by_keyword = dict(call.kwargs)
    for position, p in enumerate(callee.params):
        value: Any = (
            call.args[position]
            if position < len(call.args)
            else by_keyword.get(p.keyword or p.name, p.default)
        )
        rename[p.name] = bind(p.name, value)
    for stmt in callee.body[:-1]:
        if isinstance(stmt, Del):
            continue
        for target in writes(stmt):
            rename[target] = Name(fresh(target))  # the new local: _substitute writes it
        out.append(_substitute(stmt, rename))
    ret = callee.body[-1]
    assert isinstance(ret, Return) and isinstance(ret.value, TupleExpr)
    items = [bind(f"out{k}", _expr(item, rename)) for k, item in enumerate(ret.value.items)]
    return out, items


def _expr(e: Any, rename: dict[str, Any]) -> Any:
    return map_expr(e, _renaming(rename))


def _renaming(rename: dict[str, Any]) -> Callable[[Any], Any]:
    """The leaf function :func:`map_expr` applies: a renamed local's value."""

    def leaf(e: Any) -> Any:
        return rename.get(e.id, e) if type(e) is Name else e

    return leaf


def _target(name: str, rename: dict[str, Any]) -> str:
    new = rename.get(name)
    return new.id if isinstance(new, Name) else name


def _substitute(stmt: Stmt, rename: dict[str, Any]) -> Stmt:
    if not rename:
        return stmt
    leaf = _renaming(rename)  # one leaf function per statement, not one per expression
    return map_stmt(
        stmt, expr=lambda e: map_expr(e, leaf), local=lambda name: _target(name, rename)
    )

"""The passes' contract, checked: :func:`verify`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..errors import ProgramError
from . import (
    STATEMENTS,
    ConstRef,
    Function,
    FunctionRef,
    Program,
    Return,
    Stmt,
    SubmodRef,
    TargetRef,
    Unbox,
    deletes,
    map_expr,
    map_stmt,
    reads,
    writes,
)


def verify(program: Program, *, after: str = "", named: bool = True) -> None:
    """Check ``program``'s invariants; a :class:`~stitchgen.errors.ProgramError`
    naming the function, the statement and ``after`` (the pass that ran last)
    if one fails: every local read is defined before (a parameter or an
    earlier statement's target) and not read after its ``del``; a local is
    assigned once and deleted once; names are unique per scope (parameters,
    functions, bindings); every binding reference is declared (index and
    name); every call to an inlined function refers to one defined before
    its caller; an :class:`Unbox` only opens a function; the entry is last
    and named ``program.name``. Module-level
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
    if len(program.submod_values) not in (0, len(program.submods)):
        fail(f"{len(program.submods)} submodules declared, {len(program.submod_values)} found")
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
        if not isinstance(stmt, STATEMENTS) and not _own_kind(stmt):
            fail(f"{at}: not an IR statement (nor a dataclass whose class names a block)")
        if type(stmt) is Unbox and i >= len(fn.opening):
            fail(f"{at}: an Unbox opens its function, before any other statement")
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


def _own_kind(stmt: Any) -> bool:
    """A statement kind of your own: a dataclass instance whose class names
    the block that renders it (``template``)."""
    kind = type(stmt)
    return dataclasses.is_dataclass(kind) and isinstance(getattr(kind, "template", None), str)


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

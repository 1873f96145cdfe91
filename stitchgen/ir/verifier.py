"""The passes' contract, checked: :func:`verify`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ProgramError
from ..records import schema_of
from . import (
    STATEMENTS,
    Break,
    ConstRef,
    Del,
    Function,
    FunctionRef,
    Program,
    Rebind,
    Return,
    Stmt,
    SubmodRef,
    TargetRef,
    Unbox,
    While,
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
    scope = _Scope(program, position, fn, fail, seen)
    scope.body(fn.body, live, f"function {fn.name!r}, statement ", None, "")
    if not fn.body or type(fn.body[-1]) is not Return:
        fail(f"function {fn.name!r} does not end with a return")


class _Scope:
    """One function's statements checked path by path: what is bound where
    each runs, whatever its branches took (``live``), and every local
    assigned so far (``seen``: assigned once)."""

    def __init__(
        self,
        program: Program,
        position: int,
        fn: Function,
        fail: Callable[[str], None],
        seen: set[str],
    ) -> None:
        self.program, self.position, self.fn, self.fail = program, position, fn, fail
        self.seen = seen
        #: where each name bound inside a body that may not run was bound
        self.inside: dict[str, str] = {}

    def body(
        self, body: Sequence[Stmt], live: set[str], where: str, owner: Any, role: str
    ) -> set[str] | None:
        """Check ``body`` (a function's, or the ``role`` body of ``owner``)
        from ``live``, which it updates; what is bound where its ``Break``
        leaves the loop (None: it has none)."""
        fail, outer = self.fail, set(live) if role in ("branch", "loop") else set()
        exits: set[str] | None = None
        last = len(body) - 1
        while last >= 0 and type(body[last]) is Del:
            last -= 1
        for i, stmt in enumerate(body):
            kind = type(stmt)
            at = f"{where}{i} ({kind.__name__})"
            if not isinstance(stmt, STATEMENTS) and not _own_kind(stmt):
                fail(f"{at}: not an IR statement (nor a dataclass whose class names a block)")
            if kind is Unbox and (owner is not None or i >= len(self.fn.opening)):
                fail(f"{at}: an Unbox opens its function, before any other statement")
            if kind is Return and owner is not None:
                fail(f"{at}: a Return inside a nested body")
            if kind is Break and role != "loop":
                fail(f"{at}: a Break outside a loop's body")
            if isinstance(stmt, Rebind) and (i != last or stmt.targets != _rebound(owner)):
                fail(
                    f"{at}: a Rebind ends a body of the statement whose outputs or carried "
                    "values it names"
                )
            if isinstance(stmt, Rebind) and len(stmt.targets) != len(stmt.values):
                fail(
                    f"{at}: rebinds {len(stmt.targets)} name(s) to {len(stmt.values)} value(s) "
                    "(one value each: Python would unpack the value instead)"
                )
            for name in reads(stmt):
                if name not in live:
                    fail(f"{at}: reads {name!r} {self._state(name)}")
            for leaf in _leaves(stmt):
                problem = _bad_ref(self.program, self.position, leaf)
                if problem:
                    fail(f"{at}: {problem}")
            for name in deletes(stmt):
                if name not in live:
                    fail(f"{at}: deletes {name!r}, which is {self._state(name)}")
                if name in outer:
                    fail(
                        f"{at}: deletes {name!r}, bound outside this {role} body, inside it "
                        "(another path, or the next iteration, reads or frees it)"
                    )
                live.discard(name)
            if kind is Break:
                exits = set(live) - outer
            schema = schema_of(kind)
            bound = writes(stmt)
            if schema.bodies:  # what its bodies bind, they checked; its own targets here
                live |= self._nested(stmt, schema, live, f"{where}{i}.")
                bound = [n for f, role in schema.writing for n in _names(stmt, f, role)]
            for name in bound:
                if name in self.seen:
                    fail(f"{at}: assigns {name!r} a second time")
                self.seen.add(name)
                live.add(name)
        return exits

    def _nested(self, stmt: Any, schema: Any, live: set[str], where: str) -> set[str]:
        """Check ``stmt``'s bodies; the names they leave bound after it (a
        loop's at its ``Break``; a body that always runs binds in ``live``)."""
        after: set[str] = set()
        rebound = _rebound(stmt)
        for name, role in schema.roles:
            if role == "body":
                self.body(getattr(stmt, name), live, f"{where}{name}.", stmt, role)
            elif role in ("branch", "loop"):
                body = getattr(stmt, name)
                if rebound and not any(type(s) is Rebind for s in body):
                    self.fail(
                        f"{where[:-1]} ({type(stmt).__name__}): its {name} does not bind "
                        f"{list(rebound)} (a Rebind ends it)"
                    )
                before = set(self.seen)
                exits = self.body(body, set(live), f"{where}{name}.", stmt, role)
                for bound in self.seen - before:
                    self.inside[bound] = f"the {name} of {where[:-1]} ({type(stmt).__name__})"
                if isinstance(stmt, While) and exits is None:  # (a LOOP of yours may run out)
                    self.fail(f"{where[:-1]} ({type(stmt).__name__}): its {name} never breaks")
                after |= exits or set()
        return after

    def _state(self, name: str) -> str:
        if name in self.inside:
            return f"bound only in {self.inside[name]}, not on every path"
        return "after its del" if name in self.seen else "before it is defined"


def _rebound(owner: Any) -> tuple[str, ...]:
    """What a :class:`Rebind` in ``owner``'s bodies binds: the locals it
    carries (a loop), else its outputs."""
    if owner is None:
        return ()
    schema = schema_of(type(owner))
    return tuple(n for f, role in schema.rebound for n in _names(owner, f, role))


def _names(stmt: Any, field: str, role: str) -> list[str]:
    value = getattr(stmt, field)
    return [value] if role == "target" else list(value)


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

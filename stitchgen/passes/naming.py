"""The naming pass: every identifier in the emitted module valid and unique.

A :class:`Namespace` owns the names of one scope. The module scope reserves
Python keywords, builtins, the reserved globals ``inf``/``nan``, and the
top-level names of imported modules; then it names the entry function (the
user's name, kept exactly), the binder, the bindings (submodules, constants,
call targets) and the inlined functions. Each function's locals are named in a copy of that
scope, so no local can shadow ``torch``, a builtin, a binding or a helper.
A name that is taken gets ``_1``, ``_2``, … appended, as FX does it (a taken
``x_1`` becomes ``x_2``, not ``x_1_1``); a name that is not an
ASCII identifier is sanitized first. Parameters keep their keyword when they
can, and calls to inlined functions follow their parameters' new names.

The entry function's parameters are what callers pass by keyword
(``fn(input=x)``, as the ``GraphModule`` takes it), so each keeps its
placeholder's own name even where that name is a builtin (``input``, ``id``,
``type``): the module scope reserves it before naming the bindings, and the
parameter shadows the builtin, which the function's code then does not use.
It is renamed only where the name is one the function's code needs
(:func:`_needed_globals`: a module or builtin its expressions write, a
convention's helper, a name the templates reserve); then it is passed by
position only, and a keyword-only parameter (after ``*args``) that cannot
keep its name is refused with a :class:`~stitchgen.errors.CodegenError`.
"""

from __future__ import annotations

import builtins
import dataclasses
import keyword
import re
from collections.abc import Iterable
from typing import Any

from ..errors import CodegenError, ProgramError
from ..identifiers import is_identifier
from ..ir import (
    Calling,
    ConstDecl,
    ConstRef,
    Function,
    FunctionRef,
    GlobalRef,
    Name,
    Param,
    Program,
    Stmt,
    SubmodDecl,
    SubmodRef,
    TargetDecl,
    TargetRef,
    map_expr,
    map_stmt,
    writes,
)

__all__ = ["RESERVED", "Namespace", "assign_names"]

#: the globals of :data:`RESERVED` an entry parameter never takes, not even
#: to keep the keyword callers pass it by: ``torch``, which templates use in
#: function bodies without reserving it (profiler ranges), and the globals
#: FX reserves
SHARED_GLOBALS = frozenset({"inf", "nan", "torch"})
#: the builtins the expression writer spells (``float("inf")``,
#: ``complex(re, im)``, ``slice(...)``, ``getattr(obj, "not-an-identifier")``)
WRITER_BUILTINS = frozenset({"float", "complex", "slice", "getattr"})
_BUILTINS = frozenset(dir(builtins))
#: names no generated identifier may take: keywords, builtins, the globals FX
#: reserves, and the modules generated code (ours or a template override)
#: most often refers to, whether or not this program imports them (an entry
#: parameter may keep such a name: see :func:`_kept_keywords`)
RESERVED = frozenset(keyword.kwlist) | _BUILTINS | SHARED_GLOBALS | {"operator", "math", "builtins"}

# compiled on first use (by re's cache): a name to sanitize, a collision
_INVALID = r"[^0-9A-Za-z_]"
_SUFFIX = r"(.*)_(\d+)$"


def sanitize(hint: str) -> str:
    """An ASCII identifier close to ``hint`` (not yet checked for collisions)."""
    if is_identifier(hint):
        return hint
    name = re.sub(_INVALID, "_", hint) or "_"
    return "_" + name if name[0].isdigit() else name


class Namespace:
    """The names taken in one scope; :meth:`create` hands out fresh ones.

    >>> ns = Namespace()
    >>> ns.create("torch"), ns.create("x"), ns.create("x"), ns.create("class")
    ('torch_1', 'x', 'x_1', 'class_1')
    """

    def __init__(self, taken: frozenset[str] | set[str] = RESERVED) -> None:
        self._taken = set(taken)
        self._next: dict[str, int] = {}

    def reserve(self, name: str) -> None:
        self._taken.add(name)

    def release(self, names: Iterable[str]) -> None:
        """Free ``names`` in this scope (reserved in an outer one for
        another scope's sake)."""
        self._taken.difference_update(names)

    def __contains__(self, name: str) -> bool:
        return name in self._taken

    def create(self, hint: str) -> str:
        taken = self._taken
        if hint not in taken and is_identifier(hint):
            taken.add(hint)  # the common case: an FX name, free
            return hint
        # FX's rule (torch.fx.graph._Namespace): a taken ``x_1`` becomes ``x_2``
        name = sanitize(hint)
        suffixed = re.match(_SUFFIX, name)
        if suffixed is None:
            base, n = name, 0
        else:
            base, n = suffixed.group(1), int(suffixed.group(2))
        if not n:
            n = self._next.get(base, 0)
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        self._next[base] = n
        taken.add(name)
        return name

    def copy(self) -> Namespace:
        other = Namespace(self._taken)
        other._next = dict(self._next)
        return other


def assign_names(program: Program) -> Program:
    """Rename every identifier of ``program`` so the module is valid Python
    in which nothing shadows anything else."""
    scope = Namespace(RESERVED | set(program.reserved))
    for module in program.imports:
        scope.reserve(module.partition(".")[0])
    if program.name in scope:
        raise ProgramError(
            f"function name {program.name!r} would shadow a builtin, keyword or imported "
            f"module ({', '.join(program.imports) or 'none imported'}); choose another name"
        )
    scope.reserve(program.name)
    *inlined, entry = program.functions
    kept = _kept_keywords(program, entry)
    for name in kept.values():  # before the bindings: none takes a caller's keyword
        scope.reserve(name)
    binder = scope.create(program.binder)
    submods = tuple(_renamed(s, scope.create(s.name)) for s in program.submods)
    consts = tuple(ConstDecl(scope.create(c.name), c.description) for c in program.consts)
    targets = tuple(TargetDecl(scope.create(t.name), t.ref) for t in program.targets)
    fn_names = {fn.name: scope.create(fn.name) for fn in inlined}
    # parameters first: calls to an inlined function need its new keyword names
    local_scopes: list[tuple[Namespace, dict[str, str], tuple[Param, ...]]] = []
    keywords: dict[str, dict[str, str]] = {}
    for fn in program.functions:
        ns = scope.copy()
        if fn is not entry:
            ns.release(kept.values())  # the entry's parameters: free in other functions
        names: dict[str, str] = {}
        params = []
        for p in fn.params:
            if fn is entry and p.name in kept:
                new = names[p.name] = kept[p.name]  # reserved in the module scope above
            else:
                new = names[p.name] = ns.create(p.keyword or p.name)
            params.append(p if new == p.name else dataclasses.replace(p, name=new))
        local_scopes.append((ns, names, tuple(params)))
        keywords[fn_names.get(fn.name, fn.name)] = {
            p.keyword: new.name for p, new in zip(fn.params, params, strict=True) if p.keyword
        }
    renamer = _Renamer(submods, consts, targets, fn_names, keywords)
    # the common case: FX names are already valid and free; then a function
    # whose locals keep their names is reused as it is, not rebuilt
    globals_kept = (
        all(a.name == b.name for a, b in zip(program.submods, submods, strict=True))
        and all(a.name == b.name for a, b in zip(program.consts, consts, strict=True))
        and all(a.name == b.name for a, b in zip(program.targets, targets, strict=True))
        and all(k == v for k, v in fn_names.items())
        and all(k == v for m in keywords.values() for k, v in m.items())
    )
    functions = []
    for fn, (ns, names, fn_params) in zip(program.functions, local_scopes, strict=True):
        for stmt in fn.body:
            for target in writes(stmt):
                if target not in names:
                    names[target] = ns.create(target)
        if globals_kept and all(k == v for k, v in names.items()):
            functions.append(fn)
            continue
        renamer.locals = names
        new_params = tuple(
            dataclasses.replace(p, default=renamer.expr(p.default)) if p.default else p
            for p in fn_params
        )
        body = tuple(renamer.stmt(s) for s in fn.body)
        name = program.name if fn is entry else fn_names[fn.name]
        functions.append(Function(name, new_params, body, fn.origin))
    return dataclasses.replace(
        program,
        binder=binder,
        submods=submods,
        consts=consts,
        functions=tuple(functions),
        targets=targets,
    )


def _kept_keywords(program: Program, entry: Function) -> dict[str, str]:
    """The keywords the entry's parameters keep as their names, by parameter:
    each plain parameter's (``*args`` and ``**kwargs`` are never passed by
    name), unless the function's code needs that name for something else. A
    keyword-only parameter that cannot keep its keyword could not be passed
    at all: :class:`CodegenError`."""
    needed = _needed_globals(program, entry, {p.keyword for p in entry.params})
    kept: dict[str, str] = {}
    keyword_only = False
    for p in entry.params:
        if p.kind:
            keyword_only = keyword_only or p.kind == "*"
            continue
        if p.keyword and is_identifier(p.keyword) and p.keyword not in needed:
            needed.add(p.keyword)  # one parameter per keyword
            kept[p.name] = p.keyword
        elif keyword_only:
            raise CodegenError(
                f"placeholder {p.keyword or p.name!r} is keyword-only (after *args), and "
                "the generated function cannot take it by that name: the function's "
                f"code needs {p.keyword!r} for itself (a module, builtin, helper or reserved "
                "name); rename the input"
            )
    return kept


def _needed_globals(program: Program, fn: Function, asked: set[str]) -> set[str]:
    """The global names ``fn``'s code may need, of those ``asked`` about and
    more: the modules and builtins its expressions are written with (call
    targets are bound outside it, by the ``targets`` pass), the builtins the
    expression writer spells (:data:`WRITER_BUILTINS`),
    :data:`SHARED_GLOBALS`, and the names reserved for a convention or the
    templates. The body is walked only where an asked name is a builtin or
    an imported module's: no other name can be one its expressions use."""
    needed = {*SHARED_GLOBALS, *WRITER_BUILTINS, *program.reserved}
    roots = {module.partition(".")[0] for module in program.imports}
    if not any(name in _BUILTINS or name in roots for name in asked):
        return needed  # the common case: inputs named x, positions, ...

    def leaf(e: Any) -> Any:
        if type(e) is GlobalRef:
            needed.add((e.path if e.module == "builtins" else e.module).partition(".")[0])
        return e

    def expr(e: Any) -> Any:
        return map_expr(e, leaf)

    for p in fn.params:
        if p.default is not None:
            expr(p.default)
    for stmt in fn.body:
        map_stmt(stmt, expr=expr)
    return needed


def _renamed(decl: SubmodDecl, name: str) -> SubmodDecl:
    """``decl`` under ``name`` (itself when the name is kept: the common case)."""
    return decl if name == decl.name else dataclasses.replace(decl, name=name)


class _Renamer:
    def __init__(
        self,
        submods: tuple[SubmodDecl, ...],
        consts: tuple[ConstDecl, ...],
        targets: tuple[TargetDecl, ...],
        fn_names: dict[str, str],
        keywords: dict[str, dict[str, str]],
    ) -> None:
        self.submods = submods
        self.consts = consts
        self.targets = targets
        self.fn_names = fn_names
        self.keywords = keywords
        self.locals: dict[str, str] = {}

    def expr(self, e: Any) -> Any:
        return map_expr(e, self._leaf)

    def _leaf(self, e: Any) -> Any:
        if isinstance(e, Name):
            return Name(self.locals[e.id])
        if isinstance(e, ConstRef):
            return ConstRef(e.index, self.consts[e.index].name)
        if isinstance(e, SubmodRef):
            return SubmodRef(e.index, self.submods[e.index].name)
        if isinstance(e, TargetRef):
            return TargetRef(e.index, self.targets[e.index].name)
        if isinstance(e, FunctionRef):
            return FunctionRef(e.index, self.fn_names[e.name])
        return e  # Literal, GlobalRef

    def stmt(self, s: Stmt) -> Stmt:
        renamed = map_stmt(s, expr=self.expr, local=self.locals.__getitem__, nested=self.stmt)
        if isinstance(renamed, Calling) and type(renamed.callee) is FunctionRef and renamed.kwargs:
            kw = self.keywords.get(renamed.callee.name, {})  # its parameters were renamed
            pairs = tuple((kw.get(k, k), v) for k, v in renamed.kwargs)
            return dataclasses.replace(renamed, kwargs=pairs)
        return renamed

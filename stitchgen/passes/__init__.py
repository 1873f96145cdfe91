"""The passes over a :class:`~stitchgen.ir.Program`, in order, in one place.

``lowering`` builds the raw program (FX names, no dels); the passes make it
ready to render:

1. your passes (``generate(..., passes=[...])``), in the order given: each a
   function ``Program -> Program`` on the raw program — FX names, no dels
   (``examples/flatten_pass.py`` is a worked one);
2. ``targets``: every call target reached by a qualified name looked up
   once, where the module is bound (``aten_mm_default = torch.ops.aten.mm.default``);
3. ``liveness``: a ``del`` right after each local's last use;
4. ``naming``: every identifier valid and collision-free.

With ``verify=True`` (``STITCHGEN_VERIFY=1``, and always in the test suite)
:func:`stitchgen.ir.verify` checks the program after every pass and names
the pass that broke it.

A pass of your own — a hook before every piece call (tested in
``tests/test_ir_walker.py``; see docs/templates.md, "A pass of your own")::

    import dataclasses
    from stitchgen import ir

    def mark_pieces(program: ir.Program) -> ir.Program:
        def mark(stmt):
            if isinstance(stmt, ir.Calling) and stmt.is_piece:  # a call, unpacked or not
                hook = ir.GlobalRef("myproject.hooks", "mark")
                yield ir.Call(f"{stmt.node}_mark", hook, (ir.Literal(stmt.node),))
            yield stmt

        program = ir.map_bodies(program, mark)
        imports = tuple(sorted({*program.imports, "myproject.hooks"}))
        return dataclasses.replace(program, imports=imports)

    fn = stitchgen.compile(split_gm, passes=[mark_pieces])
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import Any

from .. import ir
from ..errors import CodegenError, ProgramError
from ..identifiers import (
    BUILTINS,
    RESERVED,
    SHARED_GLOBALS,
    WRITER_BUILTINS,
    Namespace,
    is_identifier,
)
from ..ir import (
    Break,
    Call,
    Calling,
    ConstDecl,
    ConstRef,
    Del,
    Function,
    FunctionRef,
    GlobalRef,
    Name,
    Param,
    Program,
    Return,
    Stmt,
    SubmodDecl,
    SubmodRef,
    TargetDecl,
    TargetRef,
    deletes,
    iter_statements,
    map_bodies,
    map_expr,
    map_stmt,
    reads,
    writes,
)
from ..records import SCHEMAS, Record, record, schema_of

__all__ = [
    "PASSES",
    "Pass",
    "Step",
    "assign_names",
    "bind_targets",
    "insert_dels",
    "pipeline_steps",
    "place_dels",
    "run_passes",
    "target_hint",
]


# ==========================================================================
# The targets pass: every call target reached by a qualified name is looked
# up once, where the module is bound, not on every call.
#
# ``torch.ops.aten.mm.default(x, w)`` follows four attributes each time it
# runs — about half a microsecond, ~13 % of a small ``mm``, on every op of
# every inlined piece, every forward. This pass gives each distinct
# :class:`~stitchgen.ir.GlobalRef` callee a :class:`~stitchgen.ir.TargetDecl`
# (``aten_mm_default = torch.ops.aten.mm.default``, written in the binder's
# body — closure cells — or at module level for a convention without a
# binder) and makes the calls read it (:class:`~stitchgen.ir.TargetRef`).
# The name resolves to the very object lowering verified
# (:func:`stitchgen.lowering.qualified_ref`); builtins (``len``, ``getattr``)
# keep their bare names. The naming pass makes each name unique.


def target_hint(ref: GlobalRef) -> str:
    """The name a target is bound under (before the naming pass):
    ``aten_mm_default`` for ``torch.ops.aten.mm.default``, ``torch_relu``
    for ``torch.relu``, ``functional_relu`` for ``torch.nn.functional.relu``."""
    if ref.module == "torch" and ref.path.startswith("ops."):
        return ref.path[len("ops.") :].replace(".", "_")
    return f"{ref.module.rpartition('.')[2]}_{ref.path.replace('.', '_')}"


def bind_targets(program: Program) -> Program:
    """``program`` with its qualified-name call targets bound once."""
    index: dict[GlobalRef, TargetRef] = {}
    decls: list[TargetDecl] = list(program.targets)
    for i, decl in enumerate(decls):  # a program bound before keeps its targets
        index[decl.ref] = TargetRef(i, decl.name)

    def bind(stmt: Stmt) -> tuple[Stmt]:
        if type(stmt) is not Call:
            return (stmt,)  # the common case, cheaply: a tuple, not a generator
        callee = stmt.callee
        if type(callee) is not GlobalRef or callee.module == "builtins":
            return (stmt,)
        ref = index.get(callee)
        if ref is None:
            ref = index[callee] = TargetRef(len(decls), target_hint(callee))
            decls.append(TargetDecl(ref.name, callee))
        # an exact Call (checked above): rebuilt directly, not through replace()
        return (Call(stmt.target, ref, stmt.args, stmt.kwargs, stmt.node, stmt.where),)

    bound = map_bodies(program, bind)
    if len(decls) == len(program.targets):
        return bound
    return dataclasses.replace(bound, targets=tuple(decls))


# ==========================================================================
# The liveness pass: a ``del`` right after each local's last use.
#
# For every function of a program, existing ``Del`` statements are dropped
# (the pass is idempotent) and a ``Del`` is placed
#
# * after the statement that reads a local for the last time (parameters
#   included — a parameter never read is deleted before the first statement);
# * right after the statement that makes a local nobody reads (the statement
#   still runs: calls keep their side effects and their order);
# * never for a local that the ``Return`` reads, and never after the ``Return``;
# * never for a local a statement consumes (an ``Unbox``'s list: emptied, it
#   holds nothing).
#
# Bodies that may not run, or run again (``BRANCH``, ``LOOP``: an ``if``'s
# arms, a loop's body), are scopes of their own: what one binds is freed
# inside it, on the path that bound it; what it reads from outside is freed
# after the statement that holds it, never inside (another arm, or the next
# iteration, may read it). A loop's :class:`~stitchgen.ir.Break` leaves with
# what the body bound before it still bound: those are freed right after the
# loop. Locals are single-assignment (FX node names), so a name's last use is
# unambiguous. Names in one ``Del`` appear in the order they were defined.


def insert_dels(program: Program) -> Program:
    """Return ``program`` with dels placed in every function."""
    functions = tuple(place_dels(fn) for fn in program.functions)
    return dataclasses.replace(program, functions=functions)


def place_dels(fn: Function) -> Function:
    """``fn`` with a del right after each local's last use (existing dels replaced)."""
    body, _ = _place(fn.body, [p.name for p in fn.params])
    return dataclasses.replace(fn, body=tuple(body))


def _place(
    stmts: tuple[Stmt, ...], params: Sequence[str] = (), frees: bool = True
) -> tuple[list[Stmt], list[str]]:
    """One body with its dels placed (``frees=False``: a body that always
    runs, whose locals its statement's scope frees), and the locals still
    bound where a :class:`~stitchgen.ir.Break` of it leaves the loop."""
    body: list[Stmt] = []
    #: by index in ``body``: what a loop leaves bound (freed after it, as unread)
    left: dict[int, list[str]] = {}
    schemas = SCHEMAS.get  # (each statement's bodies: conditional, or always run)
    breaks = False
    for stmt in stmts:
        kind = type(stmt)
        if kind is Del:
            continue
        schema = schemas(kind) or schema_of(kind)
        breaks = breaks or kind is Break
        conditional, always = schema.conditional, schema.always
        if conditional or always:  # its bodies first: their own dels, their exits
            changes: dict[str, Any] = {}
            exits: list[str] = []
            for name in conditional:
                placed, bound = _place(getattr(stmt, name))
                changes[name] = tuple(placed)
                exits += bound
            for name in always:
                changes[name] = tuple(_place(getattr(stmt, name), frees=False)[0])
            stmt = dataclasses.replace(stmt, **changes)
            if exits:
                left[len(body)] = exits
        body.append(stmt)
    order: dict[str, int] = {}  # name -> definition order
    position: dict[str, int] = {}  # name -> index of the statement after which it dies
    for name in params:
        order[name] = len(order)
        position[name] = -1
    keep: set[str] = set()
    for i, stmt in enumerate(body):
        kind = type(stmt)
        if kind is Return:
            keep.update(reads(stmt))
            continue
        for name in reads(stmt):
            position[name] = i
        if SCHEMAS[kind].deleting:  # (Dels are gone): what it consumes needs no del
            keep.update(deletes(stmt))
        targets = writes(stmt)
        if i in left:
            targets += left[i]
        for target in targets:
            if target not in order:
                order[target] = len(order)
                position.setdefault(target, i)
    dies_after: dict[int, list[str]] = {}
    if frees:
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
    return out, _bound_at_break(out, key) if breaks else []


def _bound_at_break(body: list[Stmt], key: Callable[[str], int]) -> list[str]:
    """The locals ``body`` (a loop's, its dels placed) has bound where its
    :class:`~stitchgen.ir.Break` leaves the loop."""
    bound: set[str] = set()
    for stmt in body:
        if type(stmt) is Break:
            break
        bound.update(writes(stmt))
        bound.difference_update(deletes(stmt))
    return sorted(bound, key=key)


# ==========================================================================
# The naming pass: every identifier in the emitted module valid and unique.
#
# A :class:`Namespace` owns the names of one scope. The module scope reserves
# Python keywords, builtins, the reserved globals ``inf``/``nan``, and the
# top-level names of imported modules; then it names the entry function (the
# user's name, kept exactly), the binder, the bindings (submodules, constants,
# call targets) and the inlined functions. Each function's locals are named in a copy of that
# scope, so no local can shadow ``torch``, a builtin, a binding or a helper.
# A name that is taken gets ``_1``, ``_2``, … appended, as FX does it (a taken
# ``x_1`` becomes ``x_2``, not ``x_1_1``); a name that is not an
# ASCII identifier is sanitized first. Parameters keep their keyword when they
# can, and calls to inlined functions follow their parameters' new names.
#
# The entry function's parameters are what callers pass by keyword
# (``fn(input=x)``, as the ``GraphModule`` takes it), so each keeps its
# placeholder's own name even where that name is a builtin (``input``, ``id``,
# ``type``): the module scope reserves it before naming the bindings, and the
# parameter shadows the builtin, which the function's code then does not use.
# It is renamed only where the name is one the function's code needs
# (:func:`_needed_globals`: a module or builtin its expressions write, a
# convention's helper, a name the templates reserve); then it is passed by
# position only, and a keyword-only parameter (after ``*args``) that cannot
# keep its name is refused with a :class:`~stitchgen.errors.CodegenError`.


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
        for stmt in iter_statements(fn.body):  # nested bodies' locals too
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
    if not any(name in BUILTINS or name in roots for name in asked):
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


# ==========================================================================
# the pipeline

Pass = Callable[[Program], Program]


@record
class Step(Record):
    """One pass as the pipeline runs it: ``run``, the name :func:`verify`'s
    messages give it (``label``), and whether module-level names are final
    after it (``names_final``: the naming pass)."""

    run: Pass
    label: str
    names_final: bool = False

    def __init__(self, run: Pass, label: str, names_final: bool = False) -> None:
        d = self.__dict__
        d["run"] = run
        d["label"] = label
        d["names_final"] = names_final


TARGETS = Step(bind_targets, "the targets pass")
LIVENESS = Step(insert_dels, "the liveness pass")
NAMING = Step(assign_names, "the naming pass", names_final=True)

#: the built-in passes, in order (yours run before them)
PASSES: tuple[Step, ...] = (TARGETS, LIVENESS, NAMING)


def pipeline_steps(extra: Sequence[Pass] = ()) -> list[Step]:
    """The passes a program goes through: ``extra`` (yours, in order), then
    targets, liveness and naming."""
    steps = [Step(p, f"the pass {getattr(p, '__qualname__', repr(p))}") for p in extra]
    return [*steps, *PASSES]


def run_passes(
    program: Program,
    *,
    extra: Sequence[Pass] = (),
    verify_each: bool | None = None,
) -> Program:
    """``program`` through :func:`pipeline_steps`; ``verify_each`` (default:
    ``STITCHGEN_VERIFY=1``) checks the program after each."""
    if verify_each is None:
        verify_each = os.environ.get("STITCHGEN_VERIFY") == "1"
    named = False  # module-level names are hints until the naming pass
    if verify_each:
        ir.verify(program, after="lowering", named=named)  # imported on first use
    for step in pipeline_steps(extra):
        program = step.run(program)
        named = named or step.names_final
        if verify_each:
            ir.verify(program, after=step.label, named=named)
    return program

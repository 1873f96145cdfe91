"""The targets pass: every call target reached by a qualified name is looked
up once, where the module is bound, not on every call.

``torch.ops.aten.mm.default(x, w)`` follows four attributes each time it
runs — about half a microsecond, ~13 % of a small ``mm``, on every op of
every inlined piece, every forward. This pass gives each distinct
:class:`~stitchgen.ir.GlobalRef` callee a :class:`~stitchgen.ir.TargetDecl`
(``aten_mm_default = torch.ops.aten.mm.default``, written in the binder's
body — closure cells — or at module level for a convention without a
binder) and makes the calls read it (:class:`~stitchgen.ir.TargetRef`).
The name resolves to the very object lowering verified
(:func:`stitchgen.references.qualified_ref`); builtins (``len``, ``getattr``)
keep their bare names. The naming pass makes each name unique.
"""

from __future__ import annotations

import dataclasses

from ..ir import Call, GlobalRef, Program, Stmt, TargetDecl, TargetRef, map_bodies

__all__ = ["bind_targets", "target_hint"]


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

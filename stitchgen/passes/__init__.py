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
            if isinstance(stmt, ir.Call) and stmt.is_piece:
                hook = ir.GlobalRef("myproject.hooks", "mark")
                yield ir.Call(f"{stmt.target}_mark", hook, (ir.Literal(stmt.node),))
            yield stmt

        program = ir.map_bodies(program, mark)
        imports = tuple(sorted({*program.imports, "myproject.hooks"}))
        return dataclasses.replace(program, imports=imports)

    fn = stitchgen.compile(split_gm, passes=[mark_pieces])
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from .. import ir
from ..ir import Program
from ..records import Record, record
from .liveness import insert_dels
from .naming import assign_names
from .targets import bind_targets

__all__ = ["PASSES", "Pass", "Step", "pipeline_steps", "run_passes"]

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

"""The passes over a :class:`~stitchgen.ir.Program`, in order, in one place.

``lowering`` builds the raw program (FX names, no dels); the passes make it
ready to render:

1. ``flatten`` (only with ``inline="flatten"``): splice inlined pieces into
   their callers;
2. your passes (``generate(..., passes=[...])``), in the order given: each a
   function ``Program -> Program`` on the raw program — FX names, no dels;
3. ``targets``: every call target reached by a qualified name looked up
   once, where the module is bound (``aten_mm_default = torch.ops.aten.mm.default``);
4. ``liveness``: a ``del`` right after each local's last use;
5. ``naming``: every identifier valid and collision-free.

With ``verify=True`` (``STITCHGEN_VERIFY=1``, and always in the test suite)
:func:`stitchgen.ir.verify` checks the program after every pass and names
the pass that broke it.

A pass of your own — a hook before every piece call (tested in
``tests/test_walker.py``; see docs/templates.md, "A pass of your own")::

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

from ..ir import Program, verify
from .flatten import splice_inlined
from .liveness import insert_dels
from .naming import assign_names
from .targets import bind_targets

__all__ = ["PASSES", "Pass", "run_passes"]

Pass = Callable[[Program], Program]

#: the built-in passes, in order: (name, pass, the ``inline`` value that
#: enables it or None for always); user passes run after ``flatten``
PASSES: tuple[tuple[str, Pass, str | None], ...] = (
    ("flatten", splice_inlined, "flatten"),
    ("targets", bind_targets, None),
    ("liveness", insert_dels, None),
    ("naming", assign_names, None),
)
_USER_PASSES_AFTER = "flatten"
_NAMING = "naming"


def run_passes(
    program: Program,
    *,
    inline: str = "call",
    extra: Sequence[Pass] = (),
    verify_each: bool | None = None,
) -> Program:
    """``program`` through every pass that applies, ``extra`` after
    ``flatten``; ``verify_each`` (default: ``STITCHGEN_VERIFY=1``) checks the
    program after each."""
    if verify_each is None:
        verify_each = os.environ.get("STITCHGEN_VERIFY") == "1"
    named = False  # module-level names are hints until the naming pass
    if verify_each:
        verify(program, after="lowering", named=named)
    for name, run, option in PASSES:
        if option is None or option == inline:
            program = run(program)
            named = named or name == _NAMING
            if verify_each:
                verify(program, after=f"the {name} pass", named=named)
        if name == _USER_PASSES_AFTER:
            for user in extra:
                program = user(program)
                if verify_each:
                    label = getattr(user, "__qualname__", repr(user))
                    verify(program, after=f"the pass {label}", named=named)
    return program

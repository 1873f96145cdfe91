"""Lower an FX GraphModule into a :class:`~stitchgen.ir.Program`.

One pass over each graph's nodes. Decisions made here: which children are
inlined (plain ``GraphModule`` children without hooks; twins — the same graph
up to parameter names, see :func:`fingerprint` — share one function) and
which are called through a binding, how each constant is written (inline literal, exact
qualified name, or lifted binding — see ``literals.py``), and what every FX
argument becomes as an IR expression. Names stay the FX node names here; the
passes (:mod:`stitchgen.passes`) add the dels and make the names valid and
collision-free.

This package is the door; each concern has its module: ``program``
(:func:`build_program`), ``lowerer`` (one graph's nodes, children and
values, its state local to the pass), ``declarations`` (what the program
declares across its graphs: imports, constants, bindings, inlined
functions and twins), ``twins`` (:func:`fingerprint`), ``pytree`` (the pytree calling convention)
and ``reading`` (what is read from FX, how argument values are classified).
"""

from .program import ConstPool, build_program
from .reading import fetch_attr, pytree_info
from .twins import fingerprint

__all__ = [
    "ConstPool",
    "build_program",
    "fetch_attr",
    "fingerprint",
    "pytree_info",
]

"""stitchgen: plain Python functions from FX stitching graphs.

A compiler splits a model's FX graph into pieces (``split_module``); the
stitching graph that calls the pieces runs, as a ``GraphModule``, through
``nn.Module.__call__`` and FX dispatch on every forward. stitchgen generates a
plain function that does the same work with none of that overhead and frees
every intermediate right after its last use.

>>> import torch, stitchgen
>>> from torch.fx.experimental.proxy_tensor import make_fx
>>> gm = make_fx(lambda x: torch.relu(x) * 2)(torch.randn(3))
>>> split = stitchgen.split_graph(gm, ["aten::relu"])
>>> fn = stitchgen.compile(split)
>>> x = torch.randn(3)
>>> torch.equal(fn(x), split(x))
True

Pipeline: ``lower`` (graph → :class:`~stitchgen.ir.Program`, through the
passes of :mod:`stitchgen.passes`) → ``render``
(Jinja2 templates, or their text written directly where the built-ins are in
effect; black's layout on request) → ``load`` (callable). ``generate`` and
``compile`` run the stages for you.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy doors below resolve, for type checkers and IDEs
    from . import compat, ir
    from .conventions import Linkage
    from .errors import (
        ArtifactError,
        BindingError,
        CodegenError,
        GoldenError,
        LeftAsCallWarning,
        ProgramError,
        StaleTemplateWarning,
        StitchgenError,
        TemplateError,
    )
    from .filters import Code
    from .ir import Program
    from .loading import Generated, load, load_artifact, read_artifact
    from .options import Options
    from .pipeline import compile, generate, lower
    from .rendering import Templates, render
    from .split import split_graph
    from .torch_backend import backend
    from .version import __version__ as __version__

#: public name -> the module that defines it (imported on first use: PEP 562;
#: ``__version__`` too: the compile path does not read it)
_DOORS = {
    "__version__": "version",
    "ArtifactError": "errors",
    "BindingError": "errors",
    "Code": "filters",
    "CodegenError": "errors",
    "Generated": "loading",
    "GoldenError": "errors",
    "LeftAsCallWarning": "errors",
    "Linkage": "conventions",
    "Options": "options",
    "Program": "ir",
    "ProgramError": "errors",
    "StaleTemplateWarning": "errors",
    "StitchgenError": "errors",
    "TemplateError": "errors",
    "Templates": "rendering",
    "backend": "torch_backend",
    "compile": "pipeline",
    "generate": "pipeline",
    "load": "loading",
    "load_artifact": "loading",
    "lower": "pipeline",
    "read_artifact": "loading",
    "render": "rendering",
    "split_graph": "split",
}
#: public names that are modules of the package
_MODULES = ("compat", "ir")

__all__ = [
    "ArtifactError",
    "BindingError",
    "Code",
    "CodegenError",
    "Generated",
    "GoldenError",
    "LeftAsCallWarning",
    "Linkage",
    "Options",
    "Program",
    "ProgramError",
    "StaleTemplateWarning",
    "StitchgenError",
    "TemplateError",
    "Templates",
    "backend",
    "compat",
    "compile",
    "generate",
    "ir",
    "load",
    "load_artifact",
    "lower",
    "read_artifact",
    "render",
    "split_graph",
]


def __getattr__(name: str) -> Any:
    """Resolve a public name on first use: ``import stitchgen`` imports
    nothing it does not need (see the README, "What each path costs")."""
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    home = _DOORS.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "__version__"})

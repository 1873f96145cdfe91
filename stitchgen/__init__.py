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

from . import compat, ir
from .artifact import load_artifact, read_artifact
from .errors import ArtifactError, BindingError, CodegenError, StitchgenError, TemplateError
from .generated import Generated
from .ir import Program
from .loading import load
from .pipeline import compile, generate, lower
from .rendering import Code, Templates, render
from .split import split_graph
from .torch_backend import backend
from .version import __version__ as __version__

__all__ = [
    "ArtifactError",
    "BindingError",
    "Code",
    "CodegenError",
    "Generated",
    "Program",
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

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

Pipeline: ``lower`` (graph → :class:`~stitchgen.ir.Program`) → ``render``
(Jinja2 templates, or their text written directly where the built-ins are in
effect; black's layout on request) → ``load`` (callable). ``generate`` and
``compile`` run the stages for you.
"""

from __future__ import annotations

from . import compat, ir
from .artifact import ArtifactError, load_artifact, read_artifact
from .backend import backend
from .errors import BindingError, CodegenError, TemplateError
from .generate import Generated, compile, generate
from .ir import Program
from .load import load
from .lower import lower
from .render import Code, Templates, render
from .split import split_graph

__version__ = "0.1.0"

__all__ = [
    "ArtifactError",
    "BindingError",
    "Code",
    "CodegenError",
    "Generated",
    "Program",
    "TemplateError",
    "backend",
    "compat",
    "Templates",
    "compile",
    "generate",
    "ir",
    "load",
    "load_artifact",
    "read_artifact",
    "lower",
    "render",
    "split_graph",
]

"""Small graphs and template overrides the tests share (instead of copies)."""

from __future__ import annotations

from pathlib import Path

import torch.fx as fx
from flatten_pass import splice_inlined

#: the program shapes the suites draw, as generate options: pieces called
#: (the default), or spliced into their callers by the worked example of a
#: pass of your own (examples/flatten_pass.py)
SHAPES = {"call": {"passes": []}, "flatten": {"passes": [splice_inlined]}}


def returning_constant(value: object) -> fx.GraphModule:
    """``lambda x: (x, value)`` as a graph: a constant straight in the output."""
    graph = fx.Graph()
    graph.output((graph.placeholder("x"), value))
    return fx.GraphModule({}, graph)


def override_return(directory: Path, expression: str) -> Path:
    """A ``function.py.j2`` in ``directory`` whose return block prints
    ``{{ <expression> }}``; the file's path."""
    path = Path(directory) / "function.py.j2"
    path.write_text(
        '{% extends "stitchgen/function.py.j2" %}\n'
        "{% block return %}\n"
        f"    return {{{{ {expression} }}}}\n"
        "{% endblock %}\n"
    )
    return path


def vllm_header(directory: Path, comment: str) -> Path:
    """A ``module.py.j2`` in ``directory`` that writes ``# <comment>`` above
    the ``vllm`` variant's module (extending the variant's file, not the
    built-in one); the directory."""
    (Path(directory) / "module.py.j2").write_text(
        '{% extends "stitchgen/variants/vllm/module.py.j2" %}\n'
        "{% block header %}\n"
        f"# {comment}\n"
        "{{ super() -}}\n"
        "{% endblock %}\n"
    )
    return Path(directory)

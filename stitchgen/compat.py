"""A drop-in for vLLM's ``vllm/compilation/codegen.py``.

Same functions, same argument meanings, same return shapes::

    from stitchgen.compat import compile_execution_fn, generate_execution_code

    code, submod_names, consts = generate_execution_code(split_gm)
    fn = compile_execution_fn(code, submod_callables, submod_names, consts)

The code is stitchgen's ``vllm`` template variant: ``execution_fn(...,
*, __vllm_submods__)``, bound pieces as ``__vllm_submods__[i]``, inlined
GraphModule children as ``__vllm_inlined_submods__<N>``, lifted constants as
``__vllm_consts__[i]`` — the convention vLLM's compile cache stores, so code
cached by vLLM loads here and code generated here loads in vLLM. Code from
before constants existed loads with ``consts=None``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

import torch.fx as fx

from .errors import BindingError
from .generate import generate
from .load import exec_source, keep_source

__all__ = ["compile_execution_fn", "generate_execution_code"]

_SUBMOD_INDEX = re.compile(r"__vllm_submods__\[(\d+)\]")


def generate_execution_code(split_gm: fx.GraphModule) -> tuple[str, list[str], list[Any]]:
    """``(code, submod_names, consts)`` for vLLM's stitching graph:
    ``submod_names[i]`` is the child called as ``__vllm_submods__[i]``,
    ``consts[i]`` the object read as ``__vllm_consts__[i]``.

    >>> import torch.fx as fx
    >>> code, names, consts = generate_execution_code(fx.symbolic_trace(lambda x: x + 1))
    >>> "def execution_fn(x, *, __vllm_submods__):" in code, names, consts
    (True, [], [])
    """
    generated = generate(split_gm, templates="vllm", format=False)
    return generated.code, list(generated.submod_names), list(generated.consts)


def _emit_trace_artifact(code: str) -> None:
    """The source as a ``torch._logging.trace_structured`` artifact, as vLLM
    emits it, so ``TORCH_TRACE``/tlparse users see it."""
    from torch._logging import trace_structured

    trace_structured(
        "artifact",
        metadata_fn=lambda: {"name": "vllm_execution_code", "encoding": "string"},
        payload_fn=lambda: code,
    )


def compile_execution_fn(
    code: str,
    submod_callables: Mapping[str, Callable[..., Any]],
    submod_names: list[str],
    consts: list[Any] | None = None,
) -> Callable[..., Any]:
    """The callable for ``code``: ``execution_fn`` with ``__vllm_submods__``
    bound (``partial``) and ``__vllm_consts__`` set, as vLLM binds it.

    A piece the code calls but ``submod_callables`` lacks is a
    :class:`stitchgen.BindingError` now, not a ``None`` call later (names the
    code never calls — vLLM lists inlined children too — may be absent).
    """
    _emit_trace_artifact(code)
    used = {int(i) for i in _SUBMOD_INDEX.findall(code)}
    out_of_range = sorted(i for i in used if i >= len(submod_names))
    if out_of_range:
        raise BindingError(
            f"the code calls __vllm_submods__{out_of_range} but submod_names has "
            f"{len(submod_names)} entries"
        )
    missing = [submod_names[i] for i in sorted(used) if submod_names[i] not in submod_callables]
    if missing:
        raise BindingError(f"missing callable(s) for submodule(s) {missing}")
    extra = {} if consts is None else {"__vllm_consts__": list(consts)}
    namespace = exec_source(code, "execution_fn", extra)
    pieces = [submod_callables.get(name) for name in submod_names]
    fn = functools.partial(namespace["execution_fn"], __vllm_submods__=pieces)
    return keep_source(fn, code, "execution_fn")

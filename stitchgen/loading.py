"""Load generated source into a callable.

The source is compiled under a unique, content-derived filename that is
registered in :mod:`linecache`, so a traceback through the generated function
shows the generated line; the entry is dropped when the last function loaded
from that source is garbage-collected. In the default (closure) convention the module defines a
binder whose parameters are the bindings; calling it once gives the entry
function, which reaches every submodule and constant through closure cells —
no ``functools.partial``, no per-call dict or list lookups. The ``vllm``
variant's code is loaded the way vLLM loads it (``__vllm_consts__`` global,
``partial(fn, __vllm_submods__=[...])``). What each convention needs is its
:class:`~stitchgen.conventions.Convention`'s to say; this module runs the
code and hands it the bindings.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import linecache
import threading
import types
import weakref
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

from .conventions import convention_named
from .errors import BindingError

__all__ = [
    "Loadable",
    "clear_compile_cache",
    "compile_cache_info",
    "compile_source",
    "load",
    "source_filename",
]

_lock = threading.Lock()
_live: dict[str, int] = {}  # linecache filename -> functions alive that use it


def source_filename(code: str, name: str) -> str:
    """``<stitchgen:execution_fn:1a2b3c4d5e6f>`` — stable for the same source."""
    digest = hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"<stitchgen:{name}:{digest}>"


@functools.lru_cache(maxsize=128)
def _code_object(code: str, filename: str) -> types.CodeType:
    return compile(code, filename, "exec", dont_inherit=True)


def compile_cache_info() -> Any:
    """Hits and misses of the compile cache (``functools`` cache info)."""
    return _code_object.cache_info()


def clear_compile_cache() -> None:
    """Forget every compiled source (benchmarks measure a cold compile)."""
    _code_object.cache_clear()


def compile_source(code: str, name: str) -> types.CodeType:
    """``code`` compiled under :func:`source_filename` (cached by source)."""
    return _code_object(code, source_filename(code, name))


def _register(filename: str, code: str) -> None:
    with _lock:
        _live[filename] = _live.get(filename, 0) + 1
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)


def _unregister(filename: str) -> None:
    with _lock:
        count = _live.get(filename, 0) - 1
        if count > 0:
            _live[filename] = count
        else:
            _live.pop(filename, None)
            linecache.cache.pop(filename, None)


def _bindings(
    names: list[str],
    submods: Mapping[str, Callable[..., Any]],
    defaults: Mapping[str, Callable[..., Any]],
    inlined: Collection[str] = (),
) -> list[Any]:
    # a binding for a piece the code inlined is ignored: a compile cache hands over every piece
    inlined = frozenset(inlined)  # read once per name below (vLLM lists every inlined child)
    extra = sorted(set(submods) - set(names) - inlined)
    if extra:
        raise BindingError(
            f"unexpected submodule binding(s) {extra}: the generated code calls "
            f"{names or 'no submodule'} through bindings"
            + (f" and inlined {sorted(inlined)}" if inlined else "")
        )
    values: list[Any] = []
    missing: list[str] = []
    for name in names:
        value = submods[name] if name in submods else defaults.get(name)
        if value is None:
            if name not in inlined:  # the code calls an inlined child by itself
                missing.append(name)
        elif not callable(value):
            raise BindingError(
                f"binding for submodule {name!r} is not callable ({type(value).__name__})"
            )
        values.append(value)
    if missing:
        raise BindingError(f"missing binding for submodule(s) {missing}; pass them in submods")
    return values


class Loadable(Protocol):
    """What :func:`load` reads (a :class:`stitchgen.Generated` is one): the
    code, compiled or not, and its linkage."""

    code: str
    code_object: types.CodeType | None
    name: str
    binder: str
    convention: str
    submod_names: list[str]
    consts: list[Any]
    submods: Mapping[str, Callable[..., Any]]
    inlined: tuple[str, ...]


def load(
    generated: Loadable, submods: Mapping[str, Callable[..., Any]] | None = None
) -> Callable[..., Any]:
    """The callable for ``generated``, with submodules from ``submods`` (by
    qualified name), falling back to the children found on the graph module.

    >>> import torch, torch.fx as fx, stitchgen
    >>> fn = stitchgen.load(stitchgen.generate(fx.symbolic_trace(lambda x: x * 2)))
    >>> fn(torch.ones(2))
    tensor([2., 2.])
    """
    program = getattr(generated, "program", None)
    if program is not None and len(generated.consts) != len(program.consts):
        raise BindingError(
            f"the code expects {len(program.consts)} constants, got {len(generated.consts)}"
        )
    try:
        rules = convention_named(generated.convention)
    except ValueError as exc:
        raise BindingError(str(exc)) from None
    pieces = _bindings(
        list(generated.submod_names), submods or {}, generated.submods or {}, generated.inlined
    )
    consts = list(generated.consts)
    code, name = generated.code, generated.name
    namespace = _exec_source(code, name, rules.module_globals(consts), generated.code_object)
    fn = rules.bind(namespace, name=name, binder=generated.binder, pieces=pieces, consts=consts)
    return _keep_source(fn, code, name)


def _exec_source(
    code: str,
    name: str,
    extra: Mapping[str, Any] | None = None,
    code_object: types.CodeType | None = None,
) -> dict[str, Any]:
    """Run generated module ``code`` (imports and definitions only) in a fresh
    namespace, compiled under :func:`source_filename` (or given compiled, as
    an artifact stores it); the namespace."""
    namespace: dict[str, Any] = {"__builtins__": builtins, "__name__": "stitchgen.generated"}
    namespace.update(extra or {})
    exec(code_object or compile_source(code, name), namespace)
    return namespace


def _keep_source(fn: Any, code: str, name: str) -> Any:
    """Keep ``code`` in :mod:`linecache` while ``fn`` lives (for tracebacks)."""
    filename = source_filename(code, name)
    _register(filename, code)
    weakref.finalize(fn, _unregister, filename)
    return fn

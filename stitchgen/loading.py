"""Generated code and how it becomes a callable: :class:`Generated`, the
record ``generate`` returns and an artifact stores (the code, its compiled
form, its :class:`~stitchgen.Linkage` and constants, the IR when there is
one; ``save`` is a door to the artifact store, :mod:`stitchgen.archive`),
:func:`load`, the one load path, and :func:`read_artifact` and
:func:`load_artifact`, which read a stored one back.

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
import json
import linecache
import os
import threading
import types
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .conventions import convention_named
from .errors import ArtifactError, BindingError
from .records import Record, record

if TYPE_CHECKING:
    from .archive import Verified
    from .conventions import Linkage
    from .ir import Program

__all__ = [
    "Generated",
    "clear_compile_cache",
    "compile_cache_info",
    "compile_source",
    "load",
    "load_artifact",
    "read_artifact",
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


@record
class Generated(Record):
    """Generated code and what it needs to run.

    ``linkage`` says how the code links (:class:`stitchgen.Linkage`: its
    entry's and binder's names, its convention, the children it takes
    bindings for and those it calls by itself; ``name``, ``binder``,
    ``convention``, ``submod_names`` and ``inlined`` read it), ``consts``
    are the lifted constant objects (in binding order), ``program`` the IR
    (None for code read from an artifact's warm path, or built by hand),
    ``submods`` the children found on the graph module, used by
    :func:`stitchgen.load` when no other binding is given (children named
    in ``opaque`` have none: the caller binds them).
    """

    code: str
    linkage: Linkage
    consts: list[Any]
    program: Program | None = None
    submods: Mapping[str, Callable[..., Any]] = field(default_factory=dict, repr=False)
    #: the :class:`stitchgen.Templates` that rendered ``code`` (None when read
    #: from an artifact; typed loosely: loading comes before rendering)
    templates: Any = field(default=None, repr=False, compare=False)
    #: ``code`` already compiled (by ``generate``'s check of templates of
    #: your own, or from an artifact), so loading does not compile it again;
    #: None for the shipped templates' text, which ``load`` compiles (once)
    code_object: types.CodeType | None = field(default=None, repr=False, compare=False)

    def __init__(
        self,
        code: str,
        linkage: Linkage,
        consts: list[Any],
        program: Program | None = None,
        submods: Mapping[str, Callable[..., Any]] | None = None,
        templates: Any = None,
        code_object: types.CodeType | None = None,
    ) -> None:
        d = self.__dict__
        d["code"] = code
        d["linkage"] = linkage
        d["consts"] = consts
        d["program"] = program
        d["submods"] = {} if submods is None else submods
        d["templates"] = templates
        d["code_object"] = code_object

    @property
    def name(self) -> str:
        """The entry function's name."""
        return self.linkage.name

    @property
    def binder(self) -> str:
        """The binder's name (closure convention)."""
        return self.linkage.binder

    @property
    def convention(self) -> str:
        """How the code receives its bindings (``"closure"``, or ``"vllm"``;
        see :mod:`stitchgen.conventions`)."""
        return self.linkage.convention

    @property
    def submod_names(self) -> list[str]:
        """The children called through bindings, in binding order (the vllm
        convention lists inlined children too, in first-call order)."""
        return list(self.linkage.submod_names)

    @property
    def inlined(self) -> tuple[str, ...]:
        """The children the code calls by itself (no binding needed)."""
        return self.linkage.inlined

    def save(self, path: str | os.PathLike[str], *, key: bytes | None = None) -> Path:
        """Save as an artifact directory for a compile cache; see
        :func:`stitchgen.load_artifact`. ``key`` signs it (HMAC-SHA256).
        ``path`` is replaced atomically only when it is absent, an empty
        directory or a stitchgen artifact; anything else there is an
        :class:`~stitchgen.errors.ArtifactError` naming it."""
        from .archive import save_artifact  # the store, imported only to save

        compiled = self.code_object or compile_source(self.code, self.name)
        return save_artifact(
            path,
            code=self.code,
            compiled=compiled,
            linkage=self.linkage,
            consts=self.consts,
            program=self.program,
            templates=self.templates,
            key=key,
        )


def _bindings(
    linkage: Linkage,
    submods: Mapping[str, Callable[..., Any]],
    defaults: Mapping[str, Callable[..., Any]],
) -> list[Any]:
    names = linkage.submod_names
    # a binding for a piece the code inlined is ignored: a compile cache hands over every piece
    inlined = frozenset(linkage.inlined)  # read once per name below (vLLM lists every child)
    extra = sorted(set(submods) - set(names) - inlined)
    if extra:
        raise BindingError(
            f"unexpected submodule binding(s) {extra}: the generated code calls "
            f"{list(names) or 'no submodule'} through bindings"
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


def load(
    generated: Generated, submods: Mapping[str, Callable[..., Any]] | None = None
) -> Callable[..., Any]:
    """The callable for ``generated``, with submodules from ``submods`` (by
    qualified name), falling back to the children found on the graph module.

    >>> import torch, torch.fx as fx, stitchgen
    >>> fn = stitchgen.load(stitchgen.generate(fx.symbolic_trace(lambda x: x * 2)))
    >>> fn(torch.ones(2))
    tensor([2., 2.])
    """
    program, linkage = generated.program, generated.linkage
    if program is not None and len(generated.consts) != len(program.consts):
        raise BindingError(
            f"the code expects {len(program.consts)} constants, got {len(generated.consts)}"
        )
    try:
        rules = convention_named(linkage.convention)
    except ValueError as exc:
        raise BindingError(str(exc)) from None
    pieces = _bindings(linkage, submods or {}, generated.submods or {})
    consts = list(generated.consts)
    code, name = generated.code, linkage.name
    namespace = _exec_source(code, name, rules.module_globals(consts), generated.code_object)
    fn = rules.bind(namespace, name=name, binder=linkage.binder, pieces=pieces, consts=consts)
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


# ==========================================================================
# An artifact read back (:mod:`stitchgen.archive` writes and verifies one):
# the warm start of a compile cache.


def read_artifact(
    path: str | os.PathLike[str],
    *,
    key: bytes | None = None,
    allow_imports: Iterable[str] = (),
) -> Generated:
    """The :class:`~stitchgen.Generated` stored at ``path``, verified, with
    its IR (``program``).

    ``key``: the HMAC key it was saved with (required if it was signed).
    ``allow_imports``: modules the code may import that are not imported yet
    (importing runs a module's code, so by default only modules already in
    ``sys.modules`` are accepted).
    """
    from . import ir  # the IR: read_artifact's, never load_artifact's
    from .archive import open_artifact, verified_file  # the store: imported to read one

    opened = open_artifact(Path(path), key, allow_imports)
    try:
        program_json = json.loads(verified_file(opened.root, opened.manifest, "program.json"))
        program = ir.from_json(program_json, tuple(opened.consts))
    except ArtifactError:
        raise
    except Exception as exc:
        raise ArtifactError(f"artifact {path}: the stored program is invalid ({exc})") from None
    return _record(opened, program)


def _record(opened: Verified, program: Any = None) -> Generated:
    """The :class:`~stitchgen.Generated` an opened artifact holds: its code and
    linkage as the manifest records them (the IR if read)."""
    from .conventions import Linkage

    linkage = Linkage.from_manifest(opened.manifest)
    return Generated(opened.code, linkage, opened.consts, program, code_object=opened.code_object)


def load_artifact(
    path: str | os.PathLike[str],
    submods: Mapping[str, Callable[..., Any]] | None = None,
    *,
    key: bytes | None = None,
    allow_imports: Iterable[str] = (),
) -> Callable[..., Any]:
    """The warm-start path of a compile cache: the callable stored at
    ``path``, bound to ``submods`` (every bound piece must be given). It
    verifies the artifact and runs its module; it reads no IR and builds no
    FX graph.

    >>> import tempfile, torch, torch.fx as fx, stitchgen
    >>> generated = stitchgen.generate(fx.symbolic_trace(lambda x: x * 2))
    >>> path = generated.save(tempfile.mkdtemp() + "/artifact")
    >>> stitchgen.load_artifact(path)(torch.ones(2))
    tensor([2., 2.])
    """
    from .archive import open_artifact  # the store: imported to read one

    opened = open_artifact(Path(path), key, allow_imports)
    try:
        return load(_record(opened), submods)
    except BindingError as exc:
        raise BindingError(f"artifact {path}: {exc}") from None

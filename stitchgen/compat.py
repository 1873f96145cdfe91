"""A drop-in for vLLM 0.34's ``vllm/compilation/codegen.py``.

Same functions, same arguments, same return values::

    from stitchgen.compat import compile_execution_fn, generate_execution_code

    code, submod_names, consts = generate_execution_code(split_gm)
    fn = compile_execution_fn(code, submod_callables, submod_names, consts)

The code follows the :data:`~stitchgen.conventions.VLLM` convention, the one
vLLM's compile cache stores: ``execution_fn(..., *, __vllm_submods__)``,
``submod_names`` listing every child of ``split_gm`` in first-call order
(inlined ``GraphModule`` children too: their callable may be absent or
``None``), and every argument that is not an ``int``, ``float``, ``bool``,
``str``, ``bytes``, ``None`` or a list/tuple/dict display lifted into
``consts`` — dtypes and devices included — deduplicated by identity in
first-use order across all pieces, read as ``__vllm_consts__[i]``. So the
``submod_names`` and ``consts`` are vLLM's for the same graph, code generated
here loads in vLLM's ``compile_execution_fn``, and code vLLM generated (or
cached, ``consts=None`` for code from before constants) loads here.

Where vLLM's code would be wrong (``inf``, names shadowing ``torch``, an op
outside ``torch``/``operator``, a non-``int`` ``getitem``), this code is right.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch.fx as fx

from .pipeline import paused  # its import runs the compile path's, the collector paused

with paused():  # the compile path's modules: see pipeline.paused
    from .conventions import VLLM, Linkage
    from .errors import BindingError
    from .ir import Calling, FunctionRef, Program, iter_statements
    from .loading import Generated, load
    from .options import ConstPool, Options
    from .pipeline import dump_if_asked, produce, tracing
    from .rendering import Templates, resolve_templates

__all__ = [
    "Codegen",
    "compile_execution_fn",
    "generate_execution_code",
    "generate_execution_code_with_name",
]

#: the linkage of each code text generated here (the lowering's), for
#: ``compile_execution_fn``: the last 256 texts (a cache, safe to share)
_LINKAGES: OrderedDict[str, Linkage] = OrderedDict()
_LINKAGES_LOCK = threading.Lock()
_LINKAGES_SIZE = 256


def _remember(code: str, linkage: Linkage) -> None:
    with _LINKAGES_LOCK:
        _LINKAGES[code] = linkage
        _LINKAGES.move_to_end(code)
        while len(_LINKAGES) > _LINKAGES_SIZE:
            _LINKAGES.popitem(last=False)


def _linkage_of(code: str) -> Linkage | None:
    """The linkage of ``code``, if this process generated it."""
    with _LINKAGES_LOCK:
        return _LINKAGES.get(code)


def _absent(name: str) -> Callable[..., Any]:
    """What a child without a callable is bound to in code this process did
    not generate: a call to it is a BindingError naming it."""

    def absent(*args: Any, **kwargs: Any) -> Any:
        raise BindingError(
            f"the code called submodule {name!r}, for which compile_execution_fn was given "
            "no callable"
        )

    return absent


#: the vllm variant, for code whose entry takes no ``__vllm_submods__``
_WITHOUT_SUBMODS = Templates(variant="vllm", globals={"vllm_entry_submods": False})
#: the shipped templates: for an entry with bindings, and for one without
_SHIPPED: tuple[Templates | str, Templates] = ("vllm", _WITHOUT_SUBMODS)


def _refuse_call_module(gm: fx.GraphModule) -> None:
    for node in gm.graph.find_nodes(op="call_module"):
        raise RuntimeError(f"call_module is not allowed for codegen target {node.target}.")


def _refuse_nested_calls(program: Program) -> None:
    """vLLM inlines a ``GraphModule`` child only if it calls no module
    itself: the first piece the entry calls (in the graph's order) whose
    function calls a module is vLLM's ``RuntimeError``, naming the first
    module it calls. Read from the program — each distinct function once,
    the child from the objects the lowering found (the vllm convention lists
    every child) — not by fetching every child again. (A child that calls a
    module has no twin, so its function's ``origin`` is its own path.)"""
    calls_a_module: dict[int, bool] = {}
    for stmt in iter_statements(program.entry.body):
        callee = getattr(stmt, "callee", None)
        if not isinstance(callee, FunctionRef):
            continue
        known = calls_a_module.get(callee.index)
        if known is None:
            body = program.functions[callee.index].body
            known = calls_a_module[callee.index] = any(
                isinstance(s, Calling) and s.is_piece for s in iter_statements(body)
            )
        if known:
            found = dict(zip([d.path for d in program.submods], program.submod_values, strict=True))
            _refuse_call_module(found[program.functions[callee.index].origin])


def generate_execution_code_with_name(
    split_gm: fx.GraphModule,
    fn_name: str,
    with_submod: bool,
    consts: list[Any] | None = None,
    const_index: dict[int, int] | None = None,
) -> tuple[str, list[str], list[Any]]:
    """``(code, submod_names, consts)`` for ``split_gm`` with entry ``fn_name``.

    ``with_submod=True``: the entry takes ``*, __vllm_submods__`` and calls
    children through it; ``GraphModule`` children are inlined (a child that
    itself calls a module is a ``RuntimeError``, as in vLLM).
    ``with_submod=False``: the entry takes no bindings and a ``call_module``
    node is a ``RuntimeError``. ``consts``/``const_index`` (id → index) are
    shared with code generated before: new constants are appended to
    ``consts`` (the list returned) and recorded in ``const_index`` — only
    once generation has succeeded.

    >>> import torch.fx as fx
    >>> code, names, consts = generate_execution_code_with_name(
    ...     fx.symbolic_trace(lambda x: x + 1), "piece", with_submod=False
    ... )
    >>> "def piece(x):" in code, names, consts
    (True, [], [])
    """
    return _generate(split_gm, fn_name, with_submod, consts, const_index, _SHIPPED)


def _generate(
    split_gm: fx.GraphModule,
    fn_name: str,
    with_submod: bool,
    consts: list[Any] | None,
    const_index: dict[int, int] | None,
    templates: tuple[Templates | str, Templates],
) -> tuple[str, list[str], list[Any]]:
    """:func:`generate_execution_code_with_name` with ``templates``: those
    for an entry with bindings, and those for one without."""
    if consts is None:
        consts = []
    if const_index is None:
        const_index = {}
    if not with_submod:
        _refuse_call_module(split_gm)
    pool = ConstPool(tuple(consts), dict(const_index))
    chosen = resolve_templates(templates[0] if with_submod else templates[1])
    with paused():  # and the IR freed before it resumes (see pipeline.paused)
        options = Options(name=fn_name, format=False, const_pool=pool)
        generated = produce(split_gm, options, chosen)
        assert generated.program is not None  # generate's record holds its IR
        _refuse_nested_calls(generated.program)
        dump_if_asked(type(split_gm).__name__, generated, chosen, False)  # only code vLLM may load
        code, submod_names, lifted = generated.code, generated.submod_names, generated.consts
        _remember(code, generated.linkage)
        del generated
    new = lifted[len(consts) :]
    # commit to the caller's list and index only now that generation succeeded
    for value in new:
        const_index[id(value)] = len(consts)
        consts.append(value)
    return code, submod_names, consts


def generate_execution_code(split_gm: fx.GraphModule) -> tuple[str, list[str], list[Any]]:
    """``(code, submod_names, consts)`` for vLLM's stitching graph:
    ``submod_names[i]`` is the child called as ``__vllm_submods__[i]``,
    ``consts[i]`` the object read as ``__vllm_consts__[i]``.

    >>> import torch.fx as fx
    >>> code, names, consts = generate_execution_code(fx.symbolic_trace(lambda x: x + 1))
    >>> "def execution_fn(x, *, __vllm_submods__):" in code, names, consts
    (True, [], [])
    """
    return _generate(split_gm, "execution_fn", True, None, None, _SHIPPED)


class Codegen:
    """vLLM's codegen functions, writing code with templates of your own:
    ``dirs`` are searched before the ``vllm`` variant's (as ``stitchgen
    golden --template-dir DIR --variant vllm`` does), so a file there
    overrides the shipped one of its name. The methods take and return what
    the module's functions do; ``compile_execution_fn`` is the module's.

    >>> import tempfile, torch.fx as fx
    >>> codegen = Codegen([tempfile.mkdtemp()])  # an empty directory: the shipped templates
    >>> code, names, consts = codegen.generate_execution_code(fx.symbolic_trace(lambda x: -x))
    >>> "def execution_fn(x, *, __vllm_submods__):" in code
    True
    """

    def __init__(self, dirs: Sequence[str | os.PathLike[str]]) -> None:
        self.dirs = tuple(os.fspath(d) for d in dirs)
        self.templates = (
            Templates(self.dirs, variant="vllm"),
            Templates(self.dirs, variant="vllm", globals={"vllm_entry_submods": False}),
        )

    def generate_execution_code_with_name(
        self,
        split_gm: fx.GraphModule,
        fn_name: str,
        with_submod: bool,
        consts: list[Any] | None = None,
        const_index: dict[int, int] | None = None,
    ) -> tuple[str, list[str], list[Any]]:
        """:func:`generate_execution_code_with_name`, with these templates."""
        return _generate(split_gm, fn_name, with_submod, consts, const_index, self.templates)

    def generate_execution_code(self, split_gm: fx.GraphModule) -> tuple[str, list[str], list[Any]]:
        """:func:`generate_execution_code`, with these templates."""
        return _generate(split_gm, "execution_fn", True, None, None, self.templates)

    def __repr__(self) -> str:
        return f"Codegen({list(self.dirs)!r})"


def compile_execution_fn(
    code: str,
    submod_callables: Mapping[str, Callable[..., Any]],
    submod_names: list[str],
    consts: list[Any] | None = None,
) -> Callable[..., Any]:
    """The callable for ``code``: ``execution_fn`` with ``__vllm_submods__``
    bound (``partial``; ``None`` for a name ``submod_callables`` lacks) and
    ``__vllm_consts__`` set, as vLLM binds it.

    For code generated in this process, a piece the code calls but
    ``submod_callables`` lacks is a :class:`stitchgen.BindingError` now, not
    a ``None`` call later (names the code never calls — inlined children —
    may be absent): which pieces it calls is the lowering's linkage, kept
    beside the code it generated. For other code (vLLM's own, or read from
    a compile cache in a new process) a piece without a callable is bound to
    a stand-in whose call is that ``BindingError``, naming it.
    """
    # the source as vLLM emits it, so TORCH_TRACE/tlparse users see it; with
    # tracing off nothing is written, but trace_structured still captures
    # the caller's stack (~0.5 ms): it is not called then, as in generate
    if tracing():
        from .dump import emit_trace

        emit_trace(lambda: code, name="vllm_execution_code")
    callables = {n: c for n, c in submod_callables.items() if c is not None}
    known = _linkage_of(code)
    if known is None:
        # code this process did not generate (vLLM's, or read from a cache):
        # a child without a callable fails when the code calls it, naming it
        bindings = {n: callables[n] if n in callables else _absent(n) for n in submod_names}
        inlined: tuple[str, ...] = ()
    else:
        called = set(known.bound)
        unlisted = sorted(called - set(submod_names))
        if unlisted:
            raise BindingError(
                f"the code calls submodule(s) {unlisted} through {VLLM.submods_param}, "
                f"which submod_names ({len(submod_names)} entries) does not list"
            )
        missing = [n for n in submod_names if n in called and n not in callables]
        if missing:
            raise BindingError(f"missing callable(s) for submodule(s) {missing}")
        bindings = {n: callables[n] for n in submod_names if n in callables}
        inlined = tuple(n for n in submod_names if n not in called)
    # the one load path, with vLLM's linkage: names the code never calls
    # (inlined children) may have no callable, other callables are ignored
    linkage = Linkage("execution_fn", "", VLLM.name, submod_names, inlined)
    record = Generated(code, linkage, list(consts or []))  # code from before constants reads none
    return load(record, bindings)

"""Lower an FX GraphModule into a :class:`~stitchgen.ir.Program`.

One pass over each graph's nodes. Decisions made here: which children are
inlined (plain ``GraphModule`` children without hooks; twins — the same graph
up to parameter names, see :func:`fingerprint` — share one function) and
which are called through a binding, how each constant is written (inline literal, exact
qualified name, or lifted binding — see ``literals.py``), and what every FX
argument becomes as an IR expression. Names stay the FX node names here; the
passes (:mod:`stitchgen.passes`) add the dels and make the names valid and
collision-free.

This module holds the lowering, one concept from FX graph to raw program,
in five sections: what is read from FX (how argument values are
classified, and how an object is named by an exact qualified name,
:func:`qualified_ref`), the twin fingerprint (:func:`fingerprint`, which
classifies a value in the order ``Scope.arg`` does: they change
together), the declarations (what the program declares across its graphs:
imports, constants, bindings, inlined functions and twins), the lowerer
(the :class:`Lowerer`, what is the program's, and a :class:`Scope`, one
body's nodes and values), and :func:`build_program`. It
runs past 800 lines for that reason: each section reads the one before,
and the compile path pays one import for all. Beside it, ``pytree`` (the
pytree calling convention) is imported for such a graph only.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import operator
import os
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch
import torch.fx as fx
from torch._ops import HigherOrderOperator  # the class of torch.ops.higher_order's operators
from torch.fx.immutable_collections import immutable_dict, immutable_list

from ..conventions import CLOSURE, ConstantPolicy, Convention, name_formats
from ..errors import CodegenError, LeftAsCallWarning, describe_node
from ..identifiers import Namespace, is_identifier, qualified_name
from ..ir import (
    ARGUMENT,
    INPUTS,
    Assign,
    Call,
    Check,
    ConstDecl,
    ConstRef,
    DictExpr,
    Expr,
    Function,
    FunctionRef,
    GetItem,
    GlobalRef,
    ListExpr,
    Literal,
    MethodRef,
    Name,
    Param,
    Program,
    Return,
    SliceExpr,
    Stmt,
    SubmodDecl,
    SubmodRef,
    TupleExpr,
    Unbox,
    UnpackCall,
    iter_statements,
    map_expr,
    map_stmt,
    writes,
)
from ..literals import is_primitive
from ..options import DEFAULTS, Options

__all__ = [
    "build_program",
    "fetch_attr",
    "fingerprint",
    "pytree_info",
]


# ==========================================================================
# What the lowering reads from FX: nodes' source locations, attributes,
# a graph's pytree convention, whether a child can be inlined — and how an
# argument value is classified (a display, one holding graph values, a
# reference-type object) and described.
#
# And how an object is named by an exact qualified name (the second answer
# to what a constant is written as; :mod:`stitchgen.literals` has the
# three): :func:`qualified_ref`, which resolves the name it finds and keeps
# it only if that gives back the very same object.


_LISTS = (list, immutable_list)
_DICTS = (dict, immutable_dict)


_FRAME = r'File "([^"\n]+)", line (\d+), in ([^\n]+)'


def source_location(node: fx.Node) -> str:
    """Where the user's code made ``node``: ``"model.py:42 in forward"`` (the
    innermost frame of its recorded ``stack_trace``: file basename, line,
    function), ``""`` when none was recorded."""
    trace = node.meta.get("stack_trace")
    if not isinstance(trace, str):
        return ""
    frames = re.findall(_FRAME, trace)
    if not frames:
        return ""
    path, line, function = frames[-1]
    return f"{os.path.basename(path)}:{line} in {function.strip()}"


def fetch_attr(owner: torch.nn.Module, target: str) -> Any:
    """``owner.a.b.c`` for ``target == "a.b.c"``, the way FX looks it up."""
    obj: Any = owner
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


def pytree_info(gm: fx.GraphModule) -> Any:
    """The graph's pytree calling convention (``make_fx`` over dicts or
    tuples, ``torch.export``'s ``module()``): its ``orig_args``, ``in_spec``
    and ``out_spec``; None for a graph called with flat arguments."""
    codegen = getattr(gm.graph, "_codegen", None)
    if not isinstance(codegen, fx.graph._PyTreeCodeGen):
        return None
    return codegen.pytree_info


def is_inlinable(child: Any) -> bool:
    """A GraphModule whose call does nothing but run its graph: no hooks
    registered on it (module-global hooks are not consulted), no
    ``__call__`` of its class's own, called with flat arguments (a pytree
    convention is kept by calling it as it is)."""
    if not isinstance(child, fx.GraphModule) or pytree_info(child) is not None:
        return False
    return not (
        child._forward_hooks
        or child._forward_pre_hooks
        or getattr(child, "_backward_hooks", None)
        or getattr(child, "_backward_pre_hooks", None)
        or has_own_call(type(child))
    )


def has_own_call(cls: type) -> bool:
    """Does a GraphModule class define a ``__call__`` of its own? The one
    every GraphModule gets from ``recompile`` (``call_wrapped``) runs the
    class's ``__call__`` where there is one, so calling the child is not
    running its graph."""
    for klass in cls.__mro__:
        if klass is fx.GraphModule:
            return False
        call = vars(klass).get("__call__")
        if call is not None and getattr(call, "__name__", None) != "call_wrapped":
            return True
    return False


def holds_node(value: Any) -> bool:
    if isinstance(value, fx.Node):
        return True
    if isinstance(value, (tuple, list)):
        return any(holds_node(x) for x in value)
    if isinstance(value, dict):
        return any(holds_node(k) or holds_node(v) for k, v in value.items())
    if isinstance(value, slice):
        return holds_node((value.start, value.stop, value.step))
    return False


def refuse_reference(value: Any, node: fx.Node) -> None:
    """A reference-type opaque object is state the graph must take as an
    input (torch.compile makes it one): as a constant it would be frozen
    into the code, shared by every call. (``torch_versions`` is imported
    here: only a graph with an object constant needs it.)"""
    from ..torch_versions import is_opaque_reference_type

    if is_opaque_reference_type(type(value)):
        raise CodegenError(
            f"argument of type {type(value).__qualname__} is a reference-type opaque object "
            "(torch 2.14+: symbolic; torch._library.opaque_object): such an object is a "
            "graph input, never a constant; pass it to the graph as an input",
            node,
        )


def hint_for(value: Any) -> str:
    if isinstance(value, torch.device):
        return f"device_{value.type}" + ("" if value.index is None else f"_{value.index}")
    return type(value).__name__.lower()


def describe(value: Any) -> str:
    """A deterministic one-line description (no ids, no addresses)."""
    if isinstance(value, torch.Tensor):
        return f"Tensor{list(value.shape)} {value.dtype} on {value.device.type}"
    if isinstance(value, (torch.device, torch.Size)):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"enum member {type(value).__qualname__}.{value.name}"
    if isinstance(value, type):
        return f"class {value.__module__}.{value.__qualname__}"
    name = getattr(value, "__qualname__", None)
    if callable(value) and isinstance(name, str):
        return f"{type(value).__name__} {name}"
    return f"{type(value).__module__}.{type(value).__qualname__} object"


def display_of(value: Any, policy: ConstantPolicy) -> type | None:
    """``list``, ``tuple`` or ``dict`` if ``policy`` writes ``value`` as
    that display (FX's immutable containers included), else None."""
    kind = type(value)
    if kind in _LISTS:
        return list
    if kind is tuple:
        return tuple
    if kind in _DICTS:
        return dict
    if policy.display_subclasses:
        for display in (list, tuple, dict):
            if isinstance(value, display):
                return display
    return None


# ==========================================================================
# Objects written by their exact qualified name (``torch.float32``,
# ``torch.ops.aten.mm.default``, ``operator.add``, an enum member), found
# and verified as an artifact stores them (:mod:`stitchgen.identifiers`); where
# there is none, the object is lifted (:mod:`stitchgen.literals` has the
# three answers).


def qualified_ref(obj: Any) -> GlobalRef | None:
    """A :class:`GlobalRef` that resolves to ``obj`` itself, or None
    (:func:`stitchgen.identifiers.qualified_name`: only modules already
    imported, never ``__main__``, the very object or nothing)."""
    if is_primitive(obj):
        return None
    found = qualified_name(obj)
    return None if found is None else GlobalRef(*found)


# ==========================================================================
# Twin pieces: :func:`fingerprint`, equal for two graphs that lower to
# the same function up to their parameters' names (a decoder's layers), so
# they share one.


_Node = fx.Node


def fingerprint(
    gm: fx.GraphModule, *, constants: ConstantPolicy | None = None, source_lines: bool = False
) -> tuple[Any, ...] | None:
    """A key equal for two graphs that lower to the same function up to the
    names of their parameters: the same ops on the same targets (by
    identity), the same constants, wired the same way. A decoder's layers are
    such twins; they share one generated function, so the emitted source —
    and ``compile()``'s time, which follows its size — does not grow with the
    layer count. None for a graph that calls modules (its children are
    resolved by their paths, which differ). Constants are keyed as the
    policy (``constants``; default: the closure convention's) writes them:
    inline ones by type and spelling, displays by their items, every other
    object by identity (one name or one binding per object). With
    ``source_lines`` the nodes' source locations count too (a shared
    function shows one piece's lines)."""
    policy = constants if constants is not None else CLOSURE.constants
    by_value = _BY_VALUE & policy.inline  # keyed as (type, value) right here: the common case
    index: dict[fx.Node, int] = {}
    # one flat sequence, read back unambiguously: a call is its target (an
    # int id for a function, a str for a method), its argument count, one
    # item per argument, its keywords (and its location); every other node
    # is one tuple. No tuple per node or per argument list: a decoder's
    # pieces are thousands of nodes, fingerprinted on the compile path.
    key: list[Any] = []
    add = key.append
    for node in gm.graph.nodes:
        op = node.op
        if op == "call_function" or op == "call_method":  # the common case first
            add(node.target if op == "call_method" else id(node.target))
            args = node.args
            add(len(args))
            for a in args:
                kind = type(a)
                if kind is _Node:
                    add(index.get(a, -1))
                elif kind in by_value:
                    add((kind, a))
                else:
                    add(_key(a, index, policy))
            kwargs = node.kwargs
            add(_key(kwargs, index, policy) if kwargs else ())
            if source_lines:
                add(source_location(node))
        elif op == "placeholder":
            target = node.target
            stars = len(target) - len(target.lstrip("*")) if target[:1] == "*" else 0
            add((op, stars, _key(node.args, index, policy) if node.args else ()))
        elif op == "call_module":
            return None
        elif op == "get_attr":
            try:
                value = fetch_attr(gm, str(node.target))
            except AttributeError:
                return None
            add((op, _key(value, index, policy)))
        else:  # output: most often a tuple of the graph's values (a piece's)
            args, kwargs = node.args, node.kwargs
            value = args[0] if len(args) == 1 else None
            if type(value) is tuple and not kwargs and all(type(v) is _Node for v in value):
                add((op, tuple([index.get(v, -1) for v in value])))
            else:
                add((op, _key(args, index, policy), _key(kwargs, index, policy) if kwargs else ()))
        index[node] = len(index)
    return tuple(key)


#: exact types keyed by their value itself (equal values, same spelling)
_BY_VALUE = frozenset({int, bool, str, bytes, type(None)})


def _key(value: Any, index: dict[fx.Node, int], policy: ConstantPolicy) -> Any:
    """``value``'s part of a :func:`fingerprint`: equal for values written alike."""
    kind = type(value)
    if kind is _Node:
        return index.get(value, -1)  # a plain int: every other key is a tuple
    if kind in policy.inline:
        return (kind, value) if kind in _BY_VALUE else (kind, repr(value))
    display = display_of(value, policy)
    if display is list or display is tuple:
        return (display, tuple([_key(x, index, policy) for x in value]))
    if display is dict:
        items = value.items()
        return (dict, tuple([(_key(k, index, policy), _key(v, index, policy)) for k, v in items]))
    if kind is slice and (policy.constant_slices or holds_node(value)):
        return (slice, _key((value.start, value.stop, value.step), index, policy))
    return ("object", id(value))


# ==========================================================================
# What a program declares, across every graph the lowering reads:
# :class:`Declarations` — the imports, the lifted constants, the children
# called through bindings, the inlined functions (twins sharing one) and the
# names found for objects. One per program; the lowering of each graph
# (the lowerer, below) asks it for references and adds to it.


class Declarations:
    """A program's declarations, in first-use order (``formats``: the name
    formats of constants, bindings and inlined functions)."""

    def __init__(self, formats: Mapping[str, str]) -> None:
        self.formats = formats
        #: modules the code imports (the references' modules)
        self.imports: set[str] = set()
        #: names the code's text uses that no expression holds (a tie's modules)
        self.reserved: set[str] = set()
        #: lifted constants: the objects, their declarations, and each
        #: object's index by id (the objects held, so ids stay unique)
        self.const_values: list[Any] = []
        self.const_decls: list[ConstDecl] = []
        self.const_index: dict[int, int] = {}
        #: children called through bindings (and, where the convention lists
        #: them, inlined ones): declarations, the object found for each
        #: (None: named opaque), and each child's index by qualified name
        self.submod_decls: list[SubmodDecl] = []
        self.submod_values: list[Any] = []
        self.submod_index: dict[str, int] = {}
        #: the distinct inlined functions, in order (a child's own children first)
        self.functions: list[Function] = []
        #: inlined children by qualified name -> their function's index (twins share one)
        self.function_index: dict[str, int] = {}
        #: a twin's fingerprint -> the first child lowered with it
        self.twin_of: dict[tuple[Any, ...], str] = {}
        #: children sharing a twin's function (their keywords may differ)
        self.sharing: dict[str, fx.GraphModule] = {}
        #: for a child sharing its twin's function: its keywords -> the function's
        self.keywords: dict[str, dict[str, str]] = {}
        #: ``qualified_ref`` answers by object id (call targets repeat a lot)
        self.refs_by_id: dict[int, tuple[Any, GlobalRef | None]] = {}

    def uses(self, *refs: GlobalRef) -> None:
        """The code's text calls ``refs`` by their qualified names (what
        :mod:`stitchgen.runtime` gives): their modules imported and reserved."""
        self.imports.update(ref.module for ref in refs)
        self.reserved.update(ref.module.partition(".")[0] for ref in refs)

    def continue_pool(self, values: tuple[Any, ...], index: Mapping[int, int]) -> None:
        """Number constants after a shared pool's (a ``ConstPool``'s fields)."""
        self.const_values = list(values)
        self.const_index = dict(index)
        hint = self.formats["const"]
        self.const_decls = [
            ConstDecl(hint.format(hint=f"shared_{i}"), describe(v)) for i, v in enumerate(values)
        ]

    # -- children -------------------------------------------------------

    def submod(self, path: str, child: Any = None) -> SubmodRef:
        """The binding of the child ``path`` (declared on first use)."""
        index = self.declare(path, child=child)
        return SubmodRef(index, self.submod_decls[index].name)

    def declare(self, path: str, inlined: bool = False, child: Any = None) -> int:
        """The index of the child ``path``'s declaration (made on first use;
        ``child`` is the object found for it, None for one named opaque)."""
        index = self.submod_index.get(path)
        if index is None:
            index = self.submod_index[path] = len(self.submod_decls)
            name = self.formats["submod"].format(path=path)
            self.submod_decls.append(SubmodDecl(name, path, inlined))
            self.submod_values.append(child)
        return index

    def function_ref(self, path: str) -> FunctionRef | None:
        """The inlined function of the child ``path``, if it has one yet."""
        index = self.function_index.get(path)
        return None if index is None else self._function_ref(index)

    def _function_ref(self, index: int) -> FunctionRef:
        return FunctionRef(index, self.functions[index].name)

    def share(self, path: str, twin: str, child: fx.GraphModule) -> FunctionRef:
        """``path`` calls the function of ``twin``, a child lowered before
        with the same fingerprint."""
        index = self.function_index[path] = self.function_index[twin]
        self.sharing[path] = child
        return self._function_ref(index)

    def add_function(
        self, path: str, fn: Function, fingerprint: tuple[Any, ...] | None
    ) -> FunctionRef:
        """``fn``, the lowered child ``path``, placed after its own children
        and named by its place."""
        index = len(self.functions)
        name = self.formats["inlined"].format(path=path, index=index)
        self.function_index[path] = index
        self.functions.append(dataclasses.replace(fn, name=name))
        if fingerprint is not None:
            self.twin_of[fingerprint] = path
        return self._function_ref(index)

    def twin_keywords(self, path: str) -> dict[str, str]:
        """The keywords of ``path`` (a child sharing its twin's function) ->
        the shared function's: their placeholders may be named apart."""
        renamed = self.keywords.get(path)
        if renamed is None:
            fn = self.functions[self.function_index[path]]
            placeholders = self.sharing[path].graph.find_nodes(op="placeholder")
            mine = [str(n.target).lstrip("*") for n in placeholders]
            keywords = (p.keyword for p in fn.params)
            renamed = self.keywords[path] = dict(zip(mine, keywords, strict=True))
        return renamed

    # -- values ---------------------------------------------------------

    def target_ref(self, target: Callable[..., Any]) -> GlobalRef | ConstRef:
        """How the code reaches a call target: by name, else lifted."""
        known = self.refs_by_id.get(id(target))
        if known is not None and known[1] is not None:
            return known[1]  # the common case: an op seen before, by name
        return self.reference(target, getattr(target, "__name__", None) or type(target).__name__)

    def reference(self, value: Any, hint: str) -> GlobalRef | ConstRef:
        """An exact qualified name for ``value``, else a lifted binding."""
        key = id(value)
        known = self.refs_by_id.get(key)
        if known is not None:
            ref = known[1]
        else:
            ref = qualified_ref(value)
            self.refs_by_id[key] = (value, ref)  # holds value: its id stays unique
            if ref is not None and ref.module != "builtins":
                self.imports.add(ref.module)
        if ref is not None:
            return ref
        return self.lift(value, hint)

    def lift(self, value: Any, hint: str) -> ConstRef:
        """``value`` as a lifted constant (one binding per object)."""
        index = self.const_index.get(id(value))
        if index is None:
            index = self.const_index[id(value)] = len(self.const_values)
            self.const_values.append(value)  # keeps the object (and its id) alive
            decl = ConstDecl(self.formats["const"].format(hint=hint), describe(value))
            self.const_decls.append(decl)
        return ConstRef(index, self.const_decls[index].name)


# ==========================================================================
# The lowering of graphs: :class:`Lowerer` turns each graph's nodes into IR
# statements — one pass per graph, its state (values by node, the getitems
# an unpacked call absorbed) local to that pass — and adds what the program
# declares to its :class:`Declarations`.


_GETITEM = operator.getitem
#: a child that is not there (:meth:`Scope.call_module`)
_MISSING = object()
#: by call target type: is it a higher-order operator? (a cache, safe to
#: share: ``isinstance`` against that abstract base class would cost each
#: node, and ``issubclass`` each new type a walk of all its subclasses)
_HOPS: dict[type, bool] = {}


def _is_hop(target: Any) -> bool:
    kind = type(target)
    hop = _HOPS.get(kind)
    if hop is None:
        hop = _HOPS[kind] = HigherOrderOperator in kind.__mro__
    return hop


class Lowerer:
    """Lowers the graphs of one program (:func:`~stitchgen.lowering.build_program`
    makes one per program): the settings, the program's :attr:`decls`, and
    :meth:`function` for each graph; a :class:`Scope` lowers one body's nodes."""

    def __init__(
        self, options: Options, formats: Mapping[str, str], convention: Convention = CLOSURE
    ) -> None:
        #: the options it reads (:class:`~stitchgen.options.Options` says what each does)
        self.opaque = frozenset(options.opaque)
        self.source_lines = options.lines
        self.unpack = options.unpack
        #: how argument values are written (the convention's constant policy)
        self.policy = convention.constants
        #: inlined children declared too (their binding None: vLLM's list)
        self.lists_inlined = convention.lists_inlined
        #: what the program declares, across its graphs
        self.decls = Declarations(formats)
        #: the children being lowered, innermost last (a recursion is an error)
        self._in_progress: list[int] = []
        #: by higher-order operator node: how it is lowered (False: called, as any op)
        self._plans: dict[fx.Node, Any] = {}
        #: the children whose checks were written as code (no binding):
        #: an exported program's input checks (:meth:`Scope.input_checks`)
        self.checked: set[str] = set()

    # -- functions ------------------------------------------------------

    def function(self, gm: fx.GraphModule, prefix: str, name: str) -> Function:
        """``gm``'s graph as a function: its placeholders the parameters, its
        nodes' names its locals."""
        params: list[Param] = []
        scope = Scope(self, gm, prefix, [], inlined=False)
        scope.body.append(Return(scope.lower(params)))
        return Function(name, tuple(params), tuple(scope.body), origin=prefix.rstrip("."))

    def inline(self, child: fx.GraphModule, path: str, node: fx.Node) -> FunctionRef:
        """The function of the inlined child ``path``: lowered on first use,
        or its twin's (the same graph, lowered before) if it has one."""
        decls = self.decls
        known = decls.function_ref(path)
        if known is not None:
            return known
        key = fingerprint(child, constants=self.policy, source_lines=self.source_lines)
        twin = decls.twin_of.get(key) if key is not None else None
        if twin is not None:
            return decls.share(path, twin, child)
        return decls.add_function(path, self.lower_child(child, path, node), key)

    def lower_child(self, child: fx.GraphModule, path: str, node: fx.Node) -> Function:
        if id(child) in self._in_progress:
            raise CodegenError(f"GraphModule {path!r} calls itself", node)
        self._in_progress.append(id(child))
        try:
            return self.function(child, prefix=path + ".", name="")  # named once placed
        finally:
            self._in_progress.pop()

    # -- control flow: see :mod:`.control` (imported for such a graph only)

    def flows(self, gm: fx.GraphModule, node: fx.Node) -> bool:
        """Is ``node`` a higher-order operator lowered as code (a ``cond``,
        a ``while_loop``, a subgraph call)?"""
        plan = self._plans.get(node)
        if plan is None:
            from .control import plan_for

            plan = self._plans[node] = plan_for(functools.partial(self.subgraph, gm), node)
            if type(plan) is str:
                self.left_as_call(gm, node, plan)
        return type(plan) is not str

    def left_as_call(self, gm: fx.GraphModule, node: fx.Node, why: str) -> None:
        """Say that ``node``, an operator with subgraphs, is called as the
        operator, its subgraphs bound: a :class:`LeftAsCallWarning` (shown
        once per message by Python's default filter)."""
        read: list[fx.Node] = []
        fx.node.map_arg((node.args, node.kwargs), read.append)
        if any(a.op == "get_attr" and self.subgraph(gm, a) is not None for a in read):
            name = getattr(node.target, "name", lambda: str(node.target))()
            warnings.warn(
                f"{describe_node(node)}: {name} is called as the operator, with its subgraphs "
                f"bound as modules, not lowered as code: {why}",
                LeftAsCallWarning,
                stacklevel=2,
            )

    def subgraph(self, gm: fx.GraphModule, node: fx.Node) -> fx.GraphModule | None:
        """The child the ``get_attr`` ``node`` reads, if a ``GraphModule``
        this lowering inlines (:func:`is_inlinable`), else None."""
        try:
            child = fetch_attr(gm, str(node.target))
        except AttributeError:
            return None
        return child if is_inlinable(child) else None

    def feeds_flow(self, gm: fx.GraphModule, node: fx.Node) -> bool:
        """Is the ``get_attr`` ``node`` a subgraph read only by operators
        lowered as code (it is then no binding of the code's)? A weight or
        buffer such an operator reads as an operand stays one."""
        users = node.users
        lowered = all(u.op == "call_function" and _is_hop(u.target) for u in users)
        if not users or not lowered or not all(self.flows(gm, u) for u in users):
            return False
        return self.subgraph(gm, node) is not None

    # -- calls ------------------------------------------------------------

    def unpack_targets(self, node: fx.Node, callee: FunctionRef) -> tuple[str, ...] | None:
        """The names of the getitems taking ``node``'s result apart, by item,
        if that is all that reads it and they read every item of the tuple
        the inlined function returns once (then ``node.users`` are those
        getitems, and nothing else)."""
        ret = self.decls.functions[callee.index].body[-1]
        if type(ret) is not Return or type(ret.value) is not TupleExpr:
            return None
        size = len(ret.value.items)
        users = node.users
        if not size or len(users) != size:
            return None
        names: list[str | None] = [None] * size  # by item index: the getitem reading it
        for user in users:
            if user.target is not _GETITEM or user.op != "call_function":
                return None
            args = user.args
            if len(args) != 2 or args[0] is not node or user.kwargs:
                return None
            index = args[1]
            if type(index) is not int or not 0 <= index < size or names[index] is not None:
                return None
            if self.source_lines and source_location(user):
                return None  # its line keeps its comment
            names[index] = user.name
        return tuple(names)  # type: ignore[arg-type]  # size distinct indices: all named

    def where(self, node: fx.Node) -> str:
        """``node``'s source location (with ``source_lines``), else ``""``."""
        return source_location(node) if self.source_lines else ""


class Scope:
    """A body being lowered, node by node: a function's graph
    (:meth:`Lowerer.function`), or a subgraph lowered where it runs
    (:meth:`in_place`), whose nodes are named apart in the function's
    locals; control flow lowers into one (:class:`.control.Scope`)."""

    __slots__ = ("body", "decls", "env", "gm", "inlined", "lowerer", "names", "policy", "prefix")

    def __init__(
        self,
        lowerer: Lowerer,
        gm: fx.GraphModule,
        prefix: str,
        body: list[Stmt],
        inlined: bool,
        names: Namespace | None = None,
    ) -> None:
        self.lowerer, self.gm, self.body = lowerer, gm, body
        self.decls, self.policy = lowerer.decls, lowerer.policy  # (read for every argument)
        #: the graph's path in the root module ("" at the root, else ending in ".")
        self.prefix = prefix
        #: a subgraph lowered where it runs (its nodes renamed: they do not unpack calls)
        self.inlined = inlined
        #: the function's locals (a function's graph: made at its first flow,
        #: its nodes' names first)
        self.names = names
        #: each node's value, by node; a node another statement assigns (an
        #: unpacked call's getitems, a flow's outputs) is here before its turn
        self.env: dict[fx.Node, Expr] = {}

    @property
    def locals(self) -> Namespace:
        if self.names is None:
            self.names = Namespace({n.name for n in self.gm.graph.nodes})
        return self.names

    def lower(self, params: list[Param]) -> Expr:
        """The graph's nodes lowered into the body; what its output node
        gives. A placeholder with no value here is one of ``params``."""
        gm, env, body, lowerer = self.gm, self.env, self.body, self.lowerer
        result: Expr | None = None
        seen: set[str] = set()
        for node in gm.graph.nodes:
            if result is not None:
                raise CodegenError("node follows the graph's output node", node)
            local = node.name
            if local in seen:  # names are our SSA variables: they must be unique
                raise CodegenError("another node of this graph has the same name", node)
            seen.add(local)
            if node in env:  # an operand's placeholder; a node another statement assigns
                continue
            if self.inlined:
                local = self.locals.create(local)
            op = node.op
            if op == "call_function":  # the common case first
                if _is_hop(node.target) and lowerer.flows(gm, node):
                    from .control import lower_flow  # for such a graph only

                    env[node] = lower_flow(self, node, local, lowerer._plans[node])
                    continue
                body.append(self.call_function(node, local))
            elif op == "call_module":
                self.call_module(node, local)
            elif op == "placeholder":
                params.append(self.placeholder(node))
            elif op == "output":
                if len(node.args) != 1 or node.kwargs:
                    raise CodegenError("output node must have exactly one argument", node)
                result = self.arg(node.args[0], node)
                continue
            elif op == "get_attr":
                if lowerer.feeds_flow(gm, node):
                    continue  # a subgraph lowered where it runs: no binding
                body.append(Assign(local, self.get_attr(node)))
            elif op == "call_method":
                body.append(self.call_method(node, local))
            else:
                raise CodegenError(f"unsupported op {op!r}", node)
            env[node] = Name(local)
        if result is None:
            raise CodegenError(
                f"graph of {self.prefix.rstrip('.') or 'the root module'} has no output node"
            )
        return result

    # -- nodes ----------------------------------------------------------

    def placeholder(self, node: fx.Node) -> Param:
        target = node.target
        if type(target) is str and not node.args and target[:1] != "*":
            return Param(node.name, None, "", target)  # the common case
        target = str(target)
        kind = "**" if target.startswith("**") else "*" if target.startswith("*") else ""
        default = self.arg(node.args[0], node) if node.args else None
        return Param(node.name, default, kind, keyword=target[len(kind) :])

    def get_attr(self, node: fx.Node) -> Expr:
        try:
            value = fetch_attr(self.gm, str(node.target))
        except AttributeError:
            raise CodegenError("get_attr target is not an attribute of its module", node) from None
        if is_primitive(value):
            return Literal(value)
        refuse_reference(value, node)
        return self.decls.reference(value, hint=str(node.target))

    def call_function(self, node: fx.Node, local: str) -> Stmt:
        target = node.target
        where = self.lowerer.where(node)
        if target is operator.getitem and len(node.args) == 2 and not node.kwargs:
            obj, index = self.arg(node.args[0], node), self.arg(node.args[1], node)
            if type(obj) is TupleExpr and type(index) is Literal and type(index.value) is int:
                if -len(obj.items) <= index.value < len(obj.items):  # an item of a flow's outputs
                    return Assign(local, obj.items[index.value])
            return GetItem(local, obj, index, where)
        if not callable(target):
            raise CodegenError("call_function target is not callable", node)
        callee = self.decls.target_ref(target)
        kwargs = self.kwargs(node) if node.kwargs else ()
        return Call(local, callee, self.args(node), kwargs, node.name, where)

    def call_method(self, node: fx.Node, local: str) -> Call:
        if not isinstance(node.target, str) or not node.args:
            raise CodegenError("call_method needs a method name and a receiver", node)
        method = MethodRef(self.arg(node.args[0], node), node.target)
        args = tuple(self.arg(a, node) for a in node.args[1:])
        return Call(local, method, args, self.kwargs(node), node.name, self.lowerer.where(node))

    def call_module(self, node: fx.Node, local: str) -> None:
        """The ``call_module`` ``node``: a call of the child, its result
        assigned to ``local``, or where the child holds an exported
        program's checks, those checks as code (no binding)."""
        target, lowerer, decls = str(node.target), self.lowerer, self.decls
        path = self.prefix + target
        try:
            child = fetch_attr(self.gm, target)
        except AttributeError:
            child = _MISSING
        checks = getattr(child, "stitchgen_checks", None)
        if checks is not None:
            self.body.extend(self.input_checks(checks, node))
            return
        args = self.args(node)
        kwargs = self.kwargs(node) if node.kwargs else ()
        if path in lowerer.opaque:
            callee: Any = decls.submod(path)
        elif child is _MISSING:
            raise CodegenError(
                f"call_module target {target!r} is not a submodule of "
                f"{self.prefix.rstrip('.') or 'the root module'}",
                node,
            )
        elif is_inlinable(child):
            if lowerer.lists_inlined:
                decls.declare(path, inlined=True, child=child)
            callee = lowerer.inline(child, path, node)
            if kwargs and path in decls.sharing:
                renamed = decls.twin_keywords(path)
                kwargs = tuple((renamed.get(k, k), v) for k, v in kwargs)
        elif callable(child):
            callee = decls.submod(path, child)
        else:
            raise CodegenError(f"call_module target {target!r} is not callable", node)
        self.call(node, callee, args, kwargs, local)

    def input_checks(self, checks: Sequence[Check], node: fx.Node) -> list[Check]:
        """The ``checks`` of the ``call_module`` ``node``'s child
        (``stitchgen_checks``: an exported program's, see
        :class:`stitchgen.exported.InputChecks`) as code, each reading the
        call's arguments."""
        if node.users or node.kwargs:
            raise CodegenError("input checks take no keywords, and no node reads them", node)
        self.lowerer.checked.add(str(node.target))
        args = {ARGUMENT.format(i): self.arg(a, node) for i, a in enumerate(node.args)}

        def bound(e: Any) -> Any:
            if type(e) is Name and e.id.startswith(ARGUMENT.format("")):
                if e.id not in args:
                    raise CodegenError(f"an input check reads {e.id}, past the arguments", node)
                return args[e.id]
            return e

        return [map_stmt(c, lambda e: map_expr(e, bound)) for c in checks]  # type: ignore[misc]

    def call(
        self,
        node: fx.Node,
        callee: Any,
        args: tuple[Expr, ...],
        kwargs: tuple[tuple[str, Expr], ...] = (),
        local: str = "",
    ) -> None:
        """``node``'s call of a piece or subgraph: an :class:`UnpackCall`
        where its result is only taken apart (:meth:`Lowerer.unpack_targets`;
        its getitems are its targets then, no statements of their own), else
        a :class:`Call` assigning ``local`` (default: the node's name)."""
        lowerer, where = self.lowerer, self.lowerer.where(node)
        if lowerer.unpack and not self.inlined and type(callee) is FunctionRef:
            targets = lowerer.unpack_targets(node, callee)
            if targets is not None:
                self.env.update({user: Name(user.name) for user in node.users})
                self.body.append(UnpackCall(targets, callee, args, kwargs, node.name, where))
                return
        self.body.append(Call(local or node.name, callee, args, kwargs, node.name, where))

    # -- control flow's (:class:`.control.Scope`) ---------------------------

    def function_of(self, child: fx.GraphModule, attribute: str, node: fx.Node) -> FunctionRef:
        """The subgraph ``attribute`` as a function of the program."""
        return self.lowerer.inline(child, self.prefix + attribute, node)

    def in_place(
        self, child: fx.GraphModule, attribute: str, operands: Sequence[Expr], into: list[Stmt]
    ) -> Expr:
        """The subgraph ``attribute`` (a ``cond``'s branch, a loop's
        condition or body) lowered where it runs, into ``into``: its
        placeholders are ``operands`` (as many as it has: :mod:`.control`
        checked), its nodes named apart in the function's locals. What it
        gives."""
        path = f"{self.prefix}{attribute}."
        scope = Scope(self.lowerer, child, path, into, inlined=True, names=self.locals)
        scope.env.update(zip(child.graph.find_nodes(op="placeholder"), operands, strict=True))
        return scope.lower([])

    def uses(self, *refs: GlobalRef) -> None:
        self.decls.uses(*refs)

    # -- values ---------------------------------------------------------

    def args(self, node: fx.Node) -> tuple[Expr, ...]:
        """``node``'s positional arguments (graph values looked up directly)."""
        env, arg = self.env, self.arg
        return tuple([(type(a) is _Node and env.get(a)) or arg(a, node) for a in node.args])

    def kwargs(self, node: fx.Node) -> tuple[tuple[str, Expr], ...]:
        out = []
        for key, value in node.kwargs.items():
            if not isinstance(key, str):
                raise CodegenError(f"keyword argument name {key!r} is not a string", node)
            out.append((key, self.arg(value, node)))
        return tuple(out)

    def arg(self, a: Any, node: fx.Node) -> Expr:
        """An FX argument of ``node`` (any nesting of nodes, displays and
        constants), as the code reads it here, written as the convention's
        constant policy says: inline, as a display, by a verified qualified
        name or lifted. A value that holds graph values is never a constant:
        it is a display (a slice too) or an error."""
        kind = type(a)
        policy = self.policy
        if kind in policy.inline:
            return Literal(a)
        if kind is _Node or isinstance(a, fx.Node):
            expr = self.env.get(a)
            if expr is None:
                where = "another graph" if a.graph is not node.graph else "later in the graph"
                raise CodegenError(f"uses node {a.name!r} from {where}", node)
            return expr
        display = display_of(a, policy)
        if display is list:
            return ListExpr(tuple([self.arg(x, node) for x in a]))
        if display is tuple:
            return TupleExpr(tuple([self.arg(x, node) for x in a]))
        if display is dict:
            return DictExpr(tuple([(self.arg(k, node), self.arg(v, node)) for k, v in a.items()]))
        if kind is slice and (policy.constant_slices or holds_node(a)):
            return SliceExpr(
                self.arg(a.start, node), self.arg(a.stop, node), self.arg(a.step, node)
            )
        if holds_node(a):
            raise CodegenError(
                f"argument of type {kind.__qualname__} holds graph values; only tuple, "
                "list, dict and slice displays may",
                node,
            )
        refuse_reference(a, node)
        if policy.qualified_names:
            return self.decls.reference(a, hint=hint_for(a))
        # vLLM's: lifted, an IntEnum member too (its repr() is no code)
        return self.decls.lift(a, hint_for(a))


# ==========================================================================
# The lowering's entry: :func:`build_program`.


def build_program(
    gm: fx.GraphModule,
    options: Options = DEFAULTS,
    *,
    names: Mapping[str, str] | None = None,
    reserve: Iterable[str] = (),
    convention: Convention = CLOSURE,
) -> Program:
    """The raw program for ``gm``'s graph, as the :class:`~stitchgen.options.Options`
    that shape a program say (``name``, ``opaque``, ``boxed``, ``const_pool``,
    ``source_lines``, ``unpack``, ``check_inputs``: each described there):
    FX names, no dels — what the passes (:mod:`stitchgen.passes`) take.

    Children named in ``opaque`` (qualified names, e.g. ``"submod_1"``) are
    called through bindings; other ``GraphModule`` children are inlined
    (recursively); any other child is called through a binding whose default
    is the child itself. ``names`` overrides :data:`NAME_FORMATS` (the binder's
    name, and the formats of binding and inlined-function names); ``reserve``
    adds names no identifier may take. ``convention``
    (:mod:`stitchgen.conventions`) brings its helper names (reserved), its
    name formats and its constant policy.

    >>> import torch, torch.fx as fx
    >>> gm = fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    >>> program = build_program(gm)
    >>> [p.name for p in program.entry.params], program.entry.body[-1]
    (['x'], Return(value=Name(id='add')))
    """
    if not isinstance(gm, fx.GraphModule):
        raise TypeError(
            f"stitchgen expects a torch.fx.GraphModule, got {type(gm).__module__}."
            f"{type(gm).__qualname__}"
        )
    name, const_pool = options.name, options.const_pool
    if not isinstance(name, str) or not is_identifier(name):
        raise ValueError(f"function name must be a Python identifier, got {name!r}")
    formats = name_formats({**convention.names, **(names or {})})
    lowerer = Lowerer(options, formats, convention)
    decls = lowerer.decls
    if const_pool is not None:
        decls.continue_pool(const_pool.values, const_pool.index)
    entry = lowerer.function(gm, prefix="", name=name)
    # export's checks: the pre-hook's of the inputs' structure too, but for
    # boxed inputs (one list, in the exported order: the list is the structure)
    checked = bool(lowerer.checked) and not options.boxed
    if pytree_info(gm) is not None:
        from .pytree import pytree_entry  # imported for such a graph only (start-up)

        entry = pytree_entry(gm, pytree_info(gm), entry, decls.target_ref, decls.lift, checked)
        if checked:
            decls.uses(INPUTS)
    if options.boxed:
        if not convention.boxed:
            raise ValueError(f"boxed inputs are not part of the {convention.name} convention")
        odd = [p.keyword for p in entry.params if p.kind or p.default is not None]
        if odd:
            raise CodegenError(
                f"boxed inputs need plain positional parameters; {odd} have defaults or are *args"
            )
        entry = _boxed(entry)
    unused = lowerer.opaque - set(decls.submod_index)
    if unused:
        raise CodegenError(
            f"no call_module node calls {sorted(unused)}; the graph calls "
            f"{sorted(decls.submod_index) + sorted(decls.function_index)}"
        )
    bound = {d.path for d in decls.submod_decls if not d.inlined}
    # the linkage's inlined children: the root's pieces not bound, and those the convention lists
    pieces = {str(n.target) for n in gm.graph.find_nodes(op="call_module")} - lowerer.checked
    inlined = {d.path for d in decls.submod_decls if d.inlined} | (pieces - bound)
    return Program(
        name=name,
        binder=formats["binder"],
        imports=tuple(sorted(decls.imports)),
        submods=tuple(decls.submod_decls),
        consts=tuple(decls.const_decls),
        functions=(*decls.functions, entry),
        reserved=tuple(sorted({*reserve, *convention.helpers, *decls.reserved})),
        const_values=tuple(decls.const_values),
        submod_values=tuple(decls.submod_values),
        convention=convention.name,
        inlined=tuple(sorted(inlined)),
    )


def _boxed(entry: Function) -> Function:
    """``entry`` taking its inputs as one list (``args``, named apart from
    every local), which an :class:`~stitchgen.ir.Unbox` opening the body
    unpacks and empties."""
    taken = {p.name for p in entry.params}
    taken.update(t for s in iter_statements(entry.body) for t in writes(s))
    box = Namespace(taken).create("args")
    unbox = Unbox(tuple(p.name for p in entry.params), box)
    return dataclasses.replace(entry, params=(Param(box),), body=(unbox, *entry.body))

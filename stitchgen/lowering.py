"""Lower an FX GraphModule into a :class:`~stitchgen.ir.Program`.

One pass over each graph's nodes. Decisions made here: which children are
inlined (plain ``GraphModule`` children without hooks; twins — the same graph
up to parameter names, see :func:`fingerprint` — share one function) and
which are called through a binding, how each constant is written (inline literal, exact
qualified name, or lifted binding — see ``literals.py``), and what every FX
argument becomes as an IR expression. Names stay the FX node names here; the
passes (:mod:`stitchgen.passes`) add the dels and make the names valid and
collision-free.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
import torch.fx as fx
import torch.fx._pytree as fx_pytree
import torch.utils._pytree as pytree
from torch._library.opaque_object import is_opaque_reference_type
from torch.fx.immutable_collections import immutable_dict, immutable_list

from .conventions import CLOSURE, NAME_FORMATS, ConstantPolicy, Convention, name_formats
from .errors import CodegenError
from .identifiers import is_identifier
from .ir import (
    Assign,
    Call,
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
    UnpackCall,
)
from .literals import is_primitive
from .passes.naming import Namespace
from .records import Record, record
from .references import qualified_ref

__all__ = [
    "NAME_FORMATS",
    "ConstPool",
    "build_program",
    "fetch_attr",
    "fingerprint",
    "is_inlinable",
    "pytree_info",
    "source_location",
]

_Node = fx.Node
_LISTS = (list, immutable_list)
_DICTS = (dict, immutable_dict)


@record
class ConstPool(Record):
    """Lifted constants shared with code generated before (vLLM's ``consts``
    list and ``const_index``, id → index): a program lowered with a pool
    numbers its constants after the pool's and reuses the pool's objects
    (by identity, through ``index``). The pool is read, never changed:
    the program's ``const_values`` are the pool's values followed by its own."""

    values: tuple[Any, ...] = ()
    index: Mapping[int, int] = dataclasses.field(default_factory=dict)

    def __init__(
        self, values: tuple[Any, ...] = (), index: Mapping[int, int] | None = None
    ) -> None:
        self.__dict__["values"] = values
        self.__dict__["index"] = {} if index is None else index


def build_program(
    gm: fx.GraphModule,
    *,
    name: str = "execution_fn",
    opaque: Iterable[str] = (),
    names: Mapping[str, str] | None = None,
    reserve: Iterable[str] = (),
    boxed: bool = False,
    convention: Convention = CLOSURE,
    const_pool: ConstPool | None = None,
    source_lines: bool = False,
    unpack: bool = False,
) -> Program:
    """The raw program for ``gm``'s graph, whose entry function is ``name``:
    FX names, no dels — what the passes (:mod:`stitchgen.passes`) take.

    Children named in ``opaque`` (qualified names, e.g. ``"submod_1"``) are
    called through bindings; other ``GraphModule`` children are inlined
    (recursively); any other child is called through a binding whose default
    is the child itself. ``names`` overrides :data:`NAME_FORMATS` (the binder's
    name, and the formats of binding and inlined-function names); ``reserve``
    adds names no identifier may take. ``boxed`` gives the entry function
    the boxed-inputs convention (one list argument, cleared on entry, as
    Inductor's ``call(args)``). ``convention``
    (:mod:`stitchgen.conventions`) brings its helper names (reserved), its
    name formats and its constant policy; ``const_pool`` continues the
    numbering of constants shared with earlier code. ``source_lines`` gives
    each call and getitem the user's source location of its node
    (:func:`source_location`), which the code writes as a trailing comment.

    ``unpack=True``: a call of an inlined child whose result is read only
    by one ``getitem`` per item (indices ``0 .. n-1``, each once; none with a
    source location) is an :class:`~stitchgen.ir.UnpackCall` —
    ``a, b = inlined_submod_0(x)`` — and those getitems are not statements
    of their own: the tuple is never a local to take apart and delete. A
    decoder's entry shrinks to about a third of its lines, and ``compile()``
    of the module with it. Same objects, same order of calls. A result read
    any other way (passed on, returned, a computed index, an item unread),
    or a piece called through a binding (whose result's length the code
    cannot know), keeps a ``getitem`` per item, as with ``unpack=False``
    (which your passes and ``flatten`` take).

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
    if not isinstance(name, str) or not is_identifier(name):
        raise ValueError(f"function name must be a Python identifier, got {name!r}")
    formats = name_formats({**convention.names, **(names or {})})
    lowerer = _Lowerer(frozenset(opaque), formats, convention, source_lines, unpack)
    if const_pool is not None:
        lowerer.pool(const_pool)
    entry = lowerer.function(gm, prefix="", name=name)
    if pytree_info(gm) is not None:
        entry = lowerer.pytree_entry(gm, entry)
    if boxed:
        if not convention.boxed:
            raise ValueError(f"boxed inputs are not part of the {convention.name} convention")
        odd = [p.keyword for p in entry.params if p.kind or p.default is not None]
        if odd:
            raise CodegenError(
                f"boxed inputs need plain positional parameters; {odd} have defaults or are *args"
            )
        entry = dataclasses.replace(entry, box="args")
    unused = lowerer.opaque - set(lowerer.submod_index)
    if unused:
        raise CodegenError(
            f"no call_module node calls {sorted(unused)}; the graph calls "
            f"{sorted(lowerer.submod_index) + sorted(lowerer.inlined_index)}"
        )
    return Program(
        name=name,
        binder=formats["binder"],
        imports=tuple(sorted(lowerer.imports)),
        submods=tuple(lowerer.submod_decls),
        consts=tuple(lowerer.const_decls),
        functions=(*lowerer.functions, entry),
        reserved=tuple(sorted({*reserve, *convention.helpers})),
        const_values=tuple(lowerer.const_values),
    )


#: a frame of a recorded stack trace (compiled on first use: only with source_lines)
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
    registered on it (module-global hooks are not consulted), called with
    flat arguments (a pytree convention is kept by calling it as it is)."""
    if not isinstance(child, fx.GraphModule) or pytree_info(child) is not None:
        return False
    hooks = (
        child._forward_hooks,
        child._forward_pre_hooks,
        getattr(child, "_backward_hooks", {}),
        getattr(child, "_backward_pre_hooks", {}),
    )
    return not any(hooks)


class _Lowerer:
    def __init__(
        self,
        opaque: frozenset[str],
        formats: Mapping[str, str],
        convention: Convention = CLOSURE,
        source_lines: bool = False,
        unpack: bool = False,
    ) -> None:
        self.opaque = opaque
        self.source_lines = source_lines
        self.unpack = unpack
        #: getitem nodes whose item an UnpackCall assigns (no statement of their own)
        self.unpacked: set[fx.Node] = set()
        self.formats = formats
        self.constants = convention.constants
        self.lists_inlined = convention.lists_inlined
        self.imports: set[str] = set()
        self.const_index: dict[int, int] = {}
        self.const_values: list[Any] = []
        self.const_decls: list[ConstDecl] = []
        self.submod_index: dict[str, int] = {}
        self.submod_decls: list[SubmodDecl] = []
        self.functions: list[Function] = []  # the distinct inlined functions, in order
        #: inlined children by qualified name -> their function in ``functions``
        #: (twins share one)
        self.inlined_index: dict[str, int] = {}
        self.twins: dict[tuple[Any, ...], str] = {}  # fingerprint -> first path lowered
        #: children sharing a twin's function (their keywords may differ)
        self.shared: dict[str, fx.GraphModule] = {}
        #: for a child sharing its twin's function: its keywords -> the twin's
        #: (built when a call passes keywords)
        self.keywords: dict[str, dict[str, str]] = {}
        #: qualified_ref answers, by object id (targets repeat a lot)
        self.named: dict[int, tuple[Any, GlobalRef | None]] = {}
        self._in_progress: list[int] = []

    def pool(self, pool: ConstPool) -> None:
        self.const_values = list(pool.values)
        self.const_index = dict(pool.index)
        hint = self.formats["const"]
        self.const_decls = [
            ConstDecl(hint.format(hint=f"shared_{i}"), _describe(v))
            for i, v in enumerate(pool.values)
        ]

    # -- functions ------------------------------------------------------

    def function(self, gm: fx.GraphModule, prefix: str, name: str) -> Function:
        graph = gm.graph
        env: dict[fx.Node, Expr] = {}
        params: list[Param] = []
        body: list[Stmt] = []
        returned = False
        seen: set[str] = set()
        for node in graph.nodes:
            if returned:
                raise CodegenError("node follows the graph's output node", node)
            if node.name in seen:  # names are our SSA variables: they must be unique
                raise CodegenError("another node of this graph has the same name", node)
            seen.add(node.name)
            op = node.op
            if op == "call_function":  # the common case first
                if node not in self.unpacked:
                    body.append(self.call_function(node, env))
            elif op == "call_module":
                body.append(self.call_module(gm, prefix, node, env))
            elif op == "placeholder":
                params.append(self.placeholder(node, env))
            elif op == "output":
                if len(node.args) != 1 or node.kwargs:
                    raise CodegenError("output node must have exactly one argument", node)
                body.append(Return(self.arg(node.args[0], node, env)))
                returned = True
            elif op == "get_attr":
                body.append(Assign(node.name, self.get_attr(gm, node)))
            elif op == "call_method":
                body.append(self.call_method(node, env))
            else:
                raise CodegenError(f"unsupported op {op!r}", node)
            if op != "output":
                env[node] = Name(node.name)
        if not returned:
            raise CodegenError(
                f"graph of {prefix.rstrip('.') or 'the root module'} has no output node"
            )
        return Function(name, tuple(params), tuple(body), origin=prefix.rstrip("."))

    def pytree_entry(self, gm: fx.GraphModule, entry: Function) -> Function:
        """``entry`` taking and returning what ``gm`` does under its pytree
        convention: the original arguments, flattened with the input spec
        into the graph's placeholders; the flat outputs, rebuilt with the
        output spec — as ``gm.forward`` does."""
        info = pytree_info(gm)
        if any(p.kind or p.default is not None for p in entry.params):
            raise CodegenError("a pytree graph's placeholders must be plain inputs")
        # raw names apart from every node's (the naming pass makes them final)
        fresh = Namespace({n.name for n in gm.graph.nodes}).create
        orig = [str(a) for a in info.orig_args]
        params = tuple(Param(fresh(a), None, "", a) for a in orig)
        names = [Name(p.name) for p in params]
        spec = info.in_spec
        if (
            spec is not None
            and spec.type is tuple
            and spec.num_children == 2
            and spec.child(0).type is tuple
            and spec.child(1).type is dict
        ):  # (args, kwargs), as gm.forward passes them
            count = spec.child(0).num_children
            keys = [Literal(k) for k in spec.child(1).context]
            tree: Expr = TupleExpr(
                (
                    ListExpr(tuple(names[:count])),
                    DictExpr(tuple(zip(keys, names[count:], strict=True))),
                )
            )
        else:
            tree = ListExpr(tuple(names))
        body: list[Stmt] = []
        if entry.params:
            flat = fresh("flat_args")
            flatten = self.callable(fx_pytree.tree_flatten_spec)
            body.append(Call(flat, flatten, (tree, self.lift(spec, "in_spec"))))
            for i, p in enumerate(entry.params):
                body.append(GetItem(p.name, Name(flat), Literal(i)))
        *rest, ret = entry.body
        assert isinstance(ret, Return)  # function() ends every body with its return
        body.extend(rest)
        if info.out_spec is not None:
            flat_out = ret.value
            if not isinstance(flat_out, (TupleExpr, ListExpr)):  # a lone value, as forward wraps it
                flat_out = ListExpr((flat_out,))
            out = fresh("output")
            unflatten = self.callable(pytree.tree_unflatten)
            body.append(Call(out, unflatten, (flat_out, self.lift(info.out_spec, "out_spec"))))
            ret = Return(Name(out))
        body.append(ret)
        return dataclasses.replace(entry, params=params, body=tuple(body))

    def placeholder(self, node: fx.Node, env: dict[fx.Node, Expr]) -> Param:
        target = node.target
        if type(target) is str and not node.args and target[:1] != "*":
            return Param(node.name, None, "", target)  # the common case
        target = str(target)
        kind = "**" if target.startswith("**") else "*" if target.startswith("*") else ""
        default = self.arg(node.args[0], node, env) if node.args else None
        return Param(node.name, default, kind, keyword=target[len(kind) :])

    # -- nodes ----------------------------------------------------------

    def get_attr(self, gm: fx.GraphModule, node: fx.Node) -> Expr:
        try:
            value = fetch_attr(gm, str(node.target))
        except AttributeError:
            raise CodegenError("get_attr target is not an attribute of its module", node) from None
        if is_primitive(value):
            return Literal(value)
        _refuse_reference(value, node)
        return self.constant(value, hint=str(node.target))

    def call_module(
        self, gm: fx.GraphModule, prefix: str, node: fx.Node, env: dict[fx.Node, Expr]
    ) -> Call | UnpackCall:
        target = str(node.target)
        path = prefix + target
        args = self.args(node, env)
        kwargs = self.kwargs(node, env) if node.kwargs else ()
        if path in self.opaque:
            callee: Any = self.submod(path)
        else:
            try:
                child = fetch_attr(gm, target)
            except AttributeError:
                raise CodegenError(
                    f"call_module target {target!r} is not a submodule of "
                    f"{prefix.rstrip('.') or 'the root module'}",
                    node,
                ) from None
            if is_inlinable(child):
                if self.lists_inlined:
                    self.declare(path, inlined=True)
                callee = self.inline(child, path, node)
                if kwargs and path in self.shared:
                    renamed = self.twin_keywords(path)
                    kwargs = tuple((renamed.get(k, k), v) for k, v in kwargs)
            elif callable(child):
                callee = self.submod(path)
            else:
                raise CodegenError(f"call_module target {target!r} is not callable", node)
        if self.unpack and type(callee) is FunctionRef:
            targets = self.unpack_targets(node, callee)
            if targets is not None:
                return UnpackCall(targets, callee, args, kwargs, node.name, self.where(node))
        return Call(node.name, callee, args, kwargs, node.name, self.where(node))

    def unpack_targets(self, node: fx.Node, callee: FunctionRef) -> tuple[str, ...] | None:
        """The getitems taking ``node``'s result apart, by item (their names;
        they become :attr:`unpacked`), if that is all that reads it and they
        read every item of the tuple the inlined function returns once."""
        ret = self.functions[callee.index].body[-1]
        if type(ret) is not Return or type(ret.value) is not TupleExpr:
            return None
        size = len(ret.value.items)
        users = node.users
        if not size or len(users) != size:
            return None
        items: dict[int, fx.Node] = {}  # item index -> the getitem reading it
        for user in users:
            args = user.args
            if (
                user.target is not operator.getitem
                or user.op != "call_function"
                or len(args) != 2
                or args[0] is not node
                or user.kwargs
            ):
                return None
            index = args[1]
            if type(index) is not int or not 0 <= index < size or index in items:
                return None
            if self.source_lines and source_location(user):
                return None  # its line keeps its comment
            items[index] = user
        self.unpacked.update(items.values())  # size distinct indices in range: all of them
        return tuple(items[k].name for k in range(size))

    def call_function(self, node: fx.Node, env: dict[fx.Node, Expr]) -> Stmt:
        target = node.target
        if target is operator.getitem and len(node.args) == 2 and not node.kwargs:
            obj = self.arg(node.args[0], node, env)
            return GetItem(node.name, obj, self.arg(node.args[1], node, env), self.where(node))
        if not callable(target):
            raise CodegenError("call_function target is not callable", node)
        callee = self.callable(target)
        kwargs = self.kwargs(node, env) if node.kwargs else ()
        return Call(node.name, callee, self.args(node, env), kwargs, node.name, self.where(node))

    def call_method(self, node: fx.Node, env: dict[fx.Node, Expr]) -> Call:
        if not isinstance(node.target, str) or not node.args:
            raise CodegenError("call_method needs a method name and a receiver", node)
        receiver = self.arg(node.args[0], node, env)
        args = tuple(self.arg(a, node, env) for a in node.args[1:])
        method = MethodRef(receiver, node.target)
        kwargs = self.kwargs(node, env)
        return Call(node.name, method, args, kwargs, node.name, self.where(node))

    def where(self, node: fx.Node) -> str:
        """``node``'s source location (with ``source_lines``), else ``""``."""
        return source_location(node) if self.source_lines else ""

    def args(self, node: fx.Node, env: dict[fx.Node, Expr]) -> tuple[Expr, ...]:
        """``node``'s positional arguments (graph values looked up directly)."""
        arg = self.arg
        return tuple([(type(a) is _Node and env.get(a)) or arg(a, node, env) for a in node.args])

    def kwargs(self, node: fx.Node, env: dict[fx.Node, Expr]) -> tuple[tuple[str, Expr], ...]:
        out = []
        for key, value in node.kwargs.items():
            if not isinstance(key, str):
                raise CodegenError(f"keyword argument name {key!r} is not a string", node)
            out.append((key, self.arg(value, node, env)))
        return tuple(out)

    # -- children -------------------------------------------------------

    def submod(self, path: str) -> SubmodRef:
        index = self.declare(path)
        return SubmodRef(index, self.submod_decls[index].name)

    def declare(self, path: str, inlined: bool = False) -> int:
        """The index of the child ``path``'s declaration (made on first use)."""
        index = self.submod_index.get(path)
        if index is None:
            index = self.submod_index[path] = len(self.submod_decls)
            name = self.formats["submod"].format(path=path)
            self.submod_decls.append(SubmodDecl(name, path, inlined))
        return index

    def inline(self, child: fx.GraphModule, path: str, node: fx.Node) -> FunctionRef:
        if path not in self.inlined_index:
            key = fingerprint(child, constants=self.constants, source_lines=self.source_lines)
            twin = self.twins.get(key) if key is not None else None
            if twin is not None:  # the same graph as a piece already lowered: share it
                self.inlined_index[path] = self.inlined_index[twin]
                self.shared[path] = child
            else:
                fn = self.lower_child(child, path, node)
                index = len(self.functions)  # after its own children: its place in the list
                name = self.formats["inlined"].format(path=path, index=index)
                self.inlined_index[path] = index
                self.functions.append(dataclasses.replace(fn, name=name))
                if key is not None:
                    self.twins[key] = path
        index = self.inlined_index[path]
        return FunctionRef(index, self.functions[index].name)

    def twin_keywords(self, path: str) -> dict[str, str]:
        """The keywords of ``path`` (a child sharing its twin's function) ->
        the shared function's: their placeholders may be named apart."""
        renamed = self.keywords.get(path)
        if renamed is None:
            fn = self.functions[self.inlined_index[path]]
            placeholders = self.shared[path].graph.find_nodes(op="placeholder")
            mine = [str(n.target).lstrip("*") for n in placeholders]
            keywords = (p.keyword for p in fn.params)
            renamed = self.keywords[path] = dict(zip(mine, keywords, strict=True))
        return renamed

    def lower_child(self, child: fx.GraphModule, path: str, node: fx.Node) -> Function:
        if id(child) in self._in_progress:
            raise CodegenError(f"GraphModule {path!r} calls itself", node)
        self._in_progress.append(id(child))
        try:
            return self.function(child, prefix=path + ".", name="")  # named once placed
        finally:
            self._in_progress.pop()

    # -- values ---------------------------------------------------------

    def callable(self, target: Callable[..., Any]) -> GlobalRef | ConstRef:
        known = self.named.get(id(target))
        if known is not None and known[1] is not None:
            return known[1]  # the common case: an op seen before, by name
        return self.constant(target, getattr(target, "__name__", None) or type(target).__name__)

    def constant(self, value: Any, hint: str) -> GlobalRef | ConstRef:
        """An exact qualified name for ``value``, else a lifted binding."""
        key = id(value)
        known = self.named.get(key)
        if known is not None:
            ref = known[1]
        else:
            ref = qualified_ref(value)
            self.named[key] = (value, ref)  # holds value: its id stays unique
            if ref is not None and ref.module != "builtins":
                self.imports.add(ref.module)
        if ref is not None:
            return ref
        return self.lift(value, hint)

    def lift(self, value: Any, hint: str) -> ConstRef:
        index = self.const_index.get(id(value))
        if index is None:
            index = self.const_index[id(value)] = len(self.const_values)
            self.const_values.append(value)  # keeps the object (and its id) alive
            decl = ConstDecl(self.formats["const"].format(hint=hint), _describe(value))
            self.const_decls.append(decl)
        return ConstRef(index, self.const_decls[index].name)

    def arg(self, a: Any, node: fx.Node, env: dict[fx.Node, Expr]) -> Expr:
        """An FX argument (any nesting of nodes, displays and constants),
        written as the convention's constant policy says: inline, as a
        display, by a verified qualified name or lifted. A value that holds
        graph values is never a constant: it is a display (a slice too) or
        an error."""
        kind = type(a)
        policy = self.constants
        if kind in policy.inline:
            return Literal(a)
        if kind is _Node or isinstance(a, fx.Node):
            return self._node(a, node, env)
        display = _display(a, policy)
        if display is list:
            return ListExpr(tuple([self.arg(x, node, env) for x in a]))
        if display is tuple:
            return TupleExpr(tuple([self.arg(x, node, env) for x in a]))
        if display is dict:
            return DictExpr(
                tuple([(self.arg(k, node, env), self.arg(v, node, env)) for k, v in a.items()])
            )
        if kind is slice and (policy.constant_slices or _holds_node(a)):
            return SliceExpr(
                self.arg(a.start, node, env),
                self.arg(a.stop, node, env),
                self.arg(a.step, node, env),
            )
        if _holds_node(a):
            raise CodegenError(
                f"argument of type {kind.__qualname__} holds graph values; only tuple, "
                "list, dict and slice displays may",
                node,
            )
        _refuse_reference(a, node)
        if policy.qualified_names:
            return self.constant(a, hint=_hint(a))
        # vLLM's: lifted, an IntEnum member too (its repr() is no code)
        return self.lift(a, _hint(a))

    def _node(self, a: fx.Node, node: fx.Node, env: dict[fx.Node, Expr]) -> Expr:
        expr = env.get(a)
        if expr is None:
            where = "another graph" if a.graph is not node.graph else "later in the graph"
            raise CodegenError(f"uses node {a.name!r} from {where}", node)
        return expr


def _holds_node(value: Any) -> bool:
    if isinstance(value, fx.Node):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_node(x) for x in value)
    if isinstance(value, dict):
        return any(_holds_node(k) or _holds_node(v) for k, v in value.items())
    if isinstance(value, slice):
        return _holds_node((value.start, value.stop, value.step))
    return False


def _refuse_reference(value: Any, node: fx.Node) -> None:
    """A reference-type opaque object is state the graph must take as an
    input (torch.compile makes it one): as a constant it would be frozen
    into the code, shared by every call."""
    if is_opaque_reference_type(type(value)):
        raise CodegenError(
            f"argument of type {type(value).__qualname__} is a reference-type opaque object "
            "(torch._library.opaque_object): such an object is a graph input, never a "
            "constant; pass it to the graph as an input",
            node,
        )


def _hint(value: Any) -> str:
    if isinstance(value, torch.device):
        return f"device_{value.type}" + ("" if value.index is None else f"_{value.index}")
    return type(value).__name__.lower()


def _describe(value: Any) -> str:
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
    parts: list[Any] = []
    for position, node in enumerate(gm.graph.nodes):
        op = node.op
        if op == "call_function" or op == "call_method":  # the common case first
            args: list[Any] = []
            for a in node.args:
                kind = type(a)
                if kind is _Node:
                    args.append(index.get(a, -1))
                elif kind in by_value:
                    args.append((kind, a))
                else:
                    args.append(_key(a, index, policy))
            kwargs = node.kwargs
            part: Any = (
                op,
                node.target if op == "call_method" else id(node.target),
                tuple(args),
                _key(kwargs, index, policy) if kwargs else (),
            )
            if source_lines:
                part = (*part, source_location(node))
        elif op == "placeholder":
            target = node.target
            stars = len(target) - len(target.lstrip("*")) if target[:1] == "*" else 0
            default = _key(node.args, index, policy) if node.args else ()
            part = (op, stars, default)
        elif op == "call_module":
            return None
        elif op == "get_attr":
            try:
                value = fetch_attr(gm, str(node.target))
            except AttributeError:
                return None
            part = (op, _key(value, index, policy))
        else:  # output
            kwargs = node.kwargs
            part = (
                op,
                _key(node.args, index, policy),
                _key(kwargs, index, policy) if kwargs else (),
            )
        index[node] = position
        parts.append(part)
    return tuple(parts)


#: exact types keyed by their value itself (equal values, same spelling)
_BY_VALUE = frozenset({int, bool, str, bytes, type(None)})


def _display(value: Any, policy: ConstantPolicy) -> type | None:
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


def _key(value: Any, index: dict[fx.Node, int], policy: ConstantPolicy) -> Any:
    """``value``'s part of a :func:`fingerprint`: equal for values written alike."""
    kind = type(value)
    if kind is _Node:
        return index.get(value, -1)  # a plain int: every other key is a tuple
    if kind in policy.inline:
        return (kind, value) if kind in _BY_VALUE else (kind, repr(value))
    display = _display(value, policy)
    if display is list or display is tuple:
        return (display, tuple([_key(x, index, policy) for x in value]))
    if display is dict:
        items = value.items()
        return (dict, tuple([(_key(k, index, policy), _key(v, index, policy)) for k, v in items]))
    if kind is slice and (policy.constant_slices or _holds_node(value)):
        return (slice, _key((value.start, value.stop, value.step), index, policy))
    return ("object", id(value))

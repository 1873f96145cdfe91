"""The lowering's worker: :class:`Lowerer` turns each graph's nodes into IR
statements — one pass per graph — and keeps what the program declares
(bindings, constants, imports, the inlined functions, twins shared)."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Mapping
from typing import Any

import torch.fx as fx

from ..conventions import CLOSURE, Convention
from ..errors import CodegenError
from ..ir import (
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
    Return,
    SliceExpr,
    Stmt,
    SubmodDecl,
    SubmodRef,
    TupleExpr,
    UnpackCall,
)
from ..literals import is_primitive
from ..references import qualified_ref
from .reading import (
    describe,
    display_of,
    fetch_attr,
    hint_for,
    holds_node,
    is_inlinable,
    refuse_reference,
    source_location,
)
from .twins import fingerprint

_Node = fx.Node


class Lowerer:
    """One lowering's state: :func:`~stitchgen.lowering.build_program` makes
    one per program."""

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
        #: the child object found for each declaration (None: named opaque)
        self.submod_values: list[Any] = []
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

    def pool(self, values: tuple[Any, ...], index: Mapping[int, int]) -> None:
        """Continue a shared pool of constants (a ``ConstPool``'s fields)."""
        self.const_values = list(values)
        self.const_index = dict(index)
        hint = self.formats["const"]
        self.const_decls = [
            ConstDecl(hint.format(hint=f"shared_{i}"), describe(v)) for i, v in enumerate(values)
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
        refuse_reference(value, node)
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
                    self.declare(path, inlined=True, child=child)
                callee = self.inline(child, path, node)
                if kwargs and path in self.shared:
                    renamed = self.twin_keywords(path)
                    kwargs = tuple((renamed.get(k, k), v) for k, v in kwargs)
            elif callable(child):
                callee = self.submod(path, child)
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

    def submod(self, path: str, child: Any = None) -> SubmodRef:
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
            decl = ConstDecl(self.formats["const"].format(hint=hint), describe(value))
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
        display = display_of(a, policy)
        if display is list:
            return ListExpr(tuple([self.arg(x, node, env) for x in a]))
        if display is tuple:
            return TupleExpr(tuple([self.arg(x, node, env) for x in a]))
        if display is dict:
            return DictExpr(
                tuple([(self.arg(k, node, env), self.arg(v, node, env)) for k, v in a.items()])
            )
        if kind is slice and (policy.constant_slices or holds_node(a)):
            return SliceExpr(
                self.arg(a.start, node, env),
                self.arg(a.stop, node, env),
                self.arg(a.step, node, env),
            )
        if holds_node(a):
            raise CodegenError(
                f"argument of type {kind.__qualname__} holds graph values; only tuple, "
                "list, dict and slice displays may",
                node,
            )
        refuse_reference(a, node)
        if policy.qualified_names:
            return self.constant(a, hint=hint_for(a))
        # vLLM's: lifted, an IntEnum member too (its repr() is no code)
        return self.lift(a, hint_for(a))

    def _node(self, a: fx.Node, node: fx.Node, env: dict[fx.Node, Expr]) -> Expr:
        expr = env.get(a)
        if expr is None:
            where = "another graph" if a.graph is not node.graph else "later in the graph"
            raise CodegenError(f"uses node {a.name!r} from {where}", node)
        return expr

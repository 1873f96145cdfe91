"""The lowering of graphs: :class:`Lowerer` turns each graph's nodes into IR
statements — one pass per graph, its state (values by node, the getitems
an unpacked call absorbed) local to that pass — and adds what the program
declares to its :class:`~stitchgen.lowering.declarations.Declarations`."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

import torch.fx as fx

from ..conventions import CLOSURE, Convention
from ..errors import CodegenError
from ..ir import (
    Assign,
    Call,
    DictExpr,
    Expr,
    Function,
    FunctionRef,
    GetItem,
    ListExpr,
    Literal,
    MethodRef,
    Name,
    Param,
    Return,
    SliceExpr,
    Stmt,
    TupleExpr,
    UnpackCall,
)
from ..literals import is_primitive
from .declarations import Declarations
from .reading import (
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
_GETITEM = operator.getitem


class Lowerer:
    """Lowers the graphs of one program (:func:`~stitchgen.lowering.build_program`
    makes one per program): the settings, the program's :attr:`decls`, and
    :meth:`function` for each graph."""

    def __init__(
        self,
        opaque: frozenset[str],
        formats: Mapping[str, str],
        convention: Convention = CLOSURE,
        source_lines: bool = False,
        unpack: bool = False,
    ) -> None:
        #: children called through bindings even if they are GraphModules
        self.opaque = opaque
        #: trailing source-location comments; piece results unpacked where called
        self.source_lines = source_lines
        self.unpack = unpack
        #: how argument values are written (the convention's constant policy)
        self.policy = convention.constants
        #: inlined children declared too (their binding None: vLLM's list)
        self.lists_inlined = convention.lists_inlined
        #: what the program declares, across its graphs
        self.decls = Declarations(formats)
        #: the children being lowered, innermost last (a recursion is an error)
        self._in_progress: list[int] = []

    # -- functions ------------------------------------------------------

    def function(self, gm: fx.GraphModule, prefix: str, name: str) -> Function:
        graph = gm.graph
        env: dict[fx.Node, Expr] = {}
        params: list[Param] = []
        body: list[Stmt] = []
        returned = False
        seen: set[str] = set()
        absorbed: set[fx.Node] = set()  # getitems an UnpackCall assigns: no statement
        for node in graph.nodes:
            if returned:
                raise CodegenError("node follows the graph's output node", node)
            local = node.name
            if local in seen:  # names are our SSA variables: they must be unique
                raise CodegenError("another node of this graph has the same name", node)
            seen.add(local)
            op = node.op
            if op == "call_function":  # the common case first
                if node not in absorbed:
                    body.append(self.call_function(node, env))
            elif op == "call_module":
                stmt = self.call_module(gm, prefix, node, env)
                if type(stmt) is UnpackCall:
                    absorbed.update(node.users)  # one getitem per target, and nothing else
                body.append(stmt)
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
                env[node] = Name(local)
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
        return self.decls.reference(value, hint=str(node.target))

    def call_module(
        self, gm: fx.GraphModule, prefix: str, node: fx.Node, env: dict[fx.Node, Expr]
    ) -> Call | UnpackCall:
        target = str(node.target)
        path = prefix + target
        args = self.args(node, env)
        kwargs = self.kwargs(node, env) if node.kwargs else ()
        decls = self.decls
        if path in self.opaque:
            callee: Any = decls.submod(path)
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
                    decls.declare(path, inlined=True, child=child)
                callee = self.inline(child, path, node)
                if kwargs and path in decls.sharing:
                    renamed = decls.twin_keywords(path)
                    kwargs = tuple((renamed.get(k, k), v) for k, v in kwargs)
            elif callable(child):
                callee = decls.submod(path, child)
            else:
                raise CodegenError(f"call_module target {target!r} is not callable", node)
        if self.unpack and type(callee) is FunctionRef:
            targets = self.unpack_targets(node, callee)
            if targets is not None:
                return UnpackCall(targets, callee, args, kwargs, node.name, self.where(node))
        return Call(node.name, callee, args, kwargs, node.name, self.where(node))

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

    def call_function(self, node: fx.Node, env: dict[fx.Node, Expr]) -> Stmt:
        target = node.target
        if target is operator.getitem and len(node.args) == 2 and not node.kwargs:
            obj = self.arg(node.args[0], node, env)
            return GetItem(node.name, obj, self.arg(node.args[1], node, env), self.where(node))
        if not callable(target):
            raise CodegenError("call_function target is not callable", node)
        callee = self.decls.target_ref(target)
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

    # -- values ---------------------------------------------------------

    def arg(self, a: Any, node: fx.Node, env: dict[fx.Node, Expr]) -> Expr:
        """An FX argument (any nesting of nodes, displays and constants),
        written as the convention's constant policy says: inline, as a
        display, by a verified qualified name or lifted. A value that holds
        graph values is never a constant: it is a display (a slice too) or
        an error."""
        kind = type(a)
        policy = self.policy
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
            return self.decls.reference(a, hint=hint_for(a))
        # vLLM's: lifted, an IntEnum member too (its repr() is no code)
        return self.decls.lift(a, hint_for(a))

    def _node(self, a: fx.Node, node: fx.Node, env: dict[fx.Node, Expr]) -> Expr:
        expr = env.get(a)
        if expr is None:
            where = "another graph" if a.graph is not node.graph else "later in the graph"
            raise CodegenError(f"uses node {a.name!r} from {where}", node)
        return expr

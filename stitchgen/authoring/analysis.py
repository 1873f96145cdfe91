"""A walk over Jinja's own AST of a template chain: where each block
renders, what its scope holds (with the IR types of each name), and the
mistakes in templates of the user's.

Jinja renders a child template by running its root's body, each block by
its most derived definition; a block in a child that no template of its
chain places renders nothing, silently. :class:`Walk` does what Jinja's
render does, on the AST (``Environment.parse``), without rendering: it
starts at the root's body, follows each block to its effective definition
(and to the parent's, where ``super()`` is called), and tracks the names
each frame binds (``for``, ``set``, ``with``, macros) and what the context
holds. A ``scoped`` block sees the locals where it is placed; any other
block sees its context only — Jinja's rule. Types come from the IR's
annotations (:mod:`.typing_ir`); an ``if stmt.template == "call"`` narrows
``stmt`` to the classes whose ``template`` is ``"call"``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.runtime import LoopContext

from ..environment import STATEMENT_GLOBALS, closest, no_attribute, public_attributes
from ..filters import BlockText
from ..ir import CLASSES, STATEMENTS, Program, Unbox
from .report import Problem
from .sources import Source, shipped_definer
from .typing_ir import attribute_types, items_of, narrowed

__all__ = ["ENTRY_CONTEXT", "Placement", "Walk", "own_nodes"]

#: what a render passes the entry template (``module.py.j2``): the names
#: and their types (``Templates.render`` passes exactly these)
ENTRY_CONTEXT: Mapping[str, frozenset[Any]] = {
    "program": frozenset({Program}),
    "emit": frozenset({BlockText}),
}
#: classes whose attributes are known exactly: an attribute none of them has is a mistake
_CHECKED = frozenset(CLASSES.values()) | {BlockText}
#: names Jinja binds in frames of its own
_FRAME_NAMES = frozenset({"self", "super", "varargs", "kwargs", "caller"})


@dataclasses.dataclass
class Placement:
    """Where a block renders, and with what in scope."""

    name: str
    scope: dict[str, frozenset[Any] | None]
    definer: Source
    #: the nearest shipped definition (None when only the user's templates define it)
    shipped: Source | None


def own_nodes(block: nodes.Node) -> Iterator[nodes.Node]:
    """The nodes of ``block``'s body, not those of blocks nested in it."""
    todo = list(block.iter_child_nodes())
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, nodes.Block):
            todo.extend(node.iter_child_nodes())


def _calls_super(block: nodes.Block) -> bool:
    return any(
        isinstance(n, nodes.Call) and isinstance(n.node, nodes.Name) and n.node.name == "super"
        for n in own_nodes(block)
    )


class Walk:
    """One render of ``chain`` (most derived first), on the AST: the blocks
    it places (:attr:`placements`, in render order), the templates it
    includes with their scope, and — where ``problems`` is a list — the
    mistakes in the user's templates it meets."""

    def __init__(
        self,
        chain: list[Source],
        context: Mapping[str, frozenset[Any] | None],
        env: jinja2.Environment,
        problems: list[Problem] | None = None,
        lenient: frozenset[str] | None = None,
    ) -> None:
        self.chain = chain
        self.context = dict(context)
        self.env = env
        self.globals = frozenset(env.globals)
        self.problems = problems
        #: where the project's own filters and globals are not known (the
        #: command line): the names stitchgen's templates bind; a filter or
        #: a name not close to one of stitchgen's is taken for the project's
        self.lenient = lenient
        self.placements: dict[str, Placement] = {}
        self.includes: list[tuple[str, dict[str, frozenset[Any] | None]]] = []
        self._where: list[str] = []
        self._reported: set[tuple[str, int, str]] = set()

    def run(self) -> Walk:
        root = self.chain[-1]
        self._body(root.ast.body, self.context, {}, root)
        return self

    # -- blocks

    def _definer(self, name: str, after: Source | None = None) -> Source | None:
        start = 0 if after is None else self.chain.index(after) + 1
        return next((s for s in self.chain[start:] if name in s.blocks), None)

    def _place(self, name: str, scope: dict[str, Any]) -> None:
        if name in self.placements:
            return
        definer = self._definer(name)
        if definer is None:
            return
        shipped = shipped_definer(self.chain, name)
        self.placements[name] = Placement(name, scope, definer, shipped)
        self._definition(name, definer, scope)

    def _definition(self, name: str, definer: Source, scope: dict[str, Any]) -> None:
        block = definer.blocks[name]
        self._where.append(name)
        try:
            self._body(block.body, scope, {}, definer)
        finally:
            self._where.pop()
        if _calls_super(block):
            parent = self._definer(name, after=definer)
            if parent is not None:
                self._definition(name, parent, scope)

    # -- statements

    def _body(self, body: Sequence[nodes.Node], ctx: dict[str, Any], local: dict[str, Any],
              src: Source) -> None:  # fmt: skip
        for node in body:
            self._stmt(node, ctx, local, src)

    def _stmt(self, node: nodes.Node, ctx: dict[str, Any], local: dict[str, Any],
              src: Source) -> None:  # fmt: skip
        if isinstance(node, nodes.Block):
            self._place(node.name, {**ctx, **local} if node.scoped else dict(ctx))
        elif isinstance(node, nodes.For):
            self._expr(node.iter, ctx, local, src)
            inner = dict(local)
            self._bind(node.target, items_of(self._type(node.iter, ctx, local)), inner)
            inner["loop"] = frozenset({LoopContext})
            if node.test is not None:
                self._expr(node.test, ctx, inner, src)
            self._body(node.body, ctx, inner, src)
            self._body(node.else_, ctx, dict(local), src)
        elif isinstance(node, nodes.If):
            self._if(node, ctx, local, src)
        elif isinstance(node, nodes.Assign):
            self._expr(node.node, ctx, local, src)
            self._bind(node.target, self._type(node.node, ctx, local), local)
        elif isinstance(node, nodes.AssignBlock):
            if node.filter is not None:
                self._expr(node.filter, ctx, local, src)
            self._body(node.body, ctx, dict(local), src)
            self._bind(node.target, None, local)
        elif isinstance(node, nodes.Include):
            if isinstance(node.template, nodes.Const):
                scope = {**ctx, **local} if node.with_context else {}
                self.includes.append((str(node.template.value), scope))
        elif isinstance(node, nodes.Import):
            local[node.target] = None
        elif isinstance(node, nodes.FromImport):
            for item in node.names:
                local[item[1] if isinstance(item, tuple) else item] = None
        elif isinstance(node, (nodes.Macro, nodes.CallBlock)):
            if isinstance(node, nodes.Macro):
                local[node.name] = None
            else:
                self._expr(node.call, ctx, local, src)
            inner = dict(local)
            for arg in node.args:
                self._bind(arg, None, inner)
            for default in node.defaults:
                self._expr(default, ctx, local, src)
            self._body(node.body, ctx, inner, src)
        elif isinstance(node, nodes.With):
            inner = dict(local)
            for target, value in zip(node.targets, node.values, strict=False):
                self._expr(value, ctx, local, src)
                self._bind(target, self._type(value, ctx, local), inner)
            self._body(node.body, ctx, inner, src)
        elif isinstance(node, nodes.FilterBlock):
            self._expr(node.filter, ctx, local, src)
            self._body(node.body, ctx, local, src)
        elif isinstance(node, nodes.Output):
            for child in node.nodes:
                if not isinstance(child, nodes.TemplateData):
                    self._expr(child, ctx, local, src)
                    self._dispatch(child, ctx, local)
        elif isinstance(node, nodes.Extends):
            pass
        else:
            for inner_node in node.iter_child_nodes():
                if isinstance(inner_node, nodes.Stmt):
                    self._stmt(inner_node, ctx, local, src)
                elif isinstance(inner_node, nodes.Expr):
                    self._expr(inner_node, ctx, local, src)

    def _dispatch(self, expr: nodes.Node, ctx: dict[str, Any], local: dict[str, Any]) -> None:
        """Where ``statements(body)`` or ``nested(body)`` is called: the
        statement blocks it renders through, each seeing ``stmt`` as the
        classes of ``body``'s items named for it (a kind's ``template``; the
        generic ``statement`` block serves the rest), in the order the
        templates define them."""
        for call in [expr, *expr.find_all(nodes.Call)]:
            if not (
                isinstance(call, nodes.Call)
                and isinstance(call.node, nodes.Name)
                and call.node.name in STATEMENT_GLOBALS
                and call.args
            ):
                continue
            kinds = items_of(self._type(call.args[0], ctx, local))
            by_block: dict[str, set[Any]] = {}
            for cls in sorted(kinds or STATEMENTS, key=lambda c: c.__name__):
                name = getattr(cls, "template", None)
                if cls is Unbox or not isinstance(name, str) or self._definer(name) is None:
                    name = "statement"
                by_block.setdefault(name, set()).add(cls)
            by_block.setdefault("statement", set())
            scope = {**ctx, **local}

            def defined_at(name: str) -> int:
                definer = self._definer(name)
                return definer.blocks[name].lineno if definer is not None else 0

            for name in sorted(by_block, key=defined_at):
                stmt = None if name == "statement" else frozenset(by_block[name])
                for part in (f"before_{name}", name, f"after_{name}"):
                    self._place(part, {**scope, "stmt": stmt})

    def _if(self, node: nodes.If, ctx: dict[str, Any], local: dict[str, Any],
            src: Source) -> None:  # fmt: skip
        if isinstance(node.test, nodes.Const) and not node.test.value and not node.elif_:
            self._body(node.else_, ctx, local, src)  # the body never renders
            return
        rest = local
        branches = []
        for test, body in [(node.test, node.body)] + [(e.test, e.body) for e in node.elif_]:
            self._expr(test, ctx, rest, src)
            yes, rest = self._narrow(test, ctx, rest)
            self._body(body, ctx, yes, src)
            branches.append(yes)
        # what no branch took: a statement kind of your own, where the
        # branches took every kind the IR knows (its type is not known)
        rest = {name: (None if types == frozenset() else types) for name, types in rest.items()}
        self._body(node.else_, ctx, rest, src)
        for branch in [*branches, rest]:  # what a branch sets is set after the if
            for name, types in branch.items():
                if name not in local:
                    local[name] = types

    def _narrow(self, test: nodes.Node, ctx: dict[str, Any],
                local: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
        """What ``test`` tells of a name's classes: (if true, if false)."""
        yes, no = dict(local), dict(local)
        negate = False
        while isinstance(test, nodes.Not):
            test, negate = test.node, not negate
        subject, keep = None, None
        if (
            isinstance(test, nodes.Compare)
            and len(test.ops) == 1
            and test.ops[0].op in ("eq", "ne")
            and isinstance(test.ops[0].expr, nodes.Const)
            and isinstance(test.expr, nodes.Getattr)
        ):
            subject, attr, value = test.expr.node, test.expr.attr, test.ops[0].expr.value
            keep = _equals(attr, value)
            negate ^= test.ops[0].op == "ne"
        elif (
            isinstance(test, nodes.Test)
            and test.name in ("defined", "undefined")
            and isinstance(test.node, nodes.Getattr)
        ):
            subject, attr = test.node.node, test.node.attr
            keep = _having(attr)
            negate ^= test.name == "undefined"
        if isinstance(subject, nodes.Name) and keep is not None:
            types = self._type(subject, ctx, local)
            if types is not None:

                def refuse(cls: type) -> bool:
                    return not keep(cls)

                yes[subject.name] = narrowed(types, refuse if negate else keep)
                no[subject.name] = narrowed(types, keep if negate else refuse)
        return yes, no

    def _bind(self, target: nodes.Node, types: Any, local: dict[str, Any]) -> None:
        if isinstance(target, nodes.Name):
            local[target.name] = types
        elif isinstance(target, nodes.Tuple):
            for item in target.items:
                self._bind(item, None, local)

    # -- expressions

    def _type(self, expr: nodes.Node, ctx: dict[str, Any], local: dict[str, Any]) -> Any:
        if isinstance(expr, nodes.Name):
            return local[expr.name] if expr.name in local else ctx.get(expr.name)
        if isinstance(expr, nodes.Getattr):
            return attribute_types(self._type(expr.node, ctx, local), expr.attr)
        if isinstance(expr, nodes.Const):
            return frozenset({type(expr.value)})
        return None

    def _expr(self, expr: nodes.Node, ctx: dict[str, Any], local: dict[str, Any],
              src: Source) -> None:  # fmt: skip
        if self.problems is None or not src.user:
            return
        for node in [expr, *expr.find_all(nodes.Node)]:
            if isinstance(node, nodes.Name) and node.ctx == "load":
                self._name(node, ctx, local, src)
            elif isinstance(node, nodes.Getattr):
                self._attribute(node, ctx, local, src)
            elif isinstance(node, nodes.Filter) and node.name not in self.env.filters:
                hint = _hint(node.name, self.env.filters)
                if self.lenient is None or hint:
                    self._report(src, node.lineno, f"no filter named {node.name!r}{hint}")
            elif isinstance(node, nodes.Test) and node.name not in self.env.tests:
                self._report(src, node.lineno, f"no test named {node.name!r}"
                             + _hint(node.name, self.env.tests))  # fmt: skip

    def _name(self, node: nodes.Name, ctx: dict[str, Any], local: dict[str, Any],
              src: Source) -> None:  # fmt: skip
        name = node.name
        if name in local or name in ctx or name in self.globals or name in _FRAME_NAMES:
            return
        if src.undeclared is not None and name not in src.undeclared:
            return  # Jinja binds it in a frame of its own
        lenient = self.lenient
        if lenient is not None and name not in lenient and not closest(name, lenient):
            return  # perhaps a global of the project's, which the command line does not know
        where = f"block {self._where[-1]!r}" if self._where else self.chain[0].name
        seen = sorted(n for n in {**ctx, **local} if n not in self.globals)
        self._report(
            src,
            node.lineno,
            f"{name!r} is not in scope in {where}{_hint(name, seen)}; it sees "
            + (", ".join(seen) if seen else "no names of stitchgen's")
            + " (and the environment's globals)",
        )

    def _attribute(self, node: nodes.Getattr, ctx: dict[str, Any], local: dict[str, Any],
                   src: Source) -> None:  # fmt: skip
        types = self._type(node.node, ctx, local)
        if not types or not all(t in _CHECKED for t in types):
            return
        if any(node.attr in public_attributes(t) for t in types):
            return
        owner = _spelled(node.node)
        what = f"{owner}.{node.attr}: " if owner else ""
        where = f" in block {self._where[-1]!r}" if self._where else ""
        ordered = sorted(types, key=lambda t: t.__name__)
        self._report(src, node.lineno, f"{what}{no_attribute(ordered, node.attr)}{where}")

    def _report(self, src: Source, line: int, message: str) -> None:
        key = (src.filename, line, message)
        if self.problems is not None and key not in self._reported:
            self._reported.add(key)
            self.problems.append(Problem(src.filename, line, message))


def _hint(name: str, candidates: Any) -> str:
    near = closest(name, candidates)
    return f" (did you mean {' or '.join(repr(n) for n in near)}?)" if near else ""


def _spelled(expr: nodes.Node) -> str:
    if isinstance(expr, nodes.Name):
        return expr.name
    if isinstance(expr, nodes.Getattr):
        inner = _spelled(expr.node)
        return f"{inner}.{expr.attr}" if inner else ""
    return ""


_MISSING = object()


def _equals(attr: str, value: Any) -> Any:
    def keep(cls: type) -> bool:
        if dataclasses.is_dataclass(cls) and attr in {f.name for f in dataclasses.fields(cls)}:
            return True  # a field: each object has its own value
        return getattr(cls, attr, _MISSING) == value

    return keep


def _having(attr: str) -> Any:
    def keep(cls: type) -> bool:
        return attr in public_attributes(cls)

    return keep

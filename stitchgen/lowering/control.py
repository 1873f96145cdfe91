"""Control flow lowered as code: the higher-order operators whose subgraphs
are ``GraphModule``s reached by ``get_attr``.

* ``cond(pred, true_fn, false_fn, operands)`` → an :class:`~stitchgen.ir.If`:
  each branch's nodes lowered where they run (its inputs are the operands),
  ending in a :class:`~stitchgen.ir.Rebind` of the outputs the ``cond``'s
  users read;
* ``while_loop(cond_fn, body_fn, carried_inputs, additional_inputs)`` → the
  carried values bound (an :class:`~stitchgen.ir.Assign` each), then a
  :class:`~stitchgen.ir.While`: the condition's nodes and a
  :class:`~stitchgen.ir.Break` before each iteration, the body's nodes and
  a ``Rebind`` of the carried values;
* ``invoke_subgraph(subgraph, identifier, *operands)`` and
  ``wrap(fn, *args)`` → a call of the subgraph as one function of the
  program, written once and called at every site (twins share one).
* ``wrap_with_set_grad_enabled(enabled, fn, *args)`` and
  ``wrap_with_autocast(device_type, dtype, enabled, cache_enabled, fn,
  *args)`` (a ``torch.no_grad()`` or ``torch.autocast`` block) → the
  subgraph as a function of the program, called through
  :func:`stitchgen.runtime.grad_mode` or :func:`stitchgen.runtime.autocast`.

Any other operator with subgraphs, or one of these in a form this module
does not know (another signature, a subgraph with hooks or a calling
convention of its own), is called as any operator is: :func:`plan_for`
says which, and why (the lowering warns with it:
:class:`~stitchgen.errors.LeftAsCallWarning`). Imported by the lowering for
a graph holding a higher-order operator only.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

import torch
import torch.fx as fx

from ..errors import CodegenError, a_or_an
from ..identifiers import Namespace
from ..ir import (
    CONDITION,
    GRAD_MODE,
    TIE,
    Assign,
    Break,
    Expr,
    FunctionRef,
    GlobalRef,
    If,
    ListExpr,
    Literal,
    Name,
    Rebind,
    Stmt,
    TupleExpr,
    While,
)

__all__ = ["LOWERED", "Plan", "Scope", "lower_flow", "plan_for"]

#: a mode's wrapper, by name: what runs its subgraph under grad mode or
#: autocast, and how many settings come before the subgraph
_MODES = {
    "wrap_with_set_grad_enabled": (GlobalRef("stitchgen.runtime", "grad_mode"), 1),
    "wrap_with_autocast": (GlobalRef("stitchgen.runtime", "autocast"), 4),
}
#: the higher-order operators lowered as code (by ``torch.ops.higher_order`` name)
LOWERED = ("cond", "while_loop", "invoke_subgraph", "wrap", *_MODES)

_Subgraph = tuple[str, fx.GraphModule]


class Scope(Protocol):
    """The body a flow is lowered into (the lowering's ``Scope``: a
    function's graph, or a subgraph lowered where it runs), and what
    control flow asks of the lowering there."""

    body: list[Stmt]
    env: dict[fx.Node, Expr]  # each node's value; where a flow's outputs are bound
    inlined: bool  # a subgraph lowered where it runs

    @property
    def locals(self) -> Namespace: ...  # the function's locals, to name apart in
    def arg(self, a: Any, node: fx.Node) -> Expr: ...  # node's argument, as read here
    def function_of(self, child: fx.GraphModule, attribute: str, node: fx.Node) -> FunctionRef: ...
    def call(self, node: fx.Node, callee: Any, args: tuple[Expr, ...], *, local: str) -> None: ...
    def in_place(
        self, child: fx.GraphModule, attribute: str, operands: Sequence[Expr], into: list[Stmt]
    ) -> Expr: ...
    def uses(self, *refs: GlobalRef) -> None: ...  # what the code calls of stitchgen.runtime


class Plan(NamedTuple):
    """How one operator node is lowered: its ``kind`` (a name of
    :data:`LOWERED`), its subgraphs (``(attribute, module)``, in the
    operator's order), its operands as FX arguments and, for a ``cond`` or
    a ``while_loop``, how many outputs it has (None: one value, not a tuple)."""

    kind: str
    subgraphs: tuple[_Subgraph, ...]
    operands: tuple[Any, ...]
    width: int | None


def plan_for(subgraph: Callable[[fx.Node], fx.GraphModule | None], node: fx.Node) -> Plan | str:
    """How ``node`` (a higher-order operator) is lowered, or why it is
    called as any operator is (a clause: "it is ..."). ``subgraph`` gives
    the subgraph a ``get_attr`` of ``node``'s graph reads, where the
    lowering inlines it (else None)."""
    target = node.target
    name = getattr(target, "name", lambda: "")()
    if name not in LOWERED or getattr(torch.ops.higher_order, name, None) is not target:
        return f"stitchgen lowers {', '.join(LOWERED)} only"
    args: tuple[Any, ...] = tuple(node.args)
    kwargs = node.kwargs
    plan: Plan | None = None
    if name == "cond" and len(args) == 4 and not kwargs and _sequence(args[3]):
        subgraphs = _subgraphs(subgraph, args[1:3], len(args[3]))
        if subgraphs is not None:
            shapes = {_shape(child) for _, child in subgraphs}
            if len(shapes) == 1 and "list" not in shapes:
                plan = Plan(name, subgraphs, tuple(args[3]), shapes.pop())  # type: ignore[arg-type]
    elif name == "while_loop" and len(args) == 4 and not kwargs:
        carried, additional = args[2], args[3]
        if _sequence(carried) and _sequence(additional) and carried:
            subgraphs = _subgraphs(subgraph, args[:2], len(carried) + len(additional))
            if subgraphs is not None and _shape(subgraphs[0][1]) in (None, 1):
                _refuse_loop(node, subgraphs, len(carried))
                plan = Plan(name, subgraphs, (*carried, *additional), len(carried))
    elif name == "invoke_subgraph" and len(args) >= 2 and not kwargs:
        operands = args[2:]  # (an operand that is a tuple: not a form lowered here)
        subgraphs = _subgraphs(subgraph, args[:1], len(operands))
        if subgraphs is not None and not getattr(subgraphs[0][1], "_boxed_call", False):
            plan = Plan(name, subgraphs, tuple(operands), None)
    elif name == "wrap" and args and not kwargs:
        subgraphs = _subgraphs(subgraph, args[:1], len(args) - 1)
        if subgraphs is not None:
            plan = Plan(name, subgraphs, tuple(args[1:]), None)
    elif name in _MODES and len(args) > _MODES[name][1] and not kwargs:
        at = _MODES[name][1]  # the settings (plain values), then the subgraph and its inputs
        settings = args[:at]
        if not any(_node(a) for a in settings):
            subgraphs = _subgraphs(subgraph, args[at : at + 1], len(args) - at - 1)
            if subgraphs is not None:
                plan = Plan(name, subgraphs, tuple(args[at + 1 :]), None)
    if plan is None:
        return (
            "it is in a form stitchgen does not lower (another signature, a subgraph with hooks "
            "or a calling convention of its own, a list output)"
        )
    if any(_sequence(a) for a in plan.operands):
        return "an operand is a tuple or a list"
    for operand in plan.operands:
        value = _example(operand)
        if value is not None and not isinstance(value, (torch.Tensor, int, torch.SymInt)):
            raise CodegenError(
                f"{name} operand {_label(operand)} is {a_or_an(type(value).__name__)}: the "
                "operator takes tensors and ints only, and refuses it at run time",
                node,
            )
    return plan


def _refuse_loop(node: fx.Node, subgraphs: tuple[_Subgraph, ...], carried: int) -> None:
    """What ``while_loop`` refuses at run time that its graph tells: a body
    giving another number of values than it carries, a condition that is
    no boolean scalar (where its FX metadata says what it is; where it does
    not, the code checks it: :func:`_told`)."""
    (test_attr, test_gm), (body_attr, body_gm) = subgraphs
    gives = _shape(body_gm)
    if gives != carried:
        count = "one value, not a tuple" if gives is None else f"{gives} value(s)"
        raise CodegenError(
            f"while_loop body {body_attr!r} returns {count} for {carried} carried value(s): "
            "the operator refuses it at run time",
            node,
        )
    value = _tested(test_gm)
    scalar = isinstance(value, torch.Tensor) and value.dtype == torch.bool and value.dim() == 0
    if value is not None and not scalar and not isinstance(value, (bool, torch.SymBool)):
        raise CodegenError(
            f"while_loop condition {test_attr!r} returns {_kind(value)}, not a boolean scalar "
            "tensor or a bool: the operator refuses it at run time",
            node,
        )


def _tested(test_gm: fx.GraphModule) -> Any:
    """What a loop's condition graph gives, as its FX metadata tells (or a
    literal); None where it does not: then the code checks it each time
    (:data:`~stitchgen.ir.CONDITION`)."""
    out = test_gm.graph.find_nodes(op="output")[0].args[0]
    return _example(out[0] if type(out) is tuple else out)


def _example(arg: Any) -> Any:
    """The value FX's metadata records for ``arg`` (None: none recorded)."""
    if not _node(arg):
        return arg if isinstance(arg, (int, float, complex, str)) else None
    return arg.meta.get("val", arg.meta.get("example_value"))


def _label(arg: Any) -> str:
    return repr(arg.name) if _node(arg) else repr(arg)


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    return a_or_an(type(value).__name__)


def _sequence(value: Any) -> bool:
    return isinstance(value, (tuple, list))


def _node(value: Any) -> bool:
    return isinstance(value, fx.Node)


def _attribute(value: Any) -> bool:
    return isinstance(value, fx.Node) and value.op == "get_attr"


def _subgraphs(
    subgraph: Callable[[fx.Node], fx.GraphModule | None], args: Sequence[Any], inputs: int
) -> tuple[_Subgraph, ...] | None:
    """Each of ``args`` as a subgraph (a ``get_attr`` of an inlinable
    ``GraphModule`` taking ``inputs`` plain inputs), or None."""
    found = []
    for arg in args:
        child = subgraph(arg) if _attribute(arg) else None
        if child is None:
            return None
        placeholders = child.graph.find_nodes(op="placeholder")
        plain = all(not p.args and str(p.target)[:1] != "*" for p in placeholders)
        if len(placeholders) != inputs or not plain:
            return None
        found.append((str(arg.target), child))
    return tuple(found)


def _shape(child: fx.GraphModule) -> int | str | None:
    """What a subgraph returns: a tuple's length, ``"list"`` for a list (not
    lowered), None for one value."""
    value = child.graph.find_nodes(op="output")[0].args[0]
    if type(value) is tuple:
        return len(value)
    return "list" if _sequence(value) else None


# --------------------------------------------------------------------------
# the lowering


def lower_flow(scope: Scope, node: fx.Node, local: str, plan: Plan) -> Expr:
    """``node`` lowered by its ``plan`` into ``scope``'s body (``local``:
    the node's own local); its value, for the nodes that read it."""
    operands = [scope.arg(a, node) for a in plan.operands]
    if plan.kind in _MODES:  # the subgraph, called under its grad mode or autocast
        attribute, child = plan.subgraphs[0]
        run, at = _MODES[plan.kind]
        settings = [scope.arg(a, node) for a in node.args[:at]]
        callee: Any = scope.function_of(child, attribute, node)  # passed as an argument
        scope.call(node, run, (*settings, callee, *operands), local=local)
        scope.uses(run)
        return Name(local)
    if plan.kind in ("invoke_subgraph", "wrap"):
        attribute, child = plan.subgraphs[0]
        scope.call(node, scope.function_of(child, attribute, node), tuple(operands), local=local)
        return Name(local)  # (read by no node where the call unpacks)
    targets = _targets(scope, node, local, plan.width)
    tensors = _tensors(plan.operands, operands)  # what a tie ties the outputs to
    checked: tuple[GlobalRef, ...] = ()  # a loop's condition, where its type is not told
    if plan.kind == "cond":
        ties = [tensors if _loose(child, operands, tensors) else () for _, child in plan.subgraphs]
        arms = []
        for (attribute, child), tied in zip(plan.subgraphs, ties, strict=True):
            arm: list[Stmt] = []
            out = scope.in_place(child, attribute, operands, arm)
            arm.append(Rebind(targets, _items(out, plan.width), tied))
            arms.append(tuple(arm))
        scope.body.append(If(targets, scope.arg(node.args[0], node), arms[0], arms[1]))
    else:  # while_loop: the carried values, then the condition and the body each iteration
        carried = len(targets)
        inputs = [*(Name(t) for t in targets), *operands[carried:]]
        (test_attr, test_gm), (body_attr, body_gm) = plan.subgraphs
        loop: list[Stmt] = []
        test = scope.in_place(test_gm, test_attr, inputs, loop)
        copies = tuple(Name(targets[i]) for i in _copies(node, plan))
        flag = (scope.locals.create("first"),) if copies else ()  # True until an iteration ends
        checked = () if _tested(test_gm) is not None else (CONDITION,)
        loop.append(Break(_items(test, 1)[0], tuple(map(Name, flag)), copies, checked))
        out = scope.in_place(body_gm, body_attr, inputs, loop)
        false = (Literal(False),) if flag else ()
        loop.append(Rebind((*targets, *flag), (*_items(out, carried), *false)))
        scope.body.extend(Assign(t, value) for t, value in zip(targets, operands, strict=False))
        scope.body.extend(Assign(t, Literal(True)) for t in flag)
        others = tuple(e for e in tensors if e not in operands[:carried])
        ties = [(*inputs[:carried], *others)] if tensors else []  # the carried values, tied
        copy = not scope.inlined  # (inside another operator's subgraph it runs without grad)
        scope.body.append(While((*targets, *flag), tuple(loop), ties[0] if ties else (), copy))
    scope.uses(*checked, *((GRAD_MODE, TIE) if any(ties) else ()))  # what the code calls
    if plan.width is None:
        return Name(targets[0])
    return TupleExpr(tuple(Name(t) for t in targets))


def _copies(node: fx.Node, plan: Plan) -> list[int]:
    """The carried values a loop that runs no iteration hands back as
    copies, as ``while_loop`` does, by position: each one read after the
    loop, but an int and a tensor made for the loop alone that is no view
    (its FX metadata says so: nobody else can hold it). Only that path pays
    the clones, as the operator's does; a loop that runs pays a carried
    flag (:class:`~stitchgen.ir.Break`)."""
    items = [u for u in node.users if u.op == "call_function" and u.target is operator.getitem]
    whole = len(items) < len(node.users)  # a user reads the tuple itself: every value
    read = {user.args[1] for user in items}
    copies = []
    for i in range(plan.width or 0):
        arg = plan.operands[i]
        value = _example(arg)
        if value is not None and not isinstance(value, torch.Tensor):
            continue  # an int, a SymInt: nothing to copy
        alone = _node(arg) and len(arg.users) == 1 and plan.operands.count(arg) == 1
        if alone and value is not None and arg.op.startswith("call_") and not value._is_view():
            continue
        if whole or i in read:
            copies.append(i)
    return copies


def _tensors(args: Sequence[Any], operands: Sequence[Expr]) -> tuple[Expr, ...]:
    """The distinct ``operands`` (``args`` lowered) that may be tensors: not
    a literal, nor a value whose FX metadata says it is none."""
    found: list[Expr] = []
    for arg, expr in zip(args, operands, strict=True):
        value = _example(arg)
        if _node(arg) and (value is None or isinstance(value, torch.Tensor)):
            if expr not in found:
                found.append(expr)
    return tuple(found)


def _loose(child: fx.GraphModule, operands: Sequence[Expr], tensors: tuple[Expr, ...]) -> bool:
    """Does some output of the branch ``child`` (its inputs ``operands``)
    miss a gradient from one of ``tensors``, so Python's autograd would
    give that operand ``None`` (or the output no ``requires_grad``) where
    ``cond``'s gives zeros? An output reaches the operands its value is
    computed from, through values that carry gradients (a floating or
    complex tensor, where the metadata tells; any value where it does not)."""
    if not tensors:
        return False
    reach: dict[fx.Node, frozenset[Expr]] = {}
    inputs = iter(operands)
    for node in child.graph.nodes:
        if node.op == "placeholder":
            expr = next(inputs)
            reach[node] = frozenset((expr,) if expr in tensors else ())
        elif node.op == "output":
            outputs = node.args[0]
            items = outputs if type(outputs) is tuple else (outputs,)
            everything = frozenset(tensors)
            return any(  # (an item that is no node is a literal: no tensor)
                _node(item) and _carries(_example(item)) and reach[item] != everything
                for item in items
            )
        else:
            read: list[fx.Node] = []
            fx.node.map_arg((node.args, node.kwargs), read.append)
            value = _example(node)
            carries = node.op != "get_attr" and (value is None or _carries(value))
            reach[node] = frozenset().union(*(reach[r] for r in read)) if carries else frozenset()
    return False


def _carries(value: Any) -> bool:
    """Can ``value`` (FX metadata; None: none recorded) carry a gradient?"""
    if value is None:
        return True
    if isinstance(value, torch.Tensor):
        return value.dtype.is_floating_point or value.dtype.is_complex
    return isinstance(value, (tuple, list)) and any(_carries(v) for v in value)


def _items(value: Expr, width: int | None) -> tuple[Expr, ...]:
    """A subgraph's output as the values it gives: a tuple's items, or itself."""
    if width is not None and isinstance(value, (TupleExpr, ListExpr)):
        return value.items
    return (value,)


def _targets(scope: Scope, node: fx.Node, local: str, width: int | None) -> tuple[str, ...]:
    """The locals a ``cond``'s or a loop's outputs are bound to: the name of
    the one ``getitem`` that reads an item (which is then no statement of
    its own), else a fresh one (``cond_0``); the node's own for one value."""
    if width is None:
        return (local,)
    readers: dict[int, list[fx.Node]] = {}
    for user in node.users:
        if (
            user.op == "call_function"
            and user.target is operator.getitem
            and len(user.args) == 2
            and not user.kwargs
            and type(user.args[1]) is int
            and 0 <= user.args[1] < width
        ):
            readers.setdefault(user.args[1], []).append(user)
    targets = []
    for i in range(width):
        users = readers.get(i, [])
        if len(users) == 1:
            user = users[0]
            name = scope.locals.create(user.name) if scope.inlined else user.name
            scope.env[user] = Name(name)
        else:
            name = scope.locals.create(f"{node.name}_{i}")
        targets.append(name)
    return tuple(targets)

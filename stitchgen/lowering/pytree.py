"""A graph under a pytree calling convention (``make_fx`` over dicts or
tuples, ``torch.export``'s ``module()``): its entry function takes the
original arguments and returns the rebuilt outputs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch.fx as fx
import torch.fx._pytree as fx_pytree
import torch.utils._pytree as pytree

from ..errors import CodegenError
from ..identifiers import Namespace
from ..ir import (
    Call,
    Callee,
    ConstRef,
    DictExpr,
    Expr,
    Function,
    GetItem,
    ListExpr,
    Literal,
    Name,
    Param,
    Return,
    Stmt,
    TupleExpr,
)


def pytree_entry(
    gm: fx.GraphModule,
    info: Any,
    entry: Function,
    callee: Callable[[Any], Callee],
    lift: Callable[[Any, str], ConstRef],
) -> Function:
    """``entry`` taking and returning what ``gm`` does under its pytree
    convention: the original arguments, flattened with the input spec
    into the graph's placeholders; the flat outputs, rebuilt with the
    output spec — as ``gm.forward`` does. ``callee`` and ``lift`` are the
    lowerer's: how the pytree functions are reached, how the specs are
    bound. ``info`` is the graph's pytree convention (the lowering's
    ``pytree_info``)."""
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
        flatten = callee(fx_pytree.tree_flatten_spec)
        body.append(Call(flat, flatten, (tree, lift(spec, "in_spec"))))
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
        unflatten = callee(pytree.tree_unflatten)
        body.append(Call(out, unflatten, (flat_out, lift(info.out_spec, "out_spec"))))
        ret = Return(Name(out))
    body.append(ret)
    return dataclasses.replace(entry, params=params, body=tuple(body))

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
    INPUTS,
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
    checked: bool = False,
) -> Function:
    """``entry`` taking and returning what ``gm`` does under its pytree
    convention: the original arguments, flattened with the input spec
    into the graph's placeholders; the flat outputs, rebuilt with the
    output spec — as ``gm.forward`` does. ``callee`` and ``lift`` are the
    lowerer's: how the pytree functions are reached, how the specs are
    bound. ``info`` is the graph's pytree convention (the lowering's
    ``pytree_info``). ``checked`` (an exported program's, with its checks):
    the entry takes ``*args, **kwargs`` and refuses what ``ep.module()``'s
    check of the inputs' structure refuses
    (:func:`stitchgen.runtime.inputs`), flattening them."""
    if any(p.kind or p.default is not None for p in entry.params):
        raise CodegenError("a pytree graph's placeholders must be plain inputs")
    # raw names apart from every node's (the naming pass makes them final)
    fresh = Namespace({n.name for n in gm.graph.nodes}).create
    spec = info.in_spec
    split = (
        spec is not None
        and spec.type is tuple
        and spec.num_children == 2
        and spec.child(0).type is tuple
        and spec.child(1).type is dict
    )  # (args, kwargs), as gm.forward passes them
    body: list[Stmt] = []
    if checked and split:
        star, stars = fresh("args"), fresh("kwargs")
        params: tuple[Param, ...] = (Param(star, None, "*"), Param(stars, None, "**"))
        positional, keywords = spec.child(0), spec.child(1)
        inputs = [*map(positional.child, range(positional.num_children))]
        inputs += map(keywords.child, range(keywords.num_children))
        facts = (
            Literal(positional.num_children),
            TupleExpr(tuple(Literal(k) for k in keywords.context)),
            Literal(all(s.is_leaf() for s in inputs)),
        )
        flatten: Callee = INPUTS
        arguments: tuple[Expr, ...] = (Name(star), Name(stars), lift(spec, "in_spec"), *facts)
    else:
        orig = [str(a) for a in info.orig_args]
        params = tuple(Param(fresh(a), None, "", a) for a in orig)
        names = [Name(p.name) for p in params]
        if split:
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
        flatten = callee(fx_pytree.tree_flatten_spec)
        arguments = (tree, lift(spec, "in_spec"))
    if entry.params or checked:
        flat = fresh("flat_args")
        body.append(Call(flat, flatten, arguments))
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

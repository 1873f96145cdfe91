"""Twin pieces: :func:`fingerprint`, equal for two graphs that lower to
the same function up to their parameters' names (a decoder's layers), so
they share one."""

from __future__ import annotations

from typing import Any

import torch.fx as fx

from ..conventions import CLOSURE, ConstantPolicy
from .reading import display_of, fetch_attr, holds_node, source_location

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

"""The IR types of a template's expressions, read from the IR's own
annotations (``typing.get_type_hints``): ``program.functions`` is a tuple of
``Function``, ``fn.statements`` a tuple of statements, ``stmt.callee`` one of
the callee classes. A type here is a :class:`Types`: a set of classes, or of
:class:`Seq` (a tuple of items of some types); ``None`` is "not known", and
nothing is checked against it."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, Union

from ..ir import CLASSES

__all__ = ["Seq", "Types", "attribute_types", "describe", "items_of", "narrowed"]


@dataclasses.dataclass(frozen=True)
class Seq:
    """A tuple (or list) whose items have ``items``' types (None: not known)."""

    items: frozenset[Any] | None


#: a set of classes and :class:`Seq`; None where the type is not known
Types = frozenset  # frozenset[type | Seq]


def _from_hint(hint: Any) -> frozenset[Any] | None:
    origin = typing.get_origin(hint)
    if origin is typing.ClassVar:
        return _from_hint(typing.get_args(hint)[0])
    if origin is Union or origin is types.UnionType:
        parts = [_from_hint(arg) for arg in typing.get_args(hint)]
        if any(p is None for p in parts):
            return None
        return frozenset().union(*parts)  # type: ignore[arg-type]
    if origin in (tuple, list):
        args = typing.get_args(hint)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return frozenset({Seq(_from_hint(args[0]))})
        if origin is list and len(args) == 1:
            return frozenset({Seq(_from_hint(args[0]))})
        return frozenset({Seq(None)})
    if hint is None or hint is type(None):
        return frozenset({type(None)})
    if isinstance(hint, type):
        return frozenset({hint})
    return None


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that does not evaluate: nothing known
        return {}


@functools.cache
def _attribute(cls: type, attr: str) -> frozenset[Any] | None:
    hints = _hints(cls)
    if attr in hints:
        return _from_hint(hints[attr])
    value = getattr(cls, attr, None)
    if isinstance(value, property) and value.fget is not None:
        try:
            returns = typing.get_type_hints(value.fget).get("return")
        except Exception:
            return None
        return None if returns is None else _from_hint(returns)
    if type(value) in (int, bool, str):
        return frozenset({type(value)})
    return None


def attribute_types(of: frozenset[Any] | None, attr: str) -> frozenset[Any] | None:
    """The types of ``x.attr`` where ``x`` has the types ``of`` (the classes
    that lack ``attr`` add nothing)."""
    if of is None:
        return None
    found: set[Any] = set()
    for cls in of:
        if not isinstance(cls, type) or attr.startswith("_"):
            return None
        if not hasattr(cls, attr) and attr not in _hints(cls):
            continue
        part = _attribute(cls, attr)
        if part is None:
            return None
        found.update(part)
    return frozenset(found) if found else None


def items_of(of: frozenset[Any] | None) -> frozenset[Any] | None:
    """The types of the items a ``for`` loop over ``of`` meets."""
    if not of or not all(isinstance(t, Seq) for t in of):
        return None
    found: set[Any] = set()
    for seq in of:
        if seq.items is None:
            return None
        found.update(seq.items)
    return frozenset(found)


def narrowed(of: frozenset[Any] | None, keep: typing.Callable[[type], bool]) -> Any:
    """``of`` less the classes ``keep`` refuses (None stays None)."""
    if of is None:
        return None
    return frozenset(t for t in of if not isinstance(t, type) or keep(t))


def describe(of: frozenset[Any] | None) -> str:
    """``Call | UnpackCall``, ``tuple[Function, ...]``; ``?`` where not known."""
    if of is None:
        return "?"
    parts = []
    for t in of:
        if isinstance(t, Seq):
            parts.append(f"tuple[{describe(t.items)}, ...]")
        elif t is type(None):
            parts.append("None")
        else:
            parts.append(t.__name__)
    order = _order()
    return " | ".join(sorted(parts, key=lambda p: (order.get(p, len(order)), p)))


@functools.lru_cache(maxsize=1)
def _order() -> dict[str, int]:
    """The IR's classes in the order they are declared (statements as
    ``Stmt`` lists them), so a union reads the same in every process."""
    return {name: i for i, name in enumerate(CLASSES)}

"""Immutable dataclasses that cost nothing to create: :class:`Record`.

A ``@dataclass(frozen=True)`` generates its ``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` as source, one
``exec`` each, every time a process creates the class — most of what
importing a module of them costs. A :class:`Record` subclass is declared
``@dataclass(init=False, repr=False, eq=False)`` (nothing generated), writes
its ``__init__`` out (compiled into the ``.pyc`` like any code), and
inherits the rest, once for all: immutability, equality and ``repr`` by the
dataclass fields (``compare=``/``repr=`` honoured) and a hash computed once
and cached. :func:`freeze` tells ``dataclasses`` such a class is frozen, so
``dataclasses.fields``, ``replace`` and ``is_dataclass`` — and a subclass
of your own declared ``@dataclass(frozen=True)`` — work as on any frozen
dataclass.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["Record", "Schema", "freeze", "schema_of"]

T = TypeVar("T", bound=type)


class Schema:
    """A class's dataclass fields as :class:`Record` and the IR walker read
    them (class data, computed once per class)."""

    __slots__ = ("compared", "deleting", "fields", "reading", "roles", "shown", "writing")

    def __init__(self, cls: type) -> None:
        fields = dataclasses.fields(cls)
        #: every field's name
        self.fields = tuple(f.name for f in fields)
        #: ``(field, role)`` for the fields with a ``metadata["role"]`` (the IR walker's)
        self.roles: tuple[tuple[str, str], ...] = tuple(
            (f.name, f.metadata["role"]) for f in fields if "role" in f.metadata
        )
        #: the fields equality and the hash compare
        self.compared = tuple(f.name for f in fields if f.compare)
        #: the fields ``repr`` shows
        self.shown = tuple(f.name for f in fields if f.repr)
        #: ``(field, role)`` for the fields holding the locals a statement
        #: assigns (``target``: one; ``targets``: a tuple, unpacked in order)
        self.writing = tuple((n, role) for n, role in self.roles if role in ("target", "targets"))
        #: the fields holding the locals a statement deletes
        self.deleting = tuple(n for n, role in self.roles if role == "deletes")
        #: the fields holding expressions a statement reads
        self.reading = tuple(
            (n, role) for n, role in self.roles if role in ("expr", "exprs", "kwargs", "pairs")
        )


#: schemas by class (a cache, safe to share: a class's fields do not change)
_SCHEMAS: dict[type, Schema] = {}


def schema_of(cls: type) -> Schema:
    """The :class:`Schema` of the dataclass ``cls`` (computed once per class)."""
    schema = _SCHEMAS.get(cls)
    if schema is None:
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"{getattr(cls, '__name__', cls)!s} is not a dataclass")
        schema = _SCHEMAS[cls] = Schema(cls)
    return schema


class Record:
    """An immutable dataclass whose methods are written once, here: equal
    when of the same class with equal compared fields, hashed by them (once:
    the hash is cached), shown as a dataclass is (``Name(id='x')``)."""

    __slots__ = ()

    @classmethod
    def schema(cls) -> Schema:
        """The class's :class:`Schema` (:func:`schema_of`)."""
        return schema_of(cls)

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def _key(self) -> tuple[Any, ...]:
        return tuple([getattr(self, n) for n in schema_of(type(self)).compared])

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        state = self.__dict__
        cached: int | None = state.get("_hash")
        if cached is None:
            cached = state["_hash"] = hash((type(self).__name__, self._key()))
        return cached

    def __getstate__(self) -> dict[str, Any]:
        # the cached hash is this process's: never pickled or copied
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in schema_of(type(self)).shown)
        return f"{type(self).__qualname__}({shown})"


def freeze(cls: T) -> T:
    """Mark the dataclass ``cls`` (a :class:`Record`) frozen for ``dataclasses``."""
    params: Any = cls.__dict__["__dataclass_params__"]  # the class's own, made by @dataclass
    params.frozen = True
    return cls

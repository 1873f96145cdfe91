"""Immutable dataclasses whose methods are written once: :class:`Record`.

A :class:`Record` subclass is declared with :func:`record`, which is the
standard library's own ``@dataclass(init=False, repr=False, eq=False)``:
``dataclasses`` processes the fields (``fields``, ``replace``, ``asdict``,
``is_dataclass`` and ``__match_args__`` are its own) and generates no
method, so creating a class costs microseconds. The class writes its
``__init__`` (compiled into the ``.pyc`` like any code); :class:`Record`
supplies the rest once for all: immutability (each field is set once, by
``__init__``; assigning or deleting one afterwards raises
``dataclasses.FrozenInstanceError``), equality and ``repr`` by the fields
(``compare=``/``repr=`` honoured) and a hash computed once and cached.

Not ``frozen=True``, which generates two methods per class by ``exec`` at
import (what that cost a fresh process: benchmarks/README.md, "Records by
the standard library's decorator"); ``dataclasses`` records these classes
as not frozen, so a subclass of your own is declared ``@dataclass`` (its
generated ``__init__`` sets each field once), not ``@dataclass(frozen=True)``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:  # PEP 681: type checkers read a @record class as a dataclass
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**kwargs: Any) -> Any:
        return lambda decorator: decorator


__all__ = ["BODY_ROLES", "SCHEMAS", "Record", "Schema", "record", "schema_of"]

#: the roles of fields that hold nested bodies (:mod:`stitchgen.ir`: ``BODY``,
#: ``BRANCH``, ``LOOP``)
BODY_ROLES = frozenset({"body", "branch", "loop"})

T = TypeVar("T", bound=type)


class Schema:
    """A class's dataclass fields as :class:`Record` and the IR walker read
    them (class data, computed once per class)."""

    __slots__ = (
        "always",
        "bodies",
        "compared",
        "conditional",
        "deleting",
        "fields",
        "reading",
        "rebound",
        "roles",
        "shown",
        "writing",
    )

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
        #: ``(field, role)`` for the fields holding the locals a statement
        #: deletes (``deletes``: a tuple) or ends (``consumes``: one)
        self.deleting = tuple(
            (n, role) for n, role in self.roles if role in ("deletes", "consumes")
        )
        #: the fields holding the locals a :class:`~stitchgen.ir.Rebind` in
        #: the statement's bodies binds: its outputs (``target``,
        #: ``targets``), or the values its loop carries (``carries``)
        self.rebound = tuple(
            (n, role) for n, role in self.roles if role in ("carries", "target", "targets")
        )
        #: ``(field, role)`` for the fields a statement reads: expressions,
        #: a local it consumes, the locals a loop carries
        self.reading = tuple(
            (n, role)
            for n, role in self.roles
            if role in ("expr", "exprs", "kwargs", "pairs", "consumes", "carries")
        )
        #: the fields holding nested bodies (a tuple of statements each; what
        #: each role means: :mod:`stitchgen.ir`)
        self.bodies = tuple(n for n, role in self.roles if role in BODY_ROLES)
        #: the nested bodies that may not run, or run more than once
        self.conditional = tuple(
            n for n, role in self.roles if role in BODY_ROLES and role != "body"
        )
        #: the nested bodies that always run once (their locals are the statement's)
        self.always = tuple(n for n in self.bodies if n not in self.conditional)


#: schemas by class (a cache, safe to share: a class's fields do not change);
#: the one cache keyed by an IR class, which the walkers read in their loops
SCHEMAS: dict[type, Schema] = {}


def schema_of(cls: type) -> Schema:
    """The :class:`Schema` of the dataclass ``cls`` (computed once per class)."""
    schema = SCHEMAS.get(cls)
    if schema is None:
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"{getattr(cls, '__name__', cls)!s} is not a dataclass")
        schema = SCHEMAS[cls] = Schema(cls)
    return schema


class Record:
    """An immutable dataclass whose methods are written once, here (what
    they give: the module's docstring); shown as a dataclass is
    (``Name(id='x')``)."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__hash__" not in cls.__dict__:
            # defined in the class itself, so ``@dataclass`` (eq=True) on a
            # subclass of your own leaves it: the subclass stays hashable
            cls.__hash__ = Record.__hash__  # type: ignore[method-assign]

    @classmethod
    def schema(cls) -> Schema:
        """The class's :class:`Schema` (:func:`schema_of`)."""
        return schema_of(cls)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.__dict__ or name not in schema_of(type(self)).fields:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        self.__dict__[name] = value  # a field's one setting, by a generated __init__

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


@dataclass_transform(eq_default=False, field_specifiers=(dataclasses.field,))
def record(cls: T) -> T:
    """Declare the :class:`Record` subclass ``cls`` a dataclass:
    ``@dataclass(init=False, repr=False, eq=False)``, nothing generated (the
    class writes its ``__init__``; :class:`Record` supplies the rest).

    >>> @record
    ... class Point(Record):
    ...     \"\"\"A point.\"\"\"
    ...     x: int
    ...     y: int = 0
    ...     def __init__(self, x: int, y: int = 0) -> None:
    ...         self.__dict__.update(x=x, y=y)
    >>> [f.name for f in dataclasses.fields(Point)], Point(1)
    (['x', 'y'], Point(x=1, y=0))
    """
    if not (isinstance(cls, type) and issubclass(cls, Record)):
        raise TypeError(f"@record declares a Record subclass, not {cls!r}")
    return cast(T, dataclasses.dataclass(init=False, repr=False, eq=False)(cls))

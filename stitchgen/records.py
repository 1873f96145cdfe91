"""Immutable dataclasses that cost nothing to create: :class:`Record`.

A ``@dataclass(frozen=True)`` generates its ``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` as source, one
``exec`` each, every time a process creates the class — most of what
importing a module of them costs. A :class:`Record` subclass is declared
``@dataclass(init=False, repr=False, eq=False)`` (nothing generated), writes
its ``__init__`` out (compiled into the ``.pyc`` like any code), and
inherits the rest, once for all: immutability, equality and ``repr`` by the
dataclass fields (``compare=``/``repr=`` honoured) and a hash computed once
and cached.

:func:`record` declares such a class: it makes the class the frozen
dataclass that ``@dataclass(init=False, repr=False, eq=False, frozen=True)``
would, fields and all — ``dataclasses.fields``, ``replace``, ``asdict`` and
``is_dataclass`` work as on any frozen dataclass, and a subclass of your
own is declared ``@dataclass(frozen=True)`` — without ``dataclasses``'
generic processing (which parses every string annotation: ~1 ms per
process for the ~30 classes of the compile path, a fifth of its imports).
``tests/test_records.py`` holds it to what ``dataclasses`` builds.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:  # PEP 681: type checkers read a @record class as a dataclass
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**kwargs: Any) -> Any:
        return lambda decorator: decorator


__all__ = ["Record", "Schema", "freeze", "record", "schema_of"]

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
        #: ``(field, role)`` for the fields holding the locals a statement
        #: deletes (``deletes``: a tuple) or ends (``consumes``: one)
        self.deleting = tuple(
            (n, role) for n, role in self.roles if role in ("deletes", "consumes")
        )
        #: ``(field, role)`` for the fields a statement reads: expressions,
        #: and a local it consumes
        self.reading = tuple(
            (n, role)
            for n, role in self.roles
            if role in ("expr", "exprs", "kwargs", "pairs", "consumes")
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


@dataclasses.dataclass(init=False, repr=False, eq=False)
class _Frozen:
    """Holds the parameters ``dataclasses`` records for every :func:`record`
    class (``init=False, repr=False, eq=False``, then ``frozen``): made
    once, by ``dataclasses`` itself, so they read as this Python's own."""


#: ``dataclasses``' marks of a field and of a ``ClassVar`` pseudo-field; None
#: on a Python without them, where :func:`record` lets ``dataclasses`` work
_FIELD: Any = getattr(dataclasses, "_FIELD", None)
_CLASSVAR: Any = getattr(dataclasses, "_FIELD_CLASSVAR", None)
_PARAMS: Any = _Frozen.__dict__.get("__dataclass_params__")
if _PARAMS is not None:
    _PARAMS.frozen = True


#: string annotations of pseudo-fields only ``dataclasses`` reads rightly
_SPECIAL = ("InitVar", "dataclasses.InitVar", "KW_ONLY", "dataclasses.KW_ONLY")


def _is_classvar(annotation: str) -> bool:
    return annotation.startswith(("ClassVar", "typing.ClassVar"))


def _plain(cls: type, annotations: dict[str, Any]) -> bool:
    """Can :func:`record` read ``cls``'s fields itself? Every annotation a
    string (``from __future__ import annotations``), none an ``InitVar``
    or ``KW_ONLY``, no ``ClassVar`` given as a ``field(...)``, no default
    unhashable."""
    if _FIELD is None or _CLASSVAR is None or _PARAMS is None:
        return False
    for name, annotation in annotations.items():
        if not isinstance(annotation, str):
            return False
        if annotation.startswith(_SPECIAL):
            return False
        default = cls.__dict__.get(name)
        if isinstance(default, dataclasses.Field):
            if _is_classvar(annotation):
                return False
            default = default.default
        if type(default).__hash__ is None:
            # a mutable default: refused by this Python's own rule (3.10
            # refuses list, dict and set; 3.11+ every unhashable value)
            return False
    return True


@dataclass_transform(eq_default=False, field_specifiers=(dataclasses.field,))
def record(cls: T) -> T:
    """Declare the :class:`Record` subclass ``cls`` a frozen dataclass:
    its fields are its dataclass bases' followed by its own annotations, in
    order (a default or a ``field(...)`` as class attribute honoured,
    ``ClassVar`` ones pseudo-fields), exactly as ``@dataclass(init=False,
    repr=False, eq=False, frozen=True)`` makes them; nothing is generated
    (the class writes its ``__init__``; :class:`Record` supplies the rest).

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
    own = cls.__dict__
    annotations = own.get("__annotations__", {})
    if not _plain(cls, annotations):  # what dataclasses alone reads rightly
        return cast(T, freeze(dataclasses.dataclass(init=False, repr=False, eq=False)(cls)))
    fields: dict[str, Any] = {}
    for base in cls.__mro__[-1:0:-1]:
        inherited = base.__dict__.get("__dataclass_fields__")
        if inherited is not None:
            if not base.__dict__["__dataclass_params__"].frozen:
                raise TypeError("cannot inherit frozen dataclass from a non-frozen one")
            fields.update(inherited)
    for name, annotation in annotations.items():
        default = own.get(name, dataclasses.MISSING)
        if isinstance(default, dataclasses.Field):
            spec: Any = default
            if spec.default is dataclasses.MISSING:
                delattr(cls, name)  # as dataclasses does: no class attribute
            else:
                setattr(cls, name, spec.default)
        else:
            spec = dataclasses.field(default=default)
        spec.name = name
        spec.type = annotation
        if _is_classvar(annotation):
            spec._field_type = _CLASSVAR  # class data: listed, never a field
        else:
            spec._field_type = _FIELD
            if spec.kw_only is dataclasses.MISSING:
                spec.kw_only = False
        fields[name] = spec
    for name, value in own.items():
        if isinstance(value, dataclasses.Field) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    cls.__dataclass_params__ = _PARAMS  # type: ignore[attr-defined]
    cls.__dataclass_fields__ = fields  # type: ignore[attr-defined]
    if "__match_args__" not in own:
        cls.__match_args__ = tuple(  # type: ignore[attr-defined,misc]
            f.name for f in fields.values() if f._field_type is _FIELD and f.init and not f.kw_only
        )
    if not own.get("__doc__"):
        import inspect

        cls.__doc__ = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
    abc.update_abstractmethods(cls)
    return cls

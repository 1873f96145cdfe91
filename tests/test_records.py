"""``records.record`` against ``dataclasses``: the same declarations made
by both give the same dataclass, field by field (the oracle), and every
record class of the package is such a dataclass."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, ClassVar

import pytest

import stitchgen.pipeline  # noqa: F401  (every record class of the compile path)
from stitchgen.records import Record, record


def _by_dataclasses(cls: type) -> type:
    return dataclasses.dataclass(init=False, repr=False, eq=False, frozen=True)(cls)


def _declare(decorate: Any) -> dict[str, type]:
    """A family of record classes — defaults, ``field(...)`` specs, a
    ``ClassVar``, a mixin, inheritance — declared with ``decorate``."""

    class Mixin:
        def shout(self) -> str:
            return "hi"

    @decorate
    class Base(Record):
        """A base."""

        a: int
        b: tuple[int, ...] = ()
        c: str = dataclasses.field(default="c", metadata={"role": "expr"})
        hidden: Any = dataclasses.field(default=None, compare=False, repr=False)
        tag: ClassVar[str] = "base"

        def __init__(self, a: int, b: tuple[int, ...] = (), c: str = "c", hidden: Any = None):
            self.__dict__.update(a=a, b=b, c=c, hidden=hidden)

    @decorate
    class Child(Mixin, Base):
        """A child: a field of its own, one redeclared, a factory."""

        b: tuple[int, ...] = (1,)
        d: dict[str, int] = dataclasses.field(default_factory=dict)
        e: float = dataclasses.field(default=0.5, init=False)

        def __init__(self, a: int, b: tuple[int, ...] = (1,), d: Any = None):
            super().__init__(a, b)
            self.__dict__.update(d={} if d is None else d, e=0.5)

    @decorate
    class Bare(Record):
        x: int

        def __init__(self, x: int) -> None:
            self.__dict__["x"] = x

    return {"Base": Base, "Child": Child, "Bare": Bare}


_ATTRS = ("name", "type", "default", "default_factory", "init", "repr", "hash", "compare")


def _shape(cls: type) -> dict[str, Any]:
    """Everything ``dataclasses`` records about ``cls``, comparable across classes."""
    fields = {
        name: (
            tuple(getattr(f, a) for a in _ATTRS),
            dict(f.metadata),
            f.kw_only,
            f._field_type,  # type: ignore[attr-defined]
        )
        for name, f in cls.__dataclass_fields__.items()  # type: ignore[attr-defined]
    }
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    return {
        "fields": fields,
        "order": list(cls.__dataclass_fields__),  # type: ignore[attr-defined]
        "public": [f.name for f in dataclasses.fields(cls)],
        "match_args": cls.__match_args__,  # type: ignore[attr-defined]
        "params": repr(params),
        "class_attrs": {
            n: cls.__dict__.get(n, "<absent>")
            for n in cls.__dataclass_fields__  # type: ignore[attr-defined]
        },
        "doc": cls.__doc__,
    }


def test_record_makes_the_dataclass_dataclasses_makes():
    ours, theirs = _declare(record), _declare(_by_dataclasses)
    for name in ours:
        assert _shape(ours[name]) == _shape(theirs[name]), name
    child = ours["Child"](1, (2,), {"k": 3})
    assert dataclasses.asdict(child) == dataclasses.asdict(theirs["Child"](1, (2,), {"k": 3}))
    assert dataclasses.astuple(child) == (1, (2,), "c", None, {"k": 3}, 0.5)
    assert repr(child).endswith(".Child(a=1, b=(2,), c='c', d={'k': 3}, e=0.5)")
    assert child.shout() == "hi" and ours["Base"].tag == "base"
    assert child == ours["Child"](1, (2,), {"k": 3}) != ours["Child"](2, (2,), {"k": 3})
    with pytest.raises(dataclasses.FrozenInstanceError):
        child.a = 2
    base = ours["Base"](1)
    assert dataclasses.replace(base, a=2) == ours["Base"](2) and base.a == 1
    # e is not in __init__: replace refuses it as on this Python's dataclasses
    # (ValueError up to 3.12, TypeError from 3.13), with the same words
    refused = [
        _refusal(dataclasses.replace, c, e=1.0) for c in (child, theirs["Child"](1, (2,), {}))
    ]
    assert refused[0] == refused[1] and refused[0][0] in (ValueError, TypeError)
    assert "init=False" in refused[0][1]


def _refusal(call, *args, **kwargs):
    """The type and words of the exception ``call`` raises."""
    with pytest.raises(Exception) as info:
        call(*args, **kwargs)
    return type(info.value), str(info.value)


def test_a_subclass_of_your_own_is_a_frozen_dataclass_of_a_record():
    Base = _declare(record)["Base"]

    @dataclasses.dataclass(frozen=True)
    class Mine(Base):  # type: ignore[misc,valid-type]
        z: int = 9

    assert [f.name for f in dataclasses.fields(Mine)] == ["a", "b", "c", "hidden", "z"]
    assert Mine(1).z == 9 and Mine(1) == Mine(1) != Mine(1, z=8)
    with pytest.raises(TypeError, match="non-frozen"):

        @dataclasses.dataclass
        class Loose(Base):  # type: ignore[misc,valid-type]
            pass


def test_bad_declarations_fail_as_with_dataclasses():
    for decorate in (record, _by_dataclasses):
        with pytest.raises(ValueError, match="mutable default <class 'list'> for field x"):

            @decorate
            class Mutable(Record):
                x: list[int] = []  # noqa: RUF012

        with pytest.raises(TypeError, match="'y' is a field but has no type annotation"):

            @decorate
            class Unannotated(Record):
                y = dataclasses.field(default=1)

    with pytest.raises(TypeError, match="declares a Record subclass"):
        record(int)

    @dataclasses.dataclass
    class Loose(Record):
        z: int = 0

    for decorate in (record, _by_dataclasses):
        with pytest.raises(TypeError, match="cannot inherit frozen dataclass from a non-frozen"):

            @decorate
            class Tight(Loose):
                pass


class _Unhashable:
    def __eq__(self, other: object) -> bool:  # and so no __hash__
        return self is other


def test_an_unhashable_default_is_judged_by_this_pythons_rule():
    """Python 3.10's dataclasses refuse only list, dict and set defaults,
    3.11's and later every unhashable one: a record follows the running one."""

    def declare(decorate: Any) -> Any:
        try:

            @decorate
            class Held(Record):
                x: object = _Unhashable()

        except ValueError as error:
            return ValueError, str(error).replace("Held", "")
        return [f.name for f in dataclasses.fields(Held)]

    assert declare(record) == declare(_by_dataclasses)


def test_what_record_does_not_read_itself_goes_to_dataclasses():
    """An ``InitVar`` or an evaluated annotation is left to ``dataclasses``:
    the class is still the frozen dataclass it would make."""

    @record
    class Deferred(Record):
        x: int
        y: dataclasses.InitVar[int] = 0

    ns: dict[str, Any] = {"__name__": "evaluated"}
    source = (
        "import dataclasses\n"
        "from stitchgen.records import Record, record\n"
        "@record\n"
        "class Evaluated(Record):\n"
        "    x: int\n"
        "    y: dataclasses.InitVar[int] = 0\n"
    )
    exec(compile(source, "<evaluated>", "exec", dont_inherit=True), ns)  # no __future__
    for cls in (Deferred, ns["Evaluated"]):
        assert [f.name for f in dataclasses.fields(cls)] == ["x"]
        assert cls.__dataclass_fields__["y"]._field_type is dataclasses._FIELD_INITVAR
        assert cls.__dataclass_params__.frozen


def _record_classes() -> list[type]:
    found = []
    for name, module in sorted(sys.modules.items()):
        if name.startswith("stitchgen"):
            for value in vars(module).values():
                if isinstance(value, type) and value.__module__ == name:
                    if issubclass(value, Record) and "__dataclass_fields__" in value.__dict__:
                        found.append(value)
    return found


def test_every_record_class_of_the_package_is_a_frozen_dataclass_of_its_annotations():
    classes = _record_classes()
    assert len(classes) >= 29  # the IR, conventions, Generated, ConstPool, the pass Step
    for cls in classes:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
        own = [
            n
            for n, a in cls.__dict__.get("__annotations__", {}).items()
            if not a.startswith("ClassVar")
        ]
        names = [f.name for f in dataclasses.fields(cls)]
        assert names[len(names) - len(own) :] == own or set(own) <= set(names), cls
        for f in dataclasses.fields(cls):
            assert not isinstance(cls.__dict__.get(f.name), dataclasses.Field), (cls, f.name)

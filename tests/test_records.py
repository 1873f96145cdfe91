"""Record classes are dataclasses by the standard library's own account
(``records.record`` is ``dataclasses``' own decorator, its methods turned
off), and :class:`Record` supplies, once, what the decorator does not
generate: immutability, equality, a cached hash and ``repr``."""

from __future__ import annotations

import dataclasses
import pickle
import sys
from typing import Any, ClassVar

import pytest
from golden_cases import shared_case

import stitchgen
import stitchgen.pipeline  # noqa: F401  (every record class of the compile path)
from stitchgen import ir
from stitchgen.ir import CLASSES
from stitchgen.records import Record, record


def _declare(decorate: Any) -> dict[str, type]:
    """A family of record classes — defaults, ``field(...)`` specs, a
    ``ClassVar``, inheritance — declared with ``decorate``."""

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
    class Child(Base):
        """A child: a field of its own, one redeclared, a factory."""

        b: tuple[int, ...] = (1,)
        d: dict[str, int] = dataclasses.field(default_factory=dict)
        e: float = dataclasses.field(default=0.5, init=False)

        def __init__(self, a: int, b: tuple[int, ...] = (1,), d: Any = None):
            super().__init__(a, b)
            self.__dict__.update(d={} if d is None else d, e=0.5)

    return {"Base": Base, "Child": Child}


def test_a_record_is_the_dataclass_the_public_decorator_makes():
    classes = _declare(record)
    Child = classes["Child"]
    assert [f.name for f in dataclasses.fields(Child)] == ["a", "b", "c", "hidden", "d", "e"]
    assert Child.__match_args__ == ("a", "b", "c", "hidden", "d")
    child = Child(1, (2,), {"k": 3})
    assert dataclasses.asdict(child) == {
        "a": 1, "b": (2,), "c": "c", "hidden": None, "d": {"k": 3}, "e": 0.5,
    }  # fmt: skip
    assert dataclasses.astuple(child) == (1, (2,), "c", None, {"k": 3}, 0.5)
    assert repr(child).endswith(".Child(a=1, b=(2,), c='c', d={'k': 3}, e=0.5)")
    assert (
        child
        == Child(
            1,
            (2,),
            {"k": 3},
        )
        != Child(2, (2,), {"k": 3})
    )
    assert child == Child(1, (2,), {"k": 3}) and classes["Base"].tag == "base"
    base = classes["Base"](1, hidden="x")
    assert base == classes["Base"](1, hidden="y")  # compare=False: not compared
    assert dataclasses.replace(base, a=2) == classes["Base"](2) and base.a == 1


def test_a_record_is_immutable():
    child = _declare(record)["Child"](1)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'a'"):
        child.a = 2
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'z'"):
        child.z = 2  # not a field: no new attributes either
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'a'"):
        del child.a
    assert child.a == 1


def test_the_hash_is_cached_and_never_pickled():
    base = _declare(record)["Base"](1, (2, 3))
    assert hash(base) == hash(base) and "_hash" in base.__dict__
    clone = pickle.loads(pickle.dumps(ir.Call("y", ir.Name("f"), (ir.Name("x"),))))
    assert clone == ir.Call("y", ir.Name("f"), (ir.Name("x"),)) and "_hash" not in clone.__dict__


def test_a_subclass_of_your_own_is_declared_with_dataclass():
    Base = _declare(record)["Base"]

    @dataclasses.dataclass
    class Mine(Base):  # type: ignore[misc,valid-type]
        z: int = 9

    assert [f.name for f in dataclasses.fields(Mine)] == ["a", "b", "c", "hidden", "z"]
    assert Mine(1).z == 9 and Mine(1) == Mine(1) != Mine(1, z=8)
    assert hash(Mine(1)) == hash(Mine(1))  # hashable, as the IR must be
    with pytest.raises(dataclasses.FrozenInstanceError):
        Mine(1).z = 8


def test_record_refuses_what_is_not_a_record():
    with pytest.raises(TypeError, match="declares a Record subclass"):
        record(int)


def _record_classes() -> list[type]:
    found = []
    for name, module in sorted(sys.modules.items()):
        if name.startswith("stitchgen"):
            for value in vars(module).values():
                if isinstance(value, type) and value.__module__ == name:
                    if issubclass(value, Record) and "__dataclass_fields__" in value.__dict__:
                        found.append(value)
    return found


def test_every_record_class_is_a_dataclass_of_its_annotations_by_dataclasses_account():
    classes = _record_classes()
    assert len(classes) >= 29  # the IR, conventions, Generated, ConstPool, the pass Step
    for cls in classes:
        assert dataclasses.is_dataclass(cls), cls
        own = [
            n
            for n, a in cls.__dict__.get("__annotations__", {}).items()
            if not a.startswith("ClassVar")
        ]
        names = [f.name for f in dataclasses.fields(cls)]
        assert names[len(names) - len(own) :] == own or set(own) <= set(names), cls
        for f in dataclasses.fields(cls):
            assert not isinstance(cls.__dict__.get(f.name), dataclasses.Field), (cls, f.name)


def _ir_objects(node: Any, found: dict[type, Any]) -> None:
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        found.setdefault(type(node), node)
        for f in dataclasses.fields(node):
            _ir_objects(getattr(node, f.name), found)
    elif isinstance(node, (tuple, list)):
        for item in node:
            _ir_objects(item, found)


def test_dataclasses_fields_replace_and_asdict_work_on_every_ir_object():
    found: dict[type, Any] = {}
    for name in ("decoder_1_layer", "constants", "get_attr_bindings", "nested_output"):
        case = shared_case(name)
        program = stitchgen.lower(case.gm, opaque=tuple(case.submods))
        _ir_objects(program, found)
        _ir_objects(stitchgen.lower(case.gm, boxed=True, unpack=False), found)
    assert len(found) >= 15, sorted(t.__name__ for t in found)
    for cls, obj in found.items():
        values = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
        assert dataclasses.replace(obj) == obj == cls(**values), cls
        assert set(dataclasses.asdict(obj)) == {f.name for f in dataclasses.fields(obj)}, cls
        assert CLASSES[cls.__name__] is cls

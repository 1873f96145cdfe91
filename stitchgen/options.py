""":class:`Options`, what a caller asks of every stage (and
:class:`ConstPool`, one option's value): under the stages, each of which
reads the fields it uses.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import os
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .ir import Program
from .records import Record, record

__all__ = ["DEFAULTS", "OPTION_NAMES", "SOURCE_LINES_ENV", "ConstPool", "Options"]


@record
class ConstPool(Record):
    """Lifted constants shared with code generated before (vLLM's ``consts``
    list and ``const_index``, id → index): a program lowered with a pool
    numbers its constants after the pool's and reuses the pool's objects
    (by identity, through ``index``). The pool is read, never changed:
    the program's ``const_values`` are the pool's values followed by its own."""

    values: tuple[Any, ...] = ()
    index: Mapping[int, int] = dataclasses.field(default_factory=dict)

    def __init__(
        self, values: tuple[Any, ...] = (), index: Mapping[int, int] | None = None
    ) -> None:
        self.__dict__["values"] = values
        self.__dict__["index"] = {} if index is None else index


#: ``STITCHGEN_SOURCE_LINES=1``: source lines on wherever the option is not given
SOURCE_LINES_ENV = "STITCHGEN_SOURCE_LINES"
_SEQUENCES = frozenset({"template_dirs", "opaque", "passes"})


class Options:
    """What :func:`stitchgen.generate` is asked, as keywords (and
    :func:`~stitchgen.compile`, :func:`~stitchgen.lower` and the backend,
    which pass them on). Each option is declared once, below: its name,
    type and default; an unknown keyword is a ``TypeError`` naming it.

    * ``name``: the entry function's name;
    * ``format``: black's layout (``generate``: on; ``compile``: off);
    * ``templates``: a :class:`stitchgen.Templates` or a shipped variant's
      name (``"profiled"``, ``"vllm"``), with ``template_dirs`` searched first;
    * ``opaque``: children to call through bindings even if they are
      GraphModules;
    * ``boxed=True``: the function takes its inputs as one list that it
      clears (so the caller's list does not keep them alive);
    * ``const_pool``: continue the constants of code generated before
      (:class:`ConstPool`; ``stitchgen.compat`` uses it);
    * ``passes``: yours, run on the raw program (see :mod:`stitchgen.passes`);
    * ``dump_dir`` (default: ``$STITCHGEN_DUMP_DIR``): receives a copy of the
      code for debugging (see :mod:`stitchgen.dump`);
    * ``source_lines=True`` (default: ``$STITCHGEN_SOURCE_LINES=1``): each
      line made from a node with a recorded stack trace ends with the user's
      source location (``# model.py:42 in forward``), which tracebacks, the
      dump and ``stitchgen show`` then name; it costs nothing per call;
    * ``unpack=False``: every piece result taken apart with one getitem per
      item. By default a call of an inlined child whose result only those
      getitems read (:meth:`~stitchgen.lowering.Lowerer.unpack_targets` says
      when) is unpacked where it is called, ``a, b = inlined_submod_0(x)``
      (:class:`~stitchgen.ir.UnpackCall`), and the tuple is never a local to
      take apart and delete: a decoder's entry shrinks to about a third of
      its lines, and ``compile()`` of the module with it;
    * ``check_inputs=False``: for a ``torch.export.ExportedProgram``, no
      input checks (``ep.module()``'s, written as code by default:
      :mod:`stitchgen.exported`).

    >>> options = Options(format=False, opaque="submod_1")
    >>> options.opaque, options.format, options.replace(boxed=True).boxed
    (('submod_1',), False, True)
    """

    # the class's attributes are the defaults; an instance holds what was given
    name: str = "execution_fn"
    format: bool = True
    templates: Any = None
    template_dirs: tuple[str | os.PathLike[str], ...] = ()
    opaque: tuple[str, ...] = ()
    boxed: bool = False
    const_pool: ConstPool | None = None
    passes: tuple[Callable[[Program], Program], ...] = ()
    dump_dir: str | os.PathLike[str] | None = None
    source_lines: bool | None = None
    unpack: bool = True
    check_inputs: bool = True

    def __init__(self, **given: Any) -> None:
        unknown = sorted(set(given).difference(OPTION_NAMES))
        if unknown:
            raise TypeError(f"unknown generate option(s) {unknown}; known: {sorted(OPTION_NAMES)}")
        for key in _SEQUENCES.intersection(given):  # one name is a sequence of one
            value = given[key]
            if isinstance(value, (str, os.PathLike)):
                given[key] = (value,)
            elif isinstance(value, Iterable) and not isinstance(value, (bytes, dict)):
                given[key] = tuple(value)
        hints = _hints()
        for key, value in given.items():
            if not _fits(value, hints[key]):
                wanted, got = Options.__annotations__[key], type(value).__name__
                if isinstance(value, tuple):  # the item at fault
                    item = typing.get_args(hints[key])[0]
                    i = next(i for i, v in enumerate(value) if not _fits(v, item))
                    got = f"{got} whose item {i} is {type(value[i]).__name__}"
                raise TypeError(f"option {key!r} takes {wanted}, not {got}")
        self.__dict__.update(given)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Options are immutable: replace() makes new ones ({name!r})")

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={getattr(self, k)!r}" for k in OPTION_NAMES)
        return f"Options({shown})"

    def replace(self, **changes: Any) -> Options:
        """These options with ``changes``."""
        return Options(**{**self.__dict__, **changes})

    @property
    def lines(self) -> bool:
        """Are source locations written (the option, else the environment's)?"""
        given = self.source_lines
        return os.environ.get(SOURCE_LINES_ENV) == "1" if given is None else bool(given)


#: every option's name, in the order declared
OPTION_NAMES = tuple(Options.__annotations__)


@functools.cache
def _hints() -> dict[str, Any]:
    """The options' declared types, evaluated (once: a cache safe to share)."""
    return typing.get_type_hints(Options)


def _fits(value: Any, hint: Any) -> bool:
    """Is ``value`` of the declared type ``hint`` (a tuple's items each)?"""
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arm) for arm in typing.get_args(hint))
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return isinstance(value, tuple) and all(_fits(v, item) for v in value)
    if origin is collections.abc.Callable:
        return callable(value)
    if hint is type(None):
        return value is None
    return isinstance(value, origin or hint)


#: the options given no keyword
DEFAULTS = Options()
